"""Reading the real API server's audit log while it is being written."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.controlplane import read_audit


def event(user: str, code: int) -> str:
    return json.dumps({"user": {"username": user}, "verb": "get", "responseStatus": {"code": code}})


def test_an_event_still_being_written_is_left_for_the_next_read(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    whole = event("system:serviceaccount:ns:starburst", 403)
    log.write_text(f"{event('admin', 200)}\n\n{whole}\n{whole[:40]}")  # the last one cut short
    assert [e["responseStatus"]["code"] for e in read_audit(log)] == [200, 403]
    assert len(read_audit(log, "system:serviceaccount:ns:starburst")) == 1
    with open(log, "a") as more:
        more.write(whole[40:] + "\n")
    assert len(read_audit(log, "system:serviceaccount:ns:starburst")) == 2
