"""Runs inside a container of ``bench.daemon_auth``'s image (python3, stdlib only): starts
rsyslog, sshd and MariaDB and injects their faults (``bench.daemon_drive``'s loop)."""

import contextlib
import os
import socket
import subprocess
import sys
import time

from bench.daemon_drive import drive

LOGS = {"sshd (auth.log)": "/var/log/auth.log", "MariaDB": "/var/log/mysql/error.log"}
WORDS = ["admin", "test", "oracle", "ubuntu", "git", "backup", "support", "guest", "pi"]
SSH = ["ssh", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]


def sh(*argv, env=None):
    subprocess.run(argv, check=False, capture_output=True, env=env, timeout=20)


def ssh_key(user):
    sh(*SSH, "-o", "BatchMode=yes", "-i", "/root/.ssh/id_ed25519", f"{user}@127.0.0.1", "true")


def ssh_password(user):
    env = {**os.environ, "SSH_ASKPASS": "/usr/local/bin/wrong-password"}
    env.update(SSH_ASKPASS_REQUIRE="force", DISPLAY=":0")
    sh(
        *SSH,
        *("-o", "PreferredAuthentications=password", "-o", "NumberOfPasswordPrompts=1"),
        f"{user}@127.0.0.1",
        "true",
        env=env,
    )


def probe(payload):
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", 22), 2) as s:
        if payload:
            s.sendall(payload)
        s.settimeout(1)
        s.recv(256)


def sql(*args):
    sh("mariadb", "-uroot", *args)


def aborted(r):
    """A client that goes away without a goodbye."""
    p = subprocess.Popen(["mariadb", "-uroot", "-e", f"SELECT SLEEP({r.randint(5, 9)})"])
    time.sleep(0.3)
    p.kill()
    p.wait()
    time.sleep(0.2)


def timed_out(r):
    """A client idle past its wait_timeout."""
    script = f"(echo 'SET SESSION wait_timeout=1; SELECT {r.randint(1, 99)};'; sleep 1.6)"
    sh("sh", "-c", f"{script} | mariadb -uroot")


def restart_mariadb(r):
    sh("mariadb-admin", "-uroot", "shutdown")
    time.sleep(0.5)
    start_mariadb()


def start_mariadb():
    subprocess.Popen(
        ["mariadbd", "--user=mysql", "--log-error=/var/log/mysql/error.log"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        if subprocess.run(["mariadb-admin", "-uroot", "ping"], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)


def w(r):
    return r.choice(WORDS) + str(r.randint(1, 99))


FAULTS = {  # name -> (injections, how)
    "ssh_invalid_user": (30, lambda r: ssh_key(w(r))),
    "ssh_root_refused": (30, lambda r: ssh_key("root")),
    "ssh_accepted": (25, lambda r: ssh_key("deploy")),
    "ssh_failed_password": (12, lambda r: ssh_password("deploy")),
    "ssh_invalid_password": (12, lambda r: ssh_password(w(r))),
    "ssh_probe": (20, lambda r: probe(b"")),
    "ssh_bad_banner": (15, lambda r: probe(b"GET / HTTP/1.1\r\n\r\n")),
    "db_access_denied": (40, lambda r: sql(f"-u{w(r)}", f"-p{w(r)}", "-e", "SELECT 1")),
    "db_root_password": (20, lambda r: sql("-pwrong", "-h127.0.0.1", "-e", "SELECT 1")),
    "db_aborted": (15, aborted),
    "db_timeout": (10, timed_out),
    "db_restart": (3, restart_mariadb),
}


def start():
    sh("rsyslogd")
    os.makedirs("/run/sshd", exist_ok=True)
    sh("/usr/sbin/sshd")
    os.makedirs("/run/mysqld", exist_ok=True)
    sh("chown", "-R", "mysql:mysql", "/run/mysqld", "/var/log/mysql")
    start_mariadb()


def main():
    sh("ssh-keygen", "-A")
    sh("useradd", "-m", "deploy")
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "/root/.ssh/id_ed25519")
    os.makedirs("/home/deploy/.ssh", exist_ok=True)
    with (
        open("/root/.ssh/id_ed25519.pub") as src,
        open("/home/deploy/.ssh/authorized_keys", "w") as f,
    ):
        f.write(src.read())
    sh("chown", "-R", "deploy:deploy", "/home/deploy/.ssh")
    with open("/usr/local/bin/wrong-password", "w") as f:
        f.write("#!/bin/sh\necho not-the-password\n")
    os.chmod("/usr/local/bin/wrong-password", 0o755)
    with open("/etc/rsyslog.d/00-bench.conf", "w") as f:
        f.write('module(load="imuxsock")\n')
    drive(LOGS, FAULTS, int(sys.argv[1]) if len(sys.argv) > 1 else 48, start)


if __name__ == "__main__":
    main()
