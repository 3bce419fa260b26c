"""A command's stdin for an engine reached over TLS (``DOCKER_HOST=tcp://`` with
``DOCKER_TLS_VERIFY``): carried in the environment, since the exec socket cannot end it.

Covered by the ``docker-tls`` backend of tests/contracts/test_sandbox_contract.py.
"""

from __future__ import annotations

from guard.domain.exceptions import SandboxError

STDIN_ENV = "GUARD_STDIN"
STDIN_ENV_MAX = 120_000  # bytes: under Linux's 128 KiB limit on one environment string


def stdin_in_env(cmd: list[str], stdin: bytes) -> tuple[list[str], dict[str, str]]:
    """``cmd`` reading ``stdin`` from the environment, for an engine reached over TLS.

    A command's input ends when the client half-closes the exec socket; Python's ``ssl`` has no
    half-close (Go's ``CloseWrite``, what the docker CLI does), and shutting the write side
    tears TLS down, so the command's output would be lost. The input travels as ``GUARD_STDIN``
    instead, piped in by ``sh`` and unset before the command starts.
    """
    if len(stdin) > STDIN_ENV_MAX or b"\0" in stdin:
        raise SandboxError(
            f"a command's input over a TLS engine (DOCKER_HOST=tcp://...) must be text under "
            f"{STDIN_ENV_MAX} bytes (got {len(stdin)}): put larger input in a granted mount"
        )
    try:
        text = stdin.decode()
    except UnicodeDecodeError:
        raise SandboxError("a command's input over a TLS engine must be UTF-8 text") from None
    pipe = f'printf %s "${STDIN_ENV}" | {{ unset {STDIN_ENV}; exec "$@"; }}'
    return ["sh", "-c", pipe, "sh", *cmd], {STDIN_ENV: text}
