"""``starburst predictor``: train, evaluate and inspect the runtime model.

- ``synth``: write the structured synthetic workload (``starburst.predictor.workload``) as a
  trace CSV.
- ``train``: fit on a trace's completed jobs (or a synthetic workload) and write a versioned
  artifact.
- ``evaluate``: time-ordered split, the model against baselines; ``--schedule`` also simulates
  the test part with oracle, predicted and no runtimes; ``--schedule --tune`` chooses a
  setting on the training part as ``starburst tune`` would and judges it on the test part
  against the oracle chosen the same way (``predictor.heldout``).
- ``show``: what an artifact holds, or why it cannot be used (and which fallback applies);
  with ``--trace``, a few estimates with their sources.

scikit-learn is imported only inside the commands, never when the group is registered.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from starburst.core.errors import ConfigError

if TYPE_CHECKING:
    from starburst.core.job import Job

app = typer.Typer(help="Runtime predictor: train, evaluate, show.", no_args_is_help=True)
Opt = typer.Option
DEFAULT_MODEL = Path("runtime-model.joblib")


def _jobs(
    trace: Path | None, synthetic: int | None, seed: int, fmt: str, status: str | None = None
) -> list[Job]:
    if (trace is None) == (synthetic is None):
        raise ConfigError("give either --trace FILE or --synthetic JOBS")
    if trace is not None:
        from starburst.sim.loading import load_jobs, parse_statuses

        return load_jobs(trace, fmt, parse_statuses(status))
    from starburst.predictor.workload import WorkloadSpec, generate

    return generate(WorkloadSpec(jobs=synthetic or 0, seed=seed))


TraceOpt = Annotated[Path | None, Opt(help="Trace file with completed jobs (runtime column)")]
SynthOpt = Annotated[int | None, Opt(help="Use a synthetic workload of this many jobs instead")]
SeedOpt = Annotated[int, Opt(help="Seed of the synthetic workload")]
FormatOpt = Annotated[str, Opt("--format", help="auto|csv|philly|helios")]
StatusOpt = Annotated[
    str | None,
    Opt(
        help="Keep only jobs with these final statuses, "
        "comma-separated (e.g. Pass; COMPLETED,TIMEOUT)"
    ),
]
ThreadsOpt = Annotated[int | None, Opt(help="Threads for training (default: all cores)")]


@app.command()
def synth(
    out: Annotated[Path, typer.Argument(help="Trace CSV to write")],
    jobs: Annotated[int, Opt(help="Number of jobs")] = 10_000,
    users: Annotated[int, Opt(help="Number of users")] = 120,
    jobs_per_hour: Annotated[float, Opt(help="Mean arrival rate")] = 12.0,
    seed: SeedOpt = 0,
) -> None:
    """Write the structured synthetic workload as a trace CSV."""
    from starburst.predictor.workload import WorkloadSpec, generate, write_trace

    spec = WorkloadSpec(jobs=jobs, users=users, jobs_per_hour=jobs_per_hour, seed=seed)
    write_trace(generate(spec), out)
    typer.echo(f"wrote {jobs} jobs to {out}")


@app.command()
def train(
    trace: TraceOpt = None,
    synthetic: SynthOpt = None,
    seed: SeedOpt = 0,
    trace_format: FormatOpt = "auto",
    status: StatusOpt = None,
    out: Annotated[Path, Opt("--out", "-o", help="Model artifact to write")] = DEFAULT_MODEL,
    threads: ThreadsOpt = None,
) -> None:
    """Train on completed jobs and write a versioned model artifact."""
    from starburst.predictor.artifact import save_artifact
    from starburst.predictor.model import TrainParams
    from starburst.predictor.training import train_artifact

    artifact = train_artifact(
        _jobs(trace, synthetic, seed, trace_format, status),
        TrainParams(threads=threads),
        trained_at=datetime.now(UTC),
    )
    save_artifact(artifact, out)
    typer.echo(f"wrote {out}\n{artifact.describe()}")


@app.command()
def evaluate(
    trace: TraceOpt = None,
    synthetic: SynthOpt = None,
    seed: SeedOpt = 0,
    trace_format: FormatOpt = "auto",
    status: StatusOpt = None,
    train_share: Annotated[float, Opt(help="Share of jobs (by submit time) to train on")] = 0.7,
    model: Annotated[Path | None, Opt(help="Evaluate this artifact instead of training")] = None,
    schedule: Annotated[
        bool,
        Opt(
            "--schedule", help="Also simulate the test part with oracle, predicted and no runtimes"
        ),
    ] = False,
    load: Annotated[float, Opt(help="Offered load of the simulated cluster (--schedule)")] = 1.0,
    use: Annotated[
        str, Opt(help="Estimate the policy sees: value (p50), high (p90) or low")
    ] = "value",
    tune: Annotated[
        bool,
        Opt(
            "--tune",
            help="With --schedule: choose policy, budget and estimate on the training part, "
            "judge them on the test part against the oracle chosen the same way",
        ),
    ] = False,
    max_jct_increase: Annotated[
        str, Opt(help="Mean-JCT tolerance over No-Wait for --tune, e.g. 10%")
    ] = "10%",
    processes: Annotated[
        int | None, Opt(help="Worker processes for --tune's replays (default: all cores)")
    ] = None,
    threads: ThreadsOpt = None,
) -> None:
    """Model vs baselines on a time-ordered split (and, with --schedule, the effect on cost)."""
    from starburst.predictor.artifact import load_artifact
    from starburst.predictor.evaluation import evaluate as run_evaluation
    from starburst.predictor.evaluation import format_evaluation
    from starburst.predictor.model import TrainParams
    from starburst.sim.recommend import parse_tolerance

    if tune and not schedule:
        raise ConfigError("--tune judges scheduling: give it with --schedule")
    tolerance = parse_tolerance(max_jct_increase)
    jobs = _jobs(trace, synthetic, seed, trace_format, status)
    artifact = load_artifact(model) if model is not None else None
    result = run_evaluation(jobs, train_share, TrainParams(threads=threads), artifact)
    typer.echo(format_evaluation(result))
    if schedule:
        from starburst.predictor.scheduling import compare_scheduling, format_comparison

        typer.echo("")
        typer.echo(
            format_comparison(
                compare_scheduling(
                    jobs, train_share=train_share, load=load, artifact=result.artifact, use=use
                )
            )
        )
    if tune:
        from starburst.predictor.heldout import held_out

        typer.echo("")
        measured = held_out(
            jobs,
            train_share=train_share,
            tolerance=tolerance,
            load=load,
            artifact=result.artifact,
            params=TrainParams(threads=threads),
            processes=processes,
        )
        typer.echo(measured.describe())


@app.command()
def show(
    model: Annotated[Path, Opt(help="Model artifact")] = DEFAULT_MODEL,
    trace: Annotated[Path | None, Opt(help="Also estimate the first jobs of this trace")] = None,
    limit: Annotated[int, Opt(help="How many jobs to estimate with --trace")] = 10,
) -> None:
    """What a model artifact holds; if unusable, why, and which fallback the scheduler uses."""
    import logging

    from starburst.predictor.estimator import load_estimator

    jobs = _jobs(trace, None, 0, "auto")[:limit] if trace is not None else []
    quiet = logging.getLogger("starburst.predictor")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # an unusable model is said below, once
    try:
        loaded = load_estimator(model)
    finally:
        quiet.setLevel(level)
    if loaded.artifact is not None:
        typer.echo(loaded.artifact.describe())
    else:
        typer.echo(f"cannot use the model: {loaded.message}", err=True)
    for job, est in zip(jobs, loaded.estimator.estimate(jobs), strict=True):
        typer.echo(
            f"{job.id:<14} {est.value / 3600:>8.2f} h  [{est.low / 3600:.2f} … "
            f"{est.high / 3600:.2f}] h  true {(job.runtime or 0) / 3600:.2f} h  "
            f"({est.source})"
        )
    if loaded.artifact is None:
        raise typer.Exit(2)
