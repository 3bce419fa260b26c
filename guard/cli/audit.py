"""``guard audit verify|anchor``: check the audit log's hash chain; record its head outside the
database."""

from __future__ import annotations

import typer

from guard.cli.common import ConfigOption, database, err, fail, out, settings_from
from guard.domain.exceptions import AuditChainBroken
from guard.domain.records import utcnow
from guard.store import audit as chain
from guard.store.db import Database
from guard.store.state import put_state

app = typer.Typer(help="The tamper-evident audit log.", no_args_is_help=True)


def _head_option(value: str) -> chain.Anchor:
    """``SEQ:HASH`` as a daily report shows it (``#``, ``head`` and quotes around it allowed)."""
    value = value.strip().strip("`'\"").removeprefix("head").strip().lstrip("#")
    seq, _, digest = value.partition(":")
    if not seq.isdigit() or not digest:
        fail(f"--head {value!r}: use SEQ:HASH, as the daily report shows it")
    return chain.Anchor(int(seq), digest, "", f"the head given with --head (#{seq})")


@app.command("verify")
def verify(
    heads: list[str] = typer.Option(
        [],
        "--head",
        metavar="SEQ:HASH",
        help="Also check a head kept elsewhere (e.g. from a daily report in the chat).",
    ),
    config: str | None = ConfigOption,
) -> None:
    """Exit 0 if the hash chain holds and matches every anchor; otherwise exit 1 naming the first
    broken entry or the anchor it contradicts."""
    settings = settings_from(config, logging=False)
    db = database(settings)
    path = settings.data_dir / chain.ANCHORS
    broken: AuditChainBroken | None = None
    with db.session() as session:
        try:
            kept = chain.read_anchors(path)
            anchors = kept + [_head_option(h) for h in heads]
            n = chain.verify(session, anchors, file_lines=len(kept))
        except AuditChainBroken as exc:
            broken = exc
        seq, head = chain.head(session)
    if broken is not None:  # recorded once the reading transaction has ended
        _record(db, {"ok": False, "seq": broken.seq, "reason": broken.reason})
        err.print(
            f"audit chain BROKEN at entry #{broken.seq}: {broken.reason}",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
    _record(db, {"ok": True, "entries": n, "seq": seq})
    keyed = "keyed" if head.startswith(chain.KEYED) else "unkeyed"
    out.print(
        f"audit chain ok: {n} entries, head #{seq} {head[:21]} ({keyed}), "
        f"{len(anchors)} anchor(s) hold",
        markup=False,
        soft_wrap=True,
    )


def _record(db: Database, result: dict[str, object]) -> None:
    """Keep the outcome for the web console's overview (a state row, not an audit entry)."""
    with db.session() as session:
        put_state(session, chain.VERIFIED, {"at": utcnow().isoformat(), **result})


@app.command("anchor")
def anchor(config: str | None = ConfigOption) -> None:
    """Append the chain's head {seq, hash, at} to audit-anchors.jsonl on the data volume."""
    settings = settings_from(config, logging=False)
    db = database(settings)
    path = settings.data_dir / chain.ANCHORS
    a = chain.anchor(db, path, actor="cli")
    out.print(f"anchored head #{a.seq} {a.hash} in {path}", markup=False, soft_wrap=True)
