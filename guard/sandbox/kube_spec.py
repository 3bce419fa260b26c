"""The manifests of one ``kubernetes`` sandbox step: its Pod and, when it needs one, its Secret.

Pure functions, no API calls, so what Guard submits can be read and checked on its own (the
tests deserialize it into the official client's ``V1Pod``). The Pod meets Pod Security
"restricted" (non-root, read-only root, every capability dropped, ``RuntimeDefault`` seccomp, no
privilege escalation), mounts no service-account token, has CPU, memory and ephemeral-storage
limits and an ``activeDeadlineSeconds``, and runs the command as argv. Granted secrets and the
command's stdin travel in a Secret made for that one pod, never as literal values in its spec.
A network grant is a label a NetworkPolicy of that name selects (deploy/kubernetes/).
"""

from __future__ import annotations

import math
import os
import re
import socket
import time
from collections.abc import Mapping
from typing import Any

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.sandbox import owners

CONTAINER = "step"
LABEL_NETWORK = "guard.network"  # the NetworkPolicy a grant selects
DEADLINE = "guard.deadline"  # annotation: after this (epoch seconds) the pod is surely an orphan
STDIN_KEY = "guard-stdin"  # a Secret key no environment variable name can clash with
STDIN_DIR = "/run/guard-stdin"
GRACE = 30  # seconds past the command's budget before the cluster ends the pod itself
_UNITS = {"b": "", "k": "Ki", "m": "Mi", "g": "Gi"}


def quantity(size: str) -> str:
    """A Docker size (``256m``, ``1g``, ``1048576``) as a Kubernetes quantity (``256Mi``)."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([bkmg])?b?", size.strip(), re.IGNORECASE)
    if found is None:
        raise SandboxError(f"size {size!r}: use a number with b, k, m or g, e.g. '256m'")
    unit = (found[2] or "b").lower()
    if "." in found[1]:  # 1.5g: whole bytes, as Kubernetes takes no fractions of a byte
        return str(math.ceil(float(found[1]) * 1024 ** "bkmg".index(unit)))
    return found[1] + _UNITS[unit]


def label_value(text: str) -> str:
    """``text`` as a valid label value (at most 63 of ``[A-Za-z0-9_.-]``, alphanumeric ends)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:63].strip("-_.") or "x"


def numeric_user(settings: SandboxSettings) -> tuple[int, int]:
    """``sandbox.user`` as (uid, gid): the kubelet checks ``runAsNonRoot`` on numbers only."""
    uid, _, gid = settings.user.partition(":")
    if not uid.isdigit() or not (gid or uid).isdigit():
        raise SandboxError(
            f"sandbox.user {settings.user!r}: the kubernetes backend needs numbers (uid:gid), "
            "e.g. 65534:65534"
        )
    return int(uid), int(gid or uid)


def check_image(settings: SandboxSettings, image: str) -> str:
    """``image`` if ``sandbox.image`` or one of ``sandbox.images``; else a ``SandboxError``."""
    allowed = [settings.image, *settings.images]
    if image not in allowed:
        raise SandboxError(
            f"image {image!r} is not allowed for sandbox pods (allowed: {', '.join(allowed)}): "
            "add it to sandbox.images"
        )
    return image


def labels(incident_id: str, network: str | None) -> dict[str, str]:
    """What ties a step pod to this Guard replica and its incident (and selects its policy)."""
    found = {
        owners.LABEL: "1",
        owners.LABEL_OWNER: label_value(owners.INSTANCE_ID),
        owners.LABEL_INCIDENT: label_value(incident_id),
        owners.LABEL_HOST: label_value(socket.gethostname()),
        owners.LABEL_PID: str(os.getpid()),
        owners.LABEL_PID_STARTED: owners.process_started(os.getpid()),
    }
    if network:
        found[LABEL_NETWORK] = label_value(network)
    return found


def secret_manifest(
    name: str, meta: Mapping[str, Any], secrets: Mapping[str, str], stdin: bytes | None
) -> dict[str, Any] | None:
    """The Secret holding one pod's granted secrets and stdin, or None if it needs neither."""
    if not secrets and stdin is None:
        return None
    data: dict[str, str] = dict(secrets)
    if stdin is not None:
        data[STDIN_KEY] = stdin.decode("utf-8", "surrogateescape")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, **meta},
        "stringData": data,
    }


def pod_manifest(
    settings: SandboxSettings,
    *,
    name: str,
    meta: Mapping[str, Any],
    image: str,
    argv: list[str],
    env: Mapping[str, str],
    secret_names: list[str],
    secret: str | None,
    stdin: bool,
    workdir: str | None,
    timeout: float,
) -> dict[str, Any]:
    """The step's Pod (see the module docstring for what it promises)."""
    uid, gid = numeric_user(settings)
    scratch = quantity(settings.tmpfs_size)
    mounts: list[dict[str, Any]] = [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "workspace", "mountPath": "/workspace"},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "tmp", "emptyDir": {"sizeLimit": scratch}},
        {"name": "workspace", "emptyDir": {"sizeLimit": scratch}},
    ]
    command = list(argv)
    if stdin and secret:
        mounts.append({"name": "stdin", "mountPath": STDIN_DIR, "readOnly": True})
        volumes.append(
            {
                "name": "stdin",
                "secret": {
                    "secretName": secret,
                    "items": [{"key": STDIN_KEY, "path": "stdin"}],
                    "defaultMode": 0o444,
                },
            }
        )
        command = ["/bin/sh", "-c", f'exec "$@" < {STDIN_DIR}/stdin', "sh", *argv]
    variables: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in env.items()]
    variables += [
        {"name": n, "valueFrom": {"secretKeyRef": {"name": secret, "key": n}}} for n in secret_names
    ]
    storage_mib = 2 * _mebibytes(settings.tmpfs_size) + 64  # scratch plus its log and layers
    limits = {
        "cpu": f"{max(1, round(settings.cpus * 1000))}m",
        "memory": quantity(settings.memory),
        "ephemeral-storage": f"{storage_mib}Mi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "activeDeadlineSeconds": math.ceil(timeout) + GRACE,
            "terminationGracePeriodSeconds": 0,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": uid,
                "runAsGroup": gid,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": CONTAINER,
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": command,
                    "workingDir": workdir or "/workspace",
                    "env": variables,
                    "resources": {"limits": limits, "requests": dict(limits)},
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "privileged": False,
                        "readOnlyRootFilesystem": True,
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "volumeMounts": mounts,
                }
            ],
            "volumes": volumes,
        },
    }


def metadata(incident_id: str, network: str | None, timeout: float) -> dict[str, Any]:
    """Labels and annotations shared by a step's Pod and Secret."""
    return {
        "labels": labels(incident_id, network),
        "annotations": {
            owners.LABEL_INCIDENT: incident_id,
            DEADLINE: str(int(time.time() + timeout + 2 * GRACE)),
        },
    }


def _mebibytes(size: str) -> int:
    text = quantity(size)
    scale = {"": 1 / 2**20, "Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    number = re.match(r"\d+", text)
    assert number is not None
    return max(1, math.ceil(int(number[0]) * scale[text[number.end() :]]))
