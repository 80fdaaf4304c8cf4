"""``starburst nodes``: the private cluster at a glance, as Slurm's ``sinfo`` with the jobs
on each node: every node's GPU type, GPUs used and free, and what runs there, then the jobs
running in the cloud. Other users' jobs show as the server redacts them (id and size; their
owner and name for admins and finance).

    starburst nodes
    starburst nodes -o json
"""

from __future__ import annotations

import json
from typing import Any

from starburst.cli.jobs import DEFAULT_SERVER, ServerOption, TokenOption, call, table
from starburst.cli.jobs_and_queue import Output, OutputOption, chosen_output, short
from starburst.cli.terminal import say
from starburst.core.duration import human


def _job(job: dict[str, Any]) -> str:
    """``3f2a1b2c alice/train ×2 12m`` (another user's: ``3f2a1b2c ×2 12m``)."""
    who = "/".join(p for p in (job.get("user"), job.get("name")) if p)
    elapsed = job.get("elapsed_s")
    parts = [short(job["id"]), who, f"×{job['gpus']}", human(elapsed) if elapsed else ""]
    return " ".join(p for p in parts if p)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render(view: dict[str, Any]) -> str:
    nodes, cloud = view["nodes"], view["cloud"]
    head = (
        f"{_plural(view['gpus'], 'GPU')} on {_plural(len(nodes), 'node')}: "
        f"{view['used']} used, {view['free']} free; "
        f"{_plural(len(cloud), 'job')} in the cloud"
    )
    lines = [head]
    if not view["recorded"]:
        lines.append(
            "the controller has not recorded the cluster yet (is it running?): "
            "only nodes that jobs run on are listed"
        )
    rows = [
        [
            n["name"],
            n.get("gpu_type") or "-",
            "?" if n.get("gpus") is None else str(n["gpus"]),
            str(n["used"]),
            "?" if n.get("free") is None else str(n["free"]),
            ", ".join(_job(j) for j in n["jobs"]) or "-",
        ]
        for n in nodes
    ]
    if rows:
        lines.append(table(["NODE", "GPU TYPE", "GPUS", "USED", "FREE", "JOBS"], rows))
    if cloud:
        lines.append("cloud: " + ", ".join(f"{_job(j)} ({j['state']})" for j in cloud))
    return "\n".join(lines)


def nodes(
    output: OutputOption = None,
    server: ServerOption = DEFAULT_SERVER,
    token: TokenOption = None,
) -> None:
    """The cluster's nodes: GPU type, GPUs used and free, and the jobs running on each."""
    fmt = chosen_output(output)
    view = call(server, token, "GET", "/v1/nodes")
    if fmt is Output.JSON:
        say(json.dumps(view, indent=2))
    elif fmt is Output.YAML:
        import yaml

        say(yaml.safe_dump(view, sort_keys=False).rstrip("\n"))
    else:
        say(render(view))
