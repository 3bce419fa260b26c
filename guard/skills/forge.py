"""Pull/merge requests for learned skills on GitHub, GitLab and Gitea, through their REST APIs.

One small class per forge, each with ``open`` (create the request, or find the one that
already exists for the branch: GitHub answers 422 "A pull request already exists", GitLab and
Gitea 409) and ``state`` (``open``, ``merged`` or ``closed``). The token is the skills
remote's; httpx errors and error statuses become ``SkillsRemoteError`` naming the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from guard.domain.exceptions import SkillsRemoteError
from guard.redact import redact

if TYPE_CHECKING:  # imported on first use: a `guard run` with no forge never loads httpx (5 MB)
    import httpx


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str
    state: str  # open, merged, closed


def repo_path(remote: str, forge: str = "github") -> str:
    """``owner/name`` (GitLab: ``group/sub/name``) from an https, ssh or scp-like remote."""
    # https://host/owner/name.git, ssh://git@host/owner/name.git or git@host:owner/name.git
    path = (urlsplit(remote).path if "://" in remote else remote.split(":", 1)[-1]).strip("/")
    path = path[:-4] if path.endswith(".git") else path
    return path if forge == "gitlab" else "/".join(path.split("/")[-2:])


def guess_forge(remote: str) -> str:
    host = urlsplit(remote).hostname if "://" in remote else remote.split("@")[-1].split(":")[0]
    host = (host or "").lower()
    if "gitlab" in host:
        return "gitlab"
    if "gitea" in host or "codeberg" in host or "forgejo" in host:
        return "gitea"
    return "github"


def default_api(forge: str, remote: str) -> str:
    if forge == "github":
        return "https://api.github.com"
    host = urlsplit(remote).hostname if "://" in remote else remote.split("@")[-1].split(":")[0]
    return f"https://{host}/api/v4" if forge == "gitlab" else f"https://{host}/api/v1"


class Forge:
    """A forge's pull-request API for one repository."""

    kind = "github"

    def __init__(
        self,
        api: str,
        repo: str,
        token: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 15.0,
    ) -> None:
        self.api = api.rstrip("/")
        self.repo = repo
        self.token = token
        import httpx

        self.client = httpx.Client(
            base_url=self.api, headers=self.headers(), timeout=timeout, transport=transport
        )

    def headers(self) -> dict[str, str]:
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return {"Accept": "application/vnd.github+json", **auth}

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        import httpx

        try:
            return self.client.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise SkillsRemoteError(
                f"{self.kind} API {method} {self.api}{path} failed: "
                f"{redact(str(exc)) or type(exc).__name__}"
            ) from None

    def _fail(self, resp: httpx.Response) -> SkillsRemoteError:
        body = redact(resp.text[:300].replace("\n", " "))
        return SkillsRemoteError(
            f"{self.kind} API {resp.request.method} {resp.request.url} "
            f"answered {resp.status_code}: {body}"
        )

    def open(self, branch: str, base: str, title: str, body: str) -> PullRequest:
        r = f"/repos/{self.repo}/pulls"
        resp = self._call(
            "POST", r, json={"title": title, "head": branch, "base": base, "body": body}
        )
        if resp.status_code == 201:
            return self._pr(resp.json())
        if resp.status_code in (409, 422) and "already exist" in resp.text.lower():
            owner = self.repo.split("/")[0]  # GitHub filters by head; Gitea lists them all
            found = self._call("GET", r, params={"head": f"{owner}:{branch}", "state": "all"})
            ours = [
                p
                for p in (found.json() if found.status_code == 200 else [])
                if isinstance(p, dict) and (p.get("head") or {}).get("ref") == branch
            ]
            if ours:
                return self._pr(ours[0])
        raise self._fail(resp)

    def state(self, number: int) -> PullRequest:
        resp = self._call("GET", f"/repos/{self.repo}/pulls/{number}")
        if resp.status_code != 200:
            raise self._fail(resp)
        return self._pr(resp.json())

    @staticmethod
    def _pr(data: dict[str, Any]) -> PullRequest:
        merged = bool(data.get("merged") or data.get("merged_at"))
        state = "merged" if merged else ("open" if data.get("state") == "open" else "closed")
        return PullRequest(int(data["number"]), str(data["html_url"]), state)


class Gitea(Forge):
    """Gitea (and Forgejo): GitHub's shapes under ``/api/v1``, 409 for a duplicate."""

    kind = "gitea"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}


class GitLab(Forge):
    """GitLab merge requests: ``/projects/:id/merge_requests``."""

    kind = "gitlab"

    def headers(self) -> dict[str, str]:
        return {"PRIVATE-TOKEN": self.token} if self.token else {}

    def open(self, branch: str, base: str, title: str, body: str) -> PullRequest:
        path = f"/projects/{quote(self.repo, safe='')}/merge_requests"
        resp = self._call(
            "POST",
            path,
            json={
                "source_branch": branch,
                "target_branch": base,
                "title": title,
                "description": body,
            },
        )
        if resp.status_code == 201:
            return self._mr(resp.json())
        if resp.status_code == 409:
            found = self._call("GET", path, params={"source_branch": branch})
            ours = [
                m
                for m in (found.json() if found.status_code == 200 else [])
                if isinstance(m, dict) and m.get("source_branch") == branch
            ]
            if ours:
                return self._mr(ours[0])
        raise self._fail(resp)

    def state(self, number: int) -> PullRequest:
        resp = self._call("GET", f"/projects/{quote(self.repo, safe='')}/merge_requests/{number}")
        if resp.status_code != 200:
            raise self._fail(resp)
        return self._mr(resp.json())

    @staticmethod
    def _mr(data: dict[str, Any]) -> PullRequest:
        state = {"opened": "open", "merged": "merged"}.get(str(data.get("state")), "closed")
        return PullRequest(int(data["iid"]), str(data["web_url"]), state)


def build_forge(
    kind: str | None,
    api: str | None,
    remote: str,
    token: str | None,
    *,
    transport: httpx.BaseTransport | None = None,
) -> Forge:
    """The forge for ``remote`` (``kind`` and ``api`` default from its host)."""
    kind = kind or guess_forge(remote)
    cls = {"github": Forge, "gitlab": GitLab, "gitea": Gitea}[kind]
    return cls(
        api or default_api(kind, remote), repo_path(remote, kind), token, transport=transport
    )


def branch_url(remote: str, branch: str, forge: str | None) -> str | None:
    """A web URL for ``branch`` when the remote is https (else None)."""
    if not remote.startswith("https://"):
        return None
    base = remote[:-4] if remote.endswith(".git") else remote.rstrip("/")
    kind = forge or guess_forge(remote)
    return f"{base}/-/tree/{branch}" if kind == "gitlab" else f"{base}/tree/{branch}"
