"""The TLS starter skill against a real nginx (the stack image, built offline) serving a
certificate made with openssl that expires in 5 days, under a real ``guard run`` with a ``type:
tls`` monitor: the question carries ``probe.tls``'s look at it; a human places the renewed
certificate (nginx still serves the old one: it has not re-read it) and approves; the skill's
``docker.exec nginx -s reload`` makes nginx serve it and the tls check that fired passes."""

from __future__ import annotations

import os
import shutil
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from tests.conftest import GuardHome
from tests.flows.image import ensure_stack_image
from tests.helpers.agent import db_rows, free_port, running_guard, setup_docker_home, wait_for
from tests.helpers.starter import approve_and_heal
from tests.helpers.tls import Certificates

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

SKILL = "tls-certificate-expiring"
NAME = f"guard-test-{os.getpid()}-{time.time_ns() % 10**6}-starter-tls"
NGINX = """events {}
error_log stderr;
http {
  access_log off;
  server {
    listen 8443 ssl;
    ssl_certificate /certs/cert.pem;
    ssl_certificate_key /certs/key.pem;
    return 200 "ok\\n";
  }
}
"""


def place(cert_key: tuple[Path, Path], folder: Path) -> None:
    """Put a certificate where nginx reads it, as a human (or certbot) does."""
    shutil.copyfile(cert_key[0], folder / "cert.pem")
    shutil.copyfile(cert_key[1], folder / "key.pem")


def days_served(port: int) -> float:
    pem = ssl.get_server_certificate(("127.0.0.1", port))
    after = x509.load_pem_x509_certificate(pem.encode()).not_valid_after_utc.timestamp()
    return (after - time.time()) / 86400


@pytest.fixture
def nginx(docker_client: Any, tmp_path: Path) -> Iterator[tuple[Any, int, Certificates, Path]]:
    """(nginx, its TLS port on 127.0.0.1, the CA, the folder it reads its certificate from)."""
    certs = Certificates(tmp_path / "ca")
    served = tmp_path / "certs"
    served.mkdir()
    place(certs.leaf("127.0.0.1", days=5), served)
    (tmp_path / "nginx.conf").write_text(NGINX)
    port = free_port()
    container = docker_client.containers.run(
        ensure_stack_image(docker_client),
        ["nginx", "-g", "daemon off;"],
        name=NAME,
        detach=True,
        ports={"8443/tcp": ("127.0.0.1", port)},
        volumes={
            str(served): {"bind": "/certs", "mode": "ro"},
            str(tmp_path / "nginx.conf"): {"bind": "/etc/nginx/nginx.conf", "mode": "ro"},
        },
        labels={"guard.test": "starter-tls"},
    )
    try:
        wait_for(lambda: _answers(port), 30, "nginx to serve TLS")
        yield container, port, certs, served
    finally:
        container.remove(force=True)


def _answers(port: int) -> bool:
    try:
        return days_served(port) > 0
    except OSError:
        return False


def test_an_expiring_certificate_is_shown_then_served_renewed_once_approved(
    home: GuardHome, nginx: tuple[Any, int, Certificates, Path]
) -> None:
    _, port, certs, served = nginx
    setup_docker_home(
        home,
        skills=[SKILL],
        probes={"allow": [{"host": "127.0.0.1", "ports": [port]}], "ca_file": str(certs.ca)},
    )
    path = home.root / "skills" / SKILL / "skill.yaml"
    spec = yaml.safe_load(path.read_text())
    assert spec["steps"][0]["args"]["container"] == "web"  # the one name a team edits
    spec["steps"][0]["args"]["container"] = NAME
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    monitor = {"id": "shop-tls", "type": "tls", "host": "127.0.0.1", "port": port, "every": "2s"}
    home.playbook("shop", [{**monitor, "ca_file": str(certs.ca), "expires_within": "14d"}])
    with running_guard(home) as (_, log):
        renewed = certs.leaf("127.0.0.1", days=90, tag="-renewed")

        def renew_then_approve() -> None:
            place(renewed, served)
            assert days_served(port) < 6  # placed, not yet served: nginx has not re-read it

        record, asked = approve_and_heal(
            home, log, "tls_expiring", SKILL, before=renew_then_approve
        )
    assert 89 < days_served(port) <= 90
    evidence = record["details"]["evidence"]
    assert f"$ probe.tls target=127.0.0.1:{port}" in evidence, evidence
    assert "certificate expires in" in evidence and "issuer: CN=Guard Test CA" in evidence
    assert "chain: verified" in evidence, evidence
    assert "docker.exec web argv=[nginx, -s, reload]" in asked, asked
    [(status,)] = db_rows(home, "select status from remediation_run")
    assert status == "verified"
