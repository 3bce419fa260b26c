"""``python -m guard.cli``: the same as the ``guard`` command."""

from guard.cli import main

main()
