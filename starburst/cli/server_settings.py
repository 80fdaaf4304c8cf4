"""How every command reads its settings: ``--config`` / ``$STARBURST_CONFIG``, then the environment.

One rule for all commands (``server``, ``controller``, ``api``, ``db``, ``admin``): explicit
options > ``STARBURST_*`` variables > the YAML file named by ``--config`` or
``$STARBURST_CONFIG`` > defaults (``starburst.settings.load_settings``). The database verbs
take the URL from ``--url`` when given, else from those settings, so a PostgreSQL URL in the
settings file reaches ``db`` and ``admin`` exactly as it reaches the controller.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from starburst.settings import Settings

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", help="YAML settings file (else $STARBURST_CONFIG).", show_default=False
    ),
]


def settings_for(config: Path | None, **overrides: Any) -> Settings:
    """The validated settings of a command (a bad file or value exits with one message)."""
    from starburst.settings import load_settings

    return load_settings(config, **overrides)


def database_url(url: str | None, config: Path | None) -> str:
    """``--url``, else the settings' ``database_url`` (environment, file, default)."""
    return url or settings_for(config).database_url
