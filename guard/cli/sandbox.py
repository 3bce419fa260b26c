"""``guard sandbox``: build the toolbox image and run commands in the hardened sandbox."""

from __future__ import annotations

import typer

app = typer.Typer(help="Build sandbox images and run commands in the hardened sandbox.",
                  no_args_is_help=True)
