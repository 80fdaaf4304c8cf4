"""Idempotent submission: one key, one job — and a key reused for another job is refused.

Terms: a submission may carry an *idempotency key*; the first one with a key creates the job,
a repeat gets that job back (``JobStore.submit``: ``created`` false). A repeat is the *same
submission* when it asks for the same job: every field of its ``JobSpec`` equals the stored
job's. A key reused with a different spec is almost always a mistake (a script that forgot
to change its key, a typo in a command), so the API refuses it (409) naming the fields that
differ instead of silently handing back the old job.

Invariant: the comparison is over what a submission sets (the spec), never over what
happened to the job since (state, estimate, budget).
"""

from __future__ import annotations

from starburst.core.cloud_choice import CLOUDS, DISK_GB, REGIONS, USE_SPOT
from starburst.core.records import JobSpec, StoredJob

#: extras that repeat a column (compared there) and the names people know the others by
_SAME_AS_COLUMN = frozenset({"command", "image"})
_EXTRA_NAMES = dict.fromkeys((USE_SPOT, CLOUDS, REGIONS, DISK_GB), "cloud_choice")


def differences(spec: JobSpec, stored: StoredJob) -> list[str]:
    """The fields in which ``spec`` asks for another job than ``stored`` (API names, in a
    fixed order, without repeats); empty for the same submission."""
    job = stored.job
    pairs: dict[str, tuple[object, object]] = {
        "name": (spec.name, job.name),
        "team": (spec.team, job.team),
        "image": (spec.image, stored.image),
        "command": (spec.command, stored.command),
        "gpus": (spec.gpus, job.gpus),
        "pods": (spec.pods, job.pods),
        "cpus": (spec.cpus, job.cpus),
        "memory_mb": (spec.memory_mb, job.memory_mb),
        "gpu_type": (spec.gpu_type, job.gpu_type),
        "declared_runtime_s": (spec.declared_runtime, stored.declared_runtime),
        "deadline": (spec.deadline, job.deadline),
        "after": (tuple(spec.after), tuple(job.after)),
        "array": (spec.array, job.array),
        "array_limit": (spec.array_limit, job.array_limit),
    }
    found = [name for name, (asked, kept) in pairs.items() if asked != kept]
    keys = sorted((set(spec.extra) | set(job.extra)) - _SAME_AS_COLUMN)
    found += [_EXTRA_NAMES.get(k, k) for k in keys if spec.extra.get(k) != job.extra.get(k)]
    return list(dict.fromkeys(found))
