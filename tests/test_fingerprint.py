"""Fingerprints fold repeats of one fault together and keep different faults apart."""

from __future__ import annotations

from guard.fingerprint import fingerprint, mask


def test_variable_parts_are_masked():
    a = ("2026-12-02T18:06:48.123Z req 550e8400-e29b-41d4-a716-446655440000 from 10.1.2.3:5432 "
         "id=89bbae50 took 123ms code 0x1F")
    b = ("2026-11-30 01:02:03,999 req 123e4567-e89b-12d3-a456-426614174000 from 192.168.0.1:80 "
         "id=abbfddfa took 9s code 0xAB")
    assert mask(a) == mask(b)
    assert "<ts>" in mask(a) and "<uuid>" in mask(a) and "<ip>" in mask(a) and "<id>" in mask(a)


def test_syslog_and_nginx_timestamps():
    assert mask("Dec  2 18:06:48 host x") == mask("Jan 10 01:00:00 host x")
    assert mask('[02/Dec/2026:18:06:48 +0000] "GET /"') == mask('[01/Jan/2027:00:00:00 +0000] "GET /"')


def test_different_faults_differ():
    assert fingerprint("logfile", "/a", "err", "disk full") != fingerprint("logfile", "/a", "err", "x failed")
    assert fingerprint("logfile", "/a", "err", "disk full") != fingerprint("logfile", "/b", "err", "disk full")
    assert fingerprint("logfile", "/a", "err", "disk full") != fingerprint("logfile", "/a", "oom", "disk full")
    assert fingerprint("docker", "api", "container_exited", "exited with code 1") == fingerprint(
        "docker", "api", "container_exited", "exited with code 137")
