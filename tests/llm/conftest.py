"""Fixtures for the model tests: scripted OpenAI and Anthropic servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.model import ModelServer


@pytest.fixture(params=["openai", "anthropic"])
def model_server(request: pytest.FixtureRequest) -> Iterator[ModelServer]:
    """One server per API kind (a contract test runs against both)."""
    server = ModelServer(request.param)
    yield server
    server.close()


@pytest.fixture
def openai_server() -> Iterator[ModelServer]:
    server = ModelServer("openai")
    yield server
    server.close()


@pytest.fixture
def second_server() -> Iterator[ModelServer]:
    """A fallback endpoint (OpenAI wire format, its own key)."""
    server = ModelServer("openai", api_key="sk-fallback-key-9876543210")
    yield server
    server.close()
