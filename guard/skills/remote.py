"""The skills repository's remote: clone at start, publish learned skills, sync merges and reverts.

- ``ensure``: with ``skills_dir`` empty or missing, clone ``skills.git_remote``; otherwise check
  that its ``origin`` is that remote, and say so clearly when it is not.
- ``publish``: ``direct`` pushes ``git_branch``; ``branch`` pushes ``guard/learned/<name>``;
  ``pr`` also opens a pull/merge request whose body names the incident, the fix and the
  evidence. A failed push is kept locally and retried at the next sync.
- ``sync``: fetch, fast-forward ``git_branch`` (never a merge commit, never a force-push, never
  over local edits), push what is not on the remote yet, then settle each pending skill: on
  ``git_branch`` now -> merged (its ``.review`` copy goes; the merged folder runs); its branch
  deleted or its request closed unmerged -> rejected (it disappears). A skill reverted or deleted
  on ``git_branch`` disappears with the fast-forward itself. A skill whose files are not
  regular files inside the repository (a symlink, a submodule, over the size limits) is named
  in the notes and quarantined by the loader; git never checks a link out as a link.

Every failure is a ``SkillsRemoteError`` (``publish``) or a line in ``SyncResult.errors``
(``sync``); ``guard run`` turns the latter into an incident on Guard itself.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from loguru import logger

from guard.config import Settings
from guard.exceptions import SkillsRemoteError
from guard.records import Severity, Signal
from guard.skills.files import NO_SYMLINKS, recorded_problems
from guard.skills.forge import Forge, branch_url, build_forge
from guard.skills.gitrepo import LOCK, Git
from guard.skills.library import SkillLibrary
from guard.skills.review import BRANCH_PREFIX, Review, ReviewBook, review_dir
from guard.skills.writer import LearnedSkill

EXCLUDES = (".review/", ".incoming/")


@dataclass
class SyncResult:
    changed: bool = False  # the working tree moved, or a pending skill was settled
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _same_remote(a: str, b: str) -> bool:
    def norm(u: str) -> str:
        u = u.strip().rstrip("/")
        return u[:-4] if u.endswith(".git") else u

    return norm(a) == norm(b)


class SkillsRemote:
    """Git operations between ``skills_dir`` and ``skills.git_remote``."""

    def __init__(self, settings: Settings, *, forge: Forge | None = None) -> None:
        s = settings.skills
        if not s.git_remote:
            raise SkillsRemoteError("skills.git_remote is not set")
        self.url = s.git_remote
        self.branch = s.git_branch
        self.mode = s.review or "branch"
        self.root = settings.skills_dir.resolve()
        token = s.git_token.get_secret_value() if s.git_token else None
        self.git = Git(self.root, token, s.git_author, remote=self.url)
        self.book = ReviewBook(self.root)
        self._forge = forge
        self._forge_args = (s.forge, s.forge_api_url, token)

    @property
    def forge(self) -> Forge:
        if self._forge is None:
            kind, api, token = self._forge_args
            self._forge = build_forge(kind, api, self.url, token)
        return self._forge

    # -- the clone ------------------------------------------------------------------------------

    def ensure(self) -> str | None:
        """Clone when ``skills_dir`` is empty or missing; else check it tracks the remote.
        Returns what was done (or None)."""
        root = self.root
        if not root.exists() or not any(root.iterdir()):
            root.mkdir(parents=True, exist_ok=True)
            self.git.run("clone", "-q", "--no-checkout", self.url, str(root), cwd=root.parent)
            if self.git.rev(f"origin/{self.branch}"):
                self.git.run(
                    "checkout", "-q", "-B", self.branch, "--track", f"origin/{self.branch}"
                )
            else:  # an empty remote, or the branch does not exist yet
                self.git.run("symbolic-ref", "HEAD", f"refs/heads/{self.branch}")
            self._exclude()
            return f"cloned {self.url} ({self.branch}) into {root}"
        self.check_local()
        self._exclude()
        return None

    def _exclude(self) -> None:
        """Keep Guard's own folders out of git, and links out of the checkout for anyone who
        runs git here by hand too."""
        self.git.run("config", "core.symlinks", "false")
        self._exclude_folders()

    def check_local(self) -> None:
        """Raise ``SkillsRemoteError`` when a non-empty ``skills_dir`` is not a clone of
        ``skills.git_remote`` (no network: ``guard check-config`` uses it too)."""
        root = self.root
        if not root.exists() or not any(root.iterdir()):
            return  # cloned at start
        if not (root / ".git").exists():
            raise SkillsRemoteError(
                f"skills_dir {root} is not empty and not a git clone of skills.git_remote "
                f"{self.url}: move its contents away and Guard clones it at start, or run "
                f"`git -C {root} init && git -C {root} remote add origin {self.url}` and push "
                "them there"
            )
        proc = self.git.run("remote", "get-url", "origin", check=False)
        have = proc.stdout.strip()
        if proc.returncode != 0:
            raise SkillsRemoteError(
                f"skills_dir {root} has no remote 'origin', but skills.git_remote is {self.url}: "
                f"run `git -C {root} remote add origin {self.url}`"
            )
        if not _same_remote(have, self.url):
            raise SkillsRemoteError(
                f"skills_dir {root} tracks origin {have}, not skills.git_remote {self.url}: "
                f"fix skills.git_remote, or run `git -C {root} remote set-url origin {self.url}`"
            )

    def _exclude_folders(self) -> None:
        path = Path(self.git.out("rev-parse", "--absolute-git-dir")) / "info" / "exclude"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text() if path.exists() else ""
        missing = [e for e in EXCLUDES if e not in text.splitlines()]
        if missing:
            path.write_text(
                text + ("" if text.endswith("\n") or not text else "\n") + "\n".join(missing) + "\n"
            )

    def taken(self) -> set[str]:
        """Skill names whose review branch exists here or on the remote (never reused)."""
        refs = self.git.run(
            "for-each-ref",
            "--format=%(refname)",
            f"refs/heads/{BRANCH_PREFIX}",
            f"refs/remotes/origin/{BRANCH_PREFIX}",
            check=False,
        ).stdout
        return {line.rsplit("/", 1)[-1] for line in refs.split()}

    # -- publishing -----------------------------------------------------------------------------

    def publish(self, name: str | None = None) -> str:
        """Send the newest learned skill (``name``; None: ``git_branch``) to the remote;
        returns how to find it. Raises ``SkillsRemoteError``; local work is kept."""
        if self.mode == "direct" or name is None:
            self._push(f"HEAD:refs/heads/{self.branch}")
            return f"pushed to {self.branch}"
        entry = self.book.get(name)
        if entry is None:
            raise SkillsRemoteError(f"skill {name} is not waiting for review")
        entry = self._publish_branch(name, entry)
        return f"under review: {entry.link}"

    def _publish_branch(self, name: str, entry: Review) -> Review:
        if not entry.pushed:
            self._push(f"refs/heads/{entry.branch}:refs/heads/{entry.branch}")
            entry = replace(
                entry, pushed=True, url=entry.url or branch_url(self.url, entry.branch, None)
            )
            self.book.put(name, entry)
        if self.mode == "pr" and entry.pr is None:
            pr = self.forge.open(
                entry.branch, self.branch, self._title(name, entry), self.body(name, entry)
            )
            entry = replace(entry, pr=pr.number, url=pr.url)
            self.book.put(name, entry)
        return entry

    def _push(self, refspec: str) -> None:
        proc = self.git.run("push", "--porcelain", "origin", refspec, check=False)
        if proc.returncode != 0:
            text = proc.stderr + proc.stdout
            why = (
                "rejected: the remote has commits this clone does not (non-fast-forward)"
                if "non-fast-forward" in text or "fetch first" in text or "[rejected]" in text
                else " / ".join(text.strip().splitlines()[-3:])
            )
            raise SkillsRemoteError(
                f"push of {refspec.split(':')[-1].removeprefix('refs/heads/')} to {self.url} "
                f"failed: {why}. The local commit is kept; nothing was force-pushed"
            )

    @staticmethod
    def _title(name: str, entry: Review) -> str:
        return f"guard: learn skill {name} from incident #{entry.incident}"

    def body(self, name: str, entry: Review) -> str:
        """The pull request's description: the incident, the fix and the evidence."""
        return (
            f"Guard learned the skill `{name}` from a human's fix.\n\n"
            f"- **Incident**: #{entry.incident} {entry.title}\n"
            f"- **Fix**: `{entry.fix}`\n"
            f"- **Approved by**: {entry.approver}\n"
            f"- **Evidence**: the original check passed again: {entry.verified}\n\n"
            f"Until this is merged into `{self.branch}` Guard never runs it unasked; it offers "
            "it to a human first. Merge to trust it; close this to drop it.\n"
        )

    # -- sync -----------------------------------------------------------------------------------

    def sync(self) -> SyncResult:
        """Fetch and fast-forward ``git_branch``; push what waits; settle pending skills."""
        result = SyncResult()
        try:
            if done := self.ensure():
                result.notes.append(done)
                result.changed = True
            self._recover(result)
            self.git.run("fetch", "-q", "--prune", "origin")
        except SkillsRemoteError as exc:
            result.errors.append(str(exc))
            return result
        try:
            self._fast_forward(result)
            if result.changed:
                self._refuse_links(result)
        except SkillsRemoteError as exc:
            result.errors.append(str(exc))
        for name, entry in self.book.pending().items():
            try:
                self._settle(name, entry, result)
            except SkillsRemoteError as exc:
                result.errors.append(f"skill {name}: {exc}")
        return result

    def _recover(self, result: SyncResult) -> None:
        """A review branch with no note (Guard died between the commit and the note): note
        it again from its commit message, and bring its folder back to ``.review/``."""
        entries = self.book.load()
        refs = self.git.run(
            "for-each-ref",
            "--format=%(refname:strip=2) %(objectname)",
            f"refs/heads/{BRANCH_PREFIX}",
            check=False,
        ).stdout
        for line in refs.splitlines():
            branch, sha = line.rsplit(" ", 1)
            name = branch.removeprefix(BRANCH_PREFIX)
            if name in entries:
                continue
            message = self.git.out("log", "-1", "--format=%B", sha)
            said = dict(re.findall(r"^(Incident|Approved-by|Fix|Verified): (.*)$", message, re.M))
            number, _, title = said.get("Incident", "").partition(" ")
            tar = subprocess.run(
                ["git", *NO_SYMLINKS, "archive", sha, f"{name}/"],
                cwd=self.root,
                capture_output=True,
                check=False,
            )
            if tar.returncode != 0:
                continue  # not a learned skill's branch
            with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
                archive.extractall(review_dir(self.root), filter="data")
            self.book.put(
                name,
                Review(
                    status="pending",
                    branch=branch,
                    incident=int(number.strip("#") or 0) or None,
                    title=title,
                    fix=said.get("Fix", ""),
                    approver=said.get("Approved-by", ""),
                    verified=said.get("Verified", ""),
                    commit=sha,
                ),
            )
            result.changed = True
            result.notes.append(
                f"skill {name} recovered from its branch {branch} (Guard stopped before noting it)"
            )

    def _fast_forward(self, result: SyncResult) -> None:
        local, remote = self.git.rev("HEAD"), self.git.rev(f"origin/{self.branch}")
        if remote is None:
            if local is not None:
                self._push(f"HEAD:refs/heads/{self.branch}")
                result.notes.append(f"pushed {self.branch} (new on the remote)")
            return
        if local == remote:
            return
        if local is not None and self.git.ok("merge-base", "--is-ancestor", remote, local):
            self._push(f"HEAD:refs/heads/{self.branch}")  # local commits the remote lacks
            result.notes.append(f"pushed local commits to {self.branch}")
            return
        if local is not None and not self.git.ok("merge-base", "--is-ancestor", local, remote):
            ahead = self.git.out("rev-list", "--count", f"{remote}..{local}")
            raise SkillsRemoteError(
                f"conflict: {self.branch} has {ahead} local commit(s) the remote lacks, and the "
                f"remote moved on too. Nothing was force-pushed and nothing local is lost; "
                f"rebase them by hand: `git -C {self.root} pull --rebase origin {self.branch} "
                f"&& git -C {self.root} push origin {self.branch}`"
            )
        edits = self.git.out("status", "--porcelain", "--untracked-files=no")
        if edits:
            raise SkillsRemoteError(
                f"conflict: {self.root} has uncommitted local edits ({edits.splitlines()[0]}"
                f"...), so {self.branch} cannot be fast-forwarded; commit and push them, or "
                f"`git -C {self.root} stash`"
            )
        before = self._folders("HEAD") if local is not None else set()
        with LOCK:  # not while a learned skill is being committed
            if local is None:
                self.git.run(
                    "checkout", "-q", "-B", self.branch, "--track", f"origin/{self.branch}"
                )
            else:
                self.git.run("merge", "-q", "--ff-only", f"origin/{self.branch}")
        result.changed = True
        result.notes.append(f"fast-forwarded {self.branch} to {remote[:10]}")
        for gone in sorted(before - self._folders("HEAD")):
            result.notes.append(
                f"skill {gone} was removed from {self.branch} (reverted or "
                "deleted there); Guard no longer has it"
            )

    def _refuse_links(self, result: SyncResult) -> None:
        """Name each skill on ``git_branch`` whose files git records as a link, a submodule
        or too large: the loader quarantines it (a ``skill_invalid`` incident)."""
        listing = self.git.run("ls-tree", "-r", "-l", "-z", "HEAD", check=False).stdout
        for name, problems in sorted(recorded_problems(listing, self.root.name).items()):
            result.notes.append(f"skill {name} is refused (quarantined): " + "; ".join(problems))

    def _folders(self, ref: str) -> set[str]:
        """The skill folders (holding a skill.yaml) in ``ref``'s tree."""
        listing = self.git.run("ls-tree", "-r", "--name-only", ref, check=False).stdout
        return {
            p.split("/")[0]
            for p in listing.split("\n")
            if p.count("/") == 1 and p.endswith("/skill.yaml")
        }

    def _settle(self, name: str, entry: Review, result: SyncResult) -> None:
        if self.git.ok("cat-file", "-e", f"HEAD:{name}/skill.yaml"):
            self._close(
                name,
                replace(entry, status="merged"),
                result,
                f"was merged into {self.branch}: it runs as written there from now on",
            )
            return
        if not entry.pushed or (self.mode == "pr" and entry.pr is None):
            entry = self._publish_branch(name, entry)
            result.notes.append(f"skill {name} sent for review: {entry.link}")
        if self.mode == "pr" and entry.pr is not None:
            pr = self.forge.state(entry.pr)
            if pr.state == "closed":
                self._close(
                    name,
                    replace(entry, status="rejected"),
                    result,
                    f"its pull request {pr.url} was closed unmerged",
                )
            return
        if not self.git.rev(f"refs/remotes/origin/{entry.branch}"):
            self._close(
                name,
                replace(entry, status="rejected"),
                result,
                f"its branch {entry.branch} was deleted on the remote unmerged",
            )

    def _close(self, name: str, entry: Review, result: SyncResult, why: str) -> None:
        self.book.put(name, entry)
        shutil.rmtree(review_dir(self.root) / name, ignore_errors=True)
        result.changed = True
        result.notes.append(f"skill {name} {why}")


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


def sync_now(settings: Settings, *, log: bool = True) -> tuple[SyncResult, list[Signal]]:
    """One sync (``guard run``'s job and ``guard skills sync``); never raises. ``log``: log
    what happened (the CLI prints it instead)."""
    try:
        result = SkillsRemote(settings).sync()
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
