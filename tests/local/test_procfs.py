"""Spawn identity through ``/proc``, on a stand-in ``/proc`` where timing can be controlled."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from starburst.adapters.local import procfs

TOKEN = "t0ken"


def fake_proc(root: Path, pid: int, state: str, environ: bytes) -> Path:
    entry = root / str(pid)
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "stat").write_text(f"{pid} (sh) {state} 1 {pid} {pid} 0 -1\n")
    (entry / "environ").write_bytes(environ)
    return entry


def test_a_process_caught_mid_exec_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Right after Popen returns, the new program's environment may not be set up yet: an
    # empty environ of a live process is not proof that the process is someone else's.
    monkeypatch.setattr(procfs, "PROC", tmp_path)
    entry = fake_proc(tmp_path, 42, "R", b"")
    later = threading.Timer(
        0.05,
        lambda: (entry / "environ").write_bytes(
            f"PATH=/bin\0{procfs.TOKEN_VAR}={TOKEN}\0".encode()
        ),
    )
    later.start()
    try:
        assert procfs.alive(42, TOKEN)
        assert procfs.find_leader(TOKEN) == 42
    finally:
        later.cancel()


def test_another_spawn_and_zombies_are_not_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(procfs, "PROC", tmp_path)
    monkeypatch.setattr(procfs, "EXEC_SETTLE", 0.05)
    fake_proc(tmp_path, 7, "S", f"{procfs.TOKEN_VAR}=other\0".encode())
    fake_proc(tmp_path, 8, "Z", b"")
    fake_proc(tmp_path, 9, "S", b"")  # stays empty: a kernel thread, say
    assert not any(procfs.alive(pid, TOKEN) for pid in (7, 8, 9, 10))
    assert procfs.find_leader(TOKEN) is None


def test_an_adopted_wrapper_caught_alive_after_writing_exit_code_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wrapper writes ``exit_code`` and then exits: a new life that looks in between
    must see the job ended, not running (the adoption test's rare failure under load)."""
    from starburst.adapters.local.processes import JobProcess

    monkeypatch.setattr(procfs, "alive", lambda pid, token: True)  # still exiting
    process = JobProcess("quick", tmp_path, pid=4242, token="t", grace=1.0)
    assert process.poll() is None  # no exit_code yet: running
    (tmp_path / "exit_code").write_text("0\n")
    outcome = process.poll()
    assert outcome is not None and outcome.succeeded
