"""The skills repository's clone and what Guard sends to its remote (``guard.skills.remote``).

- ``ensure``: with ``skills_dir`` empty or missing, clone ``skills.git_remote``; otherwise check
  that its ``origin`` is that remote, and say so clearly when it is not.
- ``publish``: ``direct`` pushes ``git_branch``; ``branch`` pushes ``guard/learned/<name>``;
  ``pr`` also opens a pull/merge request whose body names the incident, the fix and the
  evidence. A failed push raises ``SkillsRemoteError``; the commit is kept locally and the
  next sync (``guard.skills.sync``) retries it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from guard.config import Settings
from guard.domain.exceptions import SkillsRemoteError
from guard.skills.forge import Forge, branch_url, build_forge
from guard.skills.gitrepo import Git
from guard.skills.review import BRANCH_PREFIX, Review, ReviewBook

EXCLUDES = (".review/", ".incoming/")


def _same_remote(a: str, b: str) -> bool:
    def norm(u: str) -> str:
        u = u.strip().rstrip("/")
        return u[:-4] if u.endswith(".git") else u

    return norm(a) == norm(b)


class Upstream:
    """Git operations between ``skills_dir`` and ``skills.git_remote``: the clone and
    publishing (``SkillsRemote`` adds the sync)."""

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
        if entry.revision:
            head = f"guard: revise skill {name} (revision {entry.revision})"
            return f"{head} from incident #{entry.incident}"
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
        ) + (
            f"\nRevision {entry.revision}'s steps against the one before (revision "
            f"{entry.revision - 1} runs until this is merged):\n\n```diff\n{entry.diff}\n```\n"
            if entry.revision
            else ""
        )
