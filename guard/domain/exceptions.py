"""Every error Guard raises on purpose, in one tree.

    GuardError
    ├── ConfigError            a setting, playbook or skill is invalid (carries every problem)
    ├── StoreError             the database cannot be opened or written
    ├── AuditChainBroken       the audit log's hash chain does not hold
    ├── MonitorError           a monitor could not observe its target (becomes a signal)
    ├── SandboxError           the command sandbox cannot start or run (engine, image, grants)
    ├── RailwayError           Railway's API refused, failed or answered with GraphQL errors
    ├── KubernetesError        the Kubernetes API refused or could not be reached
    ├── SkillsRemoteError      the skills repository's remote or forge refused or failed
    ├── NotLeader              this replica does not hold the leader lease: it must not act
    └── InvalidTransition      an incident state change the state machine forbids

Adapters translate errors from the libraries underneath (docker, httpx, SQL) into these at their
boundary, so the rest of Guard only ever catches ``GuardError``. Messages say what to do.
"""

from __future__ import annotations

from collections.abc import Sequence


class GuardError(Exception):
    """Base of every error Guard raises deliberately."""


class ConfigError(GuardError):
    """One or more configuration problems; ``problems`` holds one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class StoreError(GuardError):
    """The database is unreachable or cannot be written."""


class AuditChainBroken(GuardError):
    """The audit chain does not verify; ``seq`` names the first bad entry."""

    def __init__(self, seq: int, reason: str) -> None:
        self.seq = seq
        self.reason = reason
        super().__init__(f"audit entry #{seq}: {reason}")


class MonitorError(GuardError):
    """A monitor failed to observe its target; the message says what failed and why."""


class SandboxError(GuardError):
    """The sandbox itself failed (not the command in it); the message says how to fix it."""


class InvalidTransition(GuardError):
    """An incident was asked to move to a state its current state cannot reach."""


class RailwayError(GuardError):
    """A Railway API call failed; the message carries Railway's own message when it sent one.

    ``retryable`` says whether trying again soon may help (rate limits, 5xx, timeouts);
    ``retry_after`` is how long Railway asked to wait, when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(message)


class KubernetesError(GuardError):
    """A Kubernetes API call failed; ``status`` is the HTTP status when there was an answer."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class SkillsRemoteError(GuardError):
    """A git or forge operation on the skills remote failed (unreachable, rejected push,
    conflict); the message says what happened to local work (never lost) and what to do."""


class NotLeader(GuardError):
    """This replica does not hold the leader lease (a standby, or a leader whose lease ran out
    or was taken over): the action it was about to claim must not happen."""
