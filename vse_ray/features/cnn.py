"""Image backbones φ for fine-tuning from raw pixels: torchvision CNNs or a small CNN for 64×64 images."""

from __future__ import annotations

import torch
from torch import nn

TORCHVISION_CNNS = ("resnet18", "resnet34", "resnet50", "resnet152", "vgg19")
SMALL_CNN_WIDTHS = {"small": 32, "tiny": 16}
CNN_NAMES = (*SMALL_CNN_WIDTHS, *TORCHVISION_CNNS)


class SmallCNN(nn.Module):
    """Four conv-BN-ReLU-pool blocks and global average pooling: a cheap φ for small images."""

    def __init__(self, width: int = 32):
        super().__init__()
        chans = [3, width, width * 2, width * 4, width * 8]
        blocks = []
        for c_in, c_out in zip(chans[:-1], chans[1:], strict=True):
            blocks += [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]
            blocks.append(nn.MaxPool2d(2))
        self.body = nn.Sequential(*blocks[:-1], nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.out_dim = chans[-1]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.body(images)


class GridRegions(nn.Module):
    """A convolution trunk whose (B, C, h, w) output map becomes h·w regions of width C: (B, h·w, C)."""

    def __init__(self, trunk: nn.Module):
        super().__init__()
        self.trunk = trunk

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.trunk(images).flatten(2).transpose(1, 2)


def build_cnn(name: str, weights: str | None = None, grid: bool = False) -> tuple[nn.Module, int]:
    """Return (backbone without classifier, feature dim) for `name` in CNN_NAMES.

    Args:
        name: "small" (SmallCNN, width 32), "tiny" (width 16, ~2.3× cheaper) or a torchvision model name.
        weights: torchvision weights name (e.g. "IMAGENET1K_V1"); None = random init. Ignored for small/tiny.
        grid: Keep the last convolution map as regions, (B, h·w, C), instead of pooling it
            (ResNet-152 at 224 px: 7 × 7 = 49 regions of 2048; VGG19: the map before its last max-pool,
            14 × 14 of 512).
    """
    if name in SMALL_CNN_WIDTHS:
        cnn = SmallCNN(SMALL_CNN_WIDTHS[name])
        return (GridRegions(cnn.body[:-2]) if grid else cnn), cnn.out_dim
    if name not in TORCHVISION_CNNS:
        raise ValueError(f"cnn must be one of {CNN_NAMES}, got {name!r}")
    import torchvision  # here: importing it costs a second, and most models never build a torchvision CNN

    model = getattr(torchvision.models, name)(weights=weights)
    if grid and name.startswith("resnet"):
        return GridRegions(nn.Sequential(*list(model.children())[:-2])), model.fc.in_features
    if grid:  # vgg19: the conv layers without the final max-pool
        return GridRegions(model.features[:-1]), model.features[-3].out_channels
    if name.startswith("resnet"):
        dim = model.fc.in_features
        model.fc = nn.Identity()
    else:  # vgg19: keep FC7 (penultimate layer), as in VSE++ Sec. 3
        dim = model.classifier[-1].in_features
        model.classifier = model.classifier[:-1]
    return model, dim
