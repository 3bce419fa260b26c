"""The skills repository's remote: clone at start, publish learned skills, sync merges and reverts.

What the rest of Guard calls: ``remote_for``, ``publish_learned``, ``sync_now`` (and
``SkillsRemote`` itself). The clone and publishing (``ensure``, ``check_local``, ``publish``)
are ``guard.skills.upstream``; fetching, fast-forwarding and settling pending skills (``sync``)
are ``guard.skills.sync``. Every failure is a ``SkillsRemoteError`` (``publish``) or a line in
``SyncResult.errors`` (``sync``); ``guard run`` turns the latter into an incident on Guard itself.
"""

from __future__ import annotations

from loguru import logger

from guard.config import Settings
from guard.domain.records import Severity, Signal
from guard.skills import promotion
from guard.skills.library import SkillLibrary
from guard.skills.revisions import close_steps
from guard.skills.sync import SkillsRemote, SyncResult
from guard.skills.writer import LearnedSkill
from guard.store.db import Database

__all__ = [
    "MONITOR_ID",
    "SkillsRemote",
    "SyncResult",
    "publish_learned",
    "remote_for",
    "sync_now",
    "sync_signals",
]

MONITOR_ID = "skills-remote"


def sync_signals(remote: str, result: SyncResult) -> list[Signal]:
    """A ``skills_sync_error`` signal on Guard itself per problem (like ``monitor_error``), or
    one ``ok`` signal that resolves them once a sync works."""
    target = f"skills:{remote}"
    if not result.errors:
        return [
            Signal(
                monitor_id=MONITOR_ID,
                source="guard",
                target=target,
                kind="skills_sync_error",
                message="skills sync works",
                status="ok",
            )
        ]
    return [
        Signal(
            monitor_id=MONITOR_ID,
            source="guard",
            target=target,
            kind="skills_sync_error",
            severity=Severity.warning,
            message=f"skills sync with {remote} failed: {error}"[:1000],
            details={"remote": remote},
        )
        for error in result.errors
    ]


def sync_now(
    settings: Settings, *, log: bool = True, db: Database | None = None
) -> tuple[SyncResult, list[Signal]]:
    """One sync (``guard run``'s job and ``guard skills sync``); never raises. ``log``: log
    what happened (the CLI prints it instead). With ``db``, proposed promotions are sent and
    settled too (``guard.skills.promotion``)."""
    try:
        remote = SkillsRemote(settings)
        result = remote.sync()
        if db is not None:
            more = promotion.settle(remote, db, settings.builtin_skills_dir)
            result.notes += more.notes
            result.errors += more.errors
            result.changed = result.changed or more.changed
            for name, revision in result.revised:  # merged: the old steps' ladder is done
                with db.session() as session:
                    close_steps(session, name, revision)
    except Exception as exc:  # an unexpected failure is a problem to report, not a crash
        logger.opt(exception=exc).error("skills sync failed")
        result = SyncResult(errors=[f"{type(exc).__name__}: {exc}"])
    for note in result.notes if log else []:
        logger.info("skills sync: {}", note)
    for error in result.errors if log else []:
        logger.warning("skills sync: {}", error)
    return result, sync_signals(str(settings.skills.git_remote), result)


def remote_for(settings: Settings) -> SkillsRemote | None:
    """The skills remote when ``skills.git_remote`` is set."""
    return SkillsRemote(settings) if settings.skills.git_remote else None


def publish_learned(
    remote: SkillsRemote, learned: LearnedSkill, library: SkillLibrary | None = None
) -> str:
    """Send a just-learned skill to the remote; the text to add to the learned message
    (never raises: a failed push is kept and retried at the next sync). ``library`` is
    refreshed: the skill's review entry now has its link."""
    try:
        return "; " + remote.publish(learned.name if learned.branch else None)
    except Exception as exc:
        logger.warning("could not publish skill {}: {}", learned.name, exc)
        where = learned.branch or remote.branch
        return (
            f"; not on the remote yet ({exc}); kept on {where} here, Guard retries at the next sync"
        )
    finally:
        if library is not None:
            library.refresh()
