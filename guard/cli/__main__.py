"""``python -m guard.cli``: the same as the ``guard`` console script."""

from guard.cli import main

if __name__ == "__main__":
    main()
