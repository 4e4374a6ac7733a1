"""The references' initialisations, drawn where their code draws them.

After the same `torch.manual_seed` a model draws the official code's initial weights only if it draws the
same tensors with the same functions in the same order. The released codes build their layers (each drawing
PyTorch's default initialisation) and then redraw some of them; vse_ray's models build and redraw in that
order and register the layers in their own (the parameters' order and the checkpoint names are vse_ray's).
The parity tests (`tests/parity/test_initial_weights.py`) compare every tensor with the official code's.
"""

from __future__ import annotations

import numpy as np
from torch import nn


def xavier_fill_(layer: nn.Linear) -> nn.Linear:
    """Redraw `layer` as the references' ``init_weights`` do: weights U(-r, r), r = √6 / √(in + out) (one
    uniform draw, the bound computed as they compute it), bias 0."""
    bound = float(np.sqrt(6.0) / np.sqrt(layer.in_features + layer.out_features))
    nn.init.uniform_(layer.weight, -bound, bound)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def xavier_linear(in_features: int, out_features: int) -> nn.Linear:
    """nn.Linear (PyTorch's default draw) redrawn at once by `xavier_fill_`, as the references' encoders
    do."""
    return xavier_fill_(nn.Linear(in_features, out_features))


def draw_unused_linear(in_features: int, out_features: int) -> None:
    """Draw (and drop) the default initialisation of a linear layer that a released model builds but its
    forward never reads, so that the draws after it are the released code's."""
    nn.Linear(in_features, out_features)
