"""The nodes of a cluster and the parts of a placement, as placement sees them.

Plain frozen values, kept apart from the capacity index (``core.capacity``, which names them
too) so that the index's module can be compiled (``setup.py``) while these stay ordinary
classes: pickled to parallel replays, copied, built anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Node:
    """A node of the cluster as placement sees it; ``cpus``/``memory_mb`` of 0: not tracked."""

    name: str
    gpus: int
    cpus: float = 0.0
    memory_mb: float = 0.0
    gpu_type: str = "gpu"
    schedulable: bool = True


@dataclass(frozen=True, slots=True)
class Part:
    """One node's share of a placement."""

    node: int
    node_name: str
    gpus: int
    cpus: float
    memory_mb: float


Placement = tuple[Part, ...]
