"""``guard.config`` is a package whose ``__init__`` loads a section's module only when asked."""

from __future__ import annotations

import subprocess
import sys

import pytest

import guard.config


@pytest.mark.unit
def test_every_public_name_is_the_one_its_module_defines() -> None:
    for name in guard.config.__all__:
        value = getattr(guard.config, name)
        assert value is not None, name
        owner = getattr(value, "__module__", None)
        if owner is not None:  # classes and functions: defined in the package, not elsewhere
            assert owner.startswith("guard.config."), (name, owner)
    with pytest.raises(AttributeError, match="no attribute 'Setings'"):
        _ = guard.config.Setings  # type: ignore[attr-defined]


def test_importing_the_package_or_its_fast_resolver_loads_no_pydantic() -> None:
    code = (
        "import sys\n"
        "import guard.config\n"
        "from guard.config import fast\n"
        "fast.resolve(None, {})\n"
        "print(sorted(m for m in ('pydantic', 'pydantic_settings') if m in sys.modules))\n"
        "from guard.config import Settings\n"
        "print(Settings.__module__, 'pydantic_settings' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.splitlines() == ["[]", "guard.config.settings True"], proc.stdout
