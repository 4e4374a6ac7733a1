"""cluster.yaml passes Ray's own cluster-launcher validation and holds what the README promises."""

from __future__ import annotations

import copy
import os
import stat
import subprocess
import sys
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


def test_token_auth_from_the_first_ray_start(config):
    head = config["head_start_ray_commands"]
    start = next(i for i, c in enumerate(head) if "ray start --head" in c)
    token = next(i for i, c in enumerate(head) if "ray get-auth-token --generate" in c)
    assert token < start and "export RAY_AUTH_MODE=token" in head[start]
    workers = config["worker_start_ray_commands"]
    join = next(i for i, c in enumerate(workers) if "ray start --address" in c)
    assert "export RAY_AUTH_MODE=token" in workers[join]
    assert any("/mnt/shared/vse_ray/ray_auth_token ~/.ray/auth_token" in c for c in workers[:join])


def test_the_head_token_commands_and_the_readme_step_agree(config, tmp_path):
    """The head's token command (shared storage in a temp folder), then the README's `ray get-auth-token`."""
    command = next(c for c in config["head_start_ray_commands"] if "get-auth-token" in c)
    shared = tmp_path / "shared"
    (shared / "vse_ray").mkdir(parents=True)
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("RAY_AUTH_TOKEN", None)
    subprocess.run(["bash", "-c", command.replace("/mnt/shared", str(shared))], env=env, check=True)
    copy = shared / "vse_ray" / "ray_auth_token"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    printed = subprocess.run(["ray", "get-auth-token"], env=env, capture_output=True, text=True, check=True)
    assert printed.stdout == copy.read_text() == (tmp_path / ".ray" / "auth_token").read_text()
    subprocess.run(["bash", "-c", command.replace("/mnt/shared", str(shared))], env=env, check=True)
    assert copy.read_text() == printed.stdout  # a restart keeps the token the workers hold


def test_dashboard_only_on_localhost_and_no_open_security_group(config):
    keys = ("setup_commands", "head_start_ray_commands", "worker_start_ray_commands")
    commands = "\n".join(c for key in keys for c in config[key])
    assert "--dashboard-host=127.0.0.1" in commands and "0.0.0.0" not in commands
    for node_type in config["available_node_types"].values():
        # A group of your own: without it the launcher creates one that opens SSH to 0.0.0.0/0.
        assert node_type["node_config"]["SecurityGroupIds"] == ["sg-CHANGE-ME"]
