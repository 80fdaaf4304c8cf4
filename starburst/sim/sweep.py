"""Policy comparisons and sweeps: many simulations of one workload, on every core.

Terms:
- *run spec*: one scheduler configuration to simulate (policy, budget or coefficient,
  out-of-order, queue cap, order, placement) with a label for tables and plots.
- *source*: where the jobs come from — a trace file, a synthetic ``Workload`` or a ``JobSet``
  in memory (e.g. a history with out-of-fold estimates). Workers load or generate a file or
  a workload once and keep it, so a sweep ships specs, not job lists.
- *estimate*: the runtime estimate ``runtime`` and ``compute`` budgets use (``core.estimates``).
- *savings*: 1 − cost / cost(No-Wait) on the same source; *JCT change*: mean JCT / mean JCT of
  No-Wait − 1. Both need a No-Wait run of the same source, which ``compare`` always adds.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from starburst.core.capacity import Node, PlacementStrategy
from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import ConfigError
from starburst.core.estimates import EstimateUse
from starburst.core.job import Job
from starburst.core.ordering import QueueOrder
from starburst.core.policy import POLICIES, PolicyKind, WaitPolicy, calibrate
from starburst.sim.engine import SimOptions, simulate
from starburst.sim.naming import label as setting_label
from starburst.sim.naming import series_name
from starburst.sim.synthetic import Workload, generate

Row = dict[str, float | int | str]


@dataclass(frozen=True, slots=True)
class RunSpec:
    label: str
    policy: PolicyKind
    budget: float | None = 0.25
    coefficient: float | None = None
    out_of_order: bool = False
    queue_cap: int | None = None
    order: QueueOrder = QueueOrder.FIFO
    placement: PlacementStrategy = PlacementStrategy.FIRST_FIT
    estimate: EstimateUse = EstimateUse.P50

    @property
    def series(self) -> str:
        """The plot series and table name of this policy and mode (``naming``)."""
        return series_name(self.policy, self.out_of_order)

    def config(self, jobs: Sequence[Job]) -> SchedulerConfig:
        if self.coefficient is not None:
            c = self.coefficient
        else:
            c = calibrate(self.policy, self.budget or 0.0, jobs)
        policy = WaitPolicy(self.policy, c, estimate=self.estimate)
        return SchedulerConfig(
            policy, self.out_of_order, self.queue_cap, self.order, self.placement
        )


@dataclass(frozen=True, slots=True, eq=False)
class JobSet:
    """Jobs in memory as a source; ``name`` says what they are."""

    name: str
    jobs: tuple[Job, ...]


Source = Path | Workload | JobSet


@dataclass(frozen=True, slots=True)
class Task:
    source: Source
    nodes: tuple[Node, ...]
    spec: RunSpec
    options: SimOptions
    load_label: float | None = None


def standard_specs(budget: float = 0.25) -> list[RunSpec]:
    """The paper's comparison: baselines, Compute-Wait in order, Starburst, Star-Wait.

    Star-Wait runs out of order (in order, its pulled-back jobs block the head of the queue and
    it costs more than No-Wait); the in-order variant is listed too, to show that.
    """
    return [
        RunSpec("No-Wait", PolicyKind.NO_WAIT, budget=None),
        RunSpec("Constant-Wait", PolicyKind.CONSTANT, budget),
        RunSpec("Runtime-Wait", PolicyKind.RUNTIME, budget),
        RunSpec("Compute-Wait (in order)", PolicyKind.COMPUTE, budget),
        RunSpec("Starburst", PolicyKind.COMPUTE, budget, out_of_order=True, queue_cap=30),
        RunSpec("Star-Wait", PolicyKind.STAR, budget, out_of_order=True),
        RunSpec("Star-Wait (in order)", PolicyKind.STAR, budget),
    ]


def jobs_of(source: Source) -> tuple[Job, ...]:
    """The jobs of ``source``, a trace file or a workload loaded once per process."""
    return source.jobs if isinstance(source, JobSet) else _loaded(source)


@functools.lru_cache(maxsize=8)
def _loaded(source: Path | Workload) -> tuple[Job, ...]:
    if isinstance(source, Workload):
        return tuple(generate(source))
    from starburst.sim.loading import load_jobs

    return tuple(load_jobs(source))


def run_task(task: Task) -> Row:
    jobs = jobs_of(task.source)
    config = task.spec.config(jobs)
    summary = simulate(jobs, task.nodes, config, task.options).summary()
    spec = task.spec
    row: Row = {
        "label": spec.label,
        "series": spec.series,
        "policy": spec.policy.value,
        "budget": spec.budget if spec.budget is not None else "",
        "coefficient": config.policy.coefficient,
        "out_of_order": int(spec.out_of_order),
        "estimate": spec.estimate.value if config.policy.uses_estimate else "",
        "queue_cap": spec.queue_cap if spec.queue_cap is not None else "",
    }
    if task.load_label is not None:
        row["load"] = task.load_label
    row.update(summary)
    return row


def run_tasks(
    tasks: Sequence[Task], processes: int | None = None, ray: str | None = None
) -> list[Row]:
    """Simulate every task, in parallel; rows come back in task order.

    ``processes``: worker processes on this machine (None: every core; 1: in this process).
    ``ray``: the address of a Ray cluster (``host:port``, ``ray://host:port`` or ``auto``) to
    run the tasks on instead, one Ray task per replay (every node needs this Starburst). A
    replay is a pure function of its task, so every way gives the same rows, bit for bit.
    """
    if ray is not None:
        return _on_ray(tasks, ray)
    workers = min(processes or os.cpu_count() or 1, len(tasks))
    if workers <= 1:
        return [run_task(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_task, tasks, chunksize=1))


def _on_ray(tasks: Sequence[Task], address: str) -> list[Row]:
    """``run_tasks`` on a Ray cluster: each source is put in the object store once, each
    task ships only its spec (lazy import: Ray is the optional ``ray`` extra)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: install starburst[ray]") from None
    if not ray.is_initialized():
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"cannot reach the Ray cluster at {address}: {exc}") from None
    stored: dict[int, Any] = {}
    for task in tasks:
        if id(task.source) not in stored:
            stored[id(task.source)] = ray.put(task.source)
    remote = ray.remote(_run_with_source)
    return list(
        ray.get([remote.remote(replace(t, source=Path()), stored[id(t.source)]) for t in tasks])
    )


def _check_reachable(address: str) -> None:
    """A ``host:port`` address that takes no connection fails at once (Ray itself retries
    for minutes); ``auto`` and ``ray://`` addresses are left to Ray."""
    import socket

    host, colon, port = address.rpartition(":")
    if not colon or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def _run_with_source(task: Task, source: Source) -> Row:
    return run_task(replace(task, source=source))


def add_savings(rows: list[Row]) -> list[Row]:
    """Savings and JCT change against the No-Wait row of the same load."""
    base = {r.get("load"): r for r in rows if r["policy"] == PolicyKind.NO_WAIT.value}
    out = []
    for row in rows:
        ref = base.get(row.get("load"))
        row = dict(row)
        if ref is not None:
            ref_cost, ref_jct = float(ref["cloud_cost_usd"]), float(ref["mean_jct_s"])
            cost, jct = float(row["cloud_cost_usd"]), float(row["mean_jct_s"])
            row["savings"] = 1.0 - cost / ref_cost if ref_cost else 0.0
            row["jct_change"] = jct / ref_jct - 1.0 if ref_jct else 0.0
        out.append(row)
    return out


def compare(
    source: Source,
    nodes: Sequence[Node],
    specs: Sequence[RunSpec],
    options: SimOptions | None = None,
    processes: int | None = None,
) -> list[Row]:
    """Run each spec on one source (adding No-Wait if missing) with savings columns."""
    specs = list(specs)
    if not any(s.policy is PolicyKind.NO_WAIT for s in specs):
        specs.insert(0, RunSpec("No-Wait", PolicyKind.NO_WAIT, budget=None))
    opts = options or SimOptions()
    tasks = [Task(source, tuple(nodes), s, opts) for s in specs]
    return add_savings(run_tasks(tasks, processes))


def sweep(
    sources: Sequence[tuple[float | None, Source]],
    nodes: Sequence[Node],
    policies: Sequence[PolicyKind],
    budgets: Sequence[float],
    options: SimOptions | None = None,
    processes: int | None = None,
    out_of_order: bool = True,
    queue_cap: int | None = 30,
    order: QueueOrder = QueueOrder.FIFO,
    ray: str | None = None,
) -> list[Row]:
    """policies × budgets (× loads). Compute-Wait rows are Starburst (out of order, queue cap);
    Star-Wait runs out of order; the other baselines run in order, as in the paper. ``order``
    sorts every row's queue."""
    opts = options or SimOptions()
    tasks = []
    for load, source in sources:
        tasks.append(
            Task(
                source,
                tuple(nodes),
                RunSpec("No-Wait", PolicyKind.NO_WAIT, None, order=order),
                opts,
                load,
            )
        )
        for kind in policies:
            budgets_for: list[float | None] = [None] if POLICIES[kind].budgetless else list(budgets)
            for b in budgets_for:
                spec = RunSpec("", kind, b, order=order)
                if kind is PolicyKind.COMPUTE:
                    spec = replace(spec, out_of_order=out_of_order, queue_cap=queue_cap)
                elif kind is PolicyKind.STAR:  # as in ``standard_specs``: in order it blocks
                    spec = replace(spec, out_of_order=True)
                spec = replace(spec, label=setting_label(kind, spec.out_of_order, b))
                if kind is not PolicyKind.NO_WAIT:
                    tasks.append(Task(source, tuple(nodes), spec, opts, load))
    return add_savings(run_tasks(tasks, processes, ray))
