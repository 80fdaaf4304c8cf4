"""``starburst jobs`` and ``starburst queue``: what is waiting and running, and where it goes.

``jobs`` shows the caller's active jobs by default (submitted, queued, bursting, running),
newest last, each with its queue position, the wait budget left and its plan (where it goes
next); ``--all`` or ``--state`` widen it, ``--user``/``--team``/``--name`` (a glob) narrow it.
``queue`` shows the waiting line ahead of the caller's last job, other users' entries
redacted by the server (ids, sizes, budgets only).

Output: ``-o table`` (default), ``wide`` (full ids, team, submitted time, image),
``json`` and ``yaml`` (the rows as data). ``--watch N`` redraws every N seconds until
interrupted (``--watch-count``, hidden, stops after that many drawings: tests use it).

Terms: *position* is the rank in the line of waiting jobs (``GET /v1/queue``); a *held* job
(waiting for a dependency or an array slot) is not in the line yet, so it has none: both
commands show it as ``held``, with the reason, and ``--state held`` lists only those.
*Budget left* is the time until the job bursts to the cloud unless GPUs free up on-prem
first.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import typer

from starburst.cli.jobs import (
    DEFAULT_SERVER,
    ServerOption,
    TokenOption,
    _time,
    call,
    table,
)
from starburst.cli.terminal import printable, say
from starburst.core.duration import precise
from starburst.core.errors import StarburstError

_PAGE = 500


class Output(StrEnum):
    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"


OutputOption = Annotated[
    Output | None,
    typer.Option(
        "--output",
        "-o",
        help="table, wide, json or yaml [default: table, or `starburst config`].",
        case_sensitive=False,
    ),
]
WatchOption = Annotated[
    float | None,
    typer.Option(
        "--watch", "-w", min=0.01, help="Redraw every N seconds until Ctrl-C.", show_default=False
    ),
]
WatchCountOption = Annotated[
    int | None, typer.Option("--watch-count", envvar="STARBURST_WATCH_COUNT", hidden=True, min=1)
]


def chosen_output(given: Output | None) -> Output:
    """``-o``, else ``$STARBURST_OUTPUT``, else ``starburst config``'s output, else table."""
    from starburst.cli import client_config

    try:
        chosen = client_config.output(given.value if given else None)
    except StarburstError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if chosen not in set(Output):
        typer.echo(
            f"error: the output format must be one of {', '.join(Output)}, not {chosen!r}", err=True
        )
        raise typer.Exit(2)
    return Output(chosen)


def all_pages(server: str, token: str | None, params: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = call(
            server,
            token,
            "GET",
            "/v1/jobs",
            params={**params, "limit": _PAGE, **({"cursor": cursor} if cursor else {})},
        )
        found += page["jobs"]
        cursor = page["next_cursor"]
        if not cursor:
            return found


def _row(job: dict[str, Any], place: dict[str, Any] | None) -> dict[str, Any]:
    """A job as one listing row: its summary plus position, budget left and its plan (the
    server's words, the same ``queue``, ``status`` and ``explain`` show)."""
    return {
        **job,
        "position": place["position"] if place else None,
        "budget_left_s": place["budget_left_s"] if place else None,
        "waited_s": place["waited_s"] if place else None,
        "plan": job.get("plan") or (place["plan"] if place else "-"),
    }


def collect(
    server: str,
    token: str | None,
    states: list[str],  # words the API's ``state`` takes (``held`` too)
    user: str | None,
    team: str | None,
    name: str | None,
    limit: int,
    since: str | None = None,
    until: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The rows to show (newest last, at most ``limit``; 0: all) and how many were left out."""
    params = {
        "state": states,
        "user": user,
        "team": team,
        "name": name,
        "since": since,
        "until": until,
    }
    found = all_pages(server, token, {k: v for k, v in params.items() if v not in (None, [])})
    hidden = max(0, len(found) - limit) if limit else 0
    shown = found[hidden:]
    places: dict[str, dict[str, Any]] = {}
    if any(j["state"] in ("submitted", "queued") for j in shown):
        places = {e["id"]: e for e in call(server, token, "GET", "/v1/queue")["jobs"]}
    return [_row(j, places.get(j["id"])) for j in shown], hidden


def short(job_id: str) -> str:
    """The id as people type it: a generated 32-hex id cut to 8 characters (the server
    resolves unique prefixes), any other id (``namespace/name``) whole."""
    return job_id[:8] if re.fullmatch(r"[0-9a-f]{32}", job_id) else job_id


def _budget(row: dict[str, Any]) -> str:
    if row.get("never_bursts"):
        return "never bursts"
    left = row.get("budget_left_s")
    if left is None:
        return "-"
    return "spent" if left <= 0 else precise(left)


def _elapsed(row: dict[str, Any]) -> str:
    value = row.get("elapsed_s")
    return "-" if value is None else precise(value)


def _exit(row: dict[str, Any]) -> str:
    code = row.get("exit_code")
    return "-" if code is None else str(code)


def _cost(row: dict[str, Any]) -> str:
    """``1.23 USD`` (``+`` between currencies, never added); ``-`` for no cloud money."""
    costs = row.get("costs") or []
    return " + ".join(f"{c['amount']} {c['currency']}" for c in costs) or "-"


def render(
    rows: list[dict[str, Any]],
    output: Output,
    hidden: int = 0,
    empty: str = "no jobs (use --all for finished ones)",
    accounting: bool = False,
) -> str:
    """The rows in the chosen format (``empty`` when there are none)."""
    if output is Output.JSON:
        return json.dumps(rows, indent=2)
    if output is Output.YAML:
        import yaml

        return yaml.safe_dump(rows, sort_keys=False).rstrip("\n")
    if not rows:
        return empty if not hidden else ""
    wide = output is Output.WIDE
    headers = ["POS", "ID", "NAME", "USER", "STATE", "GPUS", "WAITED", "BUDGET LEFT", "WHERE"]
    if accounting:  # sacct's columns, before WHERE
        headers[-1:-1] = ["ELAPSED", "EXIT", "COST"]
    if wide:
        headers[4:4] = ["TEAM"]
        headers += ["SUBMITTED", "IMAGE"]
    lines = []
    for r in rows:
        cells = [
            str(r["position"] or "-"),
            r["id"] if wide else short(r["id"]),
            r.get("name") or "-",
            r.get("user") or "-",
            "held" if r.get("held") else r["state"],
            str(r["gpus"]) + (f" {r['gpu_type']}" if r.get("gpu_type") else ""),
            precise(r["waited_s"]) if r.get("waited_s") is not None else "-",
            _budget(r),
            r["plan"],
        ]
        if accounting:
            cells[-1:-1] = [_elapsed(r), _exit(r), _cost(r)]
        if wide:
            cells[4:4] = [r.get("team") or "-"]
            cells += [_time(r.get("submitted_at")), r.get("image") or "-"]
        lines.append(cells)
    text = table(headers, lines)
    if hidden:
        text = f"({hidden} older jobs not shown; --limit 0 shows all)\n" + text
    return text


def repeat(
    draw: Callable[[], str],
    every: float | None,
    count: int | None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Print ``draw()`` once, or every ``every`` seconds (``count`` times, else until Ctrl-C),
    clearing the terminal between drawings when there is one."""
    if every is None and count is None:
        say(draw())
        return
    drawn = 0
    try:
        while True:
            text = draw()
            if sys.stdout.isatty():
                typer.echo("\x1b[H\x1b[2J", nl=False)
            elif drawn:
                typer.echo("")
            stamp = time.strftime("%H:%M:%S %Z")
            typer.echo(f"every {every or 0:g}s, {stamp} (Ctrl-C to stop)\n{printable(text)}")
            drawn += 1
            if count is not None and drawn >= count:
                return
            sleep(every or 0)
    except KeyboardInterrupt:
        return


def jobs(
    all_: Annotated[bool, typer.Option("--all", "-a", help="Every state, ended jobs too.")] = False,
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            "-s",
            help=(
                "Only these states (repeatable or comma-separated): a state, or running, waiting, "
                "active, ended."
            ),
        ),
    ] = None,
    user: Annotated[str | None, typer.Option(help="Only this user's jobs.")] = None,
    team: Annotated[str | None, typer.Option(help="Only this team's jobs.")] = None,
    name: Annotated[str | None, typer.Option(help="Only names matching this glob: sweep-*")] = None,
    since: Annotated[
        str | None,
        typer.Option(
            help="Only jobs not ended before this: a duration back from now (2h, 3d), an ISO "
            "date or datetime (2026-11-01, 2026-11-01T09:00+01:00; UTC without a zone). "
            "Lists every state unless --state says otherwise.",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(help="Only jobs submitted before this (same forms).", show_default=False),
    ] = None,
    limit: Annotated[int, typer.Option(min=0, help="Show the newest N (0: all).")] = 200,
    output: OutputOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as -o json.")] = False,
    watch: WatchOption = None,
    watch_count: WatchCountOption = None,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Your active jobs, newest last: queue position, wait budget left, where each goes.

    With ``--all``, ``--since`` or ``--until`` (Slurm's ``sacct``): every state, with each
    job's elapsed time, exit code and cloud cost."""
    from starburst.core.state_filter import ACTIVE, UnknownState, parse_filter

    try:
        chosen = parse_filter(state or [])
    except UnknownState as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    history = all_ or since is not None or until is not None
    states = chosen.words() if chosen.states else ([] if history else [s.value for s in ACTIVE])
    fmt = Output.JSON if as_json else chosen_output(output)
    if chosen.states:
        empty = f"no jobs in {', '.join(chosen.words())}"
    else:
        empty = "no jobs" if history else "no jobs (use --all for finished ones)"
    if name is not None:
        empty += f" named {name!r}"

    def draw() -> str:
        rows, hidden = collect(server, token, states, user, team, name, limit, since, until)
        return render(rows, fmt, hidden, empty, accounting=history)

    repeat(draw, watch, watch_count)


def queue(
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            "-a",
            help="The whole line, and every running job (others' redacted), as Slurm's squeue.",
        ),
    ] = False,
    output: OutputOption = None,
    watch: WatchOption = None,
    watch_count: WatchCountOption = None,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """The waiting line up to your last waiting job (others' jobs: id, size and budget)."""

    fmt = chosen_output(output)

    def draw() -> str:
        view = call(server, token, "GET", "/v1/queue", params={"all": "true"} if all_ else {})
        rows = [{**e, "plan": e["plan"] + (" (yours)" if e["mine"] else "")} for e in view["jobs"]]
        if fmt in (Output.JSON, Output.YAML):
            return render(view if all_ else view["jobs"], fmt)
        nothing = "nothing is waiting" if all_ else "none of your jobs is waiting"
        text = render(rows, fmt) if rows else nothing
        held = f", {view['held']} held out of it" if view.get("held") else ""
        head = f"{view['total']} waiting in all{held}"
        if not all_:
            return f"{head}\n{text}"
        running = view.get("running") or []
        gpus = sum(r["gpus"] for r in running)
        head += f"; {len(running)} running on {gpus} GPUs"
        return f"{head}\n{text}" + (f"\n\nrunning:\n{_running(running)}" if running else "")

    repeat(draw, watch, watch_count)


def _running(entries: list[dict[str, Any]]) -> str:
    rows = [
        [
            short(e["id"]),
            e.get("name") or "-",
            e.get("user") or "-",
            e["state"],
            str(e["gpus"]) + (f" {e['gpu_type']}" if e.get("gpu_type") else ""),
            precise(e["elapsed_s"]) if e.get("elapsed_s") is not None else "-",
        ]
        for e in entries
    ]
    return table(["ID", "NAME", "USER", "STATE", "GPUS", "ELAPSED"], rows)
