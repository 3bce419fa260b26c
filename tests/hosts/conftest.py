"""The test host of tests/helpers/hosts.py, one per test."""

from __future__ import annotations

from tests.helpers.hosts import test_host

__all__ = ["test_host"]
