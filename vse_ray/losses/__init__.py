"""Bidirectional image-text ranking losses with graded relevance; build them with ``make_loss``."""

from vse_ray.losses.base import BaseVSELoss, negative_mask
from vse_ray.losses.bcls import BCLSLoss
from vse_ray.losses.factory import LOSS_NAMES, LOSSES, loss_hparams, make_loss
from vse_ray.losses.ladder import LadderLoss
from vse_ray.losses.ladder_auto import AdaptiveLadderLoss
from vse_ray.losses.lseh import LSEHLoss
from vse_ray.losses.sam import SAMLoss
from vse_ray.losses.vse0 import VSE0Loss
from vse_ray.losses.vsepp import VSEPPLoss

__all__ = [
    "LOSSES",
    "LOSS_NAMES",
    "AdaptiveLadderLoss",
    "BCLSLoss",
    "BaseVSELoss",
    "LSEHLoss",
    "LadderLoss",
    "SAMLoss",
    "VSE0Loss",
    "VSEPPLoss",
    "loss_hparams",
    "make_loss",
    "negative_mask",
]
