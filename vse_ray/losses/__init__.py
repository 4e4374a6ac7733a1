"""Bidirectional image-text ranking losses with graded relevance; build them with ``make_loss``.

The exports that import torch load on first use, so that the command-line help reads the loss names
(`names`) without it.
"""

from vse_ray.lazy_exports import lazy_exports

_LAZY = {
    "LOSSES": "vse_ray.losses.factory",
    "LOSS_NAMES": "vse_ray.losses.names",
    "AdaptiveLadderLoss": "vse_ray.losses.ladder_auto",
    "BCLSLoss": "vse_ray.losses.bcls",
    "BaseVSELoss": "vse_ray.losses.base",
    "InfoNCELoss": "vse_ray.losses.contrastive",
    "LSEHLoss": "vse_ray.losses.lseh",
    "LadderLoss": "vse_ray.losses.ladder",
    "SAMLoss": "vse_ray.losses.sam",
    "SigLIPLoss": "vse_ray.losses.siglip",
    "VSE0Loss": "vse_ray.losses.vse0",
    "VSEPPLoss": "vse_ray.losses.vsepp",
    "loss_hparams": "vse_ray.losses.factory",
    "make_loss": "vse_ray.losses.factory",
    "negative_mask": "vse_ray.losses.base",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
__all__ = sorted(_LAZY)
