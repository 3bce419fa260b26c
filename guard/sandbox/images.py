"""Building sandbox images, with or without a registry.

One spec, ``toolbox.json`` (suite, packages, user), drives both builds:

* online: ``dockerfile_text()`` renders the Dockerfile kept in ``sandbox-images/toolbox/`` (a
  test checks they agree) and ``build_online`` sends it to the engine, which pulls
  ``debian:bookworm-slim``;
* offline: ``build_offline`` runs ``debootstrap --variant=minbase`` against the Debian mirror,
  trims the result, and streams it into ``docker import`` with the same USER/WORKDIR/ENV/CMD.
  The finished root filesystem is cached per spec hash (and downloaded .debs in a shared
  ``--cache-dir``), so a rebuild is an import of seconds and a failed build resumes downloads.

``build_busybox`` makes a 2 MB image from a static busybox, for tests and for playbooks that
need nothing but a shell. Each builder reports ``on_stage(name)`` / ``on_detail(line)`` progress.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import DockerException

from guard.domain.exceptions import SandboxError

Progress = Callable[[str], None]
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_TRIM = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/lib/apt/lists",
    "var/cache/apt",
    "var/log",
)


def _quiet(_: str) -> None:
    return None


def toolbox_spec() -> dict[str, Any]:
    """The toolbox image spec shipped with Guard."""
    text = resources.files("guard.sandbox").joinpath("toolbox.json").read_text()
    spec: dict[str, Any] = json.loads(text)
    return spec


def spec_hash(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def dockerfile_text(spec: dict[str, Any] | None = None) -> str:
    """The toolbox Dockerfile for hosts with a registry (kept in sandbox-images/toolbox)."""
    spec = spec or toolbox_spec()
    pkgs = " \\\n        ".join(spec["packages"])
    return (
        "# Generated from guard/sandbox/toolbox.json by guard.sandbox.images.dockerfile_text();\n"
        "# the offline build (`guard sandbox build --offline`) makes the same image.\n"
        f"FROM {spec['base_image']}\n"
        "RUN apt-get update \\\n"
        " && apt-get install -y --no-install-recommends \\\n"
        f"        {pkgs} \\\n"
        f" && rm -rf {' '.join('/' + p + '/*' for p in _TRIM)} \\\n"
        " && mkdir -p /workspace && chmod 1777 /workspace /tmp\n"
        f"LABEL guard.toolbox={spec_hash(spec)}\n"
        f"USER {spec['user']}\n"
        "WORKDIR /workspace\n"
        'CMD ["sleep", "infinity"]\n'
    )


def _changes(spec: dict[str, Any]) -> list[str]:
    return [
        f"USER {spec['user']}",
        "WORKDIR /workspace",
        f"ENV {PATH_ENV}",
        "ENV LANG=C.UTF-8",
        'CMD ["sleep", "infinity"]',
        f"LABEL guard.toolbox={spec_hash(spec)}",
    ]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "guard" / "sandbox"


def rootfs_cache(cache_dir: Path | None = None, spec: dict[str, Any] | None = None) -> Path:
    """Where the offline build keeps the finished rootfs of ``spec`` (complete when it holds
    ``.guard-complete``)."""
    spec = spec or toolbox_spec()
    return (cache_dir or default_cache_dir()) / f"rootfs-{spec['suite']}-{spec_hash(spec)}"


def _import(client: docker.DockerClient, rootfs: Path, name: str, changes: list[str]) -> None:
    """``tar | docker import`` with ``changes``; the image it replaces is removed if unused."""
    try:
        previous: str | None = client.images.get(name).id
    except (DockerException, requests.RequestException):
        previous = None
    repo, tag = name, "latest"
    if ":" in name.rsplit("/", 1)[-1]:
        repo, tag = name.rsplit(":", 1)
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE
    )
    try:
        client.api.import_image(
            src=tar.stdout, repository=repo, tag=tag, changes=changes, stream_src=True
        )
    except (DockerException, requests.RequestException) as exc:
        raise SandboxError(f"docker import of {name} failed: {exc}") from None
    finally:
        if tar.poll() is None:
            tar.kill()
        tar.wait()
    if previous is not None and previous != client.images.get(name).id:
        with contextlib.suppress(DockerException, requests.RequestException):
            client.images.remove(previous)  # refused (and kept) while a container uses it


def _verify(client: docker.DockerClient, name: str, tools: list[str]) -> None:
    script = "for t in " + " ".join(tools) + '; do command -v "$t" >/dev/null || echo "$t"; done'
    try:
        out = client.containers.run(
            name,
            ["/bin/sh", "-c", script],
            network_mode="none",
            remove=True,
            user="65534:65534",
            read_only=True,
        )
    except (DockerException, requests.RequestException) as exc:
        raise SandboxError(f"built image {name} does not start: {exc}") from None
    missing = out.decode().split()
    if missing:
        raise SandboxError(f"image {name} lacks {', '.join(missing)}; check toolbox.json")


def build_offline(
    client: docker.DockerClient,
    name: str,
    *,
    cache_dir: Path | None = None,
    mirror: str | None = None,
    on_stage: Progress = _quiet,
    on_detail: Progress = _quiet,
    debootstrap: str | None = None,
    spec: dict[str, Any] | None = None,
) -> None:
    """Build the toolbox image ``name`` with debootstrap + docker import (no registry needed);
    another ``spec`` (same keys as ``toolbox.json``) builds another image the same way."""
    spec = spec or toolbox_spec()
    on_stage("checking tools")
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    debootstrap = shutil.which(debootstrap or "debootstrap", path=search)
    if debootstrap is None:
        raise SandboxError(
            "debootstrap is not installed: `apt-get install debootstrap` (Debian/Ubuntu), "
            "or build online with `guard sandbox build`"
        )
    if os.geteuid() != 0:
        raise SandboxError("the offline build runs debootstrap, which needs root: use sudo")
    cache = (cache_dir or default_cache_dir()).resolve()
    rootfs = rootfs_cache(cache, spec)
    if (rootfs / ".guard-complete").exists():
        on_stage("debootstrap (cached)")
        on_detail(str(rootfs))
    else:
        on_stage("debootstrap")
        partial = rootfs.with_name(rootfs.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        (cache / "debs").mkdir(parents=True, exist_ok=True)
        cmd = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(spec['packages'])}",
            f"--cache-dir={cache / 'debs'}",
            spec["suite"],
            str(partial),
            mirror or spec["mirror"],
        ]
        _stream(cmd, on_detail, "debootstrap")
        on_stage("trimming rootfs")
        for rel in _TRIM:
            target = partial / rel
            if target.is_dir():
                for child in target.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
        (partial / "workspace").mkdir(exist_ok=True)
        for rel in ("workspace", "tmp"):
            (partial / rel).chmod(0o1777)
        (partial / ".guard-complete").write_text(spec_hash(spec) + "\n")
        shutil.rmtree(rootfs, ignore_errors=True)
        partial.rename(rootfs)
    on_stage("importing into docker")
    _import(client, rootfs, name, _changes(spec))
    on_stage("verifying tools")
    _verify(client, name, spec["tools"])


def _stream(cmd: list[str], on_detail: Progress, what: str) -> None:
    tail: list[str] = []
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = [*tail[-19:], line]
            on_detail(line)
    if proc.returncode != 0:
        raise SandboxError(
            f"{what} failed (exit {proc.returncode}); last output:\n"
            + "\n".join(tail)
            + "\nIs the Debian mirror reachable? Re-running resumes from the download cache."
        )


def build_online(client: docker.DockerClient, name: str, *, on_detail: Progress = _quiet) -> None:
    """Build the toolbox image from its Dockerfile (the engine pulls the base image)."""
    try:
        for event in client.api.build(
            fileobj=io.BytesIO(dockerfile_text().encode()), tag=name, rm=True, decode=True
        ):
            if "error" in event:
                raise SandboxError(
                    f"docker build failed: {event['error'].strip()} (no registry? use --offline)"
                )
            if text := (event.get("stream") or event.get("status") or "").strip():
                on_detail(text)
    except (DockerException, requests.RequestException) as exc:
        raise SandboxError(f"docker build failed: {exc} (no registry? use --offline)") from None


def build_busybox(client: docker.DockerClient, name: str, *, busybox: str = "/bin/busybox") -> None:
    """A tiny sandbox image: a static busybox with every applet linked, user 65534."""
    src = Path(busybox)
    if not src.is_file():
        raise SandboxError(f"{busybox} not found: `apt-get install busybox-static`")
    with tempfile.TemporaryDirectory(prefix="guard-busybox-") as tmp:
        root = Path(tmp)
        for rel in ("bin", "etc", "proc", "sys", "dev", "tmp", "workspace"):
            (root / rel).mkdir()
        for rel in ("tmp", "workspace"):
            (root / rel).chmod(0o1777)
        shutil.copy2(src, root / "bin" / "busybox")
        applets = subprocess.run(
            [str(src), "--list"], capture_output=True, text=True, check=True
        ).stdout.split()
        for applet in applets:
            if applet != "busybox":
                (root / "bin" / applet).symlink_to("busybox")
        (root / "etc" / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
        )
        (root / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
        _import(
            client,
            root,
            name,
            [
                "USER 65534:65534",
                "WORKDIR /workspace",
                "ENV PATH=/bin",
                'CMD ["sleep", "3600"]',
                "LABEL guard.busybox=1",
            ],
        )


def image_exists(client: docker.DockerClient, name: str) -> bool:
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    except (DockerException, requests.RequestException) as exc:
        raise SandboxError(f"cannot query image {name}: {exc}") from None
    return True
