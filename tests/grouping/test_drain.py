"""The template miner (guard/grouping/drain.py): what a template takes and what it refuses."""

from __future__ import annotations

import pytest

from guard.grouping.drain import SETTLED, TemplateMiner

pytestmark = pytest.mark.unit


def _session(client: str) -> list[str]:
    """A CBS line's message, masked (the session id is ``<num>_<num>`` on every line)."""
    return ["Session:", "<num>_<num>", "initialized", "by", "client", client]


def test_a_word_held_by_many_lines_is_part_of_the_event():
    """Windows' CBS log: 608 sessions of ``WindowsUpdateAgent.``, then one of ``SPP.`` (another
    event to Loghub's labels); one word of six differs, above the 70 % likeness."""
    miner = TemplateMiner(similarity=0.7)
    agent = miner.found(1, _session("WindowsUpdateAgent."))
    for _ in range(1, SETTLED):
        assert miner.add(_session("WindowsUpdateAgent.")).cluster is agent
    assert miner.add(_session("SPP.")).cluster is None
    assert agent.template == "Session: <num>_<num> initialized by client WindowsUpdateAgent."


def test_a_word_held_by_few_lines_still_generalises():
    miner = TemplateMiner(similarity=0.7)
    agent = miner.found(1, _session("WindowsUpdateAgent."))
    for _ in range(1, SETTLED - 1):
        miner.add(_session("WindowsUpdateAgent."))
    mined = miner.add(_session("SPP."))
    assert mined.cluster is agent and mined.changed
    assert agent.template == "Session: <num>_<num> initialized by client <*>"


def test_a_value_held_by_many_lines_still_generalises():
    """A token with digits or placeholders (a package, a host) is a value, however long it
    held its place: Windows' ``Package_for_KB<num>~...`` 541 times, then another package."""
    miner = TemplateMiner(similarity=0.7)
    words = ["Read", "out", "cached", "package", "applicability", "for", "package:"]
    package = miner.found(1, [*words, "Package_for_KB<num>~<id>", "ApplicableState:", "<num>"])
    for _ in range(SETTLED * 2):
        miner.add([*words, "Package_for_KB<num>~<id>", "ApplicableState:", "<num>"])
    other = miner.add([*words, "Microsoft-Windows-Hyper-V~<id>", "ApplicableState:", "<num>"])
    assert other.cluster is package and other.changed


def test_after_a_restart_a_seeded_template_counts_its_lines_anew():
    """How many lines a template took is not stored: a seeded one generalises again until it
    has held its words for ``SETTLED`` lines; a line equal to it still lands on it."""
    reborn = TemplateMiner(similarity=0.7)
    agent = reborn.seed(1, "Session: <num>_<num> initialized by client WindowsUpdateAgent.")
    assert reborn.add(_session("WindowsUpdateAgent.")).cluster is agent
    assert reborn.add(_session("SPP.")).cluster is agent


def _settled(miner: TemplateMiner, tokens: list[str]) -> None:
    first = miner.found(len(miner) + 1, tokens)
    for _ in range(SETTLED):
        assert miner.add(tokens).cluster is first


PAM = ["authentication", "failure;", "logname=", "uid=<num>", "euid=<num>"]


def test_a_settled_key_keeps_its_name_and_the_kind_of_its_value():
    """Linux's PAM lines: a remote failure (``tty=NODEVssh``, ``rhost=<ip>``) is not a console
    one (``tty=:<num>``, ``rhost=`` empty), and ``by (uid=<num>)`` is not ``by
    LOGIN(uid=<num>)``: one token of seven or nine each."""
    miner = TemplateMiner(similarity=0.7)
    _settled(miner, [*PAM, "tty=NODEVssh", "ruser=", "rhost=<ip>"])
    assert miner.add([*PAM, "tty=:<num>", "ruser=", "rhost="]).cluster is None
    _settled(miner, ["session", "opened", "for", "user", "cyrus", "by", "(uid=<num>)"])
    assert (
        miner.add(["session", "opened", "for", "user", "root", "by", "LOGIN(uid=<num>)"]).cluster
        is None
    )


def test_a_settled_key_takes_another_value_of_its_kind():
    """OpenSSH's PAM lines: ``user=root`` 369 times, then ``user=uucp``: one event (Loghub's
    labels); so are two hosts, however differently shaped."""
    miner = TemplateMiner(similarity=0.7)
    _settled(miner, [*PAM, "tty=ssh", "ruser=", "rhost=<ip>", "user=root"])
    assert miner.add([*PAM, "tty=ssh", "ruser=", "rhost=<ip>", "user=uucp"]).cluster is not None
    host = "rhost=<num>-<num>.hinet-ip.hinet.net"
    assert miner.add([*PAM, "tty=ssh", "ruser=", host, "user=root"]).cluster is not None


def test_a_settled_word_inside_the_message_still_generalises():
    """OpenSSH: 368 ``Failed password for root from ...`` (one signal, when a monitor folds
    them), then ``... for uucp from ...``: one event; only the last word settles."""
    miner = TemplateMiner(similarity=0.7)
    tail = ["from", "<ip>", "port", "<num>", "ssh<num>"]
    _settled(miner, ["Failed", "password", "for", "root", *tail])
    assert miner.add(["Failed", "password", "for", "uucp", *tail]).cluster is not None
