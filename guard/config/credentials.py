"""How a configured secret is sent, where Guard must mask that form too (no pydantic here)."""

from __future__ import annotations

import base64

GIT_USER = "x-access-token"  # GitHub's name for a token used as a password; GitLab and Gitea
# accept any user name with a token


def basic_credentials(token: str) -> str:
    """The ``Authorization: Basic`` value git sends for ``skills.git_token``."""
    return base64.b64encode(f"{GIT_USER}:{token}".encode()).decode()
