"""``starburst history export``: the store's finished jobs as a simulator trace, locally.

    starburst history export --since 30d -o trace.csv --cluster cluster.yaml
    starburst simulate trace.csv --cluster cluster.yaml --policy compute --budget 0.1 ...

Reads the database directly (``--url`` / ``$STARBURST_DATABASE_URL`` / the settings file),
read-only. See ``starburst.sim.history`` for what the columns hold.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from starburst.core.ports import Store
    from starburst.settings import Settings

app = typer.Typer(
    help="The controller's history, for the simulator (runs locally).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Opt = typer.Option
UrlOption = Annotated[
    str | None,
    Opt(
        "--url",
        help="Database URL (default: $STARBURST_DATABASE_URL, the settings file, else the "
        "SQLite file ~/.local/share/starburst/starburst.db).",
        show_default=False,
    ),
]
ConfigOption = Annotated[Path | None, Opt("--config", help="Settings YAML file.")]
SinceOption = Annotated[
    str,
    Opt(help="From: a duration back from now (30d, 12h), an ISO date (2026-11-01) or datetime"),
]
UntilOption = Annotated[str | None, Opt(help="Until (exclusive), in the same forms; default: now.")]


def window(since: str, until: str | None = None) -> tuple[float, float]:
    """(since, until) epochs by the one window parser (``core.window``): ``30d`` back from
    now, an ISO date or datetime; ``until`` defaults to now."""
    from starburst.core.errors import ConfigError
    from starburst.core.window import parse_window

    try:
        return parse_window(since, until, now=time.time(), default_since=0.0)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since/--until") from None


def settings_for(config: Path | None, url: str | None) -> Settings:
    from starburst.settings import load_settings

    return load_settings(config, database_url=url)


@contextmanager
def open_store(settings: Settings) -> Iterator[Store]:
    from starburst.adapters.db.store import SqlStore

    store = SqlStore.open(settings.database_url)
    try:
        yield store
    finally:
        store.close()


@app.command("export")
def export(
    out: Annotated[Path, Opt("-o", "--out", help="Trace CSV to write.")],
    since: SinceOption = "30d",
    until: UntilOption = None,
    cluster: Annotated[Path | None, Opt(help="Also write the cluster's shape (YAML) here.")] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Write finished jobs as a trace (submit time, measured runtime, GPUs, CPUs, GPU type,
    user, team, and the controller's runtime estimate) and the cluster's shape."""
    from starburst.sim.history import load_history, write_history

    for path in (out, cluster):
        if path is not None and not path.parent.is_dir():
            typer.echo(f"error: {path}: no directory {path.parent} (nothing is created)", err=True)
            raise typer.Exit(1)
    start, end = window(since, until)
    with open_store(settings_for(config, url)) as store:
        history = load_history(store.tuning, start, end)
    write_history(history, out, cluster)
    typer.echo(f"wrote {history.describe()} to {out}")
    if cluster is not None and history.nodes:
        gpus = sum(n.gpus for n in history.nodes)
        typer.echo(
            f"wrote the cluster's shape ({len(history.nodes)} nodes, {gpus} GPUs) to {cluster}"
        )
