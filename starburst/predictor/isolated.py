"""Training in a separate, lower-priority process, so the scheduling pass keeps its cores.

Retraining inside the controller process competes with the pass for the interpreter lock
(feature building and the boosting's Python glue hold it for long stretches) and for the
cores. ``train_isolated`` runs ``train_artifact`` in a child Python process started with
``os.nice(NICE)`` and one thread (``ONE_THREAD`` in its environment, read by OpenMP and
the BLAS libraries when they load, so every native pool has one thread, not only the
boosting's; with libgomp's pool at one thread per core the child spent 1.7× the CPU, spread
over both cores of a small machine), which writes the artifact to ``path``
(``save_artifact``: atomic, with its digest); the parent then loads it with
``load_artifact``, so a model from the child passes the same checks as any other.

The training history is either the jobs themselves or a *reader*: a picklable callable
(a module-level function, or a ``functools.partial`` of one) that the child calls to fetch
them, so a controller reading 100,000 finished jobs from its database does it in the child
too. Whatever the parent does while the child trains competes with the pass for the
interpreter lock: reading and converting the history, pickling it (one C call that holds the
lock throughout), loading the result.

Protocol: the parent writes a pickle of ``(source, params, trained_at, path, nice)`` to the
child's stdin (``source``: the jobs, or the reader); the child answers one JSON line
``{"pid": .., "nice": .., "threads": ..}`` on stdout (what it ran as; ``threads``: the
largest thread pool its native libraries had) after saving, or exits non-zero with
the error on stderr (a ``StarburstError``'s message, refused training or an unreadable
history, is passed on as a ``TrainingError``).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact, load_artifact, save_artifact
from starburst.predictor.model import TrainingError, TrainParams

#: niceness added to the child (the controller's pass runs at the parent's priority)
NICE = 10
#: the child's environment: one thread in every native pool, set before numpy or scikit-learn
#: load (a pool's size is read when its library loads)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: exit status of the child when training itself refused (too few jobs, ...)
REFUSED = 3

#: the history to train on: the jobs, or a picklable callable the child calls to read them
HistorySource = Sequence[Job] | Callable[[], Sequence[Job]]


@dataclass(frozen=True, slots=True)
class Isolated:
    """An artifact trained in a child process, and what that process ran as."""

    artifact: ModelArtifact
    pid: int
    nice: int
    threads: int


def train_isolated(
    source: HistorySource,
    path: str | Path,
    params: TrainParams | None = None,
    trained_at: datetime | None = None,
    nice: int = NICE,
) -> Isolated:
    """Train in a niced child process on ``source`` (the jobs, or a reader the child calls),
    which saves to ``path``; load and return the result."""
    params = replace(params or TrainParams(), threads=1)
    given = source if callable(source) else list(source)
    payload = pickle.dumps((given, params, trained_at, str(path), nice))
    done = subprocess.run(
        [sys.executable, "-m", "starburst.predictor.isolated"],
        input=payload,
        env={**os.environ, **ONE_THREAD},
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
    return Isolated(load_artifact(path), int(ran["pid"]), int(ran["nice"]), int(ran["threads"]))


def _child() -> int:
    source, params, trained_at, path, nice = pickle.loads(sys.stdin.buffer.read())
    niceness = os.nice(nice)
    from starburst.predictor.training import train_artifact

    try:
        jobs = source() if callable(source) else source
        artifact = train_artifact(jobs, params, trained_at)
    except StarburstError as exc:  # refused, or the reader's store unavailable
        print(exc, file=sys.stderr)
        return REFUSED
    save_artifact(artifact, path)
    from threadpoolctl import threadpool_info

    threads = max((pool["num_threads"] for pool in threadpool_info()), default=1)
    print(json.dumps({"pid": os.getpid(), "nice": niceness, "threads": threads}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child())
