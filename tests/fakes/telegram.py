"""A Bot API server for tests: real HTTP on 127.0.0.1, the shapes Telegram uses, every call kept.

It serves ``/bot<TOKEN>/<method>`` with form-encoded, JSON and multipart bodies, long-polls
``getUpdates`` (offsets confirm earlier updates), keeps the messages the bot sent so it can edit
them and quote them in callback queries and replies, and can be told to fail a method (e.g. a
429 with ``retry_after``), or be stopped and started again on the same port (an outage).

Message ids are one sequence per chat, shared by the users' messages and the bot's, as in
Telegram. Edits answer as Telegram does: "message to edit not found" for an id with no message,
"message can't be edited" for a message that is not the bot's, and "message is not modified"
when the new text (or caption), parse mode and reply markup are exactly the current ones.

It refuses what Telegram refuses, with Telegram's descriptions: text over 4096 characters
(captions over 1024) after entity parsing, ``callback_data`` outside 1-64 bytes, and HTML that
Telegram's parser (tdlib's ``parse_html``) rejects: unknown or unclosed tags, end tags that do not
match. So a test that passes against it proves Guard's messages would be accepted.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
import time
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from tests.fakes.local_http import Connections, QuietServer, Tracked

BOT = {
    "id": 777000,
    "is_bot": True,
    "first_name": "Guard",
    "username": "guard_test_bot",
    "can_join_groups": True,
    "can_read_all_group_messages": False,
    "supports_inline_queries": False,
}


NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the "
    "same as a current content and reply markup of the message"
)
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
CALLBACK_DATA_LIMIT = 64
HTML_TAGS = frozenset(
    {
        "a",
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "tg-emoji",
        "code",
        "pre",
        "blockquote",
    }
)
NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ENTITY = re.compile(r"&(?:#([0-9]+)|#[xX]([0-9a-fA-F]+)|([a-zA-Z]+));")
_ATTRIBUTE_VALUE = re.compile(r"[a-zA-Z0-9.\-]+")


class HtmlError(ValueError):
    """Why Telegram cannot parse a text as HTML (its own wording)."""


def parse_html(text: str) -> str:
    """The plain text Telegram would make of ``text`` in HTML parse mode, or ``HtmlError``.

    Like tdlib: only the supported tags, every ``<`` starts a tag, end tags must match the
    innermost open tag, ``&lt; &gt; &amp; &quot;`` and numeric entities are decoded and any other
    ``&`` stays as it is.
    """
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(text)

    def at(pos: int) -> int:
        return len(text[:pos].encode())

    while i < n:
        c = text[i]
        if c == "&":
            m = _ENTITY.match(text, i)
            decoded = None
            if m is not None:
                if m.group(3) is not None:
                    decoded = NAMED_ENTITIES.get(m.group(3))
                else:
                    code = int(m.group(1)) if m.group(1) else int(m.group(2), 16)
                    decoded = chr(code) if 0 < code < 0x110000 else None
            if decoded is not None and m is not None:
                out.append(decoded)
                i = m.end()
            else:
                out.append(c)
                i += 1
            continue
        if c != "<":
            out.append(c)
            i += 1
            continue
        begin = i
        if i + 1 < n and text[i + 1] == "/":
            if not stack:
                raise HtmlError(f"Unexpected end tag at byte offset {at(begin)}")
            j = i + 2
            while j < n and not text[j].isspace() and text[j] != ">":
                j += 1
            name = text[i + 2 : j].lower()
            while j < n and text[j].isspace():
                j += 1
            if j >= n or text[j] != ">":
                raise HtmlError(f"Unclosed end tag at byte offset {at(begin)}")
            if name and name != stack[-1]:
                raise HtmlError(
                    f"Unmatched end tag at byte offset {at(begin)}, expected "
                    f'"</{stack[-1]}>", found "</{name}>"'
                )
            stack.pop()
            i = j + 1
            continue
        j = i + 1
        while j < n and not text[j].isspace() and text[j] != ">":
            j += 1
        if j >= n:
            raise HtmlError(f"Unclosed start tag at byte offset {at(begin)}")
        name = text[i + 1 : j].lower()
        if name not in HTML_TAGS:
            raise HtmlError(f'Unsupported start tag "{name}" at byte offset {at(begin)}')
        attributes, j = _attributes(text, j, name, at(begin))
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise HtmlError(f'Tag "span" must have class "tg-spoiler" at byte offset {at(begin)}')
        stack.append(name)
        i = j + 1
    if stack:
        raise HtmlError(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def _attributes(text: str, i: int, tag: str, offset: int) -> tuple[dict[str, str], int]:
    """The attributes of a start tag from ``i``; returns them and the index of its ``>``."""
    attributes: dict[str, str] = {}
    n = len(text)
    unclosed = HtmlError(f"Unclosed start tag at byte offset {offset}")
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            raise unclosed
        if text[i] == ">":
            return attributes, i
        start = i
        while i < n and not text[i].isspace() and text[i] not in "=>":
            i += 1
        name = text[start:i].lower()
        if not name:
            raise HtmlError(f'Empty attribute name in the tag "{tag}" at byte offset {offset}')
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            raise unclosed
        if text[i] != "=":
            attributes[name] = ""
            continue
        i += 1
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            raise unclosed
        if text[i] in "\"'":
            end = text.find(text[i], i + 1)
            if end == -1:
                raise unclosed
            attributes[name] = text[i + 1 : end]
            i = end + 1
        else:
            m = _ATTRIBUTE_VALUE.match(text, i)
            if m is None or m.end() >= n:
                raise HtmlError(
                    f"Unexpected end of name token at byte offset {len(text[:i].encode())}"
                )
            attributes[name] = m.group()
            i = m.end()


def refusal(method: str, p: dict[str, Any]) -> str | None:
    """Why Telegram would answer this request with 400 (without "Bad Request: "), if it would."""
    markup = p.get("reply_markup")
    if isinstance(markup, dict):
        for row in markup.get("inline_keyboard") or []:
            for button in row:
                data = button.get("callback_data")
                if data is not None and not 1 <= len(str(data).encode()) <= CALLBACK_DATA_LIMIT:
                    return "BUTTON_DATA_INVALID"
    field, limit = {
        "sendMessage": ("text", TEXT_LIMIT),
        "editMessageText": ("text", TEXT_LIMIT),
        "sendPhoto": ("caption", CAPTION_LIMIT),
        "editMessageCaption": ("caption", CAPTION_LIMIT),
    }.get(method, ("", 0))
    if not field:
        return None
    raw = p.get(field)
    if raw is None or raw == "":
        return "message text is empty" if field == "text" else None
    text = str(raw)
    if str(p.get("parse_mode") or "").lower() == "html":
        try:
            text = parse_html(text)
        except HtmlError as exc:
            return f"can't parse entities: {exc}"
    if field == "text" and not text.strip():
        return "message text is empty"
    if len(text) > limit:  # characters of the parsed text, as Telegram counts them
        return "message is too long" if field == "text" else "message caption is too long"
    return None


def _maybe_json(value: str) -> Any:
    if value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _failure(code: int, retry_after: int | None) -> tuple[int, str, int | None]:
    if code == 429:
        return code, f"Too Many Requests: retry after {retry_after}", retry_after
    return code, "Bad Gateway" if code == 502 else "Error", None


def parse_body(ctype: str, body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    if ctype.startswith("application/json"):
        return dict(json.loads(body))
    if ctype.startswith("multipart/form-data"):
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body
        )
        out: dict[str, Any] = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True) or b""
            if part.get_filename():
                out[str(name)] = payload
            else:
                out[str(name)] = _maybe_json(bytes(payload).decode())
        return out
    return {k: _maybe_json(v) for k, v in parse_qsl(body.decode(), keep_blank_values=True)}


def _quoted(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as a reply quotes it: without the message it replied to (one level only)."""
    return {k: v for k, v in msg.items() if k != "reply_to_message"}


class TelegramServer:
    def __init__(self, token: str, port: int = 0) -> None:
        self.token = token
        self.port = port
        self.calls: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.webhook: dict[str, Any] | None = None  # set by setWebhook: updates are POSTed
        self.deliveries: list[dict[str, Any]] = []  # webhook POSTs and the bot's HTTP status
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}  # users' and the bot's
        self._modes: dict[tuple[int, int], str] = {}  # the parse mode of each text or caption
        self.failures: dict[str, list[tuple[int, str, int | None]]] = {}
        self.refused: list[dict[str, Any]] = []  # requests Telegram would have refused
        self._next_update = 1
        self.pushed: dict[int, dict[str, Any]] = {}  # every update, by id
        self._last_id: dict[int, int] = {}  # per chat: the last message id given (a new chat: 0)
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self.up = False
        self.spell: tuple[float, int, int | None] | None = None  # until, code, retry_after
        self.stalled_until = 0.0  # monotonic: until then requests are held, then dropped
        self.stall_hold = 30.0
        self.connections = Connections()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> TelegramServer:
        server = self

        class Handler(Tracked):
            connections = server.connections

            def do_POST(self) -> None:
                if not server.up:  # an outage: drop the (kept-alive) connection unanswered
                    self.close_connection = True
                    return
                held = server.stalled_until - time.monotonic()
                if held > 0:  # a stall: no answer until the client gives up (or the stall ends)
                    time.sleep(min(held, server.stall_hold))
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                status, reply = server.handle(self.path, self.headers.get("Content-Type", ""), body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        httpd = QuietServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self.port = httpd.server_port
        self._server = httpd
        self.up = True
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Go away (connections refused) until ``start`` again; state is kept."""
        with self._cond:
            self.up = False
            self._cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.connections.cut()

    # -- the Bot API ----------------------------------------------------------------------------

    def handle(self, path: str, ctype: str, body: bytes) -> tuple[int, dict[str, Any]]:
        prefix = f"/bot{self.token}/"
        if not path.startswith(prefix):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        method = path[len(prefix) :]
        params = parse_body(ctype, body)
        with self._cond:
            self.calls.append({"method": method, "params": params, "at": time.monotonic()})
            queue = self.failures.get(method)
            failure = queue.pop(0) if queue else None
            if failure is None and self.spell is not None and self.spell[0] > time.monotonic():
                failure = _failure(self.spell[1], self.spell[2])
            if failure is not None:
                code, description, retry = failure
                reply: dict[str, Any] = {
                    "ok": False,
                    "error_code": code,
                    "description": description,
                }
                if retry is not None:
                    reply["parameters"] = {"retry_after": retry}
                return code, reply
        fn = getattr(self, f"api_{method}", None)
        if fn is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        refused = refusal(method, params)
        if refused is not None:
            with self._cond:
                self.refused.append({"method": method, "params": params, "description": refused})
            return 400, {"ok": False, "error_code": 400, "description": f"Bad Request: {refused}"}
        result = fn(params)
        if isinstance(result, tuple):
            return result
        return 200, {"ok": True, "result": result}

    def api_getMe(self, p: dict[str, Any]) -> Any:
        return BOT

    def api_deleteWebhook(self, p: dict[str, Any]) -> Any:
        with self._cond:
            self.webhook = None
        return True

    def api_setWebhook(self, p: dict[str, Any]) -> Any:
        """From now on updates are POSTed to ``url`` (with the secret header), as Telegram does."""
        with self._cond:
            self.webhook = {"url": str(p["url"]), "secret": p.get("secret_token") or None}
            pending, self.updates = self.updates, []
        if pending:  # Telegram delivers what waited; the bot's server may still be starting
            threading.Thread(target=self._deliver_all, args=(pending,), daemon=True).start()
        return True

    def _deliver_all(self, updates: list[dict[str, Any]]) -> None:
        for update in updates:
            for _ in range(50):
                try:
                    self._deliver(update)
                    break
                except urllib.error.URLError:
                    time.sleep(0.1)

    def api_getWebhookInfo(self, p: dict[str, Any]) -> Any:
        url = self.webhook["url"] if self.webhook else ""
        return {"url": url, "has_custom_certificate": False, "pending_update_count": 0}

    def api_getUpdates(self, p: dict[str, Any]) -> Any:
        if self.webhook is not None:
            return 409, {
                "ok": False,
                "error_code": 409,
                "description": "Conflict: can't use "
                "getUpdates method while webhook is active; use deleteWebhook to "
                "delete the webhook first",
            }
        offset = int(p.get("offset") or 0)
        timeout = float(p.get("timeout") or 0)
        limit = int(p.get("limit") or 100)
        deadline = time.monotonic() + timeout
        with self._cond:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            while not self.updates and self.up and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())
            return self.updates[:limit]

    def _next_id(self, chat_id: int) -> int:
        """The chat's next message id (call with ``_cond`` held)."""
        self._last_id[chat_id] = self._last_id.get(chat_id, 0) + 1
        return self._last_id[chat_id]

    def _store(self, chat_id: Any, fields: dict[str, Any], mode: Any = None) -> dict[str, Any]:
        with self._cond:
            msg = {
                "message_id": self._next_id(int(chat_id)),
                "date": int(time.time()),
                "chat": {"id": int(chat_id), "type": "private" if int(chat_id) > 0 else "group"},
                "from": BOT,
                **fields,
            }
            self.messages[(int(chat_id), msg["message_id"])] = msg
            self._modes[(int(chat_id), msg["message_id"])] = str(mode or "").lower()
            return msg

    def _reply_to(self, p: dict[str, Any]) -> dict[str, Any]:
        rp = p.get("reply_parameters")
        if isinstance(rp, dict):
            quoted = self.messages.get((int(p["chat_id"]), int(rp["message_id"])))
            if quoted:
                return {"reply_to_message": _quoted(quoted)}
        return {}

    def api_sendMessage(self, p: dict[str, Any]) -> Any:
        fields: dict[str, Any] = {"text": p["text"], **self._reply_to(p)}
        if isinstance(p.get("reply_markup"), dict):
            fields["reply_markup"] = p["reply_markup"]
        return self._store(p["chat_id"], fields, p.get("parse_mode"))

    def api_sendPhoto(self, p: dict[str, Any]) -> Any:
        photo = p.get("photo", b"")
        size = len(photo) if isinstance(photo, bytes) else 0
        fields = {
            "photo": [
                {
                    "file_id": f"photo{size}",
                    "file_unique_id": f"u{size}",
                    "width": 480,
                    "height": 200,
                    "file_size": size,
                }
            ],
            **({"caption": p["caption"]} if p.get("caption") else {}),
        }
        return self._store(p["chat_id"], fields, p.get("parse_mode"))

    def _edit(self, p: dict[str, Any], field: str | None) -> Any:
        """Edit the text, the caption or (``None``) only the markup of a message of the bot's."""
        key = (int(p["chat_id"]), int(p["message_id"]))

        def bad(description: str) -> tuple[int, dict[str, Any]]:
            return 400, {
                "ok": False,
                "error_code": 400,
                "description": f"Bad Request: {description}",
            }

        with self._cond:
            msg = self.messages.get(key)
            if msg is None:
                return bad("message to edit not found")
            if msg["from"]["id"] != BOT["id"]:
                return bad("message can't be edited")
            if field == "text" and "text" not in msg:
                return bad("there is no text in the message to edit")
            if field == "caption" and "photo" not in msg:
                return bad("there is no caption in the message to edit")
            markup = p.get("reply_markup") if isinstance(p.get("reply_markup"), dict) else None
            content = (msg.get(field), self._modes.get(key, "")) if field else None
            new = (p.get(field) or None, str(p.get("parse_mode") or "").lower()) if field else None
            if content == new and msg.get("reply_markup") == markup:
                return bad(NOT_MODIFIED)
            if field is not None:
                msg[field] = p.get(field)
                if not msg[field]:
                    msg.pop(field)
                self._modes[key] = str(p.get("parse_mode") or "").lower()
            if markup is not None:
                msg["reply_markup"] = markup
            else:
                msg.pop("reply_markup", None)
            msg["edit_date"] = int(time.time())
            return dict(msg)

    def api_editMessageText(self, p: dict[str, Any]) -> Any:
        return self._edit(p, "text")

    def api_editMessageCaption(self, p: dict[str, Any]) -> Any:
        return self._edit(p, "caption")

    def api_editMessageReplyMarkup(self, p: dict[str, Any]) -> Any:
        return self._edit(p, None)

    def api_answerCallbackQuery(self, p: dict[str, Any]) -> Any:
        return True

    # -- what a test does -----------------------------------------------------------------------

    def _push(self, update: dict[str, Any]) -> int:
        with self._cond:
            update["update_id"] = self._next_update
            self._next_update += 1
            self.pushed[int(update["update_id"])] = update
            if self.webhook is None:
                self.updates.append(update)
                self._cond.notify_all()
                return int(update["update_id"])
        # Telegram POSTs from its side, retrying while the bot's endpoint does not answer
        threading.Thread(target=self._deliver_all, args=([update],), daemon=True).start()
        return int(update["update_id"])

    def _deliver(self, update: dict[str, Any]) -> None:
        """POST one update to the webhook, keeping the HTTP status the bot answered."""
        assert self.webhook is not None
        headers = {"Content-Type": "application/json"}
        if self.webhook["secret"]:
            headers["X-Telegram-Bot-Api-Secret-Token"] = self.webhook["secret"]
        request = urllib.request.Request(
            self.webhook["url"], data=json.dumps(update).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        with self._cond:
            self.deliveries.append({"update_id": update["update_id"], "status": status})

    def say(self, user_id: int, text: str, *, chat_id: int, reply_to: int | None = None) -> int:
        """A user writes ``text`` in ``chat_id`` (optionally replying to a message)."""
        with self._cond:
            msg: dict[str, Any] = {
                "message_id": self._next_id(chat_id),
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                "from": {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"},
                "text": text,
            }
            if text.startswith("/"):
                msg["entities"] = [
                    {"type": "bot_command", "offset": 0, "length": len(text.split()[0])}
                ]
            if reply_to is not None:
                msg["reply_to_message"] = _quoted(self.messages[(chat_id, reply_to)])
            self.messages[(chat_id, msg["message_id"])] = msg
        return self._push({"message": msg})

    def press(self, user_id: int, data: str, *, chat_id: int, message_id: int) -> int:
        """A user presses a button whose callback data is ``data`` on a message."""
        msg = self.messages[(chat_id, message_id)]
        return self._push(
            {
                "callback_query": {
                    "id": f"cq{time.monotonic_ns()}",
                    "chat_instance": "ci",
                    "from": {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"},
                    "message": msg,
                    "data": data,
                }
            }
        )

    def redeliver(self, update_id: int) -> None:
        """Offer an update again, as Telegram does until a ``getUpdates`` offset confirms it
        (the bot died after handling it, before its next poll). Polling mode only."""
        with self._cond:
            self.updates.insert(0, self.pushed[update_id])
            self._cond.notify_all()

    def fail(
        self, method: str, code: int = 429, *, times: int = 1, retry_after: int | None = 1
    ) -> None:
        with self._cond:
            self.failures.setdefault(method, []).extend([_failure(code, retry_after)] * times)

    def fail_for(self, seconds: float, code: int = 429, *, retry_after: int | None = 1) -> None:
        """Answer every call with ``code`` for ``seconds`` (a long 429 or 502 spell)."""
        with self._cond:
            self.spell = (time.monotonic() + seconds, code, retry_after)

    def stall_for(self, seconds: float, hold: float = 30) -> None:
        """For ``seconds``, hold every request unanswered (``hold`` s at most), then drop it:
        the client times out, and nothing it sent is kept."""
        with self._cond:
            self.stall_hold = hold
            self.stalled_until = time.monotonic() + seconds

    def sent(self, method: str = "sendMessage") -> list[dict[str, Any]]:
        with self._cond:
            return [c for c in self.calls if c["method"] == method]

    def bot_messages(self, contains: str = "") -> list[dict[str, Any]]:
        """Messages the bot has successfully sent (as they are now, after any edits)."""
        with self._cond:
            return [
                dict(m)
                for m in self.messages.values()
                if m["from"]["id"] == BOT["id"] and contains in m.get("text", "")
            ]
