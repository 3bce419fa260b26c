"""The skills remote's sync: fetch, fast-forward, push what waits, settle pending skills.

``sync`` fetches, fast-forwards ``git_branch`` (never a merge commit, never a force-push, never
over local edits), pushes what is not on the remote yet, then settles each pending skill: on
``git_branch`` now -> merged (its ``.review`` copy goes; the merged folder runs); its branch
deleted or its request closed unmerged -> rejected (it disappears); a revision under review
likewise (``guard.skills.revreview``). A skill reverted or deleted
on ``git_branch`` disappears with the fast-forward itself. A skill whose files are not regular
files inside the repository (a symlink, a submodule, over the size limits) is named in the notes
and quarantined by the loader; git never checks a link out as a link.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field, replace

from guard.domain.exceptions import SkillsRemoteError
from guard.domain.records import utcnow
from guard.skills import revreview
from guard.skills.files import NO_SYMLINKS, recorded_problems
from guard.skills.gitrepo import LOCK
from guard.skills.review import BRANCH_PREFIX, REVISE_PREFIX, Review, noted, review_dir
from guard.skills.revisions import DIFF_AFTER
from guard.skills.upstream import Upstream


@dataclass
class SyncResult:
    """What one sync did: notes to log, errors to report as incidents on Guard."""

    changed: bool = False  # the working tree moved, or a pending skill was settled
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    revised: list[tuple[str, int]] = field(default_factory=list)  # revisions merged: close_steps


class SkillsRemote(Upstream):
    """Git operations between ``skills_dir`` and ``skills.git_remote``: the clone, publishing
    (``Upstream``) and the sync."""

    def sync(self) -> SyncResult:
        """Fetch and fast-forward ``git_branch``; push what waits; settle pending skills."""
        result = SyncResult()
        try:
            if done := self.ensure():
                result.notes.append(done)
                result.changed = True
            self._recover(result)
            self._recover_revisions(result)
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
                if entry.revision:
                    self._settle_revision(name, entry, result)
                else:
                    self._settle(name, entry, result)
            except SkillsRemoteError as exc:
                result.errors.append(f"skill {name}: {exc}")
        return result

    def _recover(self, result: SyncResult) -> None:
        """A review branch with no note (Guard died between the commit and the note): note
        it again from its commit message, and bring its folder back to ``.review/``."""
        entries = self.book.load()
        for branch, sha in self.branches(BRANCH_PREFIX):
            name = branch.removeprefix(BRANCH_PREFIX)
            if name in entries:
                continue
            if not self.unpack(sha, name):
                continue  # not a learned skill's branch
            self.book.put(name, noted(branch, sha, self.git.out("log", "-1", "--format=%B", sha)))
            result.changed = True
            result.notes.append(
                f"skill {name} recovered from its branch {branch} (Guard stopped before noting it)"
            )

    def branches(self, prefix: str) -> list[tuple[str, str]]:
        """(branch, commit) of each local branch under ``prefix``."""
        refs = self.git.run(
            "for-each-ref",
            "--format=%(refname:strip=2) %(objectname)",
            f"refs/heads/{prefix}",
            check=False,
        ).stdout
        return [(b, sha) for b, _, sha in (line.rpartition(" ") for line in refs.splitlines())]

    def unpack(self, sha: str, name: str) -> bool:
        """Bring ``name/`` of commit ``sha`` back to ``.review/``; False: it has none."""
        tar = subprocess.run(
            ["git", *NO_SYMLINKS, "archive", sha, f"{name}/"],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        if tar.returncode != 0:
            return False
        shutil.rmtree(review_dir(self.root) / name, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
            archive.extractall(review_dir(self.root), filter="data")
        return True

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
            self.close(
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
                self.close(
                    name,
                    replace(entry, status="rejected"),
                    result,
                    f"its pull request {pr.url} was closed unmerged",
                )
            return
        if not self.git.rev(f"refs/remotes/origin/{entry.branch}"):
            self.close(
                name,
                replace(entry, status="rejected"),
                result,
                f"its branch {entry.branch} was deleted on the remote unmerged",
            )

    def close(self, name: str, entry: Review, result: SyncResult, why: str) -> None:
        self.book.put(name, entry)
        shutil.rmtree(review_dir(self.root) / name, ignore_errors=True)
        result.changed = True
        result.notes.append(f"skill {name} {why}")

    def _settle_revision(self, name: str, entry: Review, result: SyncResult) -> None:
        """Merged: it takes effect; deleted or closed unmerged: dropped; else sent if unsent."""
        n = entry.revision or 0
        if revreview.merged(self.git, name, entry.commit, n):
            self.close(
                name,
                replace(entry, status="merged", merged_at=utcnow().isoformat()),
                result,
                f"revision {n} was merged into {self.branch}: it runs from now on, asking first "
                "until it is trusted",
            )
            result.revised.append((name, n))
            return
        if not entry.pushed or (self.mode == "pr" and entry.pr is None):
            entry = self._publish_branch(name, entry)
            result.notes.append(f"skill {name} revision {n} sent for review: {entry.link}")
        why = ""
        if self.mode == "pr" and entry.pr is not None:
            pr = self.forge.state(entry.pr)
            if pr.state == "closed":
                why = f"its pull request {pr.url} was closed unmerged"
        elif not self.git.rev(f"refs/remotes/origin/{entry.branch}"):
            why = f"its branch {entry.branch} was deleted on the remote unmerged"
        if why:
            self.close(
                name,
                replace(entry, status="rejected"),
                result,
                f"revision {n}: {why}; revision {n - 1} keeps running",
            )
            self.git.run("branch", "-D", entry.branch, check=False)  # not recovered later

    def _recover_revisions(self, result: SyncResult) -> None:
        """Note again each unmerged revision branch that has no note (Guard stopped first)."""
        book = self.book.load()
        for branch, sha in self.branches(REVISE_PREFIX):
            name = branch.removeprefix(REVISE_PREFIX).rpartition("/")[0]
            entry = book.get(name)
            if entry is not None and (entry.commit == sha or entry.status == "pending"):
                continue
            n = revreview.revision_at(self.git, sha, name)
            if n < 2 or revreview.merged(self.git, name, sha, n) or not self.unpack(sha, name):
                continue
            message = self.git.out("log", "-1", "--format=%B", sha)
            self.book.put(
                name,
                noted(
                    branch,
                    sha,
                    message,
                    revision=n,
                    diff=message.partition(DIFF_AFTER)[2],
                ),
            )
            result.changed = True
            result.notes.append(
                f"skill {name} recovered from its branch {branch} (Guard stopped before noting it)"
            )
