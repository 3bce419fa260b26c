"""The ``skills`` section: learned skills in git, and how they are reviewed."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from guard.config.validators import INSECURE_HELP, Section, refuse_cleartext
from guard.domain.durations import Duration


class SkillsSettings(Section):
    learned_trust: Literal["trusted", "approval"] = Field(
        default="trusted", description="whether a learned skill runs unasked next time"
    )
    git_commit: bool = Field(default=True, description="commit learned skills to git")
    git_author: str = "Guard <guard@localhost>"
    git_branch: str = Field(default="main", description="the reviewed branch Guard runs from")
    git_token: SecretStr | None = Field(
        default=None,
        description="for http(s) remotes and the forge API; never written to .git/config or shown",
    )
    # git_token and allow_insecure_http come before git_remote: its check reads them
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    git_remote: str | None = Field(
        default=None,
        description="https, ssh or file URL the skills repository is cloned from and pushed to "
        "(or http: with git_token, only to a loopback host or with allow_insecure_http)",
    )
    review: Literal["direct", "branch", "pr"] | None = Field(
        default=None,
        description="direct: push to git_branch, trusted at once; branch "
        "(default with a remote): push to guard/learned/<name>, under review until it is on "
        "git_branch; pr: branch plus a pull/merge request",
    )
    sync_every: Duration = Field(
        default=60.0,
        description="how often `guard run` fetches git_branch and fast-forwards (0: never)",
    )
    forge: Literal["github", "gitlab", "gitea"] | None = Field(
        default=None, description="the forge's API for review: pr (default: from the host)"
    )
    forge_api_url: str | None = Field(
        default=None,
        description="the forge's REST API base URL "
        "(default: https://api.github.com, <host>/api/v4 or "
        "<host>/api/v1)",
    )

    demote_after: int = Field(
        default=2, ge=1, description="failed verifications in a row that drop a skill to approval"
    )
    promote_after: int = Field(
        default=3, ge=1, description="verified recoveries before Guard proposes trust: trusted"
    )
    promote_window: Duration = Field(
        default=30 * 86400.0, description="no reversal within this long, to propose a promotion"
    )
    stale_after: Duration = Field(
        default=90 * 86400.0, description="a skill unused this long is listed as stale"
    )

    @field_validator("git_remote")
    @classmethod
    def _remote(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        scp_like = re.fullmatch(r"[\w.-]+@[\w.-]+:[^/].*", value)
        scheme = urlsplit(value).scheme
        if not scp_like and scheme not in ("https", "http", "ssh", "file"):
            raise ValueError(
                f"skills.git_remote {value!r}: use an https, http, ssh or file URL, e.g. "
                "https://github.com/acme/guard-skills.git (skills.git_token goes over http only "
                "to a loopback host, or with skills.allow_insecure_http: true)"
            )
        if scheme in ("https", "http") and urlsplit(value).password is not None:
            raise ValueError(
                f"skills.git_remote: the {scheme} URL holds a password or token; put it in "
                "skills.git_token (GUARD_SKILLS__GIT_TOKEN) so it never lands in "
                ".git/config"
            )
        return refuse_cleartext(value, info, "git_token")

    @field_validator("forge_api_url")
    @classmethod
    def _forge_in_clear(cls, value: str | None, info: ValidationInfo) -> str | None:
        return refuse_cleartext(value, info, "git_token")

    @field_validator("git_branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        if (
            not re.fullmatch(r"[A-Za-z0-9._/-]+", value)
            or value.startswith(("-", "/"))
            or ".." in value
            or value.endswith((".lock", "/"))
        ):
            raise ValueError(f"skills.git_branch {value!r}: not a valid branch name, e.g. main")
        return value

    @model_validator(mode="after")
    def _review_default(self) -> SkillsSettings:
        if self.review is None:
            self.review = "branch" if self.git_remote else "direct"
        elif self.review != "direct" and not self.git_remote:
            raise ValueError(
                f"skills.review {self.review!r} needs skills.git_remote (a "
                "reviewer works on a remote); set it, or use review: direct"
            )
        if self.review != "direct" and not self.git_commit:
            raise ValueError(f"skills.review {self.review!r} needs skills.git_commit: true")
        return self
