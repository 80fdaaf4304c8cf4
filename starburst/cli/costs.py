"""``starburst costs``: the REST cost report (and savings) from the command line.

    starburst costs --by team,month --since 2026-11-01
    starburst costs --by project,week -o csv > costs.csv
    starburst costs --savings -o json

The figures are the server's (``GET /v1/costs``, ``/v1/costs/savings``): cloud spend and
on-prem GPU-hours with their showback at the internal rates. ``-o csv`` prints the server's
CSV as it is; a user's report is headed as theirs (``costs of user ann``), not the team's.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer

from starburst.cli.jobs import DEFAULT_SERVER, ServerOption, TokenOption, _time, call, table
from starburst.cli.terminal import say
from starburst.core.apportion import HOURS_DIGITS


class Output(StrEnum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"


def costs(
    by: Annotated[
        str,
        typer.Option(
            help=(
                "Group by any of: team, user, project, cloud, region, location, gpu_type, job, "
                "day, week, month."
            )
        ),
    ] = "team",
    since: Annotated[
        str | None,
        typer.Option(
            help=(
                "From: a duration back from now (30d, 12h), an ISO date or datetime "
                "(2026-11-01, 2026-11-01T00:00+01:00); default: this month."
            )
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Until (exclusive), in the same forms; default: now.")
    ] = None,
    team: Annotated[str | None, typer.Option()] = None,
    user: Annotated[str | None, typer.Option()] = None,
    cloud: Annotated[str | None, typer.Option()] = None,
    project: Annotated[str | None, typer.Option()] = None,
    top: Annotated[int | None, typer.Option(help="Only the N rows of highest spend.")] = None,
    savings: Annotated[
        bool,
        typer.Option("--savings", help="Also compare with bursting every job at once (finance)."),
    ] = False,
    output: Annotated[
        Output, typer.Option("--output", "-o", help="table, csv or json.")
    ] = Output.TABLE,
    as_json: Annotated[bool, typer.Option("--json", help="Same as -o json.")] = False,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Cloud spend and on-prem use, grouped; optionally what the policy saved."""
    if as_json:
        output = Output.JSON
    params = {
        k: v
        for k, v in {
            "by": by,
            "since": since,
            "until": until,
            "team": team,
            "user": user,
            "cloud": cloud,
            "project": project,
            "top": top,
        }.items()
        if v is not None
    }
    if output is Output.CSV:
        typer.echo(
            call(server, token, "GET", "/v1/costs", text=True, params={**params, "format": "csv"}),
            nl=False,
        )
        return
    report = call(server, token, "GET", "/v1/costs", params=params)
    saved = None
    if savings:
        window = {k: v for k, v in {"since": since, "until": until}.items() if v is not None}
        saved = call(server, token, "GET", "/v1/costs/savings", params=window)
    if output is Output.JSON:
        typer.echo(
            json.dumps({"report": report, "savings": saved} if savings else report, indent=2)
        )
        return
    _print_report(report)
    if saved is not None:
        _print_savings(saved)


def _print_report(report: dict[str, Any]) -> None:
    keys = report["by"]
    rows = [
        [
            *(r["key"].get(k) or "-" for k in keys),
            r["amount"],
            r["currency"],
            f"{r['gpu_hours']:.{HOURS_DIGITS}f}",
            f"{r['onprem_gpu_hours']:.{HOURS_DIGITS}f}",
            r["onprem_amount"],
            str(r["entries"]),
        ]
        for r in report["rows"]
    ]
    rows += [
        [
            "total",
            *["" for _ in keys[1:]],
            t["amount"],
            t["currency"],
            f"{t['gpu_hours']:.{HOURS_DIGITS}f}",
            f"{t['onprem_gpu_hours']:.{HOURS_DIGITS}f}",
            t["onprem_amount"],
            "",
        ]
        for t in report["totals"]
    ]
    scope = report.get("scope", "all")
    whose = "" if scope == "all" else f" of {scope}"
    typer.echo(f"costs{whose} from {_time(report['since'])} until {_time(report['until'])}")
    say(
        table(
            [k.upper() for k in keys]
            + ["AMOUNT", "CURRENCY", "GPU-H", "ONPREM-GPU-H", "SHOWBACK", "ENTRIES"],
            rows,
        )
    )


def _print_savings(saved: dict[str, Any]) -> None:
    fraction = saved["saved_fraction"]
    typer.echo(
        f"{saved['jobs']} jobs ({saved['burst_jobs']} burst, {saved['onprem_jobs']} "
        f"on-prem): bursting every one at once (No-Wait) would have cost "
        f"{saved['no_wait']} {saved['currency']}; spent {saved['actual']}; saved "
        f"{saved['saved']}" + (f" ({fraction:.0%})" if fraction is not None else "")
    )
    if saved["unpriced_jobs"]:
        typer.echo(f"{saved['unpriced_jobs']} jobs not counted:")
        for item in saved["unpriced"]:
            say(f"  {item['job']}: {item['reason']}")
