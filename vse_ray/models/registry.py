"""Models by name: ``build_model("vse_inf", vocab_size=..., feature_dim=..., embed_dim=...)``."""

from __future__ import annotations

import inspect
from typing import Any

from vse_ray.lazy_exports import import_object
from vse_ray.models.base import RetrievalModel
from vse_ray.models.names import MODEL_CLASSES

MODELS: dict[str, type[RetrievalModel]] = {name: import_object(path) for name, path in MODEL_CLASSES.items()}
# Constructor arguments that training fills in for every model (with each model's `config_fields`); the
# others are the model's own options, given as `model_params`.
SHARED_ARGS = ("self", "vocab_size", "feature_dim", "word_dim", "embed_dim", "cnn", "cnn_weights")


def model_class(name: str) -> type[RetrievalModel]:
    """The class registered as `name`; ValueError listing the choices for an unknown one."""
    if name not in MODELS:
        raise ValueError(f"model: must be one of {sorted(MODELS)}, got {name!r}")
    return MODELS[name]


def model_options(name: str) -> dict[str, Any]:
    """The options (`model_params`) model `name` takes, with their defaults (`inspect.Parameter.empty`
    for one without)."""
    cls = model_class(name)
    shared = (*SHARED_ARGS, *cls.config_fields, *cls.vocab_ids, *cls.data_inputs)
    parameters = inspect.signature(cls.__init__).parameters
    return {key: p.default for key, p in parameters.items() if key not in shared}


def build_model(name: str, **kwargs: Any) -> RetrievalModel:
    """Build the model registered as `name` with its constructor's keyword arguments."""
    return model_class(name)(**kwargs)


def rebuild_model(state: dict[str, Any]) -> RetrievalModel:
    """The model of a training checkpoint (`model_name`, `model_args`, `model` state dict) with its weights
    (`selected_model` where validation inside the epoch chose other weights than the epoch's end); CNN
    weights come from the checkpoint, not a download."""
    args = dict(state["model_args"])
    if "cnn_weights" in args:
        args["cnn_weights"] = None
    model = build_model(state["model_name"], **args)
    model.load_state_dict(state.get("selected_model") or state["model"])  # a step inside the epoch won
    return model
