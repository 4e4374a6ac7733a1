"""The registered models by name, each with the class that builds it (``"module:Class"``).

Read without importing torch, so that the command-line help lists every model; `registry` imports the
classes from this table.
"""

MODEL_CLASSES: dict[str, str] = {
    "vsepp": "vse_ray.models.vse:VSEModel",
    "vse_inf": "vse_ray.models.vse_inf:VSEInfModel",
    "scan": "vse_ray.models.scan:SCANModel",
    "sgraf": "vse_ray.models.sgraf:SGRAFModel",
    "cvse": "vse_ray.models.cvse:CVSEModel",
    "vsrn": "vse_ray.models.vsrn:VSRNModel",
    "gsmn": "vse_ray.models.gsmn:GSMNModel",
    "clip": "vse_ray.models.clip:ClipModel",
}
MODEL_NAMES = tuple(MODEL_CLASSES)
DEFAULT_MODEL = "vsepp"
