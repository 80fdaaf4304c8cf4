"""``--workdir``: the local cluster runs the job in the researcher's directory (so
``python train.py`` finds ``train.py``), and refuses, with the reason, a directory the user
a job runs as cannot read. Through the real CLI against a served app."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.local import LocalCluster
from starburst.adapters.local.jobusers import default_lock_dir, resolve_job_users
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for


def _serve(db_url, clock, resources, open_store, serve, cluster):  # type: ignore[no-untyped-def]
    store = open_store(db_url)
    loop, api, env = serve_loop(db_url, store, clock, resources, serve, cluster)
    return store, loop, api, env


def _until_ended(store, loop, job_id: str) -> None:  # type: ignore[no-untyped-def]
    def ended() -> bool:
        loop.run_pass()
        return store.jobs.get(job_id).state.terminal

    assert wait_for(ended)


def test_a_job_runs_in_its_workdir_and_home_stays_private(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    code = tmp_path / "project"
    code.mkdir()
    (code / "train.py").write_text("print('trained')\n")
    cluster = LocalCluster(tmp_path / "cluster", 1)
    store, loop, api, env = _serve(db_url, clock, resources, open_store, serve, cluster)
    made = run(
        [
            "submit",
            "--image",
            "i",
            "--workdir",
            str(code),
            "--",
            "sh",
            "-c",
            'cat train.py; echo "home=$HOME"',
        ],
        env,
    )
    assert made.exit_code == 0, made.stderr
    job_id = made.stdout.split()[0]
    _until_ended(store, loop, job_id)
    out = cluster.logs(job_id)
    assert "print('trained')" in out and f"home={code}" not in out
    assert store.jobs.get(job_id).job.extra["workdir"] == str(code)

    (tmp_path / "job.yaml").write_text("image: i\nworkdir: project\nrun: ls\n")
    from_file = run(["submit", str(tmp_path / "job.yaml")], env)
    assert api.store.jobs.get(from_file.stdout.split()[0]).job.extra["workdir"] == str(code)
    relative = api.client("alice").post(
        "/v1/jobs", json={"image": "i", "command": "ls", "gpus": 1, "workdir": "project"}
    )
    assert relative.status_code == 422


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="runs jobs as an unprivileged user only as root with setpriv",
)
def test_a_workdir_the_job_user_cannot_read_is_refused_with_the_reason(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    outside = Path(tempfile.mkdtemp(prefix="starburst-workdir-"))  # pytest's tmp is 0700
    resources.callback(shutil.rmtree, outside)
    os.chmod(outside, 0o755)
    users = resolve_job_users((60000, 60999), outside / "work", default_lock_dir())
    assert users is not None
    cluster = LocalCluster(tmp_path / "cluster", 1, users=users)
    store, loop, _, env = _serve(db_url, clock, resources, open_store, serve, cluster)
    shared = outside / "shared"
    shared.mkdir(mode=0o755)
    (shared / "train.py").write_text("print('shared')\n")
    private = outside / "private"
    private.mkdir(mode=0o700)

    ok = run(
        ["submit", "--image", "i", "--workdir", str(shared), "--", "python3", "train.py"], env
    ).stdout.split()[0]
    _until_ended(store, loop, ok)
    assert store.jobs.get(ok).state.value == "succeeded", store.jobs.events(ok)[-1].reason
    assert "shared" in cluster.logs(ok)

    refused = run(
        ["submit", "--image", "i", "--workdir", str(private), "--", "ls"], env
    ).stdout.split()[0]
    _until_ended(store, loop, refused)
    failure = json.loads(run(["status", refused, "--json"], env).stdout)
    assert failure["state"] == "failed"
    reason = store.jobs.events(refused)[-1].reason
    assert f"workdir {private} is not readable by the job's own user (uid 600" in reason
    assert "chmod o+rx" in reason
