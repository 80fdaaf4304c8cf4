"""Job files: ``starburst submit job.yaml`` reads a job from YAML.

Two shapes, one file may mix them:
- Starburst's own keys, named as the flags: ``image``, ``gpus``, ``gpu_type``, ``name``,
  ``runtime`` (``2h``), ``time_limit`` (``2h``, a hard limit), ``cpus``, ``memory_mb``,
  ``env`` (a mapping), ``team``, ``project``, ``command`` (a string or a list of arguments),
  ``after`` (a job to wait for, ``ID`` or ``ID:ok``, or a list of them), ``array``
  (``0-99%8``, as ``--array``).
- A SkyPilot task, accepted as is and run as SkyPilot runs it: ``name``, ``run`` (and
  ``setup``: run first, in a subshell as SkyPilot runs it in a script of its own; if it
  fails, ``run`` does not run and the job fails with setup's exit code), both under
  ``bash`` as SkyPilot's own scripts are, so bash syntax (``${HF_TOKEN:0:3}``, arrays,
  ``[[ ]]``) works on every backend; ``envs``, ``resources.accelerators`` (``A100:2``,
  ``{A100: 2}``, or a list of which the first is taken; a task without accelerators is a
  CPU-only job, 0 GPUs, as in SkyPilot), ``resources.cpus`` / ``memory``
  (``8``, ``8+``; memory in GB), ``resources.image_id`` (``docker:pytorch/pytorch:2.4``),
  ``num_nodes: 1``, ``workdir`` (relative to the file; the local cluster runs the job there,
  a SkyPilot burst syncs it). Where a burst may go: ``resources.use_spot``, ``cloud``,
  ``region``, ``infra`` (``aws``, ``aws/us-east-1``) and ``disk_size`` (GB) — honoured by
  the SkyPilot cloud, ignored on-prem.

An env value of ``null`` (in ``env`` or ``envs``) means, as in SkyPilot, "give it when
submitting": ``--env NAME=VALUE`` must set it, else the submission is refused.

Flags given on the command line win over the file. Keys Starburst cannot honour are refused
with the reason, never silently dropped: ``file_mounts`` (put the files in the image),
``num_nodes`` above 1, a zone in ``infra``, a VM ``image_id`` (not ``docker:``); any other
unknown key lists the known ones.
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
    "array",
)
SKY = ("run", "setup", "envs", "resources", "num_nodes")
_REFUSED = {
    "file_mounts": "`file_mounts` is not supported: put the files in the image",
}
_RESOURCES = (
    "accelerators",
    "cpus",
    "memory",
    "image_id",
    "cloud",
    "region",
    "infra",
    "use_spot",
    "disk_size",
)


#: what a job file's name ends with (YAML, and JSON, which YAML reads too)
SUFFIXES = (".yaml", ".yml", ".json")


def looks_like_job_file(args: list[str]) -> bool:
    """Whether the first argument names a job file: ``submit`` reads it, or refuses a file
    that is not there (``missing``) rather than running its name as a command."""
    return bool(args) and args[0].lower().endswith(SUFFIXES)


def missing(path: Path) -> str | None:
    """Why ``path`` cannot be a job file (one line naming it), or None if it is a file."""
    if path.is_file():
        return None
    if path.exists():
        return f"job file {path} is not a file"
    return f"job file {path} does not exist; nothing submitted"


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
    if data.get("setup") and not data.get("run"):
        raise ConfigError(f"job file {path}: `setup` needs a `run` to run after it")
    if str(data.get("num_nodes", 1)).strip() != "1":
        raise ConfigError(
            f"job file {path}: num_nodes must be 1 (a job's GPUs are gang-scheduled by `gpus`)"
        )
    out = {k: data[k] for k in OWN if data.get(k) is not None}
    if "workdir" in out:  # relative to the file, as SkyPilot reads it
        out["workdir"] = str((path.parent / str(out["workdir"])).absolute())
    if "run" in data:
        out.setdefault("command", _script(data.get("setup"), data["run"]))
    env = {**_env(path, data, "envs"), **_env(path, data, "env")}
    if env:
        out["env"] = env
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
    if any(key in data for key in SKY):
        out.setdefault("gpus", 0)  # a SkyPilot task without accelerators: CPU only
    return out


def _script(setup: Any, run: Any) -> str:
    """The job's command: ``bash -c`` of ``run``, after ``setup`` when there is one. Setup
    runs in a subshell (its ``cd``, variables and ``exit`` stay its own, as in SkyPilot's
    separate setup script) and a failed setup ends the job with its exit code. Every backend
    runs a command with ``/bin/sh -c``; the ``bash -c`` inside gives the task the shell
    SkyPilot gives it."""
    import shlex

    body = str(run or "").strip()
    first = str(setup or "").strip()
    script = f"(\n{first}\n) || exit $?\n{body}" if first else body
    return f"bash -c {shlex.quote(script)}"


def _env(path: Path, data: dict[str, Any], key: str) -> dict[str, str | None]:
    """``env``/``envs`` as strings; None marks a variable to be given with ``--env``."""
    given = data.get(key) or {}
    if not isinstance(given, dict):
        raise ConfigError(f"job file {path}: {key} must be a mapping of NAME: value")
    return {str(k): None if v is None else str(v) for k, v in given.items()}


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
        if not str(image).startswith("docker:"):
            raise ConfigError(
                f"job file {path}: resources.image_id {image!r} is a machine image; Starburst "
                "runs containers: give docker:IMAGE"
            )
        out.setdefault("image", str(image).removeprefix("docker:"))
    choice = _cloud_choice(path, resources)
    if choice:
        out["cloud_choice"] = choice


def _cloud_choice(path: Path, resources: dict[str, Any]) -> dict[str, Any]:
    """Where a burst may go, as ``JobSubmit.cloud_choice`` takes it."""
    choice: dict[str, Any] = {}
    if resources.get("use_spot") is not None:
        if not isinstance(resources["use_spot"], bool):
            raise ConfigError(f"job file {path}: resources.use_spot must be true or false")
        choice["use_spot"] = resources["use_spot"]
    cloud, region = resources.get("cloud"), resources.get("region")
    if resources.get("infra") is not None:
        if cloud is not None or region is not None:
            raise ConfigError(f"job file {path}: give resources.infra or cloud/region, not both")
        parts = str(resources["infra"]).strip().split("/")
        if len(parts) > 2:
            raise ConfigError(
                f"job file {path}: resources.infra {resources['infra']!r} names a zone; "
                "Starburst bursts to a cloud or a cloud/region"
            )
        cloud = None if parts[0] in ("", "*") else parts[0]
        region = parts[1] if len(parts) == 2 else None
    if region is not None and cloud is None:
        raise ConfigError(f"job file {path}: resources.region needs resources.cloud")
    for key, value in (("cloud", cloud), ("region", region)):
        if value is not None:
            choice[key] = str(value)
    if resources.get("disk_size") is not None:
        try:
            choice["disk_size_gb"] = int(resources["disk_size"])
        except (TypeError, ValueError):
            raise ConfigError(
                f"job file {path}: resources.disk_size {resources['disk_size']!r} is not a "
                "number of GB"
            ) from None
    return choice
