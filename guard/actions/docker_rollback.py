"""``docker.rollback``: recreate a container from the image it ran before its current one.

The previous image is the one Guard recorded when it saw the container's image change
(``guard.store.images``, fed by the docker monitors); with none recorded, or that image gone
from the engine, the rollback is refused and says why. The container is recreated with the
same configuration (its environment, labels, mounts, networks and aliases, restart policy,
limits), except what came from the current image rather than from whoever created it: a
command, entrypoint, working directory, user, environment entry or label equal to the current
image's default is left to the previous image's default. Its anonymous volumes are carried
over, so its data stays. A compose-managed container is recreated the same way (its compose
labels kept, so compose still owns it; the next ``compose up`` of a changed file replaces it).

The old container is renamed and stopped, not removed, until the new one has started; if the
new one fails to be created or started, the old one gets its name back and is started again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from docker.errors import ImageNotFound, NotFound

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.actions.docker import container_name, engine
from guard.store import images
from guard.store.db import open_database
from guard.util.rollback_names import rollback_aside

FROM_IMAGE = ("Cmd", "Entrypoint", "WorkingDir", "User", "StopSignal", "Healthcheck", "Volumes")
SKIP_NETWORKS = ("none", "host", "default")


def recorded(ctx: ActionContext, name: str) -> dict[str, Any]:
    """The previous image Guard recorded for ``name``; refused with why when there is none."""
    db = open_database(ctx.settings.database_url, read_only=True)
    try:
        with db.session() as session:
            seen = images.history(session, name)
    finally:
        db.dispose()
    previous = seen.get("previous")
    if not previous:
        raise ActionError(
            f"docker.rollback refuses {name}: Guard has no previous image recorded for it "
            "(it records one when a docker monitor watching the container sees its image "
            "change); roll back by hand with the image you want"
        )
    return {**previous, "current": seen.get("current") or {}, "changed_at": seen.get("changed_at")}


def config_for(old: Mapping[str, Any], current: Mapping[str, Any], image: str) -> dict[str, Any]:
    """The create body: ``old``'s configuration on ``image``, minus the current image's defaults."""
    cfg = dict(old.get("Config") or {})
    defaults = current.get("Config") or {}
    for key in FROM_IMAGE:
        if key in cfg and cfg[key] == defaults.get(key):
            cfg.pop(key)
    cfg["Env"] = [e for e in cfg.get("Env") or [] if e not in (defaults.get("Env") or [])]
    image_labels = defaults.get("Labels") or {}
    cfg["Labels"] = {k: v for k, v in (cfg.get("Labels") or {}).items() if image_labels.get(k) != v}
    if cfg.get("Hostname") == str(old.get("Id", ""))[:12]:
        cfg.pop("Hostname")  # the engine's default: the new container's own id
    cfg["Image"] = image
    host = dict(old.get("HostConfig") or {})
    binds = list(host.get("Binds") or [])
    for m in old.get("Mounts") or []:  # anonymous volumes: carried over by name
        dest = m.get("Destination")
        taken = any(b.endswith(f":{dest}") for b in binds) or any(
            x.get("Target") == dest for x in host.get("Mounts") or []
        )
        if m.get("Type") == "volume" and not taken:
            binds.append(f"{m['Name']}:{m['Destination']}")
    host["Binds"] = binds or None
    cfg["HostConfig"] = host
    mode = str(host.get("NetworkMode") or "")
    networks = (old.get("NetworkSettings") or {}).get("Networks") or {}
    if mode in networks and mode not in SKIP_NETWORKS:
        cfg["NetworkingConfig"] = {"EndpointsConfig": {mode: endpoint(networks[mode], old)}}
    return cfg


def endpoint(net: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    short = str(old.get("Id", ""))[:12]
    aliases = [a for a in net.get("Aliases") or [] if a != short]
    return {
        "Aliases": aliases or None,
        "IPAMConfig": net.get("IPAMConfig"),
        "Links": net.get("Links"),
    }


class Rollback:
    name = "docker.rollback"
    description = "recreate a container from its previous image (the one Guard saw it run before)"
    params = ("container",)

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        name = container_name(args, ctx)
        previous = await asyncio.to_thread(recorded, ctx, name)
        return await asyncio.to_thread(self._recreate, name, previous)

    def _recreate(self, name: str, previous: Mapping[str, Any]) -> ActionResult:
        client = engine()
        api = client.api
        try:
            try:
                old = api.inspect_container(name)
            except NotFound:
                raise ActionError(f"no container named {name!r}") from None
            if old.get("Image") == previous["id"]:
                return ActionResult(
                    True, f"{name} already runs {previous['ref']}", {"image": previous["ref"]}
                )
            try:
                api.inspect_image(previous["id"])
            except ImageNotFound:
                raise ActionError(
                    f"docker.rollback refuses {name}: its previous image {previous['ref']} "
                    f"({previous['id'][:19]}) is no longer in the engine (pruned?)"
                ) from None
            try:
                current = api.inspect_image(old["Image"])
            except ImageNotFound:
                current = {}
            body = config_for(old, current, previous["id"])
            new_id = self._swap(api, old, name, body)
        finally:
            client.close()
        return ActionResult(
            True,
            f"rolled {name} back from {previous['current'].get('ref')} to {previous['ref']} "
            f"(recorded {previous.get('changed_at')})",
            {
                "image": previous["ref"],
                "image_id": previous["id"],
                "from": previous["current"].get("ref"),
                "container_id": new_id[:12],
            },
        )

    def _swap(self, api: Any, old: Mapping[str, Any], name: str, body: dict[str, Any]) -> str:
        """Old out of the way, new in its place; on failure the old one back as it was."""
        old_id, was_running = old["Id"], bool((old.get("State") or {}).get("Running"))
        aside = rollback_aside(name)
        api.rename(old_id, aside)
        api.stop(old_id, timeout=10)
        new_id = ""
        try:
            new_id = api.create_container_from_config(body, name=name)["Id"]
            mode = (body["HostConfig"] or {}).get("NetworkMode")
            for net, conf in ((old.get("NetworkSettings") or {}).get("Networks") or {}).items():
                if net != mode and net not in SKIP_NETWORKS:
                    ep = endpoint(conf, old)
                    api.connect_container_to_network(new_id, net, aliases=ep["Aliases"])
            api.start(new_id)
        except Exception as exc:
            with contextlib.suppress(Exception):
                if new_id:
                    api.remove_container(new_id, force=True)
                api.rename(old_id, name)
                if was_running:
                    api.start(old_id)
            raise ActionError(
                f"docker.rollback {name}: the new container failed ({exc}); the old one is back"
            ) from None
        api.remove_container(old_id, v=False)
        return str(new_id)


ACTIONS = [Rollback()]
