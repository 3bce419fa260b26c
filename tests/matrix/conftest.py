"""A real Synapse for the Matrix tests (one per session: it takes seconds to start), its users
registered by shared secret, and a room per test where the bot is invited."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.synapse import Homeserver, User, missing

_names = itertools.count(1)


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Homeserver]:
    why = missing()
    if why is not None:
        print(f"skipping the Matrix tests: {why}")
        pytest.skip(why)
    server = Homeserver(Path(tmp_path_factory.mktemp("synapse"))).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Room:
    """A room ``ops`` made, with the bot and a viewer invited."""

    hs: Homeserver
    room_id: str
    bot: User
    ops: User
    viewer: User


@pytest.fixture
def room(synapse: Homeserver) -> Room:
    n = next(_names)
    bot = synapse.register(f"guard{n}")
    ops = synapse.register(f"ops{n}")
    viewer = synapse.register(f"viewer{n}")
    room_id = synapse.room(ops, bot, viewer)
    synapse.join(viewer, room_id)
    return Room(synapse, room_id, bot, ops, viewer)
