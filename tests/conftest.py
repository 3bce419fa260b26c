"""Shared fixtures: an isolated Guard home per test, a CLI runner, a real Docker engine, the
local Telegram Bot API server (``tg``) and a service to heal (``service``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from guard.config import Settings, load_settings
from guard.playbooks import load_playbooks
from guard.store.db import Database, open_database
from tests import scheduling
from tests.helpers import cli_fork
from tests.helpers.images import ensure_busybox_image

if TYPE_CHECKING:
    from tests.fakes.telegram import TelegramServer
    from tests.helpers.telegram import Service

REPO = Path(__file__).resolve().parent.parent
if os.environ.get("PYTEST_XDIST_WORKER"):  # "pytest-gw0": CPU by process in `ps` and `sa`
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(f"pytest-{os.environ['PYTEST_XDIST_WORKER']}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a parallel run (xdist's workers collect), the longest modules first
    (``tests/scheduling``)."""
    if hasattr(config, "workerinput"):
        scheduling.longest_first(items, scheduling.measured())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """With ``GUARD_TEST_CPU=FILE``: each test's CPU and wall seconds, appended to FILE."""
    into = os.environ.get("GUARD_TEST_CPU")
    if not into:
        yield
        return
    cpu, wall = scheduling.cpu_seconds(), time.monotonic()
    yield
    with open(into, "a") as f:
        used = scheduling.cpu_seconds() - cpu
        f.write(f"{used:.2f} {time.monotonic() - wall:.2f} {item.nodeid}\n")


class GuardHome:
    """A folder with guard.yaml, playbooks/ and data/, like a user's install."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.playbooks = root / "playbooks"
        self.playbooks.mkdir()
        self.config = root / "guard.yaml"
        self.write_config({})

    def write_config(self, extra: dict[str, Any]) -> None:
        base = {
            "data_dir": str(self.root / "data"),
            "playbooks_dir": str(self.playbooks),
            "skills_dir": str(self.root / "skills"),
        }
        merged = {**base, **extra}  # a None in ``extra`` leaves that setting at its default
        self.config.write_text(yaml.safe_dump({k: v for k, v in merged.items() if v is not None}))

    def playbook(self, name: str, monitors: list[dict[str, Any]]) -> Path:
        path = self.playbooks / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, "monitors": monitors}, sort_keys=False))
        return path

    def log_playbook(
        self, name: str, path: Path, rules: list[dict[str, Any]], every: str = "10s"
    ) -> Path:
        """A playbook ``name`` with one logfile monitor (id ``NAME-log``) on ``path``."""
        monitor = {"id": f"{name}-log", "type": "logfile", "path": str(path), "every": every}
        return self.playbook(name, [{**monitor, "rules": rules}])

    def settings(self) -> Settings:
        return load_settings(self.config)

    def database(self) -> Database:
        return open_database(self.settings().database_url)

    def playbooks_loaded(self) -> list[Any]:
        return load_playbooks(self.playbooks)

    def cli(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``guard ARGS`` as a user would, in a process of its own (forked from one that
        imported Guard's libraries: ``tests.helpers.cli_fork``)."""
        env = {**os.environ, "GUARD_CONFIG": str(self.config)}
        env.pop("GUARD_LOG_FORMAT", None)
        proc = cli_fork.run(list(args), cwd=self.root, env=env, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"guard {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
            )
        return proc


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GuardHome:
    for var in list(os.environ):
        if var.startswith(("GUARD_", "RAILWAY_")):
            monkeypatch.delenv(var)
    return GuardHome(tmp_path)


# -- Docker -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """The real local engine. Missing Docker fails the run in CI and skips elsewhere."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except DockerException as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Docker engine required in CI: {exc}")
        pytest.skip(f"no Docker engine: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def busybox_image(docker_client: Any) -> str:
    """A tiny image built offline from the host's static busybox (no registry needed)."""
    return ensure_busybox_image(docker_client)


@pytest.fixture
def containers(
    docker_client: Any, busybox_image: str, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """Start labelled test containers; every one is removed afterwards."""
    started: list[Any] = []
    tag = f"guard-test-{os.getpid()}-{request.node.name[:30]}".replace("[", "-").replace("]", "")

    class Factory:
        prefix = tag.lower()

        def run(self, name: str, command: str, **kwargs: Any) -> Any:
            labels = {"guard.test": "1", **kwargs.pop("labels", {})}
            c = docker_client.containers.run(
                busybox_image,
                ["sh", "-c", command],
                name=f"{self.prefix}-{name}",
                detach=True,
                labels=labels,
                network_mode="none",
                **kwargs,
            )
            started.append(c)
            return c

    yield Factory()
    for c in started:
        with contextlib.suppress(Exception):
            c.remove(force=True)


@pytest.fixture
def tg() -> Iterator[TelegramServer]:
    """The Bot API server; a test fails if Guard sent anything Telegram would have refused
    (a test that provokes refusals on purpose empties ``tg.refused`` after checking them)."""
    from tests.fakes.telegram import TelegramServer
    from tests.helpers.telegram import TOKEN

    server = TelegramServer(TOKEN).start()
    yield server
    server.stop()
    assert not server.refused, f"Telegram would have refused: {server.refused}"


@pytest.fixture
def service() -> Iterator[Service]:
    """A local web service whose health endpoint fails until its fix endpoint is called."""
    from tests.fakes.local_http import stop
    from tests.helpers.telegram import Service

    svc = Service()
    yield svc
    stop(svc.server)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real local PostgreSQL server (one per test process: starting and stopping one took
    10-20 s on a loaded box, once for each of 20 modules), as a database URL; a test makes
    its own database on it (``tests.fakes.postgres.fresh_database``)."""
    from tests.fakes.postgres import serve_postgres

    yield from serve_postgres()
