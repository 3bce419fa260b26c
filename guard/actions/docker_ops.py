"""Docker actions that change a container without replacing it: ``docker.exec`` (a command in
it, as argv), ``docker.network_connect`` (join a network) and ``docker.update`` (memory limit,
restart policy). Guard performs them through the engine API; the sandbox never sees the socket.

``docker.exec`` runs argv, never a shell: a string is split into words only when it holds no
shell syntax, and ``sh -c`` (or any shell with ``-c``) is refused, so what runs is exactly the
words a human approved. It is ``approval_only``: a learned skill that uses it is saved at
``trust: approval`` (``guard.agent.learning``); only a skill a human trusts runs it unasked.
Its output is capped (``OUTPUT_CAP`` bytes kept) and goes out only in the message, which the
step runner redacts; its run is bounded by ``timeout`` (at most ``MAX_TIMEOUT``): Guard stops
waiting and the step fails, but the engine has no call to stop an exec, so the process runs on
in the container until it ends.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from docker.errors import NotFound

from guard.actions.base import ActionError, ActionResult
from guard.actions.docker import DockerAction
from guard.util.docker_client import docker_client
from guard.util.textsafe import line_tail

SHELL_SYNTAX = re.compile(r"[;&|<>`$(){}*?~\n\\!#]")
SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "busybox"})
MAX_ARGV = 64
MAX_ARG = 4096
MAX_TIMEOUT = 300.0
OUTPUT_CAP = 64 * 1024
DEFAULT_NETWORKS = frozenset({"bridge", "host", "none"})
RESTART_POLICIES = frozenset({"no", "always", "unless-stopped", "on-failure"})
MIN_MEMORY, MAX_MEMORY = 6 * 2**20, 256 * 2**30  # the engine refuses below 6 MiB
UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def argv_of(value: Any) -> list[str]:
    """The command as argv; a shell string or ``sh -c`` is refused with how to write it."""
    if isinstance(value, str):
        if SHELL_SYNTAX.search(value):
            raise ActionError(
                f"docker.exec takes argv, not a shell command: {value!r} holds shell syntax. "
                "Give the words as a list (argv: [pg_isready, -h, localhost]); Guard never "
                "runs a shell"
            )
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise ActionError(f"docker.exec: cannot split argv {value!r}: {exc}") from None
    elif isinstance(value, Sequence) and all(isinstance(w, str | int | float) for w in value):
        words = [str(w) for w in value]
    else:
        raise ActionError("docker.exec needs argv: a list of words, e.g. argv: [nginx, -s, reload]")
    if not words:
        raise ActionError("docker.exec needs argv: a list of words, e.g. argv: [nginx, -s, reload]")
    if len(words) > MAX_ARGV or any(len(w) > MAX_ARG for w in words):
        raise ActionError(f"docker.exec: argv is limited to {MAX_ARGV} words of {MAX_ARG} chars")
    if words[0].rsplit("/", 1)[-1] in SHELLS and any(w.startswith("-c") for w in words[1:]):
        raise ActionError(
            f"docker.exec refuses a shell command ({' '.join(words[:2])} ...): give the "
            "program and its arguments as argv; Guard never runs sh -c"
        )
    return words


def _seconds(args: Mapping[str, Any], default: float) -> float:
    try:
        value = float(args.get("timeout", default))
    except (TypeError, ValueError):
        raise ActionError(f"timeout must be a number of seconds, not {args['timeout']!r}") from None
    if not 0 < value <= MAX_TIMEOUT:
        raise ActionError(f"timeout must be between 0 and {MAX_TIMEOUT:g} seconds")
    return value


class Exec(DockerAction):
    name = "docker.exec"
    description = "run a command in the target container (argv, no shell; approval-only)"
    params = ("container", "argv")
    approval_only = True

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        argv = argv_of(args.get("argv"))
        timeout = _seconds(args, 30.0)
        if container.status != "running":
            raise ActionError(f"docker.exec: container {container.name} is {container.status}")
        api = docker_client(timeout + 5).api  # reads stop at the deadline, not the call timeout
        try:
            created = api.exec_create(container.id, argv, stdout=True, stderr=True, tty=False)
            kept, total, finished = bytearray(), 0, threading.Event()

            def read() -> None:
                nonlocal total
                try:
                    for chunk in api.exec_start(created["Id"], stream=True):
                        total += len(chunk)
                        kept.extend(chunk[: max(0, OUTPUT_CAP - len(kept))])
                except Exception:  # the deadline below reports the time-out
                    pass
                finished.set()

            threading.Thread(target=read, daemon=True, name="docker-exec").start()
            timed_out = not finished.wait(timeout)
            code = None if timed_out else api.exec_inspect(created["Id"]).get("ExitCode")
        finally:
            api.close()
        text = kept.decode("utf-8", "replace")
        if total > len(kept):
            text += f"\n[output cut: {total} bytes, the first {len(kept)} kept]"
        how = f"timed out after {timeout:g}s" if timed_out else f"exit {code}"
        details = {"exit_code": code, "timed_out": timed_out, "bytes": total, "argv0": argv[0]}
        return ActionResult(
            code == 0,
            f"{shlex.join(argv)} in {container.name}: {how}\n{line_tail(text, 8000)}".rstrip(),
            details,
        )


class NetworkConnect(DockerAction):
    name = "docker.network_connect"
    description = "connect the container to a Docker network (e.g. one it dropped off)"
    params = ("container", "network")

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        if args.get("peer") and not args.get("network"):
            return self.join_peer(container, str(args["peer"]), args)
        network = str(args.get("network") or "")
        if not network or network in ("host", "none") or network.startswith("container:"):
            raise ActionError(
                f"docker.network_connect needs network=NAME of a bridge or overlay network "
                f"(not {network or 'nothing'!r})"
            )
        aliases = [a for a in str(args.get("aliases") or "").split(",") if a]
        joined = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
        if network in joined:
            return ActionResult(
                True, f"{container.name} is already on network {network}", {"network": network}
            )
        client = docker_client()
        try:
            client.networks.get(network).connect(container, aliases=aliases or None)
        finally:
            client.close()
        container.reload()
        now = sorted((container.attrs.get("NetworkSettings") or {}).get("Networks") or {})
        return ActionResult(
            network in now,
            f"connected {container.name} to network {network} (now on {', '.join(now)})",
            {"network": network, "networks": now},
        )

    def join_peer(self, container: Any, peer: str, args: Mapping[str, Any]) -> ActionResult:
        """``peer=nginx``: connect to each user-defined network ``peer`` is on and this one
        is not (a skill knows the proxy, not the network name its upstream dropped off)."""
        client = docker_client()
        try:
            theirs = client.containers.get(peer).attrs.get("NetworkSettings") or {}
        except NotFound:
            raise ActionError(f"docker.network_connect: no container named {peer!r}") from None
        finally:
            client.close()
        shared = sorted(n for n in theirs.get("Networks") or {} if n not in DEFAULT_NETWORKS)
        if not shared:
            raise ActionError(
                f"docker.network_connect: {peer} is on no user-defined network; "
                "give network=NAME instead"
            )
        said: list[str] = []
        now: list[str] = []
        for network in shared:
            result = self.apply(container, {**args, "peer": None, "network": network})
            said.append(result.message)
            now = result.details.get("networks", now)
            if not result.ok:
                return ActionResult(False, "; ".join(said), {"peer": peer, "networks": now})
        return ActionResult(
            True, "; ".join(said), {"peer": peer, "network": shared, "networks": now}
        )


def memory_bytes(text: Any, current: int = 0) -> int:
    """``512m`` -> bytes, or ``x2`` -> ``current`` (the limit now) times 2, within the
    engine's bounds; an error says the accepted forms."""
    if (f := re.fullmatch(r"\s*x\s*(\d+(?:\.\d+)?)\s*", str(text).lower())) is not None:
        if not current:
            raise ActionError(
                f"docker.update: memory={text} multiplies the limit, and the container has "
                "none; give a size like 512m"
            )
        if not 1 < float(f.group(1)) <= 8:
            raise ActionError(f"docker.update: memory={text}: the factor must be over 1, at most 8")
        return clamp_memory(int(current * float(f.group(1))))
    m = re.fullmatch(r"\s*(\d+)\s*([bkmg]?)\s*", str(text).lower())
    if m is None:
        raise ActionError(
            f"docker.update: memory={text!r} is not a size like 512m or 2g, nor a factor like x2"
        )
    return clamp_memory(int(m.group(1)) * UNITS[m.group(2)])


def clamp_memory(value: int) -> int:
    """``value`` if the engine takes it as a limit, else an error naming the bounds."""
    if not MIN_MEMORY <= value <= MAX_MEMORY:
        raise ActionError("docker.update: memory must be between 6m and 256g")
    return value


def restart_policy(text: Any) -> dict[str, Any]:
    name, _, count = str(text).partition(":")
    if name not in RESTART_POLICIES or (count and (name != "on-failure" or not count.isdigit())):
        raise ActionError(
            f"docker.update: restart={text!r} is not a policy: one of no, always, "
            "unless-stopped, on-failure[:N]"
        )
    return {"Name": name, "MaximumRetryCount": int(count or 0)}


class Update(DockerAction):
    name = "docker.update"
    description = "change a container's memory limit and/or restart policy (docker update)"
    params = ("container",)

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        if args.get("memory") is None and args.get("restart") is None:
            raise ActionError("docker.update needs memory=SIZE and/or restart=POLICY")
        host = container.attrs.get("HostConfig") or {}
        change: dict[str, Any] = {}
        before: dict[str, Any] = {}
        if args.get("memory") is not None:
            change["mem_limit"] = memory_bytes(args["memory"], host.get("Memory") or 0)
            if (host.get("MemorySwap") or 0) > 0:  # keep "no swap beyond the limit"
                change["memswap_limit"] = change["mem_limit"]
            before["memory"] = host.get("Memory") or 0
        if args.get("restart") is not None:
            change["restart_policy"] = restart_policy(args["restart"])
            before["restart"] = (host.get("RestartPolicy") or {}).get("Name") or "no"
        container.update(**change)
        container.reload()
        host = container.attrs.get("HostConfig") or {}
        after = {
            "memory": host.get("Memory") or 0,
            "restart": (host.get("RestartPolicy") or {}).get("Name") or "no",
        }
        after = {k: v for k, v in after.items() if k in before}
        said = ", ".join(f"{k} {before[k]} -> {after[k]}" for k in after)
        return ActionResult(True, f"updated {container.name}: {said}", {"before": before, **after})


ACTIONS = [Exec(), NetworkConnect(), Update()]
