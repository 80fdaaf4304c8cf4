"""``starburst submit``: one job, an array of them, or a job file (``starburst.cli.jobfile``).

Flags win over the file. Nothing is sent until the whole submission is checked here: bad
input is one line and exit code 2 — a job file that is not there too (``submit job.yml``
with a typo is refused, never run as a command named ``job.yml``). ``--wait`` follows the
job as ``logs -f`` does: its output as it comes, then its final state, and exits with its
exit code (``starburst.cli.jobs.final_line``).

The image is optional: the local cluster runs the command on the host, and a SkyPilot burst
without one runs on SkyPilot's default machine image; a server whose cluster is Kubernetes
refuses a job without one (422), since a pod needs a container image.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from starburst.cli.jobs import (
    DEFAULT_SERVER,
    ServerOption,
    TokenOption,
    _fail,
    call,
    finite,
    parse_duration,
)
from starburst.cli.terminal import say
from starburst.core.errors import StarburstError


def submit(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help=("A job file (job.yaml), or the command to run after `--`."), show_default=False
        ),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(help="Container image (needed on Kubernetes; the local cluster ignores it)."),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(
            help="GPUs (all start together). [default: 1]", min=0, max=4096, show_default=False
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="A name for the job.")] = None,
    runtime: Annotated[
        str | None,
        typer.Option(
            help="Your runtime estimate: 90m, 2h, 1h30m (the policy may predict its own)."
        ),
    ] = None,
    time_limit: Annotated[
        str | None,
        typer.Option(
            "--time-limit", help="A hard limit: the job is ended when it has run this long (2h)."
        ),
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option(
            help="Run in this directory (local cluster; made absolute). Must be readable by the "
            "user local jobs run as.",
            show_default=False,
        ),
    ] = None,
    cpus: Annotated[float | None, typer.Option(help="CPUs.", callback=finite(100_000))] = None,
    memory_mb: Annotated[
        float | None, typer.Option("--memory-mb", help="Memory in MiB.", callback=finite(1e9))
    ] = None,
    gpu_type: Annotated[str | None, typer.Option("--gpu-type", help="e.g. A100.")] = None,
    env: Annotated[list[str] | None, typer.Option(help="NAME=VALUE, repeatable.")] = None,
    team: Annotated[str | None, typer.Option(help="Charge this team.")] = None,
    project: Annotated[str | None, typer.Option(help="Project for cost reports.")] = None,
    key: Annotated[
        str | None,
        typer.Option("--idempotency-key", help="Submitting twice with one key makes one job."),
    ] = None,
    array: Annotated[
        str | None,
        typer.Option(
            "--array",
            help="One job per index: 0-99, 1,4,7 (index in $STARBURST_ARRAY_INDEX); "
            "0-99%8: at most 8 queued or running at once.",
            show_default=False,
        ),
    ] = None,
    after: Annotated[
        list[str] | None,
        typer.Option(
            "--after",
            help="Start only after this job ends (ID) or succeeds (ID:ok); repeatable. "
            "Its wait budget starts then.",
            show_default=False,
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Wait for the job to end, printing its output as it comes (as logs -f); "
            "exit with its exit code.",
        ),
    ] = False,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between looks (--wait).")] = 2.0,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Submit nothing: say where the job would go and what it would cost per hour "
            "in the cloud, or why it would be refused.",
        ),
    ] = False,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """Submit a job (flags, or a job file: `starburst submit job.yaml`, SkyPilot tasks
    accepted); it waits on-prem within its wait budget, then bursts to the cloud."""
    from starburst.cli import jobfile

    args = list(command or [])
    given: dict[str, Any] = {}
    if jobfile.looks_like_job_file(args):  # a typo is refused, never run as a command
        path = Path(args.pop(0))
        if (why := jobfile.missing(path)) is not None:
            _fail(why, 2)
        try:
            given = jobfile.read(path)
        except StarburstError as exc:
            _fail(str(exc), 2)
    variables = _variables(given.get("env") or {}, env or [])
    flags = {
        "image": image,
        "command": args or None,
        "gpus": gpus,
        "name": name,
        "cpus": cpus,
        "memory_mb": memory_mb,
        "gpu_type": gpu_type,
        "team": team,
        "project": project,
        "runtime": runtime,
        "time_limit": time_limit,
        "workdir": str(workdir.absolute()) if workdir else None,
    }
    body = {**given, **{k: v for k, v in flags.items() if v is not None}, "env": variables}
    if not body.get("command"):
        raise typer.BadParameter("give the command after `--`, or `run:` in a job file")
    body.setdefault("gpus", 1)
    array = array if array is not None else _text(body.pop("array", None))
    _add_dependencies(body, after)
    for given_as, sent_as in (("runtime", "declared_runtime_s"), ("time_limit", "time_limit_s")):
        text = body.pop(given_as, None)
        if text is not None:
            body[sent_as] = parse_duration(str(text))
    if dry_run:
        quoted = call(server, token, "POST", "/v1/jobs/quote", json=body)
        each = "each job of the array " if array is not None else ""
        typer.echo(f"dry run, nothing submitted: {each}{quoted['summary']}")
        return
    if array is not None:
        if wait:
            raise typer.BadParameter("--wait is not supported with --array yet")
        submit_array(server, token, body, array, key)
        return
    job = call(
        server,
        token,
        "POST",
        "/v1/jobs",
        headers={"Idempotency-Key": key} if key else {},
        json=body,
    )
    say(f"{job['id']}  {job['state']}")
    if wait:  # ``logs -f``: the output as it comes, the final state, the exit code
        from starburst.cli.jobs import logs

        logs(job["id"], tail=0, follow=True, interval=interval, server=server, token=token)


def _variables(from_file: dict[str, str | None], flags: list[str]) -> dict[str, str]:
    """The job's environment: the file's, then ``--env NAME=VALUE`` over it. A file's
    ``null`` value must be given by a flag (as ``sky launch --env`` does)."""
    variables = dict(from_file)
    for item in flags:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--env")
        variables[name] = value
    missing = sorted(k for k, v in variables.items() if v is None)
    if missing:
        _fail(
            f"{missing[0]} is null in the job file: give its value with --env {missing[0]}=VALUE", 2
        )
    return {k: v for k, v in variables.items() if v is not None}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _add_dependencies(body: dict[str, Any], flags: list[str] | None) -> None:
    """``--after`` values (and a job file's ``after``: a string or a list), checked here so
    garbage is one line and exit code 2 before anything is sent."""
    from starburst.core.dependencies import parse_many

    given = body.pop("after", None)
    texts = [given] if isinstance(given, str) else list(given or [])
    if not all(isinstance(t, str) for t in texts):
        raise typer.BadParameter("after: give job ids (ID or ID:ok)", param_hint="--after")
    texts += flags or []
    try:
        deps = parse_many(texts)
    except StarburstError as exc:
        raise typer.BadParameter(str(exc), param_hint="--after") from None
    if deps:
        body["after"] = [str(d) for d in deps]


def submit_array(
    server: str, token: str | None, body: dict[str, Any], spec: str, key: str | None
) -> None:
    """Submit one job per index of ``spec`` (``starburst.cli.arrays``); the elements share
    an array name (the idempotency key, else a random one) the server counts them by and,
    with a limit, throttles them by."""
    import uuid

    from starburst.cli.arrays import INDEX_VAR, parse

    try:
        chosen, limit = parse(spec)
    except StarburstError as exc:
        _fail(str(exc), 2)
    base = body.get("name") or "array"
    # every element names its array, so the server counts them (``max_array_size``) and
    # status/cancel take the array id as a whole
    array_id = key or f"{base}-{uuid.uuid4().hex[:8]}"
    body = {**body, "array": array_id}
    if limit is not None:
        body["array_limit"] = limit
    for index in chosen:
        element = {
            **body,
            "name": f"{base}-{index}",
            "array_index": index,
            "env": {**body.get("env", {}), INDEX_VAR: str(index)},
        }
        job = call(
            server,
            token,
            "POST",
            "/v1/jobs",
            json=element,
            headers={"Idempotency-Key": f"{key}-{index}"} if key else {},
        )
        say(f"{job['id']}  {job['state']}  {element['name']}")
    at_once = f", at most {limit} at once" if limit is not None else ""
    typer.echo(
        f"submitted {len(chosen)} jobs: {base}-{chosen[0]} … {base}-{chosen[-1]}{at_once}; "
        f"array id {array_id}"
    )
