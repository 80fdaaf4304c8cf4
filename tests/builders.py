"""Builders for tests: small, explicit jobs, clusters and configs in one line each."""

from __future__ import annotations

from starburst.core.capacity import Node, PlacementStrategy, uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job, QueuedJob
from starburst.core.ordering import QueueOrder
from starburst.core.policy import PolicyKind, WaitPolicy

H = 3600.0


def make_job(
    job_id: str = "j",
    gpus: int = 1,
    runtime: float = H,
    submit: float = 0.0,
    **kw: object,
) -> Job:
    return Job(id=job_id, submit_time=submit, gpus=gpus, runtime=runtime, **kw)  # type: ignore[arg-type]


def queued(job: Job, budget: float, at: float | None = None) -> QueuedJob:
    return QueuedJob(job, job.submit_time if at is None else at, budget)


def nodes(count: int = 1, gpus: int = 8, cpus: float = 0.0) -> list[Node]:
    return uniform_nodes(count, gpus, cpus)


def config(
    kind: PolicyKind = PolicyKind.COMPUTE,
    c: float = 0.0,
    *,
    out_of_order: bool = False,
    cap: int | None = None,
    order: QueueOrder = QueueOrder.FIFO,
    placement: PlacementStrategy = PlacementStrategy.FIRST_FIT,
) -> SchedulerConfig:
    return SchedulerConfig(WaitPolicy(kind, c), out_of_order, cap, order, placement)


def run_cli(args: list[str], capsys: object) -> tuple[int, str, str]:
    """Run the ``starburst`` command in-process: (exit code, stdout, stderr)."""
    from starburst.cli.main import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    return code, captured.out, captured.err
