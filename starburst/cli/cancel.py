"""``starburst cancel``: one job, several, or every job a filter picks.

    starburst cancel 3f2a sweep-7            # ids, unique id prefixes or your jobs' names
    starburst cancel sweep-1a2b3c4d          # an array id: every element not ended yet
    starburst cancel --all --state waiting   # every one of your waiting jobs (held too)
    starburst cancel --name 'sweep-*' --yes  # no question asked

A filter (``--all``, ``--state``, ``--name``) picks among the caller's own active jobs
(``--user`` for an admin cancelling someone else's). Before cancelling more than
``ASK_ABOVE`` jobs it prints the count and asks, unless ``--yes``. Each job is one request
(the server resolves prefixes and names); one failure does not stop the others, and the exit
code is 1 when any failed.
"""

from __future__ import annotations

from typing import Annotated

import typer

from starburst.cli.jobs import DEFAULT_SERVER, ServerOption, TokenOption, call, job_path
from starburst.cli.terminal import say
from starburst.core.lifecycle import JobState

ASK_ABOVE = 3


def _picked(
    server: str, token: str | None, states: list[str], name: str | None, user: str | None
) -> list[str]:
    from starburst.cli.jobs_and_queue import all_pages

    owner = user or call(server, token, "GET", "/v1/whoami")["user"]
    params = {"state": states, "user": owner, **({"name": name} if name else {})}
    return [j["id"] for j in all_pages(server, token, params)]


def cancel(
    job_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="[JOB]...", help="Ids, unique id prefixes, job names or array ids."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every one of your active jobs.")] = False,
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            "-s",
            help="Only jobs in these states: waiting (queued, submitted and held, Slurm's "
            "PENDING), queued, held, running...",
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Only jobs whose name matches: sweep-*")] = None,
    user: Annotated[str | None, typer.Option(help="Admins: this user's jobs.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Cancel waiting or running jobs (the controller stops them on its next pass)."""
    from starburst.core.state_filter import ACTIVE, StateFilter, UnknownState, parse_filter

    filtered = all_ or bool(state) or name is not None
    if not job_ids and not filtered:
        raise typer.BadParameter("name the jobs, or pick them with --all, --state or --name")
    if job_ids and filtered:
        raise typer.BadParameter("give either jobs or a filter (--all, --state, --name)")
    targets = list(job_ids or [])
    if filtered:
        try:
            wanted = parse_filter(state or [])
        except UnknownState as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        active = tuple(s for s in wanted.states if s in ACTIVE)
        if wanted.states and not active:  # not "every active job": that was not asked
            typer.echo(
                f"error: --state {', '.join(state or [])}: ended jobs cannot be cancelled; "
                "pick waiting, held, queued, bursting or running ones",
                err=True,
            )
            raise typer.Exit(2)
        active = active or ACTIVE
        chosen = StateFilter(active, wanted.only_held and JobState.SUBMITTED in active)
        targets = _picked(server, token, chosen.words(), name, user)
        if not targets:
            typer.echo("no job matches; nothing cancelled")
            return
        if len(targets) > ASK_ABOVE and not yes:
            typer.confirm(f"Cancel {len(targets)} jobs?", abort=True, err=True)
    failed = 0
    for target in targets:
        try:
            job = call(server, token, "POST", job_path(target, "cancel"), tolerate=(404,))
            if job is None:  # not a job: an array id (every element), else one line
                _cancel_array(server, token, target)
                continue
        except typer.Exit:  # the error line is printed; go on with the others
            failed += 1
            continue
        say(f"{job['id']}  {job['state']}")
    if len(targets) > 1:
        typer.echo(f"cancelled {len(targets) - failed} of {len(targets)} jobs")
    if failed:
        raise typer.Exit(1)


def _cancel_array(server: str, token: str | None, array_id: str) -> None:
    """Cancel every element of an array that has not ended (``POST /v1/arrays/ID/cancel``)."""
    from starburst.cli.arrays import array_path

    array = call(server, token, "POST", array_path(array_id, "cancel"))
    for element in array["elements"]:
        say(f"{element['id']}  {element['state']}  {element['name'] or '-'}")
    typer.echo(f"cancelled array {array['id']} ({len(array['elements'])} jobs)")
