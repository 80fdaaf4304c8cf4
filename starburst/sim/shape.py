"""Cluster shapes for the simulator: uniform from flags, or heterogeneous from a YAML file.

```yaml
nodes:
  - {count: 4, gpus: 8, cpus: 96, gpu_type: a100}
  - {count: 2, gpus: 4, gpu_type: v100}
```
Nodes are numbered in file order; first-fit placement follows that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starburst.core.capacity import Node, uniform_nodes
from starburst.core.errors import ConfigError


def uniform(nodes: int, gpus_per_node: int, cpus_per_node: float = 0.0) -> list[Node]:
    if nodes <= 0 or gpus_per_node <= 0:
        raise ConfigError("a cluster needs --nodes ≥ 1 and --gpus-per-node ≥ 1")
    if cpus_per_node < 0:
        raise ConfigError("--cpus-per-node must be ≥ 0")
    return uniform_nodes(nodes, gpus_per_node, cpus_per_node)


def load_shape(path: Path) -> list[Node]:
    import yaml

    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such cluster file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    groups = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(groups, list) or not groups:
        raise ConfigError(f"{path}: expected a 'nodes:' list of groups")
    nodes: list[Node] = []
    for n, group in enumerate(groups, start=1):
        nodes += _group(path, n, group, len(nodes))
    return nodes


def _group(path: Path, n: int, group: Any, offset: int) -> list[Node]:
    if not isinstance(group, dict):
        raise ConfigError(f"{path}: node group {n} must be a mapping")
    unknown = set(group) - {"count", "gpus", "cpus", "memory_mb", "gpu_type", "name"}
    if unknown:
        raise ConfigError(f"{path}: node group {n}: unknown key(s) {', '.join(sorted(unknown))}")
    try:
        count = int(group.get("count", 1))
        gpus = int(group["gpus"])
        cpus = float(group.get("cpus", 0))
        mem = float(group.get("memory_mb", 0))
    except KeyError:
        raise ConfigError(f"{path}: node group {n}: 'gpus' is required") from None
    except (TypeError, ValueError):
        raise ConfigError(f"{path}: node group {n}: count/gpus/cpus must be numbers") from None
    if count < 1 or gpus < 0 or cpus < 0 or mem < 0:
        raise ConfigError(f"{path}: node group {n}: count ≥ 1 and non-negative sizes required")
    gpu_type = str(group.get("gpu_type", "gpu"))
    prefix = str(group.get("name", f"{gpu_type}-node"))
    return [Node(f"{prefix}-{offset + i}", gpus, cpus, mem, gpu_type) for i in range(count)]


def write_shape(nodes: Sequence[Node], path: Path) -> None:
    """Write ``nodes`` as a cluster file: runs of identical nodes become one group."""
    import yaml

    groups: list[dict[str, Any]] = []
    for node in nodes:
        group = {
            "gpus": node.gpus,
            "cpus": node.cpus,
            "memory_mb": node.memory_mb,
            "gpu_type": node.gpu_type,
        }
        if groups and {k: v for k, v in groups[-1].items() if k != "count"} == group:
            groups[-1]["count"] += 1
        else:
            groups.append({"count": 1, **group})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"nodes": groups}, sort_keys=False), encoding="utf-8")
