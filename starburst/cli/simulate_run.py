"""The work of ``starburst simulate``, free of typer: its arguments as one value and the run.

Two front ends parse a command line into ``SimulateArgs`` and call ``run_simulate``: the typer
command (``starburst.cli.simulator.simulate``, which owns the help and every usage error) and the
fast path (``starburst.cli.fastpath``, which recognises well-formed command lines without
importing typer or pydantic). The defaults live here once; the typer signature reads them.

This module imports only the standard library and Starburst's own modules, and those lazily,
so the simulator's whole command costs the interpreter, the engine and the trace, little else.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starburst.core import defaults
from starburst.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from starburst.core.capacity import Node
    from starburst.core.policy import PolicyKind
    from starburst.sim.report import SimResult

#: the largest uniform cluster the simulator is asked for (a typo like --nodes 99999999999
#: is refused at once instead of building nodes for minutes)
MAX_NODES = 100_000
MAX_GPUS_PER_NODE = 1024
MAX_SECONDS = 10 * 365 * 86400.0  # ten years, the API's longest runtime

#: the numeric options of ``simulate`` (field → option, lowest, highest): finite and in
#: range, or refused before anything runs (a nan price printed "$nan", an infinite start-up
#: delay a utilisation of 0%) — on both front ends, since both call ``run_simulate``
LIMITS: dict[str, tuple[str, float, float]] = {
    "cpus_per_node": ("--cpus-per-node", 0.0, 1e6),
    "coefficient": ("--coefficient", 0.0, 1e9),
    "budget": ("--budget", 0.0, 100.0),
    "price": ("--price", 0.0, 1e6),
    "startup_delay": ("--startup-delay", 0.0, MAX_SECONDS),
    "estimate_error": ("--estimate-error", 0.0, 10.0),
}


@dataclass(frozen=True, slots=True)
class SimulateArgs:
    """The options of ``starburst simulate`` (field name = option name, ``_`` for ``-``)."""

    trace: Path
    nodes: int | None = None
    gpus_per_node: int | None = None
    cpus_per_node: float = 0.0
    cluster: Path | None = None
    policy: str = "starburst"
    coefficient: float | None = None
    budget: float | None = None
    out_of_order: bool = defaults.OUT_OF_ORDER
    queue_cap: str = str(defaults.QUEUE_CAP)
    order: str = defaults.ORDER.value
    placement: str = "first-fit"
    trace_format: str = "auto"
    status: str | None = None
    price: float = 2.5
    startup_delay: float = 0.0
    estimate_error: float = 0.0
    seed: int = 0
    as_json: bool = False
    per_job: Path | None = None
    engine: str = "sim"


#: the defaults, for the typer signature (``trace`` is required there)
DEFAULT = SimulateArgs(Path())


def bounded(value: float, option: str, low: float, high: float) -> float:
    """``value`` if it is a finite number in [low, high]; else ``ConfigError`` naming it."""
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{option} {value:g} is not a finite number from {low:g} to {high:g}")
    return value


def number_in(text: str, option: str, high: float) -> float:
    """One number of a comma-separated option (``--budgets 0.1,0.25``): finite, 0 to ``high``."""
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{option}: {text.strip()!r} is not a number") from None
    return bounded(value, option, 0.0, high)


def check_numbers(a: SimulateArgs) -> None:
    """Every numeric option of ``a`` within ``LIMITS``."""
    for field, (option, low, high) in LIMITS.items():
        value = getattr(a, field)
        if value is not None:
            bounded(value, option, low, high)


def policy_kind(name: str) -> PolicyKind:
    """A policy name, or a preset's (``starburst`` is Compute-Wait; its order and queue cap
    are the commands' defaults)."""
    from starburst.core.policy import parse_policy

    preset = defaults.PRESETS.get(name.strip().lower())
    return preset.policy if preset is not None else parse_policy(name)


def parse_queue_cap(text: str) -> int | None:
    """``--queue-cap``: a position ≥ 0, or ``none`` for no cap."""
    if text.strip().lower() in ("none", "off", ""):
        return None
    try:
        cap = int(text)
    except ValueError:
        raise ConfigError(f"--queue-cap {text!r} is not a whole number or 'none'") from None
    if cap < 0:
        raise ConfigError("--queue-cap must be ≥ 0")
    return cap


def cluster_nodes(
    nodes: int | None, gpus_per_node: int | None, cpus_per_node: float, cluster: Path | None
) -> list[Node]:
    """The simulated cluster: a shape file, or ``nodes`` × ``gpus_per_node`` alike."""
    from starburst.sim.shape import load_shape, uniform

    if cluster is not None:
        if nodes is not None or gpus_per_node is not None:
            raise ConfigError("give either --cluster FILE or --nodes/--gpus-per-node, not both")
        return load_shape(cluster)
    if nodes is None or gpus_per_node is None:
        raise ConfigError("give --nodes and --gpus-per-node (or --cluster FILE)")
    return uniform(nodes, gpus_per_node, cpus_per_node)


def engine(name: str) -> Callable[..., SimResult]:
    """``--engine``: ``sim`` (``starburst.sim.engine``) or ``controller`` (the live
    controller's pass on virtual time, ``starburst.controller.replay``; it imports the store,
    so only then)."""
    choice = name.strip().lower()
    if choice == "sim":
        from starburst.sim.engine import simulate

        return simulate
    if choice == "controller":
        from starburst.controller.replay import replay

        return replay
    raise ConfigError(f"unknown engine {name!r}; choose sim or controller")


def run_simulate(a: SimulateArgs) -> None:
    """Simulate one configuration over ``a.trace`` and print its summary (or JSON)."""
    from starburst.core.capacity import parse_placement
    from starburst.core.cycle import SchedulerConfig
    from starburst.core.ordering import parse_order
    from starburst.core.policy import WaitPolicy, calibrate
    from starburst.sim.engine import SimOptions, perturb_estimates
    from starburst.sim.loading import load, parse_statuses

    check_numbers(a)
    run = engine(a.engine)
    kind = policy_kind(a.policy)
    cap = parse_queue_cap(a.queue_cap)
    if a.coefficient is not None and a.budget is not None:
        raise ConfigError("give either --coefficient or --budget, not both")
    node_list = cluster_nodes(a.nodes, a.gpus_per_node, a.cpus_per_node, a.cluster)
    SimOptions(a.price, a.startup_delay, a.estimate_error, a.seed)  # validates the knobs first
    loaded = load(a.trace, a.trace_format, parse_statuses(a.status))
    if loaded.skipped:
        print(loaded.describe(), file=sys.stderr)
    jobs = perturb_estimates(loaded.jobs, a.estimate_error, a.seed)
    if not jobs:
        raise ConfigError(f"{a.trace}: the trace has no jobs")
    budget = defaults.BUDGET if a.budget is None else a.budget
    coef = a.coefficient if a.coefficient is not None else calibrate(kind, budget, jobs)
    policy = WaitPolicy(kind, coef)
    config = SchedulerConfig(
        policy, a.out_of_order, cap, parse_order(a.order), parse_placement(a.placement)
    )
    started = time.perf_counter()
    result = run(jobs, node_list, config, SimOptions(a.price, a.startup_delay, 0.0, a.seed))
    elapsed = time.perf_counter() - started
    summary = result.summary()
    summary["coefficient"] = coef
    summary["simulation_seconds"] = elapsed
    if a.per_job is not None:
        result.write_per_job(a.per_job)
    if a.as_json:
        print(json.dumps(summary, sort_keys=True))
        return
    print_summary(summary, a.per_job)


def print_summary(s: dict[str, Any], per_job: Path | None) -> None:
    """The human-readable summary of one run."""
    h = 3600.0
    lines = [
        f"configuration        {s['config']}",
        f"jobs                 {s['jobs']} ({s['burst_jobs']} burst to the cloud)",
        f"cloud cost           ${s['cloud_cost_usd']:,.2f} "
        f"({s['cloud_gpu_hours']:,.1f} GPU-h at ${s['price_per_gpu_hour']}/GPU-h)",
        f"JCT mean/p90/p99     {s['mean_jct_s'] / h:.3f} / {s['p90_jct_s'] / h:.3f}"
        f" / {s['p99_jct_s'] / h:.3f} h",
        f"wait mean            {s['mean_wait_s'] / h:.3f} h",
        f"cluster utilisation  {s['cluster_utilization']:.1%}",
        f"offered load         {s['offered_load']:.2f}",
        f"simulated in         {s['simulation_seconds']:.2f} s",
    ]
    if per_job is not None:
        lines.append(f"per-job outcomes     {per_job}")
    print("\n".join(lines))
