"""``starburst tune``: replay the cluster's own history under candidate settings, recommend
one, and (``--apply``) hand it to the running controller — no restart.

    starburst tune --since 30d --max-jct-increase 10%
    starburst tune --since 30d --apply                 # the cheapest within the tolerance
    starburst tune --since 30d --estimates p50,p90,mean,none
    starburst tune --trace trace.csv --cluster cluster.yaml   # offline, on an export

Besides policy, budget and mode, ``tune`` chooses the runtime estimate budgets are computed
from (``--estimates``: p50, p70, p80, p90, mean; ``none`` adds Star-Wait, which needs none).
Choosing among them needs each job's estimate *band* as the predictor would have given it
then: the history gets out-of-fold estimates (``predictor.folds``), never its own runtimes.
With ``--estimates p50`` alone the estimates the controller recorded are replayed as they are.

Runs locally on the database (``--url`` / ``$STARBURST_DATABASE_URL`` / the settings file).
Writes ``results.csv``, ``pareto.png``, ``trace.csv`` and ``cluster.yaml`` under ``--out``.
"""

from __future__ import annotations

import getpass
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starburst.cli.history import (
    ConfigOption,
    SinceOption,
    UntilOption,
    UrlOption,
    open_store,
    settings_for,
    window,
)
from starburst.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from starburst.core.capacity import Node
    from starburst.core.estimates import EstimateUse
    from starburst.core.job import Job
    from starburst.core.ports import TuningLog
    from starburst.sim.history import TuneRequest
    from starburst.sim.tune import Deployed, Tuning

Opt = typer.Option
CHOICES = ("cheapest", "knee")


def tune(
    since: SinceOption = "30d",
    until: UntilOption = None,
    budgets: Annotated[
        str, Opt(help="Comma-separated waiting budgets to try")
    ] = "0.05,0.1,0.25,0.5,1",
    policies: Annotated[
        str, Opt(help="Comma-separated policies to try (each in and out of order)")
    ] = "compute,constant,runtime,resource,star",
    estimates: Annotated[
        str,
        Opt(
            help="Comma-separated runtime estimates budgets may use: p50, p70, p80, p90, mean; "
            "none (Star-Wait)"
        ),
    ] = "p50,p70,p90,mean,none",
    max_jct_increase: Annotated[str, Opt(help="Mean-JCT tolerance over No-Wait, e.g. 10%")] = "10%",
    price: Annotated[float | None, Opt(help="$ per GPU-hour (default: the metered price)")] = None,
    apply: Annotated[
        bool, Opt("--apply", help="Write the recommendation to the controller")
    ] = False,
    choose: Annotated[
        str, Opt(help="What --apply writes: cheapest (within the tolerance) or knee")
    ] = "cheapest",
    trace: Annotated[
        Path | None, Opt(help="Tune on this exported trace instead of the store")
    ] = None,
    cluster: Annotated[Path | None, Opt(help="Cluster file for --trace")] = None,
    processes: Annotated[int | None, Opt(help="Worker processes (default: all cores)")] = None,
    optimum_seconds: Annotated[
        float,
        Opt(
            help="Time limit for the offline optimum behind each setting's regret "
            "(histories of at most 200 jobs, the optimum extra; 0: skip)"
        ),
    ] = 60.0,
    ray: Annotated[
        str | None, Opt(help="Replay on this Ray cluster (host:port, ray://…, auto) instead")
    ] = None,
    out: Annotated[Path, Opt(help="Folder for results.csv, pareto.png and the export")] = Path(
        "out/tune"
    ),
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Replay history under each candidate setting and recommend the cheapest within the JCT
    tolerance (and the knee of the Pareto front); --apply writes it for the controller."""
    from starburst.cli.simulate_run import LIMITS, bounded, number_in
    from starburst.core.policy import PolicyKind, parse_policy
    from starburst.sim.history import TuneRequest, fallback
    from starburst.sim.recommend import parse_tolerance

    if choose not in CHOICES:
        raise ConfigError(f"--choose {choose!r}: choose one of {', '.join(CHOICES)}")
    if (trace is None) != (cluster is None):
        raise ConfigError("give --trace and --cluster together (an exported history)")
    if apply and trace is not None:
        raise ConfigError("--apply tunes on the store's own history; drop --trace/--cluster")
    if price is not None:
        bounded(price, *LIMITS["price"])
    if not 0 <= optimum_seconds <= 86_400:
        raise ConfigError(f"--optimum-seconds must be between 0 and 86400, got {optimum_seconds:g}")
    kinds = tuple(parse_policy(p) for p in policies.split(",") if p.strip())
    uses = _estimates(estimates)
    if "none" in estimates.lower().replace(" ", "").split(",") and PolicyKind.STAR not in kinds:
        kinds += (PolicyKind.STAR,)
    budget_list = tuple(number_in(b, "--budgets", 100.0) for b in budgets.split(",") if b.strip())
    if not kinds or not budget_list:
        raise ConfigError("give at least one policy and one budget")
    start, end = window(since, until)
    request = TuneRequest(
        start,
        end,
        kinds,
        budget_list,
        parse_tolerance(max_jct_increase),
        price,
        processes,
        uses,
        ray,
    )
    settings = settings_for(config, url)
    began = time.perf_counter()
    if trace is not None and cluster is not None:
        result, jobs, nodes = _offline(trace, cluster, request, fallback(settings, None))
        shown = request.price if request.price is not None else 2.5
        result, regret = _regret(result, jobs, nodes, request, optimum_seconds, shown)
        _report(result, out, began, regret)
        return
    from starburst.sim.history import tune_history

    with open_store(settings) as store:
        records = store.tuning
        result, history = tune_history(
            records, request, fallback(settings, records.setting_in_force()), out, _out_of_fold
        )
        typer.echo(
            f"replayed {history.describe()} since {since}, on "
            f"{len(history.nodes or [])} nodes, at "
            f"${price if price is not None else history.price_per_gpu_hour:.2f}/GPU-h\n"
        )
        shown = price if price is not None else history.price_per_gpu_hour
        result, regret = _regret(
            result, history.jobs, history.nodes or [], request, optimum_seconds, shown
        )
        _report(result, out, began, regret)
        if apply:
            _apply(records, result, choose, request, history)


def _estimates(text: str) -> tuple[EstimateUse, ...]:
    """``--estimates`` as estimate uses (``none`` is Star-Wait, a policy, not an estimate)."""
    from starburst.core.estimates import parse_estimate

    names = [n for n in text.lower().replace(" ", "").split(",") if n and n != "none"]
    uses = tuple(dict.fromkeys(parse_estimate(n) for n in names))
    if not uses:
        raise ConfigError("give at least one runtime estimate besides none (e.g. p50)")
    return uses


def _out_of_fold(jobs: Sequence[Job]) -> list[Job]:
    from starburst.predictor.folds import out_of_fold

    return out_of_fold(jobs)


def _offline(
    trace: Path, cluster: Path, request: TuneRequest, fallback: Deployed
) -> tuple[Tuning, list[Job], list[Node]]:
    """The replay of an exported history, with its jobs and nodes."""
    from starburst.core.estimates import EstimateUse
    from starburst.sim.engine import SimOptions
    from starburst.sim.shape import load_shape
    from starburst.sim.sweep import JobSet, Source, jobs_of
    from starburst.sim.tune import tune as run

    nodes = load_shape(cluster)
    price = request.price if request.price is not None else 2.5
    jobs = list(jobs_of(trace))  # the serial replay below reads the same, loaded once
    source: Source = trace
    if request.estimates != (EstimateUse.P50,):
        source = JobSet(f"{trace}, out of fold", tuple(_out_of_fold(jobs)))
    result = run(
        source,
        nodes,
        fallback,
        request.policies,
        request.budgets,
        request.tolerance,
        SimOptions(price),
        request.processes,
        request.estimates,
        request.ray,
    )
    return result, jobs, nodes


def _regret(
    result: Tuning,
    jobs: Sequence[Job],
    nodes: Sequence[Node],
    request: TuneRequest,
    seconds: float,
    price: float,
) -> tuple[Tuning, str]:
    """Each row's regret against the offline optimum (``sim.regret``), and the text to show:
    the regrets, or the one line saying why there are none."""
    from starburst.sim import regret
    from starburst.sim.tune import Tuning

    workers = request.processes or min(os.cpu_count() or 1, 8)
    gpus = sum(n.gpus for n in nodes if n.schedulable)
    bracket = regret.solve(
        jobs, gpus, result.rows, request.tolerance, seconds=seconds, workers=workers
    )
    if isinstance(bracket, regret.Skipped):
        return result, bracket.why
    rows = regret.add_regret(result.rows, bracket)
    return Tuning(rows, result.recommendation), regret.render(
        rows, bracket, request.tolerance, price
    )


def _report(result: Tuning, out: Path, began: float, regret: str) -> None:
    from starburst.sim import pareto, recommend, table

    typer.echo(table.render(result.rows))
    typer.echo("\n" + recommend.render(result.recommendation))
    typer.echo("\n" + regret)
    table.write_csv(result.rows, out / "results.csv")
    plot = pareto.plot(
        result.rows,
        out / "pareto.png",
        "Cloud cost vs mean JCT on history",
        highlights=recommend.highlights(result.recommendation),
    )
    typer.echo(
        f"\n{len(result.rows)} replays in {time.perf_counter() - began:.1f} s; wrote "
        f"{out / 'results.csv'} and {plot}"
    )


def _apply(
    records: TuningLog, result: Tuning, choose: str, request: TuneRequest, history: Any
) -> None:
    from starburst.sim.history import apply_choice

    applied = apply_choice(records, result, choose, request, history, f"cli:{getpass.getuser()}")
    if applied is None:
        row = result.recommendation.cheapest if choose == "cheapest" else result.recommendation.knee
        shown = str(row["label"]) if row is not None else "the recommended setting"
        typer.echo(
            f"\nalready in force: {shown} has today's policy, budget and mode; nothing to apply"
        )
        return
    typer.echo(
        f"\napplied {applied.setting.describe()} (setting {applied.id}); the "
        "controller picks it up on its next pass"
    )
