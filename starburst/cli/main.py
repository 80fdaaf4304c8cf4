"""The ``starburst`` command: one entry point, with command groups loaded only when used.

Each group lives in its own module under ``starburst.cli`` and is imported when its name is
on the command line (or for ``--help``), so ``starburst simulate`` never pays for SQLAlchemy
or scikit-learn imports. Errors meant for people (``StarburstError``) print one line to stderr
and exit 2; nothing prints a traceback for bad input.
"""

from __future__ import annotations

import importlib
import sys

import typer

from starburst.core.errors import StarburstError

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
    "simulate": "starburst.cli.sim:simulate",
    "sweep": "starburst.cli.sim:sweep",
    "tune": "starburst.cli.tune:tune",
    "demo": "starburst.cli.sim:demo",
    "synth": "starburst.cli.sim:synth",
    "server": "starburst.cli.serve:server",
    "controller": "starburst.cli.serve:controller",
    "api": "starburst.cli.serve:api",
    "quickstart": "starburst.cli.serve:quickstart",
    "submit": "starburst.cli.jobs:submit",
    "jobs": "starburst.cli.listing:jobs",
    "queue": "starburst.cli.listing:queue",
    "status": "starburst.cli.jobs:status",
    "explain": "starburst.cli.jobs:explain",
    "logs": "starburst.cli.jobs:logs",
    "cancel": "starburst.cli.cancel:cancel",
    "costs": "starburst.cli.costs:costs",
    "doctor": "starburst.cli.doctor:doctor",
}


def _load(target: str) -> object:
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def build_app(argv: list[str] | None = None) -> typer.Typer:
    app = typer.Typer(
        name="starburst",
        help="Cost-aware scheduler for hybrid-cloud GPU clusters.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """Cost-aware scheduler for hybrid-cloud GPU clusters."""

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
    try:
        build_app(args)(args, prog_name="starburst")
    except StarburstError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
