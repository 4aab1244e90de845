"""The compose files parse and wire the services the deployment needs."""
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[1] / "docker"


def test_compose_names_the_services_and_shares_the_django_block():
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())
    assert set(compose["services"]) == {"postgres", "redis", "web", "worker"}
    web, worker = compose["services"]["web"], compose["services"]["worker"]
    assert web["environment"] == worker["environment"]
    assert web["environment"]["DATABASE_URL"].startswith("postgres://")
    assert web["environment"]["CELERY_BROKER_URL"].startswith("redis://")
    assert "gunicorn config.wsgi" in web["command"]
    assert "-Q default,gpu" in worker["command"]


def test_gpu_overlay_reserves_an_nvidia_device_for_the_gpu_queue():
    overlay = yaml.safe_load((DOCKER / "compose.gpu.yml").read_text())
    gpu = overlay["services"]["gpu-worker"]
    assert "-Q gpu --concurrency=1" in gpu["command"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    assert gpu["build"]["dockerfile"] == "docker/Dockerfile.gpu"


def test_docker_compose_config_accepts_the_files():
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("the docker compose client is not installed here")
    result = subprocess.run([docker, "compose", "-f", str(DOCKER / "compose.yml"), "-f", str(DOCKER / "compose.gpu.yml"),
                             "config", "--services"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) == {"postgres", "redis", "web", "worker", "gpu-worker"}
