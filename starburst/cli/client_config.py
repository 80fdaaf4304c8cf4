"""The researcher CLI's own settings: ``starburst config`` and ``starburst.toml``.

File: ``$XDG_CONFIG_HOME/starburst/starburst.toml`` (default ``~/.config/...``), written
with mode 0600 (it may hold a token). Keys (``KEYS``): ``server`` (the REST API's URL),
``token``, ``output`` (``table``, ``wide``, ``json``, ``yaml``: the default of ``-o``) and
``auth`` (``token``, the default, or ``kubernetes``: send the current kubeconfig's
credential, ``starburst.cli.kubecreds``, to a server with ``kubernetes_auth`` on).

Precedence for each value: the command-line option > its ``STARBURST_*`` variable
(``STARBURST_SERVER``, ``STARBURST_TOKEN``, ``STARBURST_OUTPUT``, ``STARBURST_CLIENT_AUTH``)
> the file > the default. The token sent: ``--token`` or ``$STARBURST_TOKEN``, else the
kubeconfig's when ``auth`` is ``kubernetes``, else the file's.
With no server anywhere, the client uses ``http://127.0.0.1:$STARBURST_API_PORT`` (8080 when
unset), the port ``starburst server`` listens on under the same variable.

    starburst config set server https://starburst.example.org
    starburst config set token sb_...
    starburst config set auth kubernetes     # use `kubectl`'s credential instead
    starburst config show
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from starburst.core.errors import ConfigError

KEYS = ("server", "token", "output", "auth")
OUTPUTS = ("table", "wide", "json", "yaml")
AUTHS = ("token", "kubernetes")
app = typer.Typer(
    help="Show or set the CLI's server URL, token and output format.", no_args_is_help=True
)


def path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "starburst" / "starburst.toml"


def load() -> dict[str, str]:
    """The file's values ({} when there is none); a broken file is one clear error."""
    import tomllib

    file = path()
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {file}: {exc}") from None
    return {k: str(v) for k, v in data.items() if k in KEYS}


def server_url(given: str | None) -> str:
    """The server to talk to (see the module docstring for the order)."""
    if given:
        return given
    configured = load().get("server")
    if configured:
        return configured
    port = os.environ.get("STARBURST_API_PORT", "").strip() or "8080"
    return f"http://127.0.0.1:{port}"


def auth() -> str:
    """``token`` or ``kubernetes`` (see the module docstring); anything else is refused."""
    chosen = os.environ.get("STARBURST_CLIENT_AUTH") or load().get("auth") or "token"
    if chosen not in AUTHS:
        raise ConfigError(f"auth {chosen!r} is not one of {', '.join(AUTHS)}")
    return chosen


def token(given: str | None) -> str | None:
    """The bearer token to send (see the module docstring for the order)."""
    if given:
        return given
    if auth() == "kubernetes":
        from starburst.cli.kubecreds import bearer_token

        return bearer_token()
    return load().get("token") or None


def output(given: str | None) -> str:
    return given or os.environ.get("STARBURST_OUTPUT") or load().get("output") or "table"


def _save(values: dict[str, str]) -> None:
    file = path()
    file.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{k} = {json.dumps(values[k])}\n" for k in KEYS if k in values)
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(file, 0o600)


@app.command("show")
def show() -> None:
    """The values in effect and where the file is (the token is masked)."""
    typer.echo(f"file:   {path()}")
    typer.echo(f"server: {server_url(os.environ.get('STARBURST_SERVER'))}")
    try:
        mode = auth()
        secret = token(os.environ.get("STARBURST_TOKEN"))
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"token:  {secret[:6] + '…' if secret else '-'}")
    typer.echo(f"output: {output(None)}")
    typer.echo(f"auth:   {mode}")


@app.command("set")
def set_(
    key: Annotated[str, typer.Argument(help="server, token, output or auth.")],
    value: Annotated[str, typer.Argument()],
) -> None:
    """Write one value to the file."""
    if key not in KEYS:
        raise typer.BadParameter(f"unknown key {key!r}; known: {', '.join(KEYS)}")
    if key == "output" and value not in OUTPUTS:
        raise typer.BadParameter(f"output must be one of {', '.join(OUTPUTS)}")
    if key == "auth" and value not in AUTHS:
        raise typer.BadParameter(f"auth must be one of {', '.join(AUTHS)}")
    if key == "server" and not value.startswith(("http://", "https://")):
        raise typer.BadParameter(f"{value!r} is not an http:// or https:// URL")
    values = load()
    values[key] = value
    _save(values)
    typer.echo(f"{key} saved in {path()}")


@app.command("unset")
def unset(key: Annotated[str, typer.Argument(help="server, token, output or auth.")]) -> None:
    """Remove one value from the file."""
    values = load()
    values.pop(key, None)
    _save(values)
    typer.echo(f"{key} removed from {path()}")
