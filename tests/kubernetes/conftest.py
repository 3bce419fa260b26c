"""The Kubernetes area's fixture: a local API server the official client talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.kube import KubeServer, serve_kube


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    yield from serve_kube()
