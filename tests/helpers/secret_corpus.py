"""A corpus of FAKE secrets in realistic shapes, and ordinary log lines that hold none.

Every secret is assembled from pieces at import time, so no file in the repository contains a
credential-shaped string for a scanner to flag. None of them is, or ever was, a real credential.
Each entry is ``(kind, secret, line)``: the line is how it typically shows up in a log.
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid


def _fill(seed: str, n: int, alphabet: str) -> str:
    """``n`` deterministic pseudo-random characters (stable across runs, different per seed)."""
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(n))


_AZ = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_AN = _AZ + _AZ.lower() + "0123456789"
_B64 = _AN + "+/"
_URLSAFE = _AN + "-_"


def _jwt(seed: str) -> str:
    def part(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    return ".".join(
        [
            part('{"alg":"HS256","typ":"JWT"}'),
            part('{"sub":"fake-' + seed + '","name":"Test User","iat":1516239022}'),
            _fill(seed, 43, _URLSAFE),
        ]
    )


def _pem(seed: str) -> str:
    body = "MII" + _fill(seed, 61, _B64)
    rest = [_fill(seed + str(i), 64, _B64) for i in range(3)]
    edge = "-" * 5
    return (
        f"{edge}BEGIN {'RSA '}PRIVATE KEY{edge}\n"
        + body
        + "\n"
        + "\n".join(rest)
        + f"\n{edge}END RSA PRIVATE KEY{edge}"
    )


def secrets(seed: str = "a") -> list[tuple[str, str, str]]:
    """The corpus: each ``(kind, secret, a log line leaking it)``; ``seed`` varies the values."""
    aws_id = "AK" + "IA" + _fill(seed + "aws", 16, _AZ + "234567")
    aws_secret = _fill(seed + "awss", 40, _B64)
    gh = "gh" + "p_" + _fill(seed + "gh", 36, _AN)
    ghs = "gh" + "s_" + _fill(seed + "ghs", 36, _AN)
    glpat = "gl" + "pat-" + _fill(seed + "gl", 20, _URLSAFE)
    tg = (
        "".join(_fill(seed + "tgid", 10, "123456789"))
        + ":"
        + "AA"
        + _fill(seed + "tg", 33, _URLSAFE)
    )
    slack = "xo" + "xb-" + _fill(seed + "sl", 12, "0123456789") + "-" + _fill(seed + "sl2", 24, _AN)
    jwt = _jwt(seed)
    pg_pass = "Pg" + _fill(seed + "pg", 14, _AN)
    stripe = "sk" + "_live_" + _fill(seed + "st", 24, _AN)
    pem = _pem(seed)
    google = "AI" + "za" + _fill(seed + "goo", 35, _URLSAFE)
    anthropic = "sk-" + "ant-api03-" + _fill(seed + "ant", 40, _URLSAFE)
    npm = "np" + "m_" + _fill(seed + "npm", 36, _AN)
    guard_token = "ga" + "t_" + _fill(seed + "gat", 43, _URLSAFE)  # guard access token create
    sendgrid = (
        "S" + "G." + _fill(seed + "sg1", 22, _URLSAFE) + "." + _fill(seed + "sg2", 43, _URLSAFE)
    )
    api_key = _fill(seed + "api", 32, _AN)
    app_pass = "Hunter" + _fill(seed + "pw", 6, _AN) + "!"
    session = _fill(seed + "sid", 32, _AN)
    basic = base64.b64encode(f"deploy:{app_pass}".encode()).decode()
    webhook = (
        "https://hooks."
        + "slack.com/services/T"
        + _fill(seed + "w1", 8, _AZ)
        + "/B"
        + _fill(seed + "w2", 8, _AZ)
        + "/"
        + _fill(seed + "w3", 24, _AN)
    )
    return [
        ("aws-access-key", aws_id, f"boto: using credentials AWS_ACCESS_KEY_ID={aws_id} for s3"),
        (
            "aws-secret-key",
            aws_secret,
            f"env dump: aws_secret_access_key={aws_secret} region=eu-west-1",
        ),
        ("github-token", gh, f"cloning https://{gh}@github.com/acme/api.git failed: exit 128"),
        (
            "github-token",
            ghs,
            f"git fetch https://x-access-token:{ghs}@github.com/acme/api.git: 403 Forbidden",
        ),
        ("gitlab-token", glpat, f"ERROR registry login with token {glpat} rejected"),
        ("telegram-bot-token", tg, f"POST https://api.telegram.org/bot{tg}/sendMessage 502"),
        ("slack-token", slack, f"slack client init failed token={slack} invalid_auth"),
        ("jwt", jwt, f"request rejected: Authorization: Bearer {jwt} expired"),
        (
            "url-password",
            pg_pass,
            f"FATAL could not connect to postgres://app:{pg_pass}@db.internal:5432/app",
        ),
        (
            "stripe-key",
            stripe,
            f"stripe.error.AuthenticationError: Invalid API Key provided: {stripe}",
        ),
        ("private-key", pem, f"loaded signing key:\n{pem}\n and then crashed"),
        ("google-api-key", google, f"maps: request denied for key={google}"),
        ("anthropic-key", anthropic, f"llm call failed (401) with x-api-key: {anthropic}"),
        ("guard-token", guard_token, f"curl /incidents/3 with token {guard_token} got 401"),
        ("npm-token", npm, f"npm ERR! //registry.npmjs.org/:_authToken={npm} is invalid"),
        ("sendgrid-key", sendgrid, f"mailer: SENDGRID_API_KEY={sendgrid} quota exceeded"),
        ("token", api_key, f'upstream said 401 for {{"api_key": "{api_key}", "user": 42}}'),
        ("password", app_pass, f"retrying login with password={app_pass} (attempt 3)"),
        ("authorization", basic, f"proxy: Authorization: Basic {basic} -> 407"),
        ("slack-webhook", webhook, f"alert delivery to {webhook} timed out"),
        ("cookie", session, f"upstream 500; request headers: Cookie: sid={session}; theme=dark"),
    ]


def ordinary_lines(n: int = 1200, seed: int = 7) -> list[str]:
    """``n`` log lines with ids, hashes, base64 and URLs that are not secrets."""
    rnd = random.Random(seed)
    paths = [
        "/api/v1/orders",
        "/healthz",
        "/users/42/profile",
        "/static/app.js",
        "/login",
        "/api/v2/search?q=shoes&page=3",
        "/metrics",
        "/api/tokens/refresh",
    ]
    words = ["checkout", "inventory", "billing", "auth", "search", "mailer", "worker"]
    out = []
    for i in range(n):
        rid = uuid.UUID(int=rnd.getrandbits(128))
        sha = hashlib.sha1(str(i).encode()).hexdigest()
        b64 = base64.b64encode(f"order:{i}:{rnd.choice(words)}".encode()).decode()
        ms = rnd.randint(1, 3000)
        svc = rnd.choice(words)
        path = rnd.choice(paths)
        fp = base64.b64encode(hashlib.sha256(sha.encode()).digest()).decode().rstrip("=")
        templates = [
            f"2026-12-02T18:{i % 60:02d}:07Z INFO {svc} request_id={rid} GET {path} 200 {ms}ms",
            f"deployed {svc} at commit {sha} (build #{i}) by ci",
            f"WARN {svc}: slow query took {ms}ms trace={rid.hex}",
            f"cache put key=order:{i} value={b64} ttl=300",
            f"GET https://api.example.com{path} -> 502 upstream https://10.0.{i % 255}.7:8443/x",
            f"ERROR {svc} worker-{i % 8} failed job {rid}: connection reset by peer",
            f"user {i} logged in from 192.168.{i % 255}.{i % 200} session={sha[:16]}",
            f"password reset requested for user {i}",
            f"token refresh ok for client {svc}-{i % 50} (expires in 3600s)",
            f"image sha256:{hashlib.sha256(str(i).encode()).hexdigest()} pulled",
            f"auth: invalid credentials for user bob{i} from 10.1.2.{i % 255}",
            f"Authorization header missing on {path}",
            f"postgres://db.internal:5432/app connection pool size={i % 40}",
            f"jwt verification failed: signature expired ({ms}s ago)",
            f"kube: pod {svc}-{sha[:10]}-{sha[10:15]} Back-off restarting failed container",
            f'etag W/"{sha[:24]}" for {path}',
            # near misses: the words of secrets, without one
            f"operator rotated secret_name=db-credentials-{i} in namespace prod",
            f"password_expires_in={i % 90}d for user {i}; password policy ok",
            f"GetSecretValue ok arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-"
            f"{sha[:6]}",
            f"llm usage: max_tokens=4096 prompt_tokens={ms} total_tokens={ms + 12}",
            f"csrf token mismatch on {path} (request {rid})",
            f"Authorization: required for {path}",
            f"redis://cache.internal:6379/{i % 16} reconnecting; amqp://rabbit:5672/ ok",
            f'k8s: Secret "db-password" not found in namespace prod (pod {svc}-{i})',
            f"api_key_rotation=enabled next=2026-12-{i % 28 + 1:02d}",
            f"JWT header eyJhbGciOiJIUzI1NiJ9 decoded for {svc}",
            f"ssh: host key SHA256:{fp} accepted",
            f"mail from noreply@example.com to ops+{i}@example.com queued id={rid.hex[:12]}",
            f"password: ******** (hidden) for user {i}",
            f"/bin/sh: can't create /etc/passwd: Read-only file system (job {i})",
            f"passwd: password updated successfully for svc-{i % 9}",
            f"reading /run/secrets/api_key: permission denied (pid {i + 100})",
            f'FATAL: password authentication failed for user "app{i % 7}"',
            'MountVolume.SetUp failed for volume "secret-volume" : secret "db-creds" not found',
            f"Invalid token: expected ',' at line {i % 40} column {i % 9}",
            "mysql: [Warning] Using a password on the command line interface can be insecure.",
            f"redis: WRONGPASS invalid username-password pair (client {i % 30})",
            f"TokenExpiredError: jwt expired at {rid}",
            f"api_key: missing in request {rid}",
            f"x509: certificate signed by unknown authority (cert {sha[:12]})",
            f"Set-Cookie: theme=dark; Path=/; Max-Age={ms}",
            f"downloaded https://registry.npmjs.org/left-pad/-/left-pad-1.{i}.0.tgz sha1={sha}",
        ]
        out.append(templates[i % len(templates)])
    return out


LINE_LIMIT = 64 * 1024  # the longest line a log monitor hands on (``max_line_bytes``' default)


def hostile_lines(needs: tuple[str, ...]) -> list[str]:
    """Lines of ``LINE_LIMIT`` characters built to make a backtracking rule go quadratic: its
    keywords repeated with separators, a secret-ish name with an endless value, an unclosed
    quote, a run of base64, ``eyJ-`` and ``sk-`` (issue 33's two slow lines)."""
    pieces = [*needs, "eyJ-", "sk-", "password=", 'token: "', "://a:", "-----BEGIN "]
    lines = [(p + sep) * (LINE_LIMIT // (len(p) + 1) + 1) for p in pieces for sep in ("-", " ")]
    lines += ["A" * LINE_LIMIT, "aB3+" * (LINE_LIMIT // 4), "x=" + "'" + "a" * LINE_LIMIT]
    return [line[:LINE_LIMIT] for line in lines]
