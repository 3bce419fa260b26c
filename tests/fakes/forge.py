"""Local servers speaking the forges' REST shapes for pull requests (``skills.review: pr``).

``GitHubServer``: ``POST /repos/{owner}/{repo}/pulls`` creates one (201), or answers 422 "A pull
request already exists for owner:branch." when the head has an open one, as GitHub does; ``GET``
on the list (``?head=owner:branch``) and on ``/pulls/{number}`` read them back. With
``style="gitea"`` it answers as Gitea does: ``token`` auth, 409 for a duplicate, and a list that
ignores ``head``. ``GitLabServer``: ``/projects/{id}/merge_requests``, 409 for a duplicate. A
test closes or merges one by changing ``pulls``.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.local_http import serve, stop


class GitHubServer:
    def __init__(self, token: str | None = None, style: str = "github") -> None:
        self.token = token
        self.style = style
        scheme = "token" if style == "gitea" else "Bearer"
        self.pulls: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _auth(self) -> bool:
                if outer.token and self.headers.get("Authorization") != f"{scheme} {outer.token}":
                    self._reply(401, {"message": "Bad credentials"})
                    return False
                return True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = json.loads(self.rfile.read(length) or b"{}")
                outer.calls.append(
                    {
                        "method": "POST",
                        "path": self.path,
                        "json": data,
                        "headers": dict(self.headers),
                    }
                )
                if not self._auth():
                    return
                m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/pulls", self.path)
                if m is None:
                    self._reply(404, {"message": "Not Found"})
                    return
                owner, repo = m.groups()
                if (
                    any(
                        p["head"]["ref"] == data["head"] and p["state"] == "open"
                        for p in outer.pulls
                    )
                    and outer.style == "gitea"
                ):
                    self._reply(
                        409,
                        {
                            "message": "pull request already exists for these "
                            f"targets [head_branch: {data['head']}]"
                        },
                    )
                    return
                if any(
                    p["head"]["ref"] == data["head"] and p["state"] == "open" for p in outer.pulls
                ):
                    self._reply(
                        422,
                        {
                            "message": "Validation Failed",
                            "errors": [
                                {
                                    "resource": "PullRequest",
                                    "code": "custom",
                                    "message": f"A pull request already exists for {owner}:{data['head']}.",
                                }
                            ],
                            "documentation_url": "https://docs.github.com/rest/pulls/pulls",
                        },
                    )
                    return
                number = len(outer.pulls) + 1
                pr = {
                    "number": number,
                    "state": "open",
                    "merged": False,
                    "merged_at": None,
                    "title": data["title"],
                    "body": data["body"],
                    "html_url": f"https://github.test/{owner}/{repo}/pull/{number}",
                    "head": {"ref": data["head"], "label": f"{owner}:{data['head']}"},
                    "base": {"ref": data["base"]},
                }
                outer.pulls.append(pr)
                self._reply(201, pr)

            def do_GET(self) -> None:
                outer.calls.append(
                    {"method": "GET", "path": self.path, "headers": dict(self.headers)}
                )
                if not self._auth():
                    return
                url = urlsplit(self.path)
                if m := re.fullmatch(r"/repos/[^/]+/[^/]+/pulls/(\d+)", url.path):
                    found = [p for p in outer.pulls if p["number"] == int(m.group(1))]
                    self._reply(200 if found else 404, found[0] if found else {})
                    return
                if re.fullmatch(r"/repos/[^/]+/[^/]+/pulls", url.path):
                    head = parse_qs(url.query).get("head", [""])[0]
                    self._reply(
                        200,
                        [
                            p
                            for p in outer.pulls
                            if outer.style == "gitea" or p["head"]["label"] == head
                        ],
                    )
                    return
                self._reply(404, {"message": "Not Found"})

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.url = serve(Handler)

    def close(self) -> None:
        stop(self.server)


class GitLabServer:
    """GitLab's merge requests: ``PRIVATE-TOKEN`` auth, ``iid``, ``web_url``, 409 duplicates."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.pulls: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _project(self) -> tuple[str, str] | None:
                if self.headers.get("PRIVATE-TOKEN") != outer.token:
                    self._reply(401, {"message": "401 Unauthorized"})
                    return None
                url = urlsplit(self.path)
                m = re.fullmatch(r"/projects/([^/]+)/merge_requests(/\d+)?", url.path)
                if m is None:
                    self._reply(404, {"message": "404 Not Found"})
                    return None
                return m.group(1), (m.group(2) or "").strip("/")

            def do_POST(self) -> None:
                found = self._project()
                if found is None:
                    return
                data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                dup = [
                    p
                    for p in outer.pulls
                    if p["source_branch"] == data["source_branch"] and p["state"] == "opened"
                ]
                if dup:
                    self._reply(
                        409,
                        {
                            "message": [
                                "Another open merge request already exists "
                                f"for this source branch: !{dup[0]['iid']}"
                            ]
                        },
                    )
                    return
                iid = len(outer.pulls) + 1
                project = found[0].replace("%2F", "/")
                mr = {
                    "iid": iid,
                    "state": "opened",
                    "source_branch": data["source_branch"],
                    "target_branch": data["target_branch"],
                    "title": data["title"],
                    "description": data["description"],
                    "web_url": f"https://gitlab.test/{project}/-/merge_requests/{iid}",
                }
                outer.pulls.append(mr)
                self._reply(201, mr)

            def do_GET(self) -> None:
                found = self._project()
                if found is None:
                    return
                if found[1]:
                    mrs = [p for p in outer.pulls if p["iid"] == int(found[1])]
                    self._reply(200 if mrs else 404, mrs[0] if mrs else {})
                    return
                branch = parse_qs(urlsplit(self.path).query).get("source_branch", [""])[0]
                self._reply(200, [p for p in outer.pulls if p["source_branch"] == branch])

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.url = serve(Handler)

    def close(self) -> None:
        stop(self.server)
