"""Researchers' commands: ``status``, ``explain``, ``logs``, and what every command shares
(``submit`` is in ``starburst.cli.submit``, ``jobs`` and ``queue`` in
``starburst.cli.jobs_and_queue``, ``cancel`` in ``starburst.cli.cancel``, ``costs`` in
``starburst.cli.costs``). A JOB is an id, a unique id prefix or the name of one of your
jobs; the server resolves it.

They talk to the REST API over HTTP (``httpx``, imported only when a command runs) at
``--server`` / ``$STARBURST_SERVER`` (default http://127.0.0.1:8080) with the token
``--token`` / ``$STARBURST_TOKEN`` (not needed when the server runs without auth).

    starburst submit --gpus 2 --image pytorch:2.4 --runtime 2h -- python train.py --lr 3e-4
    starburst jobs --state queued
    starburst explain 3f2a...

Failures are one line on stderr, never a traceback: an unreachable server exits 2 (with a
hint to start ``starburst server``); an error the server reports (4xx) prints its ``detail``
and exits 1; a server-side failure (5xx, e.g. its database is down) exits 2.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from starburst.cli.terminal import printable, say
from starburst.core.errors import StarburstError
from starburst.core.failure import cause_of, tail_of

if TYPE_CHECKING:
    import ssl

#: "not given": resolved by ``starburst.cli.client_config.server_url`` (the config file,
#: else http://127.0.0.1:$STARBURST_API_PORT, else port 8080).
DEFAULT_SERVER = ""

ServerOption = Annotated[
    str,
    typer.Option(
        "--server",
        envvar="STARBURST_SERVER",
        show_default=False,
        help=(
            "URL of the Starburst REST API [default: `starburst config`'s server, else "
            "http://127.0.0.1:$STARBURST_API_PORT, else port 8080]"
        ),
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="STARBURST_TOKEN",
        help="API token (see `starburst admin tokens issue`).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the server's JSON answer.")]


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``45s``, ``30m``, ``2h``, ``1h30m`` or ``1.5d``
    (``core.duration.parse_duration``; ``typer.BadParameter`` otherwise)."""
    from starburst.core.duration import parse_duration as parse

    try:
        return parse(text)
    except StarburstError as exc:
        raise typer.BadParameter(str(exc)) from None


def _fail(message: str, code: int) -> NoReturn:
    say(f"error: {message}", err=True)
    raise typer.Exit(code)


def _reason(exc: Exception) -> str:
    text = str(exc)
    return "connection refused" if "refused" in text.lower() else (text or type(exc).__name__)


def job_path(job_id: str, suffix: str = "") -> str:
    """The API path of a job: ids may hold slashes (``<namespace>/<name>``, kept as path
    separators, which the API accepts) and any other character (percent-encoded)."""
    from urllib.parse import quote

    return f"/v1/jobs/{quote(job_id, safe='/')}" + (f"/{suffix}" if suffix else "")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings (httpx's defaults: certifi's CA bundle, or ``$SSL_CERT_FILE``) that
    every request of this process shares: building them reads the whole CA bundle, ~20 ms of
    CPU, which a new ``httpx.Client`` would otherwise spend on each request (each redraw of
    ``queue --watch``, each poll of ``submit --wait``)."""
    import httpx

    return httpx.create_ssl_context()


def call(
    server: str,
    token: str | None,
    method: str,
    path: str,
    *,
    text: bool = False,
    tolerate: tuple[int, ...] = (),
    **kwargs: Any,
) -> Any:
    """One request to the API; the decoded JSON answer (the body as text with ``text``), None
    for a status in ``tolerate``, or exit with one clear line."""
    import httpx

    from starburst.cli import client_config

    try:
        base = client_config.server_url(server).rstrip("/")
        token = client_config.token(token)
    except StarburstError as exc:
        _fail(str(exc), 2)
    headers = dict(kwargs.pop("headers", None) or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with httpx.Client(base_url=base, timeout=30.0, verify=tls_context()) as client:
            response = client.request(method, path, headers=headers, **kwargs)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        _fail(
            f"cannot reach the Starburst server at {base}: {_reason(exc)}; "
            "is `starburst server` running?",
            2,
        )
    except httpx.TimeoutException:
        _fail(f"the Starburst server at {base} did not answer within 30 s", 2)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        _fail(f"cannot talk to the Starburst server at {base}: {_reason(exc)}", 2)
    if response.status_code in tolerate:
        return None
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text.strip() or response.reason_phrase
        _fail(f"{detail} (HTTP {response.status_code})", 1 if response.status_code < 500 else 2)
    if text:
        return response.text
    return response.json() if response.content else None


def _time(value: str | None) -> str:
    """An API time (UTC ISO-8601) in the local zone ($TZ honoured), with the zone shown."""
    if not value:
        return "-"
    import time
    from datetime import UTC, datetime

    time.tzset()  # $TZ as it is now, not as it was when Python started
    moment = datetime.fromisoformat(value)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def _seconds(value: float | None) -> str:
    from starburst.core.duration import human

    return "-" if value is None else human(value)


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [headers, *rows]
    ]
    return "\n".join(lines)


def finite(limit: float) -> Callable[[float | None], float | None]:
    """A typer callback refusing NaN, infinities, negatives and values above ``limit``
    (a usage error, exit 2, before anything is sent)."""

    def check(value: float | None) -> float | None:
        if value is None:  # not given
            return None
        if not math.isfinite(value) or not 0 <= value <= limit:
            raise typer.BadParameter(f"must be a finite number from 0 to {limit:g}, got {value}")
        return value

    return check


def status(
    job_id: Annotated[str, typer.Argument(metavar="JOB")],
    as_json: JsonOption = False,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """A job's state, times, estimate, wait budget, placement and cost so far; given an
    array id, every element of the array."""
    job = call(server, token, "GET", job_path(job_id), tolerate=(404,))
    if job is None:  # not a job: an array id, else one line saying it names neither
        from starburst.cli import arrays

        array = arrays.fetch(server, token, job_id)
        say(json.dumps(array, indent=2) if as_json else arrays.show(array))
        return
    if as_json:
        typer.echo(json.dumps(job, indent=2))
        return
    where = ", ".join(f"{p['node_name'] or p['node']}×{p['gpus']}" for p in job["placement"])
    cloud = ", ".join(
        f"{c['provider']}:{c['region'] or '-'} {c['accelerators']} "
        f"{c['hourly_price']} {c['currency']}/h ({c['status']})"
        for c in job["cloud"]
    )
    fields = [
        ("job", job["id"]),
        ("name", job["name"] or "-"),
        ("user", job["user"] or "-"),
        ("team", job["team"] or "-"),
        ("state", job["state"]),
        ("gpus", f"{job['gpus']} {job['gpu_type'] or ''}".strip()),
        ("image", job["image"] or "-"),
        ("command", job["command"] or "-"),
        ("submitted", _time(job["submitted_at"])),
        ("started", _time(job["started_at"])),
        ("ended", _time(job["ended_at"])),
        ("estimate", _seconds(job["estimate_s"])),
        ("wait budget", _seconds(job["wait_budget_s"])),
        ("next", job.get("plan") or "-"),
        ("bursts at", _time(job.get("bursts_at"))),
        ("ran on", job["ran_on"] or "-"),
        ("placement", where or "-"),
        ("cloud", cloud or "-"),
        ("cost so far", _costs(job)),
    ]
    if job.get("failure"):
        cause, tail = cause_of(job["failure"]), tail_of(job["failure"])
        code = job.get("exit_code")
        fields += [("exit code", "-" if code is None else str(code)), ("failure", cause)]
        fields += [("", line) for line in tail.splitlines()]
    say("\n".join(f"{k + ':' if k else '':<13}{v}" for k, v in fields))


def _costs(job: dict[str, Any]) -> str:
    """The job's cost per currency ("0.33 USD + 7.00 EUR"): never added across currencies."""
    costs = job.get("costs") or [{"amount": job["cost_so_far"], "currency": job["currency"]}]
    return " + ".join(f"{c['amount']} {c['currency']}" for c in costs)


def explain(
    job_id: Annotated[str, typer.Argument(metavar="JOB")],
    as_json: JsonOption = False,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Why a job is where it is: its history with the reason for every decision."""
    answer = call(server, token, "GET", job_path(job_id, "explain"))
    if as_json:
        typer.echo(json.dumps(answer, indent=2))
        return
    say(f"{answer['id']}: {answer['summary']}")
    for line in _budget_lines(answer):
        say(line)
    rows = [
        [
            _time(e["at"]),
            f"{e['from_state'] or '-'} → {e['to_state']}",
            cause_of(e["reason"]),
            e["actor"],
        ]
        for e in answer["events"]
    ]
    say(table(["WHEN", "CHANGE", "REASON", "BY"], rows))
    tail = tail_of(answer.get("failure") or "")
    if tail:
        say("last output:\n" + "\n".join(f"  {line}" for line in tail.splitlines()))


def _budget_lines(answer: dict[str, Any]) -> list[str]:
    """How the wait budget was computed, and the coefficient now with its last change."""
    lines = []
    if answer.get("budget_computed"):
        lines.append(f"wait budget: {answer['budget_computed']}")
    note = answer.get("coefficient")
    if note:
        since = f" since {_time(note['changed_at'])}" if note.get("changed_at") else ""
        was = f" (was {note['previous']:.4g})" if note.get("previous") is not None else ""
        why = f": {note['why']}" if note.get("why") else ""
        lines.append(f"coefficient: {note['value']:.4g} now ({note['policy']}){since}{was}{why}")
    return lines


def logs(
    job_id: Annotated[str, typer.Argument(metavar="JOB")],
    tail: Annotated[int, typer.Option(min=0, help="The newest lines only (0: all).")] = 200,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help=("Keep printing new output until the job ends (waits for a job not started yet)."),
        ),
    ] = False,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between looks (-f).")] = 2.0,
    raw: Annotated[
        bool,
        typer.Option(
            "--raw",
            help="Print escape sequences as the job wrote them, on a terminal too (by default "
            "a terminal gets them shown as text; a pipe or a file always gets them raw).",
        ),
    ] = False,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """What a job printed, from where it ran (on-prem, or its latest cloud launch). With
    ``-f``: ends with the job's final state on stderr and exits with its exit code (a
    failure without one: 1; cancelled: 130)."""
    path = job_path(job_id, "logs")

    def shown(text: str) -> str:  # ``starburst.cli.terminal``: raw only where asked or piped
        return text if raw or not sys.stdout.isatty() else printable(text, keep_cr=True)

    if not follow:
        output = call(server, token, "GET", path, text=True, params={"tail": tail} if tail else {})
        typer.echo(shown(output), nl=not output.endswith("\n") and bool(output))
        return
    from starburst.cli.follow import follow as follow_output

    final: dict[str, Any] = {}

    def ended() -> bool:
        final.update(call(server, token, "GET", job_path(job_id)))
        return final["state"] in ("succeeded", "failed", "cancelled")

    def fetch() -> str | None:  # 409: not started yet
        output: str | None = call(server, token, "GET", path, text=True, tolerate=(409,))
        return output

    printed: list[str] = []

    def emit(part: str) -> None:
        printed.append(part)
        typer.echo(shown(part), nl=False)

    follow_output(fetch, ended, emit, first_tail=tail or None, interval=interval)
    if printed and not printed[-1].endswith("\n"):
        typer.echo("")
    raise typer.Exit(final_line(final))


def final_line(job: dict[str, Any]) -> int:
    """Print an ended job's final state on stderr; its exit code for the shell."""
    state, code = job["state"], job.get("exit_code")
    cause = cause_of(job.get("failure") or "")
    say(f"job {job['id']} {state}" + (f": {cause}" if cause else ""), err=True)
    if state == "succeeded":
        return 0
    if state == "cancelled":
        return 130
    return code if code else 1
