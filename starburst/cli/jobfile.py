"""Job files: ``starburst submit job.yaml`` reads a job from YAML.

Two shapes, one file may mix them:
- Starburst's own keys, named as the flags: ``image``, ``gpus``, ``gpu_type``, ``name``,
  ``runtime`` (``2h``), ``time_limit`` (``2h``, a hard limit), ``cpus``, ``memory_mb``,
  ``env`` (a mapping), ``team``, ``project``, ``command`` (a string or a list of arguments),
  ``after`` (a job to wait for, ``ID`` or ``ID:ok``, or a list of them).
- A SkyPilot task, accepted as is: ``name``, ``run`` (and ``setup``, run first),
  ``envs``, ``resources.accelerators`` (``A100:2``, ``{A100: 2}``, or a list of which the
  first is taken), ``resources.cpus`` / ``memory`` (``8``, ``8+``; memory in GB),
  ``resources.image_id`` (``docker:pytorch/pytorch:2.4``), ``num_nodes: 1``, ``workdir``
  (relative to the file; the local cluster runs the job there, it is not synced to a cloud).

Flags given on the command line win over the file. Keys Starburst cannot honour are refused
with the reason, never silently dropped: ``file_mounts`` (put the files in the image),
``num_nodes`` above 1; any other unknown key lists the known ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starburst.core.errors import ConfigError

OWN = (
    "image",
    "gpus",
    "gpu_type",
    "name",
    "runtime",
    "cpus",
    "memory_mb",
    "env",
    "team",
    "project",
    "command",
    "time_limit",
    "workdir",
    "after",
)
SKY = ("run", "setup", "envs", "resources", "num_nodes")
_REFUSED = {
    "file_mounts": "`file_mounts` is not supported: put the files in the image",
}
_RESOURCES = ("accelerators", "cpus", "memory", "image_id", "cloud", "region", "use_spot")


def looks_like_job_file(args: list[str]) -> bool:
    return bool(args) and args[0].endswith((".yaml", ".yml")) and Path(args[0]).is_file()


def read(path: Path) -> dict[str, Any]:
    """The submission fields a job file holds (``starburst.api.schemas.jobs.JobSubmit``
    names, ``runtime`` still as text)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read job file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"job file {path}: expected a mapping of keys, got {type(data).__name__}")
    return _fields(path, data)


def _fields(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    for key in data:
        if key in _REFUSED:
            raise ConfigError(f"job file {path}: {_REFUSED[key]}")
        if key not in OWN + SKY:
            raise ConfigError(
                f"job file {path}: unknown key {key!r}; known: {', '.join(OWN + SKY)}"
            )
    if int(data.get("num_nodes", 1)) != 1:
        raise ConfigError(
            f"job file {path}: num_nodes must be 1 (a job's GPUs are gang-scheduled by `gpus`)"
        )
    out = {k: data[k] for k in OWN if data.get(k) is not None}
    if "workdir" in out:  # relative to the file, as SkyPilot reads it
        out["workdir"] = str((path.parent / str(out["workdir"])).absolute())
    if "run" in data:
        script = [str(data[k]).strip() for k in ("setup", "run") if data.get(k)]
        out.setdefault("command", "\n".join(script))
    if data.get("envs"):
        out["env"] = {
            **{str(k): str(v) for k, v in dict(data["envs"]).items()},
            **dict(out.get("env") or {}),
        }
    resources = data.get("resources") or {}
    if not isinstance(resources, dict):
        raise ConfigError(f"job file {path}: resources must be a mapping")
    unknown = set(resources) - set(_RESOURCES)
    if unknown:
        raise ConfigError(
            f"job file {path}: unknown resources key {sorted(unknown)[0]!r}; "
            f"known: {', '.join(_RESOURCES)}"
        )
    _resources(path, resources, out)
    return out


def _resources(path: Path, resources: dict[str, Any], out: dict[str, Any]) -> None:
    wanted = resources.get("accelerators")
    if isinstance(wanted, list):
        wanted = wanted[0] if wanted else None
    if isinstance(wanted, dict):
        wanted = ",".join(f"{k}:{v}" for k, v in wanted.items())
    if wanted:
        kind, _, count = str(wanted).split(",")[0].partition(":")
        try:
            out.setdefault("gpus", int(count or 1))
        except ValueError:
            raise ConfigError(
                f"job file {path}: accelerators {wanted!r} is not NAME:COUNT"
            ) from None
        out.setdefault("gpu_type", kind.strip())
    for key, field, scale in (("cpus", "cpus", 1.0), ("memory", "memory_mb", 1024.0)):
        if resources.get(key) is not None:
            text = str(resources[key]).rstrip("+")
            try:
                out.setdefault(field, float(text) * scale)
            except ValueError:
                raise ConfigError(
                    f"job file {path}: resources.{key} {resources[key]!r} is not a number"
                ) from None
    image = resources.get("image_id")
    if image:
        out.setdefault("image", str(image).removeprefix("docker:"))
