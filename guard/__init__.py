"""Guard: a self-healing DevOps guard agent appliance.

``__version__`` is looked up on first use: ``importlib.metadata`` costs ~30 ms, and every
``guard`` command imports this package before it does anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    __version__: str

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("guard")
    except PackageNotFoundError:  # running from a source tree without installation
        found = "0.0.0+source"
    globals()["__version__"] = found
    return found
