"""Found beside issue 38: a job's own environment never reaches a process that runs as root.

The job's ``env`` was the environment of its whole process tree, the root wrapper included:
``/bin/sh``, ``mv``, ``unshare`` and ``setpriv`` ran as root with the job's ``LD_PRELOAD``
(a library a user left anywhere readable ran as root) — any ``user`` token was root on the
machine. Here ``LD_DEBUG_OUTPUT`` shows it without a compiler: the dynamic loader of every
process that honours the job's environment writes a file into a directory only root may
write. Now the root side runs with the executor's minimal environment only, and the job's
variables are exported by the job's own shell after it dropped to its uid.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from starburst.adapters.local import LocalCluster
from tests.security.local_jobs import outside, pool, run

__all__ = ["outside"]


def test_no_root_process_of_a_job_sees_its_loader_variables(outside: Path, tmp_path: Path) -> None:
    root_only = outside / "root-only"
    root_only.mkdir(mode=0o755)  # root writes here, no job uid can
    env = {"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": str(root_only / "ld"), "MINE": "x y'z"}
    cluster = LocalCluster(tmp_path / "state", 1, users=pool(outside / "work"))
    end = run(cluster, "loader", 'echo "mine=$MINE debug=$LD_DEBUG"', env=json.dumps(env))
    out = cluster.logs("loader")
    assert end.succeeded, end.reason
    assert "mine=x y'z debug=files" in out, out  # the job has its variables
    written = sorted(os.listdir(root_only))
    assert written == [], f"processes that could write as root honoured LD_*: {written}"
