"""A container's view of the chart's objects, as the kubelet would give it: env and files.

No kubelet runs containers in these tests, so they play its part for one container: its
environment (literal values and ``secretKeyRef``/``configMapKeyRef``) and its ConfigMap and
Secret volumes written as files under a scratch directory (``items`` and ``subPath``
honoured). Paths in the settings file are rewritten from the pod's mount paths to those
directories, so ``load_settings`` reads exactly what the container would.

``data_of(kind, name)`` gives an object's data (Secret values decoded); ``rendered(objects,
existing)`` builds it from ``helm template`` output plus Secrets the admin made beforehand.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DataOf = Callable[[str, str], dict[str, str]]


def rendered(
    objects: list[dict[str, Any]], existing: dict[str, dict[str, str]] | None = None
) -> DataOf:
    """``data_of`` over rendered objects; ``existing`` maps other Secrets' names to data."""

    def data_of(kind: str, name: str) -> dict[str, str]:
        for obj in objects:
            if obj["kind"] == kind and obj["metadata"]["name"] == name:
                data = obj.get("data") or {}
                if kind == "Secret":
                    return {k: base64.b64decode(v).decode() for k, v in data.items()}
                return dict(data)
        if kind == "Secret" and existing and name in existing:
            return existing[name]
        raise AssertionError(f"the pod refers to {kind} {name}, which nothing provides")

    return data_of


def env(container: dict[str, Any], data_of: DataOf) -> dict[str, str]:
    """The container's environment variables, references resolved."""
    found: dict[str, str] = {}
    for var in container.get("env") or []:
        if "value" in var:
            found[var["name"]] = var["value"]
            continue
        source = var["valueFrom"]
        kind, ref = (
            ("Secret", source["secretKeyRef"])
            if "secretKeyRef" in source
            else ("ConfigMap", source["configMapKeyRef"])
        )
        found[var["name"]] = data_of(kind, ref["name"])[ref["key"]]
    return found


def mount(
    pod: dict[str, Any], container: dict[str, Any], root: Path, data_of: DataOf
) -> dict[str, Path]:
    """Write the container's ConfigMap and Secret mounts under ``root``; mountPath → where."""
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    where: dict[str, Path] = {}
    for m in container.get("volumeMounts") or []:
        volume = volumes[m["name"]]
        if "configMap" in volume:
            data, items = data_of("ConfigMap", volume["configMap"]["name"]), volume["configMap"]
        elif "secret" in volume:
            data, items = data_of("Secret", volume["secret"]["secretName"]), volume["secret"]
        else:
            continue
        files = {i["path"]: data[i["key"]] for i in items.get("items") or []} or data
        target = root / m["mountPath"].lstrip("/")
        if "subPath" in m:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(files[m["subPath"]])
        else:
            for path, text in files.items():
                (target / path).parent.mkdir(parents=True, exist_ok=True)
                (target / path).write_text(text)
        where[m["mountPath"]] = target
    return where


def rewrite(text: str, where: dict[str, Path]) -> str:
    """``text`` with the pod's mount paths replaced by the directories they were written to."""
    for path in sorted(where, key=len, reverse=True):
        text = text.replace(path, str(where[path]))
    return text


@dataclass(frozen=True)
class View:
    """What one container sees: its settings file (paths rewritten), env and mounts."""

    config: Path
    env: dict[str, str]
    where: dict[str, Path]

    def argv(self, args: list[str]) -> list[str]:
        """The container's arguments with its mount paths rewritten."""
        return [rewrite(arg, self.where) for arg in args]


def settings_view(
    pod: dict[str, Any], container: dict[str, Any], root: Path, data_of: DataOf
) -> View:
    """The container's settings file (paths rewritten), environment and mounts: what
    ``load_settings`` reads in the pod."""
    where = mount(pod, container, root, data_of)
    variables = env(container, data_of)
    config = Path(rewrite(variables["STARBURST_CONFIG"], where))
    config.write_text(rewrite(config.read_text(), where))
    variables["STARBURST_CONFIG"] = str(config)
    return View(config, variables, where)
