"""Tiny images built offline (no registry): a busybox rootfs from the host's static busybox.

Used by the test fixtures (``tests/conftest.py``) and by the benchmarks (``bench/``).
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

BUSYBOX_IMAGE = "guard-test-busybox:latest"
BUSYBOX_APPLETS = ("sh", "sleep", "echo", "cat", "ls", "ps", "id", "kill", "yes", "dd", "head",
                   "true", "false", "wc", "tr", "nc", "httpd", "wget", "env", "mkdir", "rm")


class MissingBusybox(RuntimeError):
    pass


def busybox_rootfs_tar() -> bytes:
    """A rootfs tarball: /bin/busybox, its applet links, /etc/passwd, empty system dirs."""
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not Path(busybox).exists():
        raise MissingBusybox("busybox-static is needed to build the test image: "
                             "apt-get install busybox-static")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "tmp", "etc", "proc", "sys", "dev"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add(busybox, arcname="bin/busybox")
        for applet in BUSYBOX_APPLETS:
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        passwd = b"root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return buf.getvalue()


def ensure_busybox_image(client: Any, name: str = BUSYBOX_IMAGE) -> str:
    """Import the busybox image into the engine unless it is there already; return its name."""
    from docker.errors import ImageNotFound

    try:
        client.images.get(name)
        return name
    except ImageNotFound:
        pass
    repo, _, tag = name.partition(":")
    client.api.import_image_from_data(busybox_rootfs_tar(), repository=repo, tag=tag or "latest",
                                      changes=['CMD ["/bin/sh"]'])
    return name
