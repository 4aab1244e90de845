"""The compose files parse and wire the services the deployment needs: a TLS-terminating proxy in
front of gunicorn, and no default secret key."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[1] / "docker"
REQUIRED = re.compile(r"^\$\{DJANGO_SECRET_KEY:\?.+\}$")  # compose stops with the message when it is unset


def test_compose_names_the_services_and_shares_the_django_block():
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())
    assert set(compose["services"]) == {"postgres", "redis", "migrate", "web", "worker", "calls-worker", "gpu-worker",
                                        "beat", "proxy"}
    web, worker = compose["services"]["web"], compose["services"]["worker"]
    assert web["environment"] == worker["environment"]
    assert web["environment"]["DATABASE_URL"].startswith("postgres://")
    assert web["environment"]["CELERY_BROKER_URL"].startswith("redis://")
    assert "gunicorn -c config/gunicorn.py" in web["command"]
    # replicas of web never migrate: the one-shot migrate service does, before any of them starts
    assert "migrate" not in web["command"] and compose["services"]["migrate"]["command"].startswith("python manage.py migrate")
    assert web["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert 'wsgi_app = "config.wsgi"' in (Path(__file__).resolve().parents[1] / "config" / "gunicorn.py").read_text()
    for service, kind in (("worker", "main"), ("calls-worker", "calls"), ("gpu-worker", "gpu")):
        assert compose["services"][service]["command"] == f"python -m config.workers {kind}"
        assert compose["services"][service]["environment"] == web["environment"]
    assert compose["services"]["beat"]["command"] == "python -m config.workers beat"


def test_workers_serve_every_queue_that_tasks_are_routed_to():
    """Each queue a task goes to has a worker (config.workers), and no queue is served twice."""
    from django.conf import settings

    from config.workers import WORKERS, worker_argv

    served = [queue for worker in WORKERS.values() for queue in worker.queues]
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {settings.CELERY_TASK_DEFAULT_QUEUE}
    assert routed | {"calls", "imports", "periodic"} == set(served) and len(served) == len(set(served))
    assert WORKERS["calls"].pool == "threads" and WORKERS["calls"].concurrency >= 4
    assert worker_argv("calls", python="python")[:8] == ["python", "-m", "celery", "-A", "config", "worker", "-Q", "calls"]


def test_compose_ships_no_secret_key_and_no_insecure_cookie_default():
    for name in ("compose.yml", "compose.gpu.yml"):
        for service in yaml.safe_load((DOCKER / name).read_text())["services"].values():
            environment = service.get("environment") or {}
            if "DJANGO_SECRET_KEY" in environment:
                assert REQUIRED.match(environment["DJANGO_SECRET_KEY"]), (name, environment["DJANGO_SECRET_KEY"])
            assert "SECURE_COOKIES" not in environment  # production settings default to Secure cookies
    assert "DJANGO_SECRET_KEY=\n" in (DOCKER / "env.example").read_text()


def test_gunicorn_is_reached_only_through_the_tls_proxy():
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())
    web, proxy = compose["services"]["web"], compose["services"]["proxy"]
    assert "ports" not in web  # nothing published but the proxy's 80/443
    assert proxy["image"].startswith("caddy:")
    assert {"80:80", "443:443"} <= set(proxy["ports"])
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    caddyfile = (DOCKER / "Caddyfile").read_text()
    # every replica of web (docker compose --scale web=N), by DNS, round robin, a dead one skipped
    assert re.search(r"dynamic a \{\s*name web\s*port 8000", caddyfile)
    assert "lb_try_duration" in caddyfile
    assert "{$CONCORD_DOMAIN:localhost} {" in caddyfile  # a site address: Caddy's automatic HTTPS


def test_gpu_overlay_reserves_an_nvidia_device_for_the_gpu_queue():
    overlay = yaml.safe_load((DOCKER / "compose.gpu.yml").read_text())
    gpu = overlay["services"]["gpu-worker"]
    assert gpu["command"] == "python -m config.workers gpu"
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    assert gpu["build"]["dockerfile"] == "docker/Dockerfile.gpu"


def test_docker_compose_config_accepts_the_files_and_requires_a_key():
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("the docker compose client is not installed here")
    command = [docker, "compose", "-f", str(DOCKER / "compose.yml"), "-f", str(DOCKER / "compose.gpu.yml"),
               "config", "--services"]
    clean = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**clean, "DJANGO_SECRET_KEY": "x" * 50})
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) == {"postgres", "redis", "web", "worker", "gpu-worker", "proxy"}
    if not (DOCKER / ".env").exists():
        refused = subprocess.run(command, capture_output=True, text=True, timeout=60, env=clean)
        assert refused.returncode != 0 and "DJANGO_SECRET_KEY" in refused.stderr
