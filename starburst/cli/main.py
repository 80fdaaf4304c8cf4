"""The ``starburst`` command: one entry point, with command groups loaded only when used.

Each group lives in its own module under ``starburst.cli`` and is imported when its name is
on the command line, so ``starburst simulate`` never pays for SQLAlchemy or scikit-learn
imports. ``starburst --help`` (and ``starburst`` alone) prints ``SUMMARIES``, a static copy of
each command's first line of help, without importing typer or any command module (start-up
in tens of milliseconds instead of hundreds); a test keeps it equal to the commands' own help.
``starburst --version`` prints ``starburst <version>`` the same way, without typer.
``starburst simulate`` with well-formed arguments skips typer too (``starburst.cli.fastpath``):
the simulator's whole command is then the interpreter, the trace and the engine.
Errors meant for people (``StarburstError``) print one line to stderr
and exit 2; nothing prints a traceback for bad input, nor for a reader that went away (``|
head``: exit 141, as after SIGPIPE).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import typer

HELP = "Cost-aware scheduler for hybrid-cloud GPU clusters."

#: command group name → "module:attribute" of its typer app.
GROUPS: dict[str, str] = {
    "db": "starburst.cli.db:app",
    "predictor": "starburst.cli.predictor:app",
    "admin": "starburst.cli.admin:app",
    "history": "starburst.cli.history:app",
    "config": "starburst.cli.client_config:app",
}
#: top-level commands → "module:function".
COMMANDS: dict[str, str] = {
    "simulate": "starburst.cli.simulator:simulate",
    "sweep": "starburst.cli.simulator:sweep",
    "tune": "starburst.cli.tune:tune",
    "demo": "starburst.cli.simulator:demo",
    "synth": "starburst.cli.simulator:synth",
    "server": "starburst.cli.serve:server",
    "controller": "starburst.cli.serve:controller",
    "api": "starburst.cli.serve:api",
    "quickstart": "starburst.cli.serve:quickstart",
    "submit": "starburst.cli.submit:submit",
    "jobs": "starburst.cli.jobs_and_queue:jobs",
    "queue": "starburst.cli.jobs_and_queue:queue",
    "nodes": "starburst.cli.nodes:nodes",
    "status": "starburst.cli.jobs:status",
    "explain": "starburst.cli.jobs:explain",
    "logs": "starburst.cli.jobs:logs",
    "cancel": "starburst.cli.cancel:cancel",
    "hold": "starburst.cli.amend:hold",
    "release": "starburst.cli.amend:release",
    "requeue": "starburst.cli.amend:requeue",
    "update": "starburst.cli.amend:update",
    "costs": "starburst.cli.costs:costs",
    "doctor": "starburst.cli.doctor:doctor",
}


#: command or group name → the start of its help (its docstring's first paragraph).
SUMMARIES: dict[str, str] = {
    "simulate": "Simulate one scheduler configuration over a trace and print its cost and JCT.",
    "sweep": "Policies × budgets (× loads) on every core",
    "tune": "Replay history under each candidate setting and recommend the cheapest within the "
    "JCT tolerance (and the knee of the Pareto front)",
    "demo": "The simulator demo: the paper's policy comparison and a Pareto plot, in under a "
    "minute.",
    "synth": "Write a synthetic trace (the paper artifact's generator) in the project's CSV "
    "format.",
    "server": "Controller and REST API in one process (the simple default).",
    "controller": "The controller alone, with its probes and metrics (for deployments).",
    "api": "The REST API alone (for deployments with separate controller replicas).",
    "quickstart": "Starburst end to end on this machine in about a minute: local GPUs, "
    "emulated cloud.",
    "submit": "Submit a job (flags, or a job file: `starburst submit job.yaml`, SkyPilot tasks "
    "accepted)",
    "jobs": "Your active jobs, newest last: queue position, wait budget left, where each goes.",
    "queue": "The waiting line up to your last waiting job (others' jobs: id, size and budget).",
    "nodes": "The cluster's nodes: GPU type, GPUs used and free, and the jobs running on each.",
    "status": "A job's state, times, estimate, wait budget, placement and cost so far; given an "
    "array id, every element of the array.",
    "explain": "Why a job is where it is: its history with the reason for every decision.",
    "logs": "What a job printed, from where it ran (on-prem, or its latest cloud launch).",
    "cancel": "Cancel waiting or running jobs (the controller stops them on its next pass).",
    "hold": "Keep waiting jobs out of the queue until `starburst release` (Slurm's hold); an "
    "array id holds the array's waiting elements.",
    "release": "Let held jobs into the queue again; each one's wait budget starts when it enters.",
    "requeue": "Submit ended jobs again (succeeded, failed or cancelled), each as a new job.",
    "update": "Change a waiting job's GPUs, time limit or name; checked as a submission is, "
    "and its wait budget is computed again from the new size.",
    "costs": "Cloud spend and on-prem use, grouped",
    "doctor": "Check the database, Kubernetes, SkyPilot, prices, the runtime model and leadership.",
    "db": "Create and migrate the database (PostgreSQL or SQLite).",
    "predictor": "Runtime predictor: train, evaluate, show.",
    "admin": "Users, API tokens and team budgets (runs locally on the database).",
    "history": "The controller's history, for the simulator (runs locally).",
    "config": "Show or set the CLI's server URL, token and output format.",
}


def static_help() -> str:
    """The top-level help, from ``SUMMARIES`` (no typer, no command module imported)."""
    width = max(len(name) for name in SUMMARIES)
    lines = [f"  {name:<{width}}  {SUMMARIES[name]}" for name in (*COMMANDS, *GROUPS)]
    return (
        "Usage: starburst [OPTIONS] COMMAND [ARGS]...\n\n" + HELP + "\n\nOptions:\n"
        "  --version  Show the version and exit.\n"
        "  --help     Show this message and exit.\n\nCommands:\n"
        + "\n".join(lines)
        + "\n\nRun `starburst COMMAND --help` for a command's options.\n"
    )


def _load(target: str) -> object:
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def build_app(argv: list[str] | None = None) -> typer.Typer:
    import typer

    app = typer.Typer(
        name="starburst",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """Cost-aware scheduler for hybrid-cloud GPU clusters."""  # = HELP

    wanted = next((a for a in (argv or []) if not a.startswith("-")), None)
    for name, target in COMMANDS.items():
        if wanted in (None, name):
            app.command(name)(_load(target))  # type: ignore[type-var]
    for name, target in GROUPS.items():
        if wanted in (None, name):
            app.add_typer(_load(target), name=name)  # type: ignore[arg-type]
    return app


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in ([], ["--help"]):
        sys.stdout.write(static_help())
        raise SystemExit(0 if args else 2)  # as typer's no_args_is_help
    if args == ["--version"]:
        from starburst import __version__

        print(f"starburst {__version__}")
        return
    from starburst.core.errors import StarburstError

    try:
        if not _fast_path(args):
            build_app(args)(args, prog_name="starburst")
        sys.stdout.flush()  # here, so a closed pipe is caught below, not at exit
    except StarburstError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except BrokenPipeError:
        _reader_gone()


def _reader_gone() -> NoReturn:
    """Whoever read our output went away (``starburst simulate ... | head``): stop quietly,
    with the status a shell gives a writer killed by SIGPIPE (128 + 13)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not fail too
    raise SystemExit(141)


def _fast_path(args: list[str]) -> bool:
    """Run ``simulate`` without typer when ``starburst.cli.fastpath`` recognises its
    arguments; False: typer runs the command (help, usage errors, unusual spellings)."""
    if args[:1] != ["simulate"]:
        return False
    import gc

    # A short command that makes no reference cycles (the engine's loop makes none either):
    # the cyclic collector would only walk the modules, the trace and the jobs being built.
    gc.disable()
    from starburst.cli.fastpath import parse_simulate

    parsed = parse_simulate(args[1:])
    if parsed is None:
        gc.enable()
        return False
    from starburst.cli.simulate_run import run_simulate

    run_simulate(parsed)
    return True
