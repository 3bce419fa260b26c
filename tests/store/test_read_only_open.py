"""Read-only commands open the store without ``create_all`` when the schema is current
(issue 17), and still create or migrate it when it is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from guard.store import scrub
from guard.store.db import Database, open_database

pytestmark = pytest.mark.unit


def test_read_only_skips_create_all_only_when_nothing_would_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'data' / 'guard.db'}"
    calls: list[str] = []
    real = Database.create_all

    def counted(self: Database) -> None:
        calls.append(self.url)
        real(self)

    monkeypatch.setattr(Database, "create_all", counted)
    open_database(url, read_only=True).dispose()  # no store yet: made
    assert len(calls) == 1
    db = open_database(url, read_only=True)  # current: left alone
    assert len(calls) == 1 and db.schema_current()
    with db.engine.begin() as conn:  # an older Guard's store: a later index missing
        conn.execute(text("DROP INDEX ix_incident_state_id"))
    db.dispose()
    db = open_database(url, read_only=True)
    assert len(calls) == 2 and db.schema_current()
    with db.session() as session:  # rows not scrubbed under the current rules
        session.execute(text("DELETE FROM monitor_state"))
        assert not scrub.is_current(session)
    db.dispose()
    open_database(url, read_only=True).dispose()
    assert len(calls) == 3
    open_database(url).dispose()  # writers always run it
    assert len(calls) == 4
