"""Simulator commands: ``simulate`` one configuration, ``sweep`` many, ``demo`` the paper's
comparison, ``synth`` a synthetic trace. All run the same decision core as the controller.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from starburst.cli.simulate_run import (
    DEFAULT,
    LIMITS,
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_SECONDS,
    SimulateArgs,
    bounded,
    number_in,
    parse_queue_cap,
    policy_kind,
    run_simulate,
)
from starburst.core import defaults

Opt = typer.Option
D = DEFAULT  # the simulate defaults, shared with the fast path
MAX_LOAD = 1000.0  # offered load: 1 fills the cluster
MAX_CV = 100.0  # arrival burstiness: 1 is Poisson


def simulate(
    trace: Annotated[Path, typer.Argument(help="Trace (project CSV, Philly JSON, Helios CSV)")],
    nodes: Annotated[
        int | None, Opt(help="Number of nodes (uniform cluster)", min=1, max=MAX_NODES)
    ] = None,
    gpus_per_node: Annotated[
        int | None, Opt(help="GPUs per node", min=0, max=MAX_GPUS_PER_NODE)
    ] = None,
    cpus_per_node: Annotated[float, Opt(help="CPUs per node (0: not tracked)")] = D.cpus_per_node,
    cluster: Annotated[Path | None, Opt(help="YAML file describing heterogeneous nodes")] = None,
    policy: Annotated[
        str,
        Opt(
            help="starburst (the controller's default: compute, out of "
            "order, queue cap 30) or one of no-wait|infinite|constant|"
            "runtime|resource|compute|star|compute-expected"
        ),
    ] = D.policy,
    coefficient: Annotated[
        float | None,
        Opt(help="Policy coefficient (seconds for constant, seconds per GPU for resource/star)"),
    ] = None,
    budget: Annotated[float | None, Opt(help="Waiting budget b (default 0.25)")] = None,
    out_of_order: Annotated[
        bool, Opt("--out-of-order/--in-order", help="Default: as the controller (out of order)")
    ] = D.out_of_order,
    queue_cap: Annotated[
        str, Opt(help="Burst jobs beyond this queue position; 'none' for no cap")
    ] = D.queue_cap,
    order: Annotated[str, Opt(help="fifo|sjf|edf")] = D.order,
    placement: Annotated[str, Opt(help="first-fit|best-fit")] = D.placement,
    trace_format: Annotated[str, Opt("--format", help="auto|csv|philly|helios")] = D.trace_format,
    status: Annotated[
        str | None,
        Opt(
            help="Keep only jobs with these final statuses, "
            "comma-separated (e.g. Pass; COMPLETED,TIMEOUT)"
        ),
    ] = None,
    price: Annotated[float, Opt(help="Cloud price per GPU-hour ($)")] = D.price,
    startup_delay: Annotated[
        float, Opt(help="Cloud start-up delay (s), added to JCT")
    ] = D.startup_delay,
    estimate_error: Annotated[
        float, Opt(help="Relative runtime-estimate error, e.g. 0.5")
    ] = D.estimate_error,
    seed: Annotated[int, Opt(help="Seed for the estimate error")] = D.seed,
    as_json: Annotated[bool, Opt("--json", help="Print one JSON object")] = D.as_json,
    per_job: Annotated[Path | None, Opt(help="Write each job's outcome to this CSV")] = None,
    engine: Annotated[
        str,
        Opt(
            help="sim (fast) or controller (the live controller's pass on virtual time: "
            "the same decisions, slower)"
        ),
    ] = D.engine,
) -> None:
    """Simulate one scheduler configuration over a trace and print its cost and JCT."""
    run_simulate(
        SimulateArgs(
            trace=trace,
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            cpus_per_node=cpus_per_node,
            cluster=cluster,
            policy=policy,
            coefficient=coefficient,
            budget=budget,
            out_of_order=out_of_order,
            queue_cap=queue_cap,
            order=order,
            placement=placement,
            trace_format=trace_format,
            status=status,
            price=price,
            startup_delay=startup_delay,
            estimate_error=estimate_error,
            seed=seed,
            as_json=as_json,
            per_job=per_job,
            engine=engine,
        )
    )


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
    ray: Annotated[
        str | None, Opt(help="Replay on this Ray cluster (host:port, ray://…, auto) instead")
    ] = None,
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
    bounded(price, *LIMITS["price"])
    bounded(cv, "--cv", 0.0, MAX_CV)
    cap = parse_queue_cap(queue_cap)
    queue_order = parse_order(order)
    budget_list = [number_in(b, "--budgets", 100.0) for b in budgets.split(",") if b.strip()]
    tolerance = recommend.parse_tolerance(max_jct_increase)
    node_list = uniform(nodes, gpus_per_node)
    sources: list[tuple[float | None, Source]]
    if trace is not None:
        sources = [(None, trace)]
    else:
        sources = [
            (load, Workload(jobs, len(node_list) * gpus_per_node, load, cv, seed=seed))
            for load in (number_in(x, "--loads", MAX_LOAD) for x in loads.split(",") if x.strip())
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
        ray=ray,
    )
    rows = notes.explain(recommend.add_changes(rows), tolerance)
    typer.echo(table.render(rows))
    marks: dict[float | None, dict[str, str]] = {}  # each load's panel rings its own picks
    for load, group in recommend.by_load(rows).items():
        rec = recommend.recommend(group, tolerance)
        typer.echo("\n" + ("" if load is None else f"load {load:g}, ") + recommend.render(rec))
        marks[load] = recommend.highlights(rec)
    table.write_csv(rows, out / "results.csv")
    pareto.plot(rows, out / "pareto.png", by_load=marks)
    typer.echo(
        f"\n{len(rows)} runs in {time.perf_counter() - started:.1f} s; wrote "
        f"{out / 'results.csv'} and {out / 'pareto.png'}"
    )


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

    bounded(load, "--load", 0.0, MAX_LOAD)
    bounded(cv, "--cv", 0.0, MAX_CV)
    bounded(mean_runtime, "--mean-runtime", 0.0, MAX_SECONDS)
    workload = Workload(jobs, cluster_gpus, load, cv, mean_runtime, seed=seed)
    write_trace(generate(workload), out)
    typer.echo(f"wrote {jobs} jobs to {out}")
