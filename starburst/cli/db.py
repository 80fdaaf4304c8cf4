"""``starburst db``: create and migrate Starburst's database (an admin verb, run locally).

The database is ``--url``, else the settings' ``database_url`` read like every command's
(``$STARBURST_DATABASE_URL``, else the YAML file of ``--config`` / ``$STARBURST_CONFIG``, else
the embedded SQLite file ``~/.local/share/starburst/starburst.db``, created on first use).
``postgresql://`` URLs use the psycopg 3 driver. Messages never show the URL's password.

    starburst db upgrade                 # to the newest revision
    starburst db downgrade --to base     # remove every Starburst table (asks; --yes skips)
    starburst db current                 # the database's revision and the newest one

A downgrade drops tables or columns, so it asks first; without a terminal to ask on it needs
``--yes``. A revision that does not exist is one line (exit 2), nothing changed.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from starburst.cli.server_settings import ConfigOption, database_url

app = typer.Typer(
    help="Create and migrate the database (PostgreSQL or SQLite).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="Database URL (default: the settings' database_url: $STARBURST_DATABASE_URL, "
        "else the --config file, else sqlite:///~/.local/share/starburst/starburst.db).",
        show_default=False,
    ),
]


@app.command()
def upgrade(
    url: UrlOption = None,
    to: Annotated[str, typer.Option("--to", help="Target revision.")] = "head",
    config: ConfigOption = None,
) -> None:
    """Migrate the database up (creating it if needed)."""
    from starburst.adapters.db import migrate

    target = database_url(url, config)
    migrate.upgrade(target, to)
    _say_revision(target)


@app.command()
def downgrade(
    url: UrlOption = None,
    to: Annotated[str, typer.Option("--to", help="Target revision ('base': empty).")] = "-1",
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Migrate the database down one revision (or to --to), after asking: it drops data."""
    from starburst.adapters.db import migrate
    from starburst.adapters.db.engine import redact

    target = database_url(url, config)
    question = (
        f"downgrade {redact(target)} from revision {migrate.current(target) or 'base'} "
        f"to {to}? Tables and columns of the later revisions are dropped with their data"
    )
    if not yes:
        if not sys.stdin.isatty():
            typer.echo(f"error: {question}: refused without --yes (no terminal to ask)", err=True)
            raise typer.Exit(1)
        if not typer.confirm(question, default=False):
            typer.echo("nothing changed", err=True)
            raise typer.Exit(1)
    migrate.downgrade(target, to)
    _say_revision(target)


def _say_revision(target: str) -> None:
    from starburst.adapters.db import migrate
    from starburst.adapters.db.engine import redact

    typer.echo(f"{redact(target)} is at revision {migrate.current(target) or 'base'}")


@app.command()
def current(url: UrlOption = None, config: ConfigOption = None) -> None:
    """Show the database's revision and the newest one available."""
    from starburst.adapters.db import migrate
    from starburst.adapters.db.engine import redact

    target = database_url(url, config)
    typer.echo(
        f"{redact(target)}: revision {migrate.current(target) or 'base'} (newest: {migrate.head()})"
    )
