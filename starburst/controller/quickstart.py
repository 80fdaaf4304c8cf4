"""The quick-start: Starburst end to end on one machine, in about a minute.

It starts the controller on embedded defaults — SQLite, the local cluster with 4 GPU slots,
the emulated cloud — in a temporary folder, submits a burst of sample jobs (real processes
that sleep) larger than the local capacity, and narrates what the scheduler does: jobs queue
with wait budgets, small ones start out of order in the gaps, expired ones burst to the
(emulated) cloud. At the end it prints the cost report and the savings against bursting
everything, and exits.

``speed`` runs the same story faster: every job sleeps, declares and is budgeted ``speed``
times shorter, and passes and submissions come ``speed`` times more often, so the decisions
(who waits, who starts out of order, who bursts) keep their proportions.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from starburst.core.lifecycle import TERMINAL, JobState
from starburst.core.ports import JobReads, Store, Submissions
from starburst.core.records import JobSpec

SAMPLE = [  # (name, gpus, seconds)
    ("prep-data", 1, 4),
    ("train-resnet", 4, 14),
    ("finetune-bert", 2, 10),
    ("eval-a", 1, 3),
    ("sweep-lr-1", 1, 6),
    ("sweep-lr-2", 1, 6),
    ("train-llm", 4, 18),
    ("eval-b", 1, 2),
    ("sweep-lr-3", 1, 6),
    ("distill", 2, 8),
    ("train-vit", 4, 12),
    ("eval-c", 1, 3),
    ("sweep-lr-4", 1, 5),
    ("embed", 2, 6),
    ("report", 1, 2),
    ("train-gnn", 2, 9),
]


def run_quickstart(
    state_dir: Path | None = None,
    echo: Callable[[str], object] = print,
    timeout_s: float = 150.0,
    speed: float = 1.0,
) -> int:
    if speed <= 0:
        raise ValueError(f"the quick-start's speed must be positive, not {speed}")
    from starburst.controller.wiring import build_controller, prepare_database
    from starburst.settings import Settings

    with tempfile.TemporaryDirectory(prefix="starburst-quickstart-") as tmp:
        root = Path(state_dir or tmp)
        url = f"sqlite:///{root / 'starburst.db'}"
        prepare_database(url)
        settings = Settings(
            database_url=url,
            state_dir=root,
            cluster="local",
            local_gpus=4,
            cloud="emulated",
            budget=0.5,
            queue_cap=8,
            pass_interval_s=0.5 / speed,
            log_format="text",
        )
        controller = build_controller(settings)
        store = controller.store
        echo(
            f"Starburst quick-start: a local cluster with {settings.local_gpus} GPU slots, the "
            f"emulated cloud, policy {controller.config.describe()}"
        )
        echo(f"state in {root}\n")
        started = time.time()
        controller.start()
        try:
            _submit(store.submissions, echo, speed)
            _narrate(store.jobs, started, echo, timeout_s)
        finally:
            controller.stop()
        _report(store, controller, started, echo)
        store.close()
        return 0


def _submit(submissions: Submissions, echo: Callable[[str], object], speed: float = 1.0) -> None:
    rng = random.Random(3)
    for name, gpus, full_seconds in SAMPLE:
        seconds = round(full_seconds / speed, 3)
        spec = JobSpec(
            gpus=gpus,
            name=name,
            user=rng.choice(["ana", "bo", "chen"]),
            team="research",
            command=f"sleep {seconds}",
            declared_runtime=float(seconds),
            image="python:3.11",
        )
        submissions.submit(spec, idempotency_key=f"quickstart-{name}")
        time.sleep(0.15 / speed)
    echo(f"submitted {len(SAMPLE)} jobs needing {sum(g for _, g, _ in SAMPLE)} GPUs in all\n")


def _narrate(
    jobs: JobReads, started: float, echo: Callable[[str], object], timeout_s: float
) -> None:
    seen: dict[str, int] = {}
    found = [jobs.find_by_key(f"quickstart-{n}") for n, _, _ in SAMPLE]
    ids = [s.id for s in found if s is not None]
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        done = 0
        lines = []
        for job_id in ids:
            # the state before the events: a job seen finished then has its last event read
            # (a state and its event are written together; read the other way round, a job
            # finishing between the reads ended the story without its last line)
            job = jobs.get(job_id)
            events = jobs.events(job_id)
            lines += [
                (e.at, job.job.name, e.to_state.value, e.reason)
                for e in events[seen.get(job_id, 0) :]
                if e.to_state is not JobState.SUBMITTED
            ]
            seen[job_id] = len(events)
            done += job.state in TERMINAL
        # by time only: a job's events at one instant keep their recorded order (stable sort)
        for at, name, state, reason in sorted(lines, key=lambda line: line[0]):
            echo(f"{at - started:6.1f}s  {name:<14} {state:<15} {reason}")
        if done == len(ids):
            return
        time.sleep(0.3)
    echo("the quick-start timed out before every job finished")


def _report(
    store: Store, controller: object, started: float, echo: Callable[[str], object]
) -> None:
    """Where the jobs ran, the ledger's cloud spend, and the savings against No-Wait as the
    API reports them (``starburst.savings``: the burst's own price rule)."""
    from starburst.savings import compare_with_no_wait, fraction_saved

    found = [store.jobs.find_by_key(f"quickstart-{n}") for n, _, _ in SAMPLE]
    jobs = [s for s in found if s is not None]
    cloud = controller.cloud  # type: ignore[attr-defined]
    figures = compare_with_no_wait(
        store.ledger, started - 60, time.time() + 60, cloud.quote if cloud is not None else None
    )
    onprem = sum(1 for s in jobs if s.ran_on == "onprem")
    burst = sum(1 for s in jobs if s.ran_on == "cloud")
    echo(
        f"\n{onprem} jobs ran on-prem, {burst} burst to the emulated cloud, "
        f"{len(jobs) - onprem - burst} other"
    )
    echo(f"cloud spend (emulated prices): ${figures.actual:.4f}")
    echo(f"bursting everything (No-Wait) would have cost: ${figures.no_wait:.4f}")
    fraction = fraction_saved(figures)
    if fraction is not None:
        echo(
            f"saved ${figures.no_wait - figures.actual:.4f} ({fraction:.0%}) against "
            "bursting everything"
        )
    for item in figures.unpriced:
        echo(f"not counted: {item.job}: {item.reason}")
