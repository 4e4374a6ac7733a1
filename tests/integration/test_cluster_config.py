"""cluster.yaml passes Ray's own cluster-launcher validation and holds what the README promises."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CLUSTER_YAML = Path(__file__).resolve().parents[2] / "cluster.yaml"


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def test_ray_validates_the_config(config):
    validate_config(prepare_config(copy.deepcopy(config)))  # what `ray up` runs before launching


def test_ray_validation_rejects_a_broken_copy(config):
    broken = copy.deepcopy(config)
    broken["available_node_types"]["gpu_worker"]["min_wokers"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(broken))


def test_head_and_gpu_worker_types(config):
    types = config["available_node_types"]
    assert config["head_node_type"] == "head" and set(types) == {"head", "gpu_worker"}
    assert types["gpu_worker"]["node_config"]["InstanceType"].startswith(("g", "p"))  # AWS GPU families
    assert types["gpu_worker"]["max_workers"] >= 1


def test_setup_installs_the_package_and_mounts_shared_storage(config):
    setup = "\n".join(config["setup_commands"])
    assert "pip install -q -e ~/vse_ray" in setup and config["file_mounts"]["~/vse_ray"] == "."
    assert "/mnt/shared" in setup and "vse_ray/runs" in setup and "vse_ray/data" in setup


def test_mlflow_server_on_the_private_network(config):
    head = "\n".join(config["head_start_ray_commands"])
    assert "mlflow server" in head and "--host $PRIVATE_IP" in head and "0.0.0.0 --port 5000" not in head
    assert "MLFLOW_TRACKING_URI=http://$RAY_HEAD_IP:5000" in "\n".join(config["worker_start_ray_commands"])
