"""``load_settings``: the settings from a YAML file and the environment, or a ``ConfigError``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from guard.config.settings import Settings, yaml_path
from guard.config.sources import config_path
from guard.domain.exceptions import ConfigError
from guard.util.validation import format_validation_error


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings from ``path`` (see ``config_path``) and the environment.

    Raises ``ConfigError`` whose problems name the file and the field.
    """
    yaml_file = config_path(path)
    label = str(yaml_file) if yaml_file else "environment"
    if yaml_file is not None and not yaml_file.is_file():
        raise ConfigError([f"{yaml_file}: config file not found (pass --config or GUARD_CONFIG)"])
    token = yaml_path.set(yaml_file)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(label, exc)) from None
    except Exception as exc:  # YAML syntax errors surface from the source
        raise ConfigError([f"{label}: {exc}"]) from None
    finally:
        yaml_path.reset(token)
