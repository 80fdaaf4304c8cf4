"""``starburst hold``, ``release``, ``requeue`` and ``update``: change a job after submitting
it, as Slurm's ``scontrol hold/release/requeue/update`` (the rules: ``core.amendments``).

    starburst hold 3f2a sweep-7          # out of the queue until released
    starburst release 3f2a sweep-7       # back in; its wait budget starts then
    starburst requeue 3f2a               # an ended job again, as a new job
    starburst update 3f2a --gpus 1 --time-limit 2h --name smaller

Each is one request per job (the server resolves ids, prefixes and names, and says why in
one line when the job's state does not allow it); one failure does not stop the others, and
the exit code is 1 when any failed. Every change is an event ``explain`` shows.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from starburst.cli.jobs import (
    DEFAULT_SERVER,
    ServerOption,
    TokenOption,
    call,
    job_path,
    parse_duration,
)
from starburst.cli.terminal import say

JobsArgument = Annotated[
    list[str], typer.Argument(metavar="JOB...", help="Ids, unique id prefixes or job names.")
]
HoldArgument = Annotated[
    list[str],
    typer.Argument(metavar="JOB...", help="Ids, unique id prefixes, job names or array ids."),
]


def _each(targets: list[str], send: Any, show: Any) -> None:
    failed = 0
    for target in targets:
        try:
            answer = send(target)
        except typer.Exit:  # the error line is printed; go on with the others
            failed += 1
            continue
        say(show(target, answer))
    if failed:
        raise typer.Exit(1)


def _state(job: dict[str, Any]) -> str:
    return f"{job['id']}  {'held' if job.get('held') else job['state']}"


def _hold_or_release(server: str, token: str | None, targets: list[str], action: str) -> None:
    """``action`` (hold or release) on each target; a target that names no job but an array
    acts on the array's elements that can take it: the waiting ones (hold) or the held ones
    (release). An unknown target is one line, and the others still go."""
    from starburst.cli.arrays import fetch

    failed = 0
    for target in targets:
        try:
            job = call(server, token, "POST", job_path(target, action), tolerate=(404,))
            if job is not None:
                say(_state(job))
                continue
            array = fetch(server, token, target)  # not a job: an array id, else one line
            chosen = [
                e["id"]
                for e in array["elements"]
                if (bool(e.get("held")) if action == "release" else _waiting(e))
            ]
            for element in chosen:
                say(_state(call(server, token, "POST", job_path(element, action))))
            verb = "held" if action == "hold" else "released"
            say(f"{verb} {len(chosen)} of {len(array['elements'])} jobs of array {array['id']}")
        except typer.Exit:  # the error line is printed; go on with the others
            failed += 1
    if failed:
        raise typer.Exit(1)


def _waiting(element: dict[str, Any]) -> bool:
    return not element.get("held") and element["state"] in ("submitted", "queued")


def hold(
    job_ids: HoldArgument,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Keep waiting jobs out of the queue until `starburst release` (Slurm's hold); an array
    id holds the array's waiting elements."""
    _hold_or_release(server, token, job_ids, "hold")


def release(
    job_ids: HoldArgument,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Let held jobs into the queue again; each one's wait budget starts when it enters. An
    array id releases the array's held elements."""
    _hold_or_release(server, token, job_ids, "release")


def requeue(
    job_ids: JobsArgument,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Submit ended jobs again (succeeded, failed or cancelled), each as a new job."""
    _each(
        job_ids,
        lambda j: call(server, token, "POST", job_path(j, "requeue")),
        lambda target, job: f"{job['id']}  {job['state']}  (requeued {target})",
    )


def update(
    job_id: Annotated[str, typer.Argument(metavar="JOB")],
    gpus: Annotated[
        int | None, typer.Option(min=0, help="The GPUs it asks for.", show_default=False)
    ] = None,
    time_limit: Annotated[
        str | None,
        typer.Option(
            "--time-limit",
            help="Its hard time limit (2h, 1h30m).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Its name.", show_default=False)] = None,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Change a waiting job's GPUs, time limit or name; checked as a submission is, and its
    wait budget is computed again from the new size."""
    body: dict[str, Any] = {}
    if gpus is not None:
        body["gpus"] = gpus
    if time_limit is not None:
        body["time_limit_s"] = parse_duration(time_limit)
    if name is not None:
        body["name"] = name
    if not body:
        raise typer.BadParameter("give what to change: --gpus, --time-limit or --name")
    job = call(server, token, "PATCH", job_path(job_id), json=body)
    say(_state(job))
