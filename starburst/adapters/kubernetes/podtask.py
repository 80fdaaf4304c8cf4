"""What a Job's pod template runs, as the fields a cloud task is built from.

A Job created with ``kubectl`` carries its work only in its pod template; bursting it needs
the same fields a Starburst submission has (``Job.extra``, see ``skypilot/task.py``):
- ``image``: the container's image (the cloud task's ``docker:<image>``);
- ``command``: the container's ``command`` followed by its ``args``, shell-quoted into one
  line (a cloud task's ``run``), after ``cd <workingDir> &&`` when it sets one;
- ``env``: its ``env`` entries with a literal ``value`` (JSON object, ``job_env``).

A template a cloud cannot run faithfully gets a *cloud blocker* instead (``extra
["cloud_blocker"]``, ``core.job.cloud_blocker``): the reason, for the job's history and the
Job's Events; such a job never bursts. Blockers: several containers, init containers, a
container with ``args`` but no ``command`` (the image's entrypoint is not known here), no
command at all, env from ``valueFrom`` (a Secret, ConfigMap or the pod's own fields) or
``envFrom``, and volumes other than ``emptyDir`` (persistent volumes, Secrets, ConfigMaps,
host paths exist only in the cluster).

Invariant: pure; the fields come out the same for the same template.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from starburst.core.job import CLOUD_BLOCKER

Obj = Mapping[str, Any]


def cloud_fields(pod_spec: Obj) -> dict[str, str]:
    """``image``, ``command``, ``env`` of the template's one container, or a blocker."""
    containers = list(pod_spec.get("containers") or ())
    blocker = _template_blocker(pod_spec, containers)
    if blocker is not None:
        return {CLOUD_BLOCKER: blocker}
    (container,) = containers
    fields = {"image": str(container.get("image") or "")}
    env: dict[str, str] = {}
    for var in container.get("env") or ():
        env[str(var.get("name"))] = str(var.get("value") or "")
    if env:
        fields["env"] = json.dumps(env, sort_keys=True)
    run = shlex.join([str(p) for p in [*container.get("command"), *(container.get("args") or ())]])
    if container.get("workingDir"):
        run = f"cd {shlex.quote(str(container['workingDir']))} && {run}"
    fields["command"] = run
    return fields


def _template_blocker(pod_spec: Obj, containers: list[Obj]) -> str | None:
    if len(containers) != 1:
        names = ", ".join(str(c.get("name")) for c in containers) or "none"
        return f"the pod template has {len(containers)} containers ({names}); a cloud task runs one"
    if pod_spec.get("initContainers"):
        return "the pod template has init containers, which a cloud task cannot run"
    for volume in pod_spec.get("volumes") or ():
        kind = next((k for k in volume if k != "name"), "unknown")
        if kind != "emptyDir":
            return (
                f"volume {volume.get('name')} ({kind}) exists only in the cluster; a cloud "
                "task cannot mount it"
            )
    return _container_blocker(containers[0])


def _container_blocker(container: Obj) -> str | None:
    name = container.get("name")
    if not container.get("command"):
        if container.get("args"):
            return (
                f"container {name} sets args but no command: its image's entrypoint is "
                "not known to Starburst, so a cloud task cannot run it"
            )
        return (
            f"container {name} sets no command (it runs its image's entrypoint, which "
            "Starburst cannot see), so a cloud task cannot run it"
        )
    if container.get("envFrom"):
        return f"container {name} takes env from envFrom, which exists only in the cluster"
    for var in container.get("env") or ():
        source = var.get("valueFrom")
        if source:
            kind = next(iter(source), "valueFrom")
            return (
                f"env {var.get('name')} of container {name} comes from {kind}, which exists "
                "only in the cluster"
            )
    if not container.get("image"):
        return f"container {name} has no image"
    return None
