#!/usr/bin/env python3
"""Build Guard's appliance image from ``deploy/Dockerfile`` on a machine with no registry.

The Dockerfile starts ``FROM python:3.11-slim``, which cannot be pulled here. This script makes
the two things a registry would have supplied, then runs the *same* Dockerfile:

1. a base image equivalent to python:3.11-slim (Debian bookworm, python3 3.11, venv, CA
   certificates; and systemd, for journalctl, which the Dockerfile would install) made with
   ``debootstrap --variant=minbase`` and ``docker import``, and the same with binutils instead
   of systemd for the build stage (it strips shared objects); each is tagged by a hash of its
   package list, so it is built once per machine;
2. a wheelhouse (``deploy/wheelhouse``) of Guard's dependencies, built by the host's pip (which
   may reach PyPI or a local mirror) and kept in ``~/.cache/guard/wheelhouse``
   (``GUARD_WHEEL_CACHE``) until pyproject.toml changes; the image build then installs with
   ``--no-index`` and runs with ``--network none``.

The dependency stage is tagged ``guard-offline/deps:<hash>``: while pyproject.toml and deploy/
are unchanged, a build after a change to guard/ finds it in Docker's cache and only installs
Guard itself (seconds, not minutes). ``--prune`` then removes the earlier builds' images.

The result is tagged ``guard:offline-<hash>``, the hash covering every input of the image
(Dockerfile, this script, pyproject.toml, README.md, guard/), so a re-run with nothing changed is
a no-op. It prints one JSON document: the tag and how long each step took. It imports nothing
from Guard, and needs root (debootstrap), the docker CLI, and Python 3.11 (wheels must match the
image's interpreter).

    python deploy/build_offline.py [--tag NAME] [--force] [--print-tag] [--prune]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from requirements import requirements  # deploy/requirements.py, beside this one

REPO = Path(__file__).resolve().parent.parent
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
BASE_REPO = "guard-offline/python"
IMAGE_REPO = "guard"
DEPS_REPO = "guard-offline/deps"  # the image's dependency stage (deploy/Dockerfile)
WHEELHOUSE = REPO / "deploy" / "wheelhouse"
WHEEL_CACHE = Path(os.environ.get("GUARD_WHEEL_CACHE", Path.home() / ".cache/guard/wheelhouse"))
BUILD_TOOLS = ("setuptools>=77", "wheel")  # the build backend pip needs to build /src offline
BUILD_PACKAGES = (*BASE_PACKAGES, "binutils")  # the build stage strips shared objects
RUNTIME_PACKAGES = (*BASE_PACKAGES, "systemd")  # journalctl, for journald monitors
INPUTS = ("deploy/Dockerfile", "deploy/build_offline.py", "deploy/slim.sh",
          "deploy/requirements.py", ".dockerignore", "pyproject.toml", "README.md")


def content_hash() -> str:
    """A hash of every file that goes into the image."""
    h = hashlib.sha256()
    files = [REPO / p for p in INPUTS]
    files += sorted(p for p in (REPO / "guard").rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        h.update(str(path.relative_to(REPO)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def image_tag() -> str:
    return f"{IMAGE_REPO}:offline-{content_hash()}"


def base_tag(packages: tuple[str, ...] = BASE_PACKAGES) -> str:
    key = hashlib.sha256(f"{SUITE} {' '.join(packages)}".encode()).hexdigest()[:10]
    return f"{BASE_REPO}:3.11-{SUITE}-{key}"


def image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr, **kwargs)  # type: ignore[call-overload]


def build_base(tag: str, packages: tuple[str, ...] = BASE_PACKAGES) -> None:
    """debootstrap a minimal bookworm with ``packages`` and import it as a docker image."""
    if shutil.which("debootstrap") is None:
        sys.exit("debootstrap is needed for the offline base image: apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="guard-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}",
             SUITE, str(rootfs), MIRROR])
        for junk in ("var/lib/apt/lists", "var/cache/apt/archives", "usr/share/doc",
                     "usr/share/man", "usr/share/locale"):
            shutil.rmtree(rootfs / junk, ignore_errors=True)
            (rootfs / junk).mkdir(parents=True, exist_ok=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."],
                               stdout=subprocess.PIPE)
        try:
            run(["docker", "import", "--change", "ENV LANG=C.UTF-8",
                 "--change", 'CMD ["python3"]', "-", tag], stdin=tar.stdout)
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            if tar.wait() != 0:
                sys.exit("tar of the rootfs failed")


def wheelhouse_key() -> str:
    """What the wheelhouse depends on: the dependencies (pyproject.toml) and the build tools."""
    h = hashlib.sha256((REPO / "pyproject.toml").read_bytes())
    h.update(" ".join(BUILD_TOOLS).encode())
    return h.hexdigest()[:12]


def build_wheelhouse(refresh: bool = False) -> bool:
    """Wheels for Guard's dependencies and its build backend, made by the host's pip, into
    ``deploy/wheelhouse``. They are kept in ``WHEEL_CACHE`` by :func:`wheelhouse_key`: the same
    files each time, so the image's dependency layer is found in Docker's cache (a fresh clone
    builds in seconds, not minutes). Returns whether they came from that cache."""
    if sys.version_info[:2] != (3, 11):
        sys.exit("run this with Python 3.11: the wheels must match the image's python3")
    cached = WHEEL_CACHE / wheelhouse_key()
    hit = (cached / ".complete").exists() and not refresh
    if not hit:
        partial = cached.with_name(cached.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        wanted = partial / "requirements.txt"
        wanted.write_text("\n".join(requirements(str(REPO / "pyproject.toml"), ["postgres"])))
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
        run([*pip, "wheel", "-q", "--wheel-dir", str(partial), "-r", str(wanted)])
        run([*pip, "download", "-q", "--only-binary=:all:", "--dest", str(partial), *BUILD_TOOLS])
        wanted.unlink()
        (partial / ".complete").touch()
        shutil.rmtree(cached, ignore_errors=True)
        partial.rename(cached)
    shutil.rmtree(WHEELHOUSE, ignore_errors=True)
    WHEELHOUSE.mkdir(parents=True)
    for wheel in cached.glob("*.whl"):
        try:
            os.link(wheel, WHEELHOUSE / wheel.name)
        except OSError:  # another filesystem
            shutil.copy2(wheel, WHEELHOUSE / wheel.name)
    return hit


def build_image(tag: str, base: str, builder: str) -> None:
    """The dependency stage first, tagged (``DEPS_REPO``: kept by ``--prune``, and found in the
    cache while its inputs are unchanged), then the image."""
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}  # the classic builder uses local base images
    common = ["docker", "build", "--network", "none", "--pull=false",
              "--build-arg", f"PYTHON_IMAGE={base}", "--build-arg", f"BUILD_IMAGE={builder}",
              "--build-arg", "PIP_ARGS=--no-index --find-links=/src/deploy/wheelhouse",
              "-f", str(REPO / "deploy" / "Dockerfile")]
    run([*common, "--target", "deps", "-t", deps_tag(), str(REPO)], env=env)
    run([*common, "-t", tag, str(REPO)], env=env)


def deps_tag() -> str:
    return f"{DEPS_REPO}:{wheelhouse_key()}"


def prune(keep: str) -> list[str]:
    """Remove this script's earlier images (other ``guard:offline-*`` and dependency-stage tags)
    and the untagged stages of its builds; return what was removed."""
    listed = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    old = [name for name in listed if name not in (keep, deps_tag())
           and (name.startswith(f"{IMAGE_REPO}:offline-") or name.startswith(f"{DEPS_REPO}:"))]
    for name in old:
        subprocess.run(["docker", "rmi", name], capture_output=True)
    subprocess.run(["docker", "image", "prune", "-f", "--filter", "label=guard.build-stage"],
                   capture_output=True)
    return old


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", help="also tag the image with this name (e.g. guard:latest)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    parser.add_argument("--print-tag", action="store_true", help="print the tag and exit")
    parser.add_argument("--prune", action="store_true",
                        help="remove this script's earlier images once this one is built")
    args = parser.parse_args(argv)
    tag = image_tag()
    if args.print_tag:
        print(tag)
        return 0
    report: dict[str, object] = {"tag": tag, "cached": False}
    started = time.monotonic()
    if image_exists(tag) and not args.force:
        report["cached"] = True
    else:
        base, builder = base_tag(RUNTIME_PACKAGES), base_tag(BUILD_PACKAGES)
        t = time.monotonic()
        for tag_, packages in ((base, RUNTIME_PACKAGES), (builder, BUILD_PACKAGES)):
            if not image_exists(tag_):
                build_base(tag_, packages)
                report["base_seconds"] = round(time.monotonic() - t, 1)
        report["base"] = base
        t = time.monotonic()
        report["wheels_cached"] = build_wheelhouse(refresh=args.force)
        report["wheelhouse_seconds"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        build_image(tag, base, builder)
        report["image_seconds"] = round(time.monotonic() - t, 1)
    if args.tag:
        run(["docker", "tag", tag, args.tag])
    if args.prune:
        report["pruned"] = prune(tag)
    size = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", tag],
                          capture_output=True, text=True, check=True).stdout.strip()
    report["size_mb"] = round(int(size) / 1e6, 1)
    report["total_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
