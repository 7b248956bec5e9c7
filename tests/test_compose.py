"""docker-compose.yml: a plain ``docker compose up`` starts the product; ``--profile observability`` adds
Prometheus and Grafana, configured from deploy/."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = {"postgres", "redis", "migrate", "web", "worker", "beat", "collector"}


def _services() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_a_plain_up_starts_the_product_alone():
    assert {name for name, service in _services().items() if not service.get("profiles")} == PRODUCT


def test_the_observability_profile_adds_prometheus_and_grafana():
    services = _services()
    profiled = {name for name, service in services.items() if service.get("profiles")}

    assert profiled == {"prometheus", "grafana"}
    assert all(services[name]["profiles"] == ["observability"] for name in profiled)


def test_prometheus_scrapes_metrics_with_a_token_file():
    mounts = _services()["prometheus"]["volumes"]
    assert "./deploy/prometheus:/etc/prometheus:ro" in mounts
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    wattledger = next(job for job in config["scrape_configs"] if job["job_name"] == "wattledger")
    assert wattledger["metrics_path"] == "/metrics"
    assert wattledger["authorization"]["credentials_file"] == "/etc/prometheus/wattledger-token"
    assert wattledger["static_configs"] == [{"targets": ["web:8000"]}]
    assert "wattledger-token" in (ROOT / "deploy/prometheus/.gitignore").read_text().split()


def test_grafana_is_provisioned_from_deploy():
    mounts = _services()["grafana"]["volumes"]
    assert "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro" in mounts
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/wattledger.yml").read_text())
    path = provider["providers"][0]["options"]["path"]
    assert f"./deploy/grafana:{path}:ro" in mounts


def test_promtool_accepts_the_prometheus_config(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not on the PATH (Debian: apt-get install prometheus)")
    # as mounted in the container: /etc/prometheus is deploy/prometheus, with a token written to it
    (tmp_path / "wattledger-token").write_text("wlp_example\n")
    text = (ROOT / "deploy/prometheus/prometheus.yml").read_text().replace("/etc/prometheus", str(tmp_path))
    (tmp_path / "prometheus.yml").write_text(text)

    checked = subprocess.run(
        [promtool, "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True, check=False
    )

    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
