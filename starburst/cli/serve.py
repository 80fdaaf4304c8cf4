"""Commands that run Starburst: ``server``, ``controller``, ``api`` and ``quickstart``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Opt = typer.Option


def _settings(config: Path | None, **overrides: object):  # type: ignore[no-untyped-def]
    from starburst.cli.server_settings import settings_for  # the one settings rule of every command

    return settings_for(config, **overrides)


HostOption = Annotated[
    str | None,
    Opt(
        help="Address the REST API listens on (default 127.0.0.1; else set auth)",
        show_default=False,
    ),
]


def server(
    config: Annotated[Path | None, Opt(help="YAML settings file (else STARBURST_CONFIG)")] = None,
    port: Annotated[int | None, Opt(help="Port of the REST API")] = None,
    host: HostOption = None,
) -> None:
    """Controller and REST API in one process (the simple default)."""
    from starburst.api.serve import run

    run(_settings(config, api_port=port, api_host=host), "server")


def controller(
    config: Annotated[Path | None, Opt(help="YAML settings file (else STARBURST_CONFIG)")] = None,
    port: Annotated[int | None, Opt(help="Port of /healthz, /readyz and /metrics")] = None,
) -> None:
    """The controller alone, with its probes and metrics (for deployments)."""
    from starburst.api.serve import run

    run(_settings(config, api_port=port), "controller")


def api(
    config: Annotated[Path | None, Opt(help="YAML settings file (else STARBURST_CONFIG)")] = None,
    port: Annotated[int | None, Opt(help="Port of the REST API")] = None,
    host: HostOption = None,
) -> None:
    """The REST API alone (for deployments with separate controller replicas)."""
    from starburst.api.serve import run

    run(_settings(config, api_port=port, api_host=host), "api")


def quickstart(
    state_dir: Annotated[Path | None, Opt(help="Keep the state here (default: a temp dir)")] = None,
    speed: Annotated[
        float, Opt(min=0.1, max=10.0, help="Run the same story this many times faster")
    ] = 1.0,
) -> None:
    """Starburst end to end on this machine in about a minute: local GPUs, emulated cloud."""
    from starburst.controller.quickstart import run_quickstart

    raise typer.Exit(run_quickstart(state_dir, typer.echo, speed=speed))
