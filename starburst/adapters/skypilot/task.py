"""A Starburst job as a SkyPilot task, and the cheapest-first options it may run on.

Job fields travel in ``Job.extra`` (strings, as Kubernetes annotations carry them):
- ``command`` (required): the task's ``run``; ``image``: a container image, run as
  ``image_id: docker:<image>``; ``env``: a JSON object of strings, the task's ``envs``;
- ``clouds``: comma-separated clouds allowed (``aws,gcp``), default every cloud priced;
- ``regions``: comma-separated ``cloud/region`` (``aws/us-east-1,gcp/us-central1``); when
  given, only those clouds and regions are used (SkyPilot ``any_of`` across the regions);
- ``use_spot`` (or ``spot``): ``true``/``false`` to rent spot GPUs or not, overriding the
  ``use_spot`` setting. A spot task carries SkyPilot's managed-job recovery strategy
  (``job_recovery``: ``EAGER_NEXT_REGION``): a preempted job is relaunched, in another
  region if its own has no capacity left, and keeps its managed-job id and name;
- ``disk_gb``: boot disk size. ``Job.cpus`` and ``memory_mb`` become minimums (``8+``);
- ``workdir``: a directory on the controller's machine, the task's ``workdir``: SkyPilot
  uploads it and runs the command there (``~/sky_workdir``).
(``use_spot``, ``clouds``, ``regions`` and ``disk_gb`` are ``starburst.core.cloud_choice``'s
words, which the API writes; ``starburst.pricing.choice`` prices them for every cloud.)

Terms:
- *option*: one cloud (on-demand or spot) from the price table, with its price for the job's
  GPUs. Options are tried cheapest first; option *k* is launched under the name
  ``<base>-<k>``, so a retry of option k finds an earlier launch by name, and a failover is
  always a new, distinct name.
- *base name*: ``starburst-<job id slug>-<8 hex of sha1(job id)>``: deterministic, unique
  per job, lowercase letters, digits and hyphens only (safe in SkyPilot's ``LIKE`` name match).

Invariants: building a task never contacts a cloud; an unknown GPU, a GPU not offered on the
allowed clouds, or a malformed field is a ``PermanentError`` with the reason.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from pathlib import Path
from typing import Any

from starburst.adapters.skypilot.api import SkyApi
from starburst.core.cloud_choice import DISK_GB
from starburst.core.errors import PermanentError
from starburst.core.job import Job, job_env
from starburst.core.time_limit import time_limit_of
from starburst.pricing.choice import LaunchOption, launch_options

__all__ = ["LaunchOption", "base_name", "build_task", "launch_name", "launch_options", "option_of"]

NAME_PREFIX = "starburst-"
SPOT_RECOVERY = {"strategy": "EAGER_NEXT_REGION"}  # SkyPilot's managed-job recovery


def base_name(job_id: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", job_id.lower()).strip("-")[:32].strip("-") or "job"
    digest = hashlib.sha1(job_id.encode()).hexdigest()[:8]
    return f"{NAME_PREFIX}{slug}-{digest}"


def launch_name(job_id: str, option: int) -> str:
    return f"{base_name(job_id)}-{option}"


def option_of(name: str, job_id: str) -> int | None:
    """The option index of a launch name of this job, or None if it is not one."""
    base = base_name(job_id) + "-"
    suffix = name[len(base) :] if name.startswith(base) else ""
    return int(suffix) if suffix.isdigit() else None


def build_task(api: SkyApi, job: Job, option: LaunchOption, name: str) -> Any:
    """The ``sky.Task`` for running ``job`` on ``option`` as managed job ``name``."""
    command = job.extra.get("command", "").strip()
    if not command:
        raise PermanentError(f"job {job.id} has no command (extra['command'] is empty)")
    common: dict[str, Any] = {
        "accelerators": option.price.accelerators,
        "use_spot": option.price.spot,
    }
    if option.price.spot:
        common["job_recovery"] = dict(SPOT_RECOVERY)
    if job.cpus:
        common["cpus"] = f"{job.cpus:g}+"
    if job.memory_mb:
        common["memory"] = f"{job.memory_mb / 1024:g}+"
    if image := job.extra.get("image", "").strip():
        common["image_id"] = f"docker:{image}"
    if disk := job.extra.get(DISK_GB, "").strip():
        common["disk_size"] = _int(job, DISK_GB, disk)
    infras = [f"{option.price.cloud}/{r}" for r in option.regions] or [option.price.cloud]
    resources = [api.Resources(infra=infra, **common) for infra in infras]
    if (limit := time_limit_of(job)) is not None:  # the hard --time-limit: exit code 124
        command = f"timeout --kill-after=30 {math.ceil(limit)} /bin/sh -c {shlex.quote(command)}"
    task: dict[str, Any] = {}
    if workdir := job.extra.get("workdir", "").strip():
        if not Path(workdir).is_dir():  # SkyPilot's client uploads it from this machine
            raise PermanentError(
                f"job {job.id}: workdir {workdir} is not a directory on the controller's "
                "machine, so SkyPilot cannot sync it to the cloud"
            )
        task["workdir"] = workdir  # SkyPilot syncs it and runs the command there
    return api.Task(
        name=name,
        run=command,
        envs=_env(job),
        num_nodes=option.price.nodes,
        resources=resources[0] if len(resources) == 1 else set(resources),
        **task,
    )


def _env(job: Job) -> dict[str, str]:
    return {**job_env(job), "STARBURST_JOB_ID": job.id}


def _int(job: Job, key: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise PermanentError(f"job {job.id}: extra[{key!r}] must be an integer") from None
