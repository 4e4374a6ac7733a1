"""The registered losses by name, each with its class (``"module:Class"``).

Read without importing torch, so that the command-line help lists every loss; `factory` imports the
classes from this table.
"""

LOSS_CLASSES: dict[str, str] = {
    "vse0": "vse_ray.losses.vse0:VSE0Loss",
    "vsepp": "vse_ray.losses.vsepp:VSEPPLoss",
    "ladder": "vse_ray.losses.ladder:LadderLoss",
    "ladder_auto": "vse_ray.losses.ladder_auto:AdaptiveLadderLoss",
    "sam": "vse_ray.losses.sam:SAMLoss",
    "bcls": "vse_ray.losses.bcls:BCLSLoss",
    "lseh": "vse_ray.losses.lseh:LSEHLoss",
    "infonce": "vse_ray.losses.contrastive:InfoNCELoss",
    "siglip": "vse_ray.losses.siglip:SigLIPLoss",
}
LOSS_NAMES: tuple[str, ...] = tuple(LOSS_CLASSES)
