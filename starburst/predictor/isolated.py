"""Training in a separate, lower-priority process, so the scheduling pass keeps its cores.

Retraining inside the controller process competes with the pass for the interpreter lock
(feature building and the boosting's Python glue hold it for long stretches) and for the
cores. ``train_isolated`` runs ``train_artifact`` in a child Python process started with
``os.nice(NICE)`` and one OpenMP thread, which writes the artifact to ``path``
(``save_artifact``: atomic, with its digest); the parent then loads it with
``load_artifact``, so a model from the child passes the same checks as any other.

Measured side by side (``bench/controller_bench.py``): on the shared, loaded 2-core machine
the pass p99 beside an in-process retrain of 100,000 jobs was ~2.2× the quiet p99, beside the
niced child ~1.1×; on the quiet machine with 20,000 jobs, 5.3× and 4.8× — the parent's part
(reading and pickling the history, loading the result) still holds the interpreter lock.

Protocol: the parent writes a pickle of ``(jobs, params, trained_at, path, nice)`` to the
child's stdin; the child answers one JSON line ``{"pid": .., "nice": ..}`` on stdout (what it
ran as) after saving, or exits non-zero with the error on stderr (a ``TrainingError``'s
message is passed on as such).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact, load_artifact, save_artifact
from starburst.predictor.model import TrainingError, TrainParams

#: niceness added to the child (the controller's pass runs at the parent's priority)
NICE = 10
#: exit status of the child when training itself refused (too few jobs, ...)
REFUSED = 3


@dataclass(frozen=True, slots=True)
class Isolated:
    """An artifact trained in a child process, and what that process ran as."""

    artifact: ModelArtifact
    pid: int
    nice: int


def train_isolated(
    jobs: Sequence[Job],
    path: str | Path,
    params: TrainParams | None = None,
    trained_at: datetime | None = None,
    nice: int = NICE,
) -> Isolated:
    """Train in a niced child process, which saves to ``path``; load and return the result."""
    params = replace(params or TrainParams(), threads=1)
    payload = pickle.dumps((list(jobs), params, trained_at, str(path), nice))
    done = subprocess.run(
        [sys.executable, "-m", "starburst.predictor.isolated"],
        input=payload,
        capture_output=True,
        check=False,
    )
    if done.returncode == REFUSED:
        raise TrainingError(done.stderr.decode(errors="replace").strip())
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise TrainingError(
            f"the training process failed (exit {done.returncode}): " + " / ".join(tail)
        )
    ran = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return Isolated(load_artifact(path), int(ran["pid"]), int(ran["nice"]))


def _child() -> int:
    jobs, params, trained_at, path, nice = pickle.loads(sys.stdin.buffer.read())
    niceness = os.nice(nice)
    from starburst.predictor.training import train_artifact

    try:
        artifact = train_artifact(jobs, params, trained_at)
    except TrainingError as exc:
        print(exc, file=sys.stderr)
        return REFUSED
    save_artifact(artifact, path)
    print(json.dumps({"pid": os.getpid(), "nice": niceness}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child())
