"""Simulator commands: ``simulate`` one configuration, ``sweep`` many, ``demo`` the paper's
comparison, ``synth`` a synthetic trace. All run the same decision core as the controller.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starburst.core import defaults
from starburst.core.errors import ConfigError

#: the largest uniform cluster the simulator is asked for (a typo like --nodes 99999999999
#: is refused at once instead of building nodes for minutes)
MAX_NODES = 100_000
MAX_GPUS_PER_NODE = 1024

if TYPE_CHECKING:
    from starburst.core.capacity import Node
    from starburst.core.policy import PolicyKind

Opt = typer.Option


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


def _nodes(
    nodes: int | None, gpus_per_node: int | None, cpus_per_node: float, cluster: Path | None
) -> list[Node]:
    from starburst.sim.shape import load_shape, uniform

    if cluster is not None:
        if nodes is not None or gpus_per_node is not None:
            raise ConfigError("give either --cluster FILE or --nodes/--gpus-per-node, not both")
        return load_shape(cluster)
    if nodes is None or gpus_per_node is None:
        raise ConfigError("give --nodes and --gpus-per-node (or --cluster FILE)")
    return uniform(nodes, gpus_per_node, cpus_per_node)


def simulate(
    trace: Annotated[Path, typer.Argument(help="Trace (project CSV, Philly JSON, Helios CSV)")],
    nodes: Annotated[
        int | None, Opt(help="Number of nodes (uniform cluster)", min=1, max=MAX_NODES)
    ] = None,
    gpus_per_node: Annotated[
        int | None, Opt(help="GPUs per node", min=0, max=MAX_GPUS_PER_NODE)
    ] = None,
    cpus_per_node: Annotated[float, Opt(help="CPUs per node (0: not tracked)")] = 0.0,
    cluster: Annotated[Path | None, Opt(help="YAML file describing heterogeneous nodes")] = None,
    policy: Annotated[
        str,
        Opt(
            help="starburst (the controller's default: compute, out of "
            "order, queue cap 30) or one of no-wait|infinite|constant|"
            "runtime|resource|compute|star|compute-expected"
        ),
    ] = "starburst",
    coefficient: Annotated[
        float | None,
        Opt(help="Policy coefficient (seconds for constant, seconds per GPU for resource/star)"),
    ] = None,
    budget: Annotated[float | None, Opt(help="Waiting budget b (default 0.25)")] = None,
    out_of_order: Annotated[
        bool, Opt("--out-of-order/--in-order", help="Default: as the controller (out of order)")
    ] = defaults.OUT_OF_ORDER,
    queue_cap: Annotated[
        str, Opt(help="Burst jobs beyond this queue position; 'none' for no cap")
    ] = str(defaults.QUEUE_CAP),
    order: Annotated[str, Opt(help="fifo|sjf|edf")] = defaults.ORDER.value,
    placement: Annotated[str, Opt(help="first-fit|best-fit")] = "first-fit",
    trace_format: Annotated[str, Opt("--format", help="auto|csv|philly|helios")] = "auto",
    status: Annotated[
        str | None,
        Opt(
            help="Keep only jobs with these final statuses, "
            "comma-separated (e.g. Pass; COMPLETED,TIMEOUT)"
        ),
    ] = None,
    price: Annotated[float, Opt(help="Cloud price per GPU-hour ($)")] = 2.5,
    startup_delay: Annotated[float, Opt(help="Cloud start-up delay (s), added to JCT")] = 0.0,
    estimate_error: Annotated[float, Opt(help="Relative runtime-estimate error, e.g. 0.5")] = 0.0,
    seed: Annotated[int, Opt(help="Seed for the estimate error")] = 0,
    as_json: Annotated[bool, Opt("--json", help="Print one JSON object")] = False,
    per_job: Annotated[Path | None, Opt(help="Write each job's outcome to this CSV")] = None,
) -> None:
    """Simulate one scheduler configuration over a trace and print its cost and JCT."""
    from starburst.core.capacity import parse_placement
    from starburst.core.cycle import SchedulerConfig
    from starburst.core.ordering import parse_order
    from starburst.core.policy import WaitPolicy, calibrate
    from starburst.sim.engine import SimOptions, perturb_estimates
    from starburst.sim.engine import simulate as run
    from starburst.sim.loading import load, parse_statuses

    kind = policy_kind(policy)
    cap = parse_queue_cap(queue_cap)
    if coefficient is not None and budget is not None:
        raise ConfigError("give either --coefficient or --budget, not both")
    node_list = _nodes(nodes, gpus_per_node, cpus_per_node, cluster)
    SimOptions(price, startup_delay, estimate_error, seed)  # validates the knobs up front
    loaded = load(trace, trace_format, parse_statuses(status))
    if loaded.skipped:
        typer.echo(loaded.describe(), err=True)
    jobs = perturb_estimates(loaded.jobs, estimate_error, seed)
    if not jobs:
        raise ConfigError(f"{trace}: the trace has no jobs")
    coef = (
        coefficient
        if coefficient is not None
        else calibrate(kind, defaults.BUDGET if budget is None else budget, jobs)
    )
    config = SchedulerConfig(
        WaitPolicy(kind, coef), out_of_order, cap, parse_order(order), parse_placement(placement)
    )
    started = time.perf_counter()
    result = run(jobs, node_list, config, SimOptions(price, startup_delay, 0.0, seed))
    elapsed = time.perf_counter() - started
    summary = result.summary()
    summary["coefficient"] = coef
    summary["simulation_seconds"] = elapsed
    if per_job is not None:
        result.write_per_job(per_job)
    if as_json:
        typer.echo(json.dumps(summary, sort_keys=True))
        return
    _print_summary(summary, per_job)


def _print_summary(summary: dict[str, Any], per_job: Path | None) -> None:
    h = 3600.0
    s = summary
    typer.echo(f"configuration        {s['config']}")
    typer.echo(f"jobs                 {s['jobs']} ({s['burst_jobs']} burst to the cloud)")
    typer.echo(
        f"cloud cost           ${s['cloud_cost_usd']:,.2f} "
        f"({s['cloud_gpu_hours']:,.1f} GPU-h at ${s['price_per_gpu_hour']}/GPU-h)"
    )
    typer.echo(
        f"JCT mean/p90/p99     {s['mean_jct_s'] / h:.3f} / {s['p90_jct_s'] / h:.3f}"
        f" / {s['p99_jct_s'] / h:.3f} h"
    )
    typer.echo(f"wait mean            {s['mean_wait_s'] / h:.3f} h")
    typer.echo(f"cluster utilisation  {summary['cluster_utilization']:.1%}")
    typer.echo(f"offered load         {summary['offered_load']:.2f}")
    typer.echo(f"simulated in         {summary['simulation_seconds']:.2f} s")
    if per_job is not None:
        typer.echo(f"per-job outcomes     {per_job}")


def sweep(
    trace: Annotated[
        Path | None, typer.Argument(help="Trace file; omit for synthetic loads")
    ] = None,
    nodes: Annotated[int, Opt(help="Number of nodes", min=1, max=MAX_NODES)] = 8,
    gpus_per_node: Annotated[int, Opt(help="GPUs per node", min=0, max=MAX_GPUS_PER_NODE)] = 8,
    policies: Annotated[
        str, Opt(help="Comma-separated policies")
    ] = "no-wait,constant,runtime,resource,compute,star",
    budgets: Annotated[str, Opt(help="Comma-separated waiting budgets")] = "0.05,0.1,0.25,0.5,1",
    loads: Annotated[str, Opt(help="Synthetic offered loads (without TRACE)")] = "1.0",
    jobs: Annotated[int, Opt(help="Synthetic jobs per load")] = 2000,
    cv: Annotated[float, Opt(help="Synthetic arrival burstiness")] = 1.0,
    seed: Annotated[int, Opt(help="Synthetic workload seed")] = 0,
    price: Annotated[float, Opt(help="Cloud price per GPU-hour ($)")] = 2.5,
    processes: Annotated[int | None, Opt(help="Worker processes (default: all cores)")] = None,
    out_of_order: Annotated[
        bool, Opt("--out-of-order/--in-order", help="How Compute-Wait (Starburst) rows schedule")
    ] = defaults.OUT_OF_ORDER,
    queue_cap: Annotated[str, Opt(help="Queue cap of the Starburst rows; 'none' for no cap")] = str(
        defaults.QUEUE_CAP
    ),
    order: Annotated[
        str, Opt(help="Queue order of every row: fifo|sjf|edf")
    ] = defaults.ORDER.value,
    max_jct_increase: Annotated[
        str, Opt(help="JCT tolerance of the recommendation, e.g. 5%")
    ] = "5%",
    out: Annotated[Path, Opt(help="Output folder for results.csv and pareto.png")] = Path(
        "out/sweep"
    ),
) -> None:
    """Policies × budgets (× loads) on every core; writes a results table and a Pareto plot,
    and recommends the cheapest setting within the JCT tolerance and the Pareto knee."""
    from starburst.core.ordering import parse_order
    from starburst.sim import notes, pareto, recommend, table
    from starburst.sim.engine import SimOptions
    from starburst.sim.shape import uniform
    from starburst.sim.sweep import Source
    from starburst.sim.sweep import sweep as run_sweep
    from starburst.sim.synthetic import Workload

    kinds = [policy_kind(p) for p in policies.split(",") if p.strip()]
    cap = parse_queue_cap(queue_cap)
    queue_order = parse_order(order)
    budget_list = [_positive(b, "budget") for b in budgets.split(",") if b.strip()]
    tolerance = recommend.parse_tolerance(max_jct_increase)
    node_list = uniform(nodes, gpus_per_node)
    sources: list[tuple[float | None, Source]]
    if trace is not None:
        sources = [(None, trace)]
    else:
        sources = [
            (load, Workload(jobs, len(node_list) * gpus_per_node, load, cv, seed=seed))
            for load in (_positive(x, "load") for x in loads.split(",") if x.strip())
        ]
    started = time.perf_counter()
    rows = run_sweep(
        sources,
        node_list,
        kinds,
        budget_list,
        SimOptions(price),
        processes,
        out_of_order=out_of_order,
        queue_cap=cap,
        order=queue_order,
    )
    rows = notes.explain(recommend.add_changes(rows), tolerance)
    typer.echo(table.render(rows))
    marks: dict[str, str] = {}
    for load, group in recommend.by_load(rows).items():
        rec = recommend.recommend(group, tolerance)
        typer.echo("\n" + ("" if load is None else f"load {load:g}, ") + recommend.render(rec))
        marks.update(recommend.highlights(rec))
    table.write_csv(rows, out / "results.csv")
    pareto.plot(rows, out / "pareto.png", highlights=marks if len(sources) == 1 else None)
    typer.echo(
        f"\n{len(rows)} runs in {time.perf_counter() - started:.1f} s; wrote "
        f"{out / 'results.csv'} and {out / 'pareto.png'}"
    )


def _positive(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{what} {text!r} is not a number") from None
    if value < 0:
        raise ConfigError(f"{what} must be ≥ 0, got {text}")
    return value


def demo(
    out: Annotated[Path, Opt(help="Where to write the table and the Pareto plot")] = Path("out"),
    jobs: Annotated[int, Opt(help="Synthetic jobs")] = 2000,
) -> None:
    """The simulator demo: the paper's policy comparison and a Pareto plot, in under a minute."""
    from starburst.sim.demo import run_demo

    run_demo(out, jobs, echo=typer.echo)


def synth(
    out: Annotated[Path, typer.Argument(help="CSV file to write")],
    jobs: Annotated[int, Opt(help="Number of jobs")] = 1000,
    cluster_gpus: Annotated[int, Opt(help="Cluster GPUs the load refers to")] = 64,
    load: Annotated[float, Opt(help="Target offered load")] = 1.0,
    cv: Annotated[float, Opt(help="Arrival burstiness (1: Poisson)")] = 1.0,
    mean_runtime: Annotated[float, Opt(help="Mean runtime (s)")] = 3600.0,
    seed: Annotated[int, Opt(help="Random seed")] = 0,
) -> None:
    """Write a synthetic trace (the paper artifact's generator) in the project's CSV format."""
    from starburst.sim.synthetic import Workload, generate
    from starburst.sim.trace import write_trace

    workload = Workload(jobs, cluster_gpus, load, cv, mean_runtime, seed=seed)
    write_trace(generate(workload), out)
    typer.echo(f"wrote {jobs} jobs to {out}")
