"""A HELD-OUT corpus of FAKE secrets: the shapes vendors document, as log lines show them.

The redaction rules are tuned on ``tests/helpers/secret_corpus.py``; this one was written afterwards,
from the vendors' own descriptions of their token formats (prefixes, lengths, alphabets: GitHub,
GitLab, Slack, Stripe, Twilio, AWS, Azure, Google Cloud, HashiCorp, Shopify, ... docs) and from
how tools print credentials (``curl -u``, ``mysql -p``, ``PGPASSWORD=``, kubeconfig, Docker's
``config.json``), and is kept apart so that its recall says something about secrets the rules
were not written from. Every value is generated (a fixed prefix plus seeded random characters):
none is, or ever was, a real credential, and no line of this file holds a credential shape.

Each entry is ``(group, name, secret, lines)``: ``lines`` arrive one at a time from one source
(a key logged line by line has many), and no piece of ``secret`` may survive redaction.
"""

from __future__ import annotations

import base64
import json
import random
import urllib.parse

GROUPS = ("vendor", "context", "keys", "urls", "cloud")
Entry = tuple[str, str, str, list[str]]

_AZ = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_az = _AZ.lower()
_D = "0123456789"
_HEX = "0123456789abcdef"
_AN = _AZ + _az + _D
_U = _AN + "-_"
_B64 = _AN + "+/"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


class _Gen:
    def __init__(self, seed: str) -> None:
        self.rnd = random.Random(seed)

    def __call__(self, alphabet: str, n: int) -> str:
        return "".join(self.rnd.choice(alphabet) for _ in range(n))

    def an(self, n: int) -> str:
        return self(_AN, n)

    def hex(self, n: int) -> str:
        return self(_HEX, n)

    def u(self, n: int) -> str:
        return self(_U, n)

    def d(self, n: int) -> str:
        return self("123456789", 1) + self(_D, n - 1)

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def b64(self, n: int) -> str:
        return self(_B64, n)


def _p(*parts: str) -> str:
    """A prefix, assembled so that no line of this file spells a credential shape."""
    return "".join(parts)


def _vendor(g: _Gen) -> list[tuple[str, str, str]]:
    """(name, secret, line with {s}) for tokens recognisable by prefix or shape."""
    return [
        (
            "github classic pat",
            _p("gh", "p_") + g.an(36),
            "git push failed: remote: Invalid username or token {s}",
        ),
        (
            "github oauth",
            _p("gh", "o_") + g.an(36),
            "oauth exchange returned access_token {s} scope=repo",
        ),
        ("github app user", _p("gh", "u_") + g.an(36), "app user-to-server token {s} expired"),
        (
            "github app install",
            _p("gh", "s_") + g.an(36),
            "installation token {s} issued for repo acme/api",
        ),
        ("github refresh", _p("gh", "r_") + g.an(76), "refresh with {s} failed"),
        (
            "github fine-grained",
            _p("github", "_pat_") + g.an(22) + "_" + g.an(59),
            "GH_TOKEN set to {s}",
        ),
        (
            "gitlab pat",
            _p("gl", "pat-") + g.u(20),
            "remote: HTTP Basic: Access denied for token {s}",
        ),
        ("gitlab deploy", _p("gl", "dt-") + g.u(20), "registry deploy token {s} revoked"),
        ("gitlab runner", _p("gl", "rt-") + g.u(20), "Registering runner... token={s} succeeded"),
        (
            "gitlab trigger",
            _p("gl", "ptt-") + g.hex(40),
            "curl -X POST -F token={s} -F ref=main https://gitlab.example.com/api/v4/projects/9/trigger/pipeline",
        ),
        ("gitlab ci job", _p("gl", "cbt-") + "1_" + g.u(20), "CI_JOB_TOKEN is {s} for job 4411"),
        (
            "gitlab feed",
            _p("gl", "ft-") + g.u(20),
            "GET /dashboard/projects.atom?feed_token={s} 200",
        ),
        ("gitlab incoming mail", _p("gl", "imt-") + g.u(20), "incoming email token {s} rotated"),
        ("gitlab agent", _p("gl", "agent-") + g.u(50), "agentk: using token {s}"),
        ("gitlab oauth secret", _p("gl", "oas-") + g.u(64), "oauth application secret {s}"),
        (
            "slack bot",
            _p("xo", "xb-") + g.d(12) + "-" + g.d(13) + "-" + g.an(24),
            "slack_sdk: not_authed with {s}",
        ),
        (
            "slack user",
            _p("xo", "xp-") + g.d(12) + "-" + g.d(12) + "-" + g.d(13) + "-" + g.hex(32),
            "posting as user token {s}",
        ),
        (
            "slack app-level",
            _p("xa", "pp-") + "1-A" + g(_AZ + _D, 10) + "-" + g.d(13) + "-" + g.hex(64),
            "socket mode connect with app token {s}",
        ),
        ("slack config", _p("xo", "xe.xoxp-") + "1-" + g.an(160), "config token {s} refreshed"),
        (
            "slack webhook",
            _p("https://hooks.", "slack.com/services/T")
            + g(_AZ + _D, 10)
            + "/B"
            + g(_AZ + _D, 10)
            + "/"
            + g.an(24),
            "notify: POST {s} -> 404 no_service",
        ),
        (
            "discord webhook",
            _p("https://discord", ".com/api/webhooks/") + g.d(18) + "/" + g.u(68),
            "discord notify failed: {s} 429",
        ),
        ("stripe secret live", _p("sk", "_live_") + g.an(99), "stripe: No such customer; key {s}"),
        ("stripe restricted", _p("rk", "_live_") + g.an(99), "using restricted key {s}"),
        (
            "stripe webhook secret",
            _p("wh", "sec_") + g.an(32),
            "signature verification failed, secret {s}",
        ),
        ("twilio api key", _p("S", "K") + g.hex(32), "twilio: 20003 Authenticate with {s}"),
        ("sendgrid", _p("S", "G.") + g.u(22) + "." + g.u(43), "smtp auth with {s} rejected 535"),
        ("mailgun", _p("ke", "y-") + g.hex(32), "mailgun client configured with {s}"),
        ("mailchimp", g.hex(32) + "-us" + g.d(2), "mailchimp API Key Invalid: {s}"),
        (
            "shopify admin",
            _p("shp", "at_") + g.hex(32),
            "shopify 401 with X-Shopify-Access-Token {s}",
        ),
        ("shopify custom app", _p("shp", "ca_") + g.hex(32), "custom app token {s}"),
        ("shopify private app", _p("shp", "pa_") + g.hex(32), "private app password {s}"),
        ("shopify shared secret", _p("shp", "ss_") + g.hex(32), "webhook hmac with {s} mismatch"),
        ("heroku v2", _p("HR", "KU-") + g.u(60), "heroku auth:token -> {s}"),
        (
            "digitalocean pat",
            _p("do", "p_v1_") + g.hex(64),
            "doctl: Unable to authenticate you {s}",
        ),
        ("digitalocean oauth", _p("do", "o_v1_") + g.hex(64), "oauth access {s}"),
        ("digitalocean refresh", _p("do", "r_v1_") + g.hex(64), "refresh {s} expired"),
        (
            "vault service token",
            _p("hv", "s.") + g.u(90),
            "vault: permission denied for X-Vault-Token {s}",
        ),
        ("vault batch token", _p("hv", "b.") + g.u(138), "batch token {s} cannot be renewed"),
        ("databricks", _p("da", "pi") + g.hex(32), "databricks-cli: Invalid access token {s}"),
        (
            "terraform cloud",
            g.an(14) + _p(".atlas", "v1.") + g.an(67),
            "terraform login stored {s}",
        ),
        (
            "grafana service account",
            _p("gl", "sa_") + g.an(32) + "_" + g.hex(8),
            "grafana api 401 for {s}",
        ),
        ("grafana cloud", _p("gl", "c_") + g.b64(80), "grafana-agent remote_write auth {s}"),
        (
            "sentry org token",
            _p("sntr", "ys_")
            + "eyJpYXQiOjE2OTQwMDAwMDAuMCwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8ifQ_"
            + g.an(43),
            "sentry-cli: invalid token {s}",
        ),
        (
            "sentry user token",
            _p("sntr", "yu_") + g.hex(64),
            "SENTRY_AUTH_TOKEN={s} sentry-cli releases new",
        ),
        ("new relic user key", _p("NR", "AK-") + g(_AZ + _D, 27), "newrelic: 403 for API key {s}"),
        ("new relic insert key", _p("NR", "II-") + g.u(32), "insights insert key {s}"),
        ("new relic browser", _p("NR", "JS-") + g.hex(19), "browser agent license {s}"),
        (
            "atlassian api token",
            _p("ATA", "TT3") + g.u(180) + "=" + g.hex(8),
            "jira: 401 basic auth with {s}",
        ),
        (
            "age secret key",
            _p("AGE-SECRET", "-KEY-1") + g(_BECH32.upper(), 58),
            "sops: using age identity {s}",
        ),
        ("npm", _p("np", "m_") + g.an(36), "npm notice token {s} added"),
        ("pypi", _p("pyp", "i-AgEIcHlwaS5vcmc") + g.u(70), "twine upload: 403 for {s}"),
        (
            "openai project",
            _p("sk", "-proj-") + g.u(74) + "T3Blbk" + "FJ" + g.u(74),
            "openai.AuthenticationError: Incorrect API key provided: {s}",
        ),
        (
            "anthropic",
            _p("sk", "-ant-api03-") + g.u(93) + "AA",
            "anthropic 401 invalid x-api-key {s}",
        ),
        ("google api key", _p("AI", "za") + g.u(35), "geocode REQUEST_DENIED for {s}"),
        (
            "google oauth client secret",
            _p("GOC", "SPX-") + g.u(28),
            "oauth client secret {s} loaded",
        ),
        ("google oauth access", _p("ya", "29.") + g.u(150), "gcloud: token {s} expired"),
        (
            "aws access key",
            _p("AK", "IA") + g(_AZ + "234567", 16),
            "botocore: InvalidAccessKeyId {s}",
        ),
        ("aws temporary key", _p("AS", "IA") + g(_AZ + "234567", 16), "assumed role with key {s}"),
        ("hugging face", _p("h", "f_") + g(_AZ + _az, 34), "huggingface_hub: 401 for token {s}"),
        ("linear", _p("lin", "_api_") + g.an(40), "linear sync failed with {s}"),
        ("postman", _p("PM", "AK-") + g.hex(24) + "-" + g.hex(34), "newman: invalid api key {s}"),
        ("doppler", _p("dp", ".pt.") + g.an(43), "doppler: token {s} unauthorized"),
        ("pulumi", _p("pu", "l-") + g.hex(40), "pulumi login: {s} invalid"),
        ("planetscale token", _p("pscale", "_tkn_") + g.u(43), "pscale auth with {s}"),
        ("planetscale password", _p("pscale", "_pw_") + g.u(43), "mysql connect with {s} denied"),
        (
            "dynatrace",
            _p("dt0", "c01.") + g(_AZ + _D, 24) + "." + g(_AZ + _D, 64),
            "dynatrace api token {s} rejected",
        ),
        ("telegram bot", g.d(10) + ":AA" + g.u(33), "telegram getUpdates 401 for bot{s}"),
        ("square access", _p("EA", "AA") + g.u(60), "square: UNAUTHORIZED {s}"),
        ("square oauth secret", _p("sq0", "csp-") + g.u(43), "square oauth secret {s}"),
        ("rubygems", _p("ruby", "gems_") + g.hex(48), "gem push: {s} not allowed"),
        ("docker hub pat", _p("dck", "r_pat_") + g.u(27), "docker login -u bob -p {s} failed"),
        ("prefect", _p("pn", "u_") + g.an(36), "prefect cloud login {s}"),
        ("readme", _p("rd", "me_") + g(_az + _D, 70), "readme sync with {s}"),
        ("airtable pat", _p("pa", "t") + g.an(14) + "." + g.hex(64), "airtable 401 with {s}"),
        ("notion", _p("nt", "n_") + g.d(11) + g.an(35), "notion integration token {s} invalid"),
        ("typeform", _p("tf", "p_") + g.u(44) + "_" + g.u(14), "typeform personal token {s}"),
        ("easypost", _p("EZ", "AK") + g.an(54), "easypost: APIKeyError {s}"),
        (
            "1password service account",
            _p("op", "s_") + "eyJzaWduSW5BZGRyZXNzIjoibXkuMXBhc3N3b3JkLmNvbSJ9" + g.an(100),
            "op: invalid service account token {s}",
        ),
        (
            "alibaba access key",
            _p("LT", "AI") + g.an(20),
            "aliyun: InvalidAccessKeyId.NotFound {s}",
        ),
        (
            "azure ad client secret",
            g.an(3) + "8Q~" + g.u(34),
            "AADSTS7000215: Invalid client secret provided: {s}",
        ),
        ("flutterwave", _p("FLWSECK", "_TEST-") + g.hex(32) + "-X", "flutterwave secret {s}"),
        ("shippo", _p("shippo", "_live_") + g.hex(40), "shippo token {s}"),
        ("scalingo", _p("tk-", "us-") + g.u(48), "scalingo login {s}"),
        ("infracost", _p("ic", "o-") + g.an(32), "infracost: invalid api key {s}"),
        ("openshift", _p("sha", "256~") + g.u(43), "oc login --token={s} failed"),
        (
            "harness",
            _p("pa", "t.") + g.u(22) + "." + g.hex(24) + "." + g.an(20),
            "harness api key {s}",
        ),
        ("duffel", _p("duffel", "_live_") + g.u(43), "duffel 401 for {s}"),
        ("pinecone", _p("pc", "sk_") + g.an(6) + "_" + g.an(60), "pinecone: unauthorized {s}"),
        (
            "cloudflare origin ca",
            _p("v1.", "0-") + g.hex(24) + "-" + g.hex(146),
            "origin ca key {s}",
        ),
        ("buildkite", _p("bk", "ua_") + g.hex(40), "buildkite-agent: token {s} rejected"),
        (
            "jwt",
            _p("ey", "JhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJ") + g.u(120) + "." + g.u(342),
            "jwt verify failed for {s}",
        ),
    ]


def _context(g: _Gen) -> list[tuple[str, str, str]]:
    pw = g.an(6) + "#" + g.an(6)
    return [
        ("password=", p := "Pa" + g.an(12), f"login failed: user=admin password={p}"),
        ("passwd:", p := g.an(10) + "9", f"ldap bind passwd: {p} rejected"),
        ("pwd= in a query", p := g.an(11) + "7", f"GET /login?user=bob&pwd={p} 401"),
        ("PGPASSWORD env", p := g.an(14), f"+ PGPASSWORD={p} psql -h db -U app -c 'select 1'"),
        ("MYSQL_PWD env", p := g.an(14), f"env: MYSQL_PWD={p} HOME=/root"),
        ("DB_PASS env", p := g.an(12), f"export DB_PASS={p}"),
        ("SMTP_PASSWORD env", p := g.an(12), f"container env SMTP_PASSWORD={p} SMTP_HOST=mail"),
        (
            "quoted with spaces and &;",
            p := f"{g.an(4)} {g.an(4)}&{g.an(3)};{g.an(3)}",
            f'REDIS_PASSWORD="{p}" redis-server --port 6379',
        ),
        (
            "single-quoted with spaces",
            p := f"{g.an(5)} {g.an(5)} {g.an(2)}!",
            f"password='{p}' rejected",
        ),
        (
            "json password",
            p := f"{g.an(4)}@{g.an(4)} {g.an(3)}",
            json.dumps({"user": "svc", "password": p}),
        ),
        ("json secret", p := g.an(24), json.dumps({"client_id": "web", "client_secret": p})),
        ("yaml password", p := g.an(12) + "!", f"  password: {p}"),
        ("yaml quoted", p := f"{g.an(6)} {g.an(6)}", f'  db_password: "{p}"'),
        ("--password=", p := g.an(13), f"exec: pg_dump --host=db --password={p} app"),
        ("--password value", p := g.an(13), f"running: rabbitmqctl add_user app --password {p}"),
        ("--token value", p := g.an(32), f"kubectl --token {p} get pods"),
        ("--api-key=", p := g.an(32), f"cli --api-key={p} deploy"),
        (
            "mysql -p'v'",
            p := f"{g.an(5)} {g.an(5)}",
            f"mysql -h db -u root -p'{p}' -e 'show databases'",
        ),
        ("mysql -pvalue", p := g.an(12), f"+ mysqldump -uroot -p{p} --all-databases"),
        ("sshpass -p", p := g.an(12), f"sshpass -p '{p}' ssh deploy@10.0.0.5 uptime"),
        (
            "curl -u twilio",
            p := g.hex(32),
            f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/AC{g.hex(32)}/Messages.json -u AC{g.hex(32)}:{p}",
        ),
        (
            "curl --user mailgun",
            p := _p("ke", "y-") + g.hex(32),
            f"curl -s --user 'api:{p}' https://api.mailgun.net/v3/example.com/messages",
        ),
        (
            "curl --user=",
            p := g.an(14),
            f"curl --user=deploy:{p} https://nexus.example.com/repository/",
        ),
        ("redis-cli -a", p := g.an(16), f"redis-cli -h cache -a {p} ping"),
        ("redis AUTH", p := g.an(16), f'cmdstat: "AUTH" "default" "{p}" from 10.0.0.7'),
        ("redis AUTH bare", p := g.an(16), f"1:M 04 Dec 2026 10:00:00.000 * client sent AUTH {p}"),
        ("requirepass", p := g.an(18), f"redis.conf line 12: requirepass {p}"),
        ("secret_key env", p := "django-insecure-" + g.an(40), f"SECRET_KEY='{p}'"),
        ("api_key=", p := g.an(32), f"weather api_key={p} quota exceeded"),
        ("apiKey json", p := g.an(32), f'{{"apiKey": "{p}", "region": "eu"}}'),
        ("x-api-key header", p := g.an(40), f"request headers: X-Api-Key: {p}"),
        ("auth_token=", p := g.an(32), f"auth_token={p} invalid"),
        ("passphrase", p := f"{g.an(5)} {g.an(5)}", f'gpg: passphrase="{p}" bad'),
        ("docker -e", p := g.an(14), f"docker run -e POSTGRES_PASSWORD={p} -d postgres:16"),
        ("toml password", p := pw, f'password = "{p}"'),
        ("credentials=", p := g.an(20), f"git credential helper: credentials={p}"),
        (
            "wget --password",
            p := g.an(12),
            f"wget --user=ci --password={p} https://files.example.com/a.tgz",
        ),
        ("htpasswd-like auth", p := g.an(16), f'{{"auth": "{p}"}}'),
        ("env _TOKEN", p := g.an(40), f"SLACK_BOT_TOKEN={p}"),
        ("env _KEY", p := g.an(40), f"OPENWEATHER_API_KEY={p}"),
        ("heroku api key uuid", p := g.uuid(), f"HEROKU_API_KEY={p} heroku apps"),
        ("datadog api key", p := g.hex(32), f"DD_API_KEY={p} datadog-agent start"),
        ("cloudflare api token", p := g.u(40), f"CLOUDFLARE_API_TOKEN={p} wrangler deploy"),
    ]


def _urls(g: _Gen) -> list[tuple[str, str, str]]:
    hook = (
        _p("https://hooks.", "slack.com/services/T")
        + g(_AZ, 10)
        + "/B"
        + g(_AZ, 10)
        + "/"
        + g.an(24)
    )
    basic = base64.b64encode(f"deploy:{g.an(12)}".encode()).decode()
    return [
        (
            "url password with @",
            p := f"{g.an(5)}@{g.an(5)}",
            f"connecting to postgres://app:{p}@db.internal:5432/app",
        ),
        (
            "url password with /",
            p := f"{g.an(5)}/{g.an(5)}",
            f"amqp://guest:{p}@rabbit:5672/ unreachable",
        ),
        (
            "url password with #",
            p := f"{g.an(5)}#{g.an(5)}",
            f"mongodb://root:{p}@mongo:27017/admin?authSource=admin",
        ),
        ("url password plain", p := g.an(14), f"ftp://upload:{p}@ftp.example.com/in/ 530"),
        (
            "url-encoded password",
            p := g.an(6) + "%40" + g.an(6),
            f"redis://default:{p}@cache:6379/0",
        ),
        (
            "url-encoded webhook in a url",
            hook,
            f"GET /redirect?next={urllib.parse.quote(hook, safe='')} 302",
        ),
        ("bearer opaque", p := g.u(48), f"upstream 401: Authorization: Bearer {p}"),
        ("authorization token", p := g.an(40), f'-H "Authorization: token {p}"'),
        ("bare basic auth", basic, f"auth=Basic {basic} realm=registry"),
        (
            "basic in curl header",
            basic,
            f"curl -H 'Authorization: Basic {basic}' https://registry.example.com/v2/",
        ),
        ("proxy authorization", basic, f"Proxy-Authorization: Basic {basic}"),
        ("second cookie value", p := g.an(32), f"Cookie: theme=dark; sessionid={p}; lang=en"),
        (
            "set-cookie session",
            p := g.u(40),
            f"Set-Cookie: __Host-session={p}; Path=/; Secure; HttpOnly",
        ),
        ("access_token in query", p := g.u(40), f"GET /api/me?access_token={p} 200"),
        (
            "api_key in query",
            p := g.an(32),
            f"GET https://api.example.com/v1/data?api_key={p}&q=1 403",
        ),
        (
            "token in websocket url",
            p := g.an(40),
            f"ws connect wss://push.example.com/socket?token={p} failed",
        ),
        (
            "teams webhook",
            p := _p("https://acme.webhook.", "office.com/webhookb2/")
            + g.uuid()
            + "@"
            + g.uuid()
            + "/IncomingWebhook/"
            + g.hex(32)
            + "/"
            + g.uuid(),
            "teams notify to {s} failed".replace("{s}", p),
        ),
    ]


def _cloud(g: _Gen) -> list[tuple[str, str, str]]:
    aws = g.b64(40)
    sas = urllib.parse.quote(
        base64.b64encode(bytes(g.rnd.randrange(256) for _ in range(32))).decode(), safe=""
    )
    return [
        ("aws secret key ini", aws, f"aws_secret_access_key = {aws}"),
        ("aws secret key env", aws, f"AWS_SECRET_ACCESS_KEY={aws}"),
        ("aws session token", p := "IQoJb3JpZ2luX2Vj" + g.b64(300), f"aws_session_token={p}"),
        (
            "azure storage connection",
            p := g.b64(86) + "==",
            f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={p};EndpointSuffix=core.windows.net",
        ),
        (
            "azure sas signature",
            sas,
            f"GET https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-12-31&sr=b&sp=r&sig={sas} 403",
        ),
        (
            "azure service bus",
            p := g.b64(43) + "=",
            f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={p}",
        ),
        ("azure client secret env", p := g.an(3) + "8Q~" + g.u(34), f"AZURE_CLIENT_SECRET={p}"),
        (
            "gcp service account key id",
            p := g.hex(40),
            json.dumps({"type": "service_account", "private_key_id": p}),
        ),
        (
            "mongodb srv",
            p := g.an(16),
            f"MongoServerError: bad auth : mongodb+srv://app:{p}@cluster0.ab1cd.mongodb.net/prod",
        ),
        ("redis url no user", p := g.an(20), f"REDIS_URL=redis://:{p}@cache:6379/0"),
        (
            "jdbc password param",
            p := g.an(14),
            f"jdbc:mysql://db:3306/app?user=app&password={p}&useSSL=true",
        ),
        (
            "ado.net password",
            p := g.an(14),
            f"Server=tcp:sql.acme.net,1433;User ID=sa;Password={p};Encrypt=True",
        ),
        ("snowflake url", p := g.an(14), f"snowflake://etl:{p}@acme-xy12345/db/schema"),
        (
            "docker config auths",
            p := base64.b64encode(f"ci:{g.an(20)}".encode()).decode(),
            json.dumps({"auths": {"registry.example.com": {"auth": p}}}),
        ),
        (
            "kubernetes sa token",
            p := _p("ey", "JhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJ") + g.u(300) + "." + g.u(342),
            f"    token: {p}",
        ),
        (
            "database url",
            p := g.an(16),
            f"DATABASE_URL=postgresql://app:{p}@db.internal:5432/app?sslmode=require",
        ),
    ]


def _key_body(g: _Gen, der_prefix: str, n_lines: int, width: int) -> list[str]:
    body = der_prefix + g.b64(width * n_lines - len(der_prefix))
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return [*lines[:-1], lines[-1][: width // 3] + "=="]


def _armour(kind: str, lines: list[str]) -> list[str]:
    edge = "-" * 5
    return [f"{edge}BEGIN {kind}{edge}", *lines, f"{edge}END {kind}{edge}"]


def _keys(g: _Gen) -> list[Entry]:
    rsa = _armour("RSA PRIVATE KEY", _key_body(g, "MIIEow", 25, 64))
    pkcs8 = _armour("PRIVATE KEY", _key_body(g, "MIIEvQ", 26, 64))
    ec = _armour("EC PRIVATE KEY", _key_body(g, "MHcCAQEEI", 3, 64))
    ossh = _armour("OPENSSH PRIVATE KEY", _key_body(g, "b3BlbnNzaC1rZXktdjEAAAAA", 6, 70))
    enc = _armour(
        "RSA PRIVATE KEY",
        [
            "Proc-Type: 4,ENCRYPTED",
            "DEK-Info: AES-128-CBC," + g.hex(32).upper(),
            "",
            *_key_body(g, g.b64(4), 25, 64),
        ],
    )
    pgp = _armour("PGP PRIVATE KEY BLOCK", ["", *_key_body(g, "lQOYB", 20, 64), "=" + g.b64(4)])
    dsa = _armour("DSA PRIVATE KEY", _key_body(g, "MIIBuw", 10, 64))
    putty76 = _armour("PRIVATE KEY", _key_body(g, "MIIEvg", 20, 76))
    ts = "2026-12-04T10:{:02d}:00.123Z app[{}]: {}"
    docker = "api-1  | {}"

    def secret(lines: list[str]) -> str:
        return "\n".join(lines)

    def pem_b64(lines: list[str]) -> str:
        return base64.b64encode(("\n".join(lines) + "\n").encode()).decode()

    out: list[Entry] = [
        (
            "keys",
            "rsa block in one text",
            secret(rsa),
            ["loaded key:\n" + secret(rsa) + "\nthen crashed"],
        ),
        ("keys", "pkcs8 block", secret(pkcs8), [secret(pkcs8)]),
        ("keys", "ec block", secret(ec), ["key=" + secret(ec)]),
        ("keys", "openssh block", secret(ossh), [secret(ossh)]),
        ("keys", "encrypted pem block", secret(enc), [secret(enc)]),
        ("keys", "pgp private block", secret(pgp), [secret(pgp)]),
        (
            "keys",
            "rsa line by line with timestamps",
            secret(rsa),
            [ts.format(i % 60, 4242, x) for i, x in enumerate(rsa)],
        ),
        (
            "keys",
            "pkcs8 line by line with docker prefix",
            secret(pkcs8),
            [docker.format(x) for x in pkcs8],
        ),
        (
            "keys",
            "openssh line by line with timestamps",
            secret(ossh),
            [ts.format(i % 60, 7, x) for i, x in enumerate(ossh)],
        ),
        ("keys", "dsa line by line bare", secret(dsa), list(dsa)),
        (
            "keys",
            "76-column key line by line",
            secret(putty76),
            [ts.format(i % 60, 9, x) for i, x in enumerate(putty76)],
        ),
        (
            "keys",
            "header then one lone 64-col line",
            rsa[1],
            [ts.format(0, 1, rsa[0]), ts.format(0, 1, rsa[1])],
        ),
        (
            "keys",
            "json-escaped key (gcp service account)",
            secret(pkcs8),
            [json.dumps({"type": "service_account", "private_key": secret(pkcs8) + "\n"})],
        ),
        (
            "keys",
            "kubeconfig client-key-data",
            pem_b64(ec),
            [f"    client-key-data: {pem_b64(ec)}"],
        ),
        ("keys", "kubernetes secret tls.key", pem_b64(rsa), [f"  tls.key: {pem_b64(rsa)}"]),
        (
            "keys",
            "der key in an env var",
            pkcs8[1] + pkcs8[2],
            [f"PRIVATE_KEY={pkcs8[1]}{pkcs8[2]}"],
        ),
    ]
    return out


def heldout(seed: str = "h") -> list[Entry]:
    """The held-out corpus: ``(group, name, secret, lines)`` for each shape; ``seed`` varies
    the values."""
    g = _Gen(seed)
    entries: list[Entry] = []
    for group, rows in (
        ("vendor", _vendor(g)),
        ("context", _context(g)),
        ("urls", _urls(g)),
        ("cloud", _cloud(g)),
    ):
        for name, secret, line in rows:
            entries.append((group, name, secret, [line.replace("{s}", secret)]))
    entries += _keys(g)
    return entries


def pieces(secret: str) -> list[str]:
    """What must not survive: each line of ``secret`` but PEM armour and short lines (a key's
    ``==`` tail, a blank line, a PEM header such as ``Proc-Type``)."""
    return [
        p
        for p in secret.splitlines()
        if len(p) >= 8 and not p.startswith("-----") and ": " not in p
    ]
