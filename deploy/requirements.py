#!/usr/bin/env python3
"""Print Guard's dependencies (and those of the named extras) from pyproject.toml, one per line:
the image installs them in a layer of their own, before Guard (deploy/Dockerfile).

    python3 deploy/requirements.py pyproject.toml [EXTRA...]
"""

from __future__ import annotations

import sys
import tomllib


def requirements(pyproject: str, extras: list[str]) -> list[str]:
    with open(pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    wanted = list(project.get("dependencies", []))
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            sys.exit(f"{pyproject}: no optional dependencies named {extra!r}")
        wanted += optional[extra]
    return list(dict.fromkeys(wanted))  # each once, in order


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n".join(requirements(sys.argv[1], sys.argv[2:])))
