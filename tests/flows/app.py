"""The stack's application: a python3 ``http.server`` (no pip in the image) behind nginx, that
asks PostgreSQL (``psql``) and Redis (RESP on a raw socket) on every ``/health``.

It is copied into the containers as a file (``SOURCE``), so it must stay self-contained:

- ``/health``: 200 when ``select 1`` and ``PING`` answer; else 500, and the app logs
  ``ERROR health: database unavailable: <psql's error>`` (PostgreSQL's own wording);
- ``/pay``: logs ``ERROR payment provider timed out`` (an application bug, no outage);
- ``/hog``: allocates until the kernel's OOM killer ends the process (the container's limit);
- at start, and every second after, it reads ``app:mode`` in Redis: ``broken`` (a bad config)
  makes it log ``FATAL`` and exit 3, so under ``--restart=always`` it loops until the key is
  fixed; every second it also counts a hit in Redis (errors ignored), the writes that make
  Redis save.

Its log goes to stderr and, like a service's log file, to ``/logs/app.log`` (a host folder).
"""

SOURCE = r"""
import os, socket, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PG, REDIS = os.environ["PG_HOST"], os.environ["REDIS_HOST"]
LOG = open("/logs/app.log", "a", buffering=1)


def log(level, text):
    line = time.strftime("%Y-%m-%d %H:%M:%S") + f" app[{os.getpid()}] {level} {text}"
    print(line, file=sys.stderr, flush=True)
    LOG.write(line + "\n")


def redis(*args):
    payload = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
    with socket.create_connection((REDIS, 6379), timeout=2) as s:
        s.sendall(payload.encode())
        reply = s.recv(65536).decode()
    if reply.startswith("-"):
        raise OSError(reply[1:].strip())
    if reply.startswith("$-1"):
        return None
    return reply.split("\r\n")[1] if reply.startswith("$") else reply[1:].strip()


def mode():
    try:
        return redis("GET", "app:mode")
    except OSError:
        return None


def watch():
    while True:
        if mode() == "broken":
            log("FATAL", "invalid setting app:mode='broken' in redis; refusing to run")
            LOG.flush()
            os._exit(3)
        try:
            redis("INCR", "app:hits")
        except OSError:
            pass
        time.sleep(1)


def database():
    cmd = ["psql", "-h", PG, "-U", "postgres", "-Atc", "select 1"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return "psql timed out"
    return None if done.returncode == 0 else (done.stderr.strip() or "psql failed")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, text):
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/pay":
            log("ERROR", "payment provider timed out after 10s (order 7731)")
            return self.answer(504, "payment provider timed out")
        if self.path == "/hog":
            hog = []
            while True:
                hog.append(bytearray(8 << 20))
        problem = database()
        if problem:
            log("ERROR", "health: database unavailable: " + problem.replace("\n", " "))
            return self.answer(500, "database unavailable")
        try:
            redis("PING")
        except OSError as exc:
            log("ERROR", f"health: redis unavailable: {exc}")
            return self.answer(500, "redis unavailable")
        self.answer(200, "ok")


if mode() == "broken":
    log("FATAL", "invalid setting app:mode='broken' in redis; refusing to start")
    sys.exit(3)
threading.Thread(target=watch, daemon=True).start()
log("INFO", "listening on :8000")
ThreadingHTTPServer(("0.0.0.0", 8000), Handler).serve_forever()
"""

NGINX = r"""
worker_processes 1;
error_log stderr warn;
pid /tmp/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path /tmp/nginx-body;
    proxy_temp_path /tmp/nginx-proxy;
    fastcgi_temp_path /tmp/nginx-fastcgi;
    uwsgi_temp_path /tmp/nginx-uwsgi;
    scgi_temp_path /tmp/nginx-scgi;
    resolver 127.0.0.11 valid=1s ipv6=off;
    server {
        listen 8080;
        location / {
            set $app http://APP:8000;
            proxy_pass $app;
            proxy_connect_timeout 2s;
            proxy_read_timeout 10s;
        }
    }
}
"""
