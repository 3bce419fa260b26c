"""Runs inside the stack image's container (python3, stdlib only): starts nginx and Redis, injects
their faults in a seeded random order, and prints one JSON object per injection: the fault and
the lines each log gained meanwhile. ``bench.daemon_stack`` labels and stores them."""

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from bench.daemon_drive import drive

NGINX_CONF = """
user www-data;
worker_processes 1;
pid /run/nginx.pid;
error_log /var/log/nginx/error.log;
events {}
http {
  access_log /var/log/nginx/access.log;
  limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;
  client_max_body_size 1k;
  server {
    listen 127.0.0.1:8080;
    root /srv/www;
    location /api/ { proxy_pass http://127.0.0.1:9; }
    location /slow/ { proxy_pass http://127.0.0.1:9001; proxy_read_timeout 200ms; }
    location /broken/ { proxy_pass http://127.0.0.1:9002; }
    location /limited/ { limit_req zone=one nodelay; alias /srv/www/static/; }
    location /upload { return 200 "ok"; }
  }
}
"""
LOGS = {
    "nginx error": "/var/log/nginx/error.log",
    "nginx access": "/var/log/nginx/access.log",
    "Redis": "/var/log/redis.log",
}
WORDS = ["users", "orders", "carts", "items", "search", "reports", "sessions"]


def sh(*argv):
    subprocess.run(argv, check=False, capture_output=True)


def silent_upstreams():
    """9001 accepts and never answers (a timeout); 9002 accepts and hangs up (a reset)."""
    hold = []

    def serve(port, close):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(64)
        while True:
            conn, _ = s.accept()
            if close:
                conn.recv(4096)
                conn.close()
            else:
                hold.append(conn)

    for port, close in ((9001, False), (9002, True)):
        threading.Thread(target=serve, args=(port, close), daemon=True).start()


def get(path, data=None):
    with contextlib.suppress(urllib.error.URLError, OSError):
        urllib.request.urlopen(f"http://127.0.0.1:8080{path}", data=data, timeout=3).read()


def raw(port, payload):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(payload)
            s.settimeout(0.5)
            s.recv(4096)
    except OSError:
        pass


def redis(*args):
    sh("redis-cli", "-p", "6379", *args)


def redis_up():
    sh("redis-server", "/etc/redis/bench.conf")
    for _ in range(100):
        if subprocess.run(["redis-cli", "ping"], capture_output=True).stdout.strip() == b"PONG":
            return
        time.sleep(0.05)


def replica_of_nobody(r):
    redis("REPLICAOF", "127.0.0.1", str(r.randint(20000, 20100)))
    time.sleep(1.6)
    redis("REPLICAOF", "NO", "ONE")


def bgsave(r):
    redis("SET", f"key:{r.randint(1, 9999)}", "v")
    redis("BGSAVE")
    time.sleep(0.3)


def restart(r):
    redis("SHUTDOWN")
    time.sleep(0.2)
    redis_up()


def w(r):
    return r.choice(WORDS)


FAULTS = {  # name -> (injections, how)
    "ok": (80, lambda r: get(f"/static/{r.choice(['app.css', 'app.js', 'logo.png'])}")),
    "index": (30, lambda r: get("/")),
    "not_found": (60, lambda r: get(f"/{w(r)}/{r.randint(1, 9999)}.html")),
    "forbidden_dir": (15, lambda r: get(f"/private/{r.choice(['', 'a/', 'b/'])}")),
    "permission": (15, lambda r: get("/secret.txt")),
    "refused": (40, lambda r: get(f"/api/{w(r)}/{r.randint(1, 9999)}")),
    "timeout": (20, lambda r: get(f"/slow/{w(r)}/{r.randint(1, 9999)}")),
    "premature": (20, lambda r: get(f"/broken/{w(r)}/{r.randint(1, 9999)}")),
    "too_large": (15, lambda r: get("/upload", b"x" * r.randint(2000, 9000))),
    "limited": (15, lambda r: (get("/limited/app.css"), get("/limited/app.js"))),
    "bad_request": (10, lambda r: raw(8080, b"HELLO\r\n\r\n")),
    "redis_bgsave": (15, bgsave),
    "redis_save": (10, lambda r: redis("SAVE")),
    "redis_attack": (10, lambda r: raw(6379, b"POST / HTTP/1.1\r\nHost: x\r\n\r\n")),
    "redis_replica": (6, replica_of_nobody),
    "redis_rewrite": (8, lambda r: redis("CONFIG", "REWRITE")),
    "redis_restart": (4, restart),
}


def start():
    silent_upstreams()
    sh("nginx", "-c", "/etc/nginx/bench.conf")
    redis_up()


def main():
    os.makedirs("/srv/www/static", exist_ok=True)
    os.makedirs("/srv/www/private/a", exist_ok=True)
    os.makedirs("/srv/www/private/b", exist_ok=True)
    for name in ("app.css", "app.js", "logo.png", "index.html", "secret.txt"):
        folder = "/srv/www" if name in ("index.html", "secret.txt") else "/srv/www/static"
        with open(f"{folder}/{name}", "w") as f:
            f.write("x" * 100)
    os.chmod("/srv/www/secret.txt", 0)
    with open("/etc/nginx/bench.conf", "w") as f:
        f.write(NGINX_CONF)
    os.makedirs("/var/lib/redis-bench", exist_ok=True)
    with open("/etc/redis/bench.conf", "w") as f:
        f.write(
            "bind 127.0.0.1\nport 6379\ndaemonize yes\nlogfile /var/log/redis.log\n"
            'dir /var/lib/redis-bench\nsave ""\n'
        )
    drive(LOGS, FAULTS, int(sys.argv[1]) if len(sys.argv) > 1 else 48, start)


if __name__ == "__main__":
    main()
