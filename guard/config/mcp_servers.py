"""``llm.mcp_servers``: the MCP servers a team already runs, as tools for the model's
investigation (docs/DIAGNOSIS.md). Deny by default: a server's tool is offered to the model
only when ``allow`` names it; a tool in ``write`` is never offered, only named in a proposal a
human approves. Credentials are named, not written: ``headers`` and ``secrets`` give the names
of environment variables in Guard's environment, read when a server is opened."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pydantic import Field, model_validator

from guard.config.validators import INSECURE_HELP, Section
from guard.domain.durations import Duration
from guard.util.plainhttp import cleartext_host

SERVER_NAME = re.compile(r"[a-z][a-z0-9_]{0,23}")
"""A server's name prefixes its tools' names (``prometheus__execute_query``): OpenAI's
function names allow letters, digits, ``_`` and ``-`` up to 64 characters."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class McpServerSettings(Section):
    """One MCP server: a command Guard starts (stdio) or a URL (streamable HTTP)."""

    command: str | None = Field(default=None, description="the stdio server's executable")
    args: list[str] = Field(default_factory=list, description="its arguments")
    env: dict[str, str] = Field(
        default_factory=dict, description="plain (not secret) environment for a stdio server"
    )
    secrets: list[str] = Field(
        default_factory=list,
        description="names of variables in Guard's environment passed to a stdio server "
        "(its credential only: nothing else of Guard's environment reaches it)",
    )
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    url: str | None = Field(default=None, description="a streamable HTTP server's endpoint")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP header -> the name of the variable in Guard's environment holding "
        "its value (Authorization: GRAFANA_AUTH)",
    )
    allow: list[str] = Field(
        default_factory=list,
        description="the tools the model may call (deny by default: an unlisted tool is "
        "never offered)",
    )
    write: list[str] = Field(
        default_factory=list,
        description="tools that change something: never called by the model, only named in "
        "a proposal a human approves",
    )
    timeout: Duration = Field(default=20.0, gt=0, description="per call")
    connect_timeout: Duration = Field(
        default=30.0, gt=0, description="to start or reach the server and list its tools"
    )
    max_result_bytes: int = Field(
        default=65536,
        ge=1024,
        description="a result is cut to this many bytes before it is redacted and fenced",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (an HTTP server)")
        host = cleartext_host(self.url)
        if host is not None and self.headers and not self.allow_insecure_http:
            raise ValueError(
                f"plain http to {host} would send the headers' credentials in clear; use "
                "https, or set allow_insecure_http: true on a network you trust"
            )
        both = sorted(set(self.allow) & set(self.write))
        if both:
            raise ValueError(
                f"{', '.join(both)} in both allow and write: a tool that changes something is "
                "never the model's to call; keep it in write only"
            )
        for name in [*self.secrets, *self.headers.values()]:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not an environment variable's name: secrets and headers name "
                    "the variable that holds the value, never the value itself"
                )
        return self

    def credential_values(self) -> list[str]:
        """The values of the named credentials that are set, for redaction."""
        names = [*self.secrets, *self.headers.values()]
        return [v for n in names if (v := os.environ.get(n))]

    def resolved(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The named credentials' values (headers' and secrets'); a missing one raises."""
        source = os.environ if environ is None else environ
        names = [*self.secrets, *self.headers.values()]
        missing = [n for n in names if not source.get(n)]
        if missing:
            raise ValueError(f"{', '.join(missing)} not set in Guard's environment")
        return {n: source[n] for n in names}


def check_names(servers: Mapping[str, McpServerSettings]) -> None:
    """Each server's name fits a tool prefix."""
    for name in servers:
        if not SERVER_NAME.fullmatch(name):
            raise ValueError(
                f"llm.mcp_servers: {name!r} is not a usable name (lower-case letters, digits "
                "and _, starting with a letter, at most 24): it prefixes its tools' names"
            )
