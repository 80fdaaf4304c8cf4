"""Free capacity of the private cluster and where a job fits (placement).

Terms:
- *node*: a machine with ``gpus`` GPUs of one ``gpu_type`` (and CPUs, memory). Node order is
  the order the nodes were given in; first-fit means "lowest node index".
- *placement*: the parts of a job, one per distinct node. A job with gpus ≤ the largest eligible
  node must fit on one node; a larger one is split into full nodes plus a remainder
  ([8, 8, 2] for 18 GPUs on 8-GPU nodes). All or nothing. A job made of pods
  (``Job.pods``) is split into whole pods: as many as the largest node holds, plus a remainder
  ([6, 6] for 4 pods of 3 GPUs on 8-GPU nodes); a pod larger than every node never fits.
- *first-fit*: the lowest-index node with room. *best-fit*: the node left with the fewest free
  GPUs after placing (ties by node order).

Invariants: the index keeps, per GPU type, one sorted list of node indices for every level of
free GPUs, so finding a node costs O(levels · log nodes) and never scans all nodes; a job that
asks for a GPU type only ever lands on nodes of that type; unschedulable nodes never appear in
the index.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum

from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.core.nodes import Node as Node
from starburst.core.nodes import Part as Part
from starburst.core.nodes import Placement as Placement


class PlacementStrategy(StrEnum):
    """Which node a job takes: the first with room, or the one its start leaves fullest."""

    FIRST_FIT = "first-fit"
    BEST_FIT = "best-fit"


def parse_placement(name: str) -> PlacementStrategy:
    try:
        return PlacementStrategy(name.strip().lower())
    except ValueError:
        raise ConfigError(f"unknown placement {name!r}; choose first-fit or best-fit") from None


def describe_placement(placement: Placement) -> str:
    if len(placement) == 1:  # (most placements: one node, said without a join)
        part = placement[0]
        return f"{part.node_name}×{part.gpus}"
    return ", ".join(f"{p.node_name}×{p.gpus}" for p in placement)


def uniform_nodes(count: int, gpus: int, cpus: float = 0.0, gpu_type: str = "gpu") -> list[Node]:
    width = len(str(max(count - 1, 0)))
    return [Node(f"node-{i:0{width}d}", gpus, cpus, 0.0, gpu_type) for i in range(count)]


class CapacityIndex:
    """Free GPUs/CPUs/memory per node, indexed for placement without scanning every node.

    ``cpus``/``memory_mb`` of 0 on a node mean "not tracked": any request fits.
    """

    __slots__ = (
        "_all_types",
        "_buckets",
        "_ever_fits",
        "_free_cpus",
        "_free_gpus",
        "_free_mem",
        "_max_level",
        "_most_free",
        "_parts",
        "_shape_fits",
        "free_gpus",
        "gpus_only",
        "has_schedulable_nodes",
        "largest_any",
        "nodes",
        "releases",
    )

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self._free_gpus = [n.gpus for n in self.nodes]
        self._free_cpus = [n.cpus for n in self.nodes]
        self._free_mem = [n.memory_mb for n in self.nodes]
        self._buckets: dict[str, list[list[int]]] = {}
        self._max_level: dict[str, int] = {}
        self._ever_fits: dict[tuple[int, int, str | None, float, float], bool] = {}
        self._shape_fits: dict[JobShape, bool] = {}  # ``could_ever_fit``'s answers
        #: the GPU-only parts handed out, by (node, GPUs): a value, so one of each will do
        self._parts: dict[tuple[int, int], Part] = {}
        for i, node in enumerate(self.nodes):
            if node.gpus < 0:
                raise ConfigError(f"node {node.name} has a negative GPU count")
            if not node.schedulable:
                continue
            levels = self._buckets.setdefault(node.gpu_type, [])
            while len(levels) <= node.gpus:
                levels.append([])
            levels[node.gpus].append(i)
            self._max_level[node.gpu_type] = max(self._max_level.get(node.gpu_type, 0), node.gpus)
        self._all_types = tuple(self._buckets)
        self._most_free: int | None = None  # (``most_free``: None until asked)
        # Read by every pass, so plain attributes rather than properties (read-only outside):
        #: free GPUs on schedulable nodes, kept as a running total
        self.free_gpus = sum(n.gpus for n in self.nodes if n.schedulable)
        #: False while no node takes work (none seen yet, or all cordoned)
        self.has_schedulable_nodes = bool(self._all_types)
        #: GPUs of the largest schedulable node (0 if none)
        self.largest_any = max(self._max_level.values(), default=0)
        #: no node tracks CPUs or memory: GPUs alone decide where a job fits, so a job that
        #: does not fit keeps not fitting while nothing is released, and a job of the same
        #: request with more GPUs does not fit either
        self.gpus_only = not any(n.cpus or n.memory_mb for n in self.nodes)
        #: how many parts were given back so far (``release``, and the trial placements of a
        #: split): unchanged means no node gained room since
        self.releases = 0

    # -- queries ---------------------------------------------------------------------------
    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes if n.schedulable)

    def free_on(self, node: int) -> int:
        return self._free_gpus[node]

    def _types_for(self, job: Job) -> Iterable[str]:
        if job.gpu_type is None:
            return self._all_types
        return (job.gpu_type,) if job.gpu_type in self._buckets else ()

    def largest_node(self, job: Job) -> int:
        """GPUs of the largest node the job may use (0 if none)."""
        if job.gpu_type is None:
            return self.largest_any
        return self._max_level.get(job.gpu_type, 0)

    def could_ever_fit(self, job: Job) -> bool:
        """Whether the job fits the empty cluster (GPUs, type, CPUs and memory). Asked of
        every arrival and of queued jobs: the answer is kept per shape of request
        (``JobShape``, read straight from the job's fields)."""
        shape = (job.gpus, job.pods, job.gpu_type, job.cpus, job.memory_mb)
        known = self._shape_fits.get(shape)
        if known is None:
            known = self._shape_fits[shape] = self._fits_empty(job)
        return known

    def _fits_empty(self, job: Job) -> bool:
        """Whether the empty cluster holds the job: one placement per shape of request."""
        key = (job.gpus, job.split_unit, job.gpu_type, job.cpus, job.memory_mb)
        known = self._ever_fits.get(key)
        if known is None:
            empty = CapacityIndex(self.nodes)
            known = self._ever_fits[key] = empty.place(job, PlacementStrategy.FIRST_FIT) is not None
        return known

    def could_all_ever_fit(self, shapes: Iterable[JobShape]) -> bool:
        """Whether jobs of every one of these shapes fit the empty cluster (``job_shape``;
        the caller gathers the distinct shapes of a long queue at C speed)."""
        known = self._shape_fits
        for shape in shapes:
            fits = known.get(shape)
            if fits is None:
                gpus, pods, gpu_type, cpus, memory_mb = shape
                job = Job("", 0.0, gpus, cpus, memory_mb, gpu_type, pods=pods)
                fits = known[shape] = self._fits_empty(job)
            if not fits:
                return False
        return True

    def shortfall(self, job: Job) -> str | None:
        """Why the empty cluster could never hold ``job`` ("needs 16 GPUs and the private
        cluster has 4 GPUs in all"); None when it could, or when no node takes work (that
        proves nothing: none seen yet, or every node cordoned)."""
        if not self.has_schedulable_nodes or self.could_ever_fit(job):
            return None
        largest = self.largest_node(job)
        if job.gpu_type is not None and largest == 0:
            why = f"no node of the private cluster has {job.gpu_type} GPUs"
        elif job.gpus > self.total_gpus:
            why = f"the private cluster has {self.total_gpus} GPUs in all"
        else:
            why = f"no set of its nodes can hold it (largest node {largest} GPUs)"
        kind = f" {job.gpu_type}" if job.gpu_type else ""
        return f"needs {job.gpus}{kind} GPUs and {why}"

    def most_free(self) -> int:
        """The most free GPUs on any schedulable node (``max_free`` of a job of no type):
        kept as GPUs come back (``_move``), looked for again after the node or one of the
        nodes that had that many took some."""
        if self._most_free is None:
            self._most_free = self._look_for_most_free()
        return self._most_free

    def _look_for_most_free(self) -> int:
        best = 0
        for levels in self._buckets.values():
            for level in range(len(levels) - 1, best, -1):
                if levels[level]:
                    best = level
                    break
        return best

    def max_free(self, job: Job) -> int:
        """The most free GPUs on any node the job may use."""
        if job.gpu_type is None:
            return self.most_free()
        best = 0
        for t in self._types_for(job):
            levels = self._buckets[t]
            for level in range(len(levels) - 1, best, -1):
                if levels[level]:
                    best = level
                    break
        return best

    # -- placement -------------------------------------------------------------------------
    def place(self, job: Job, strategy: PlacementStrategy) -> Placement | None:
        """Where the job would go now, or None. Does not change the index."""
        largest = self.largest_node(job)
        if job.gpus <= largest or largest == 0:
            if job.gpus > self.max_free(job):
                return None  # the common "nothing fits" case, decided without a search
            part = self._find(job, job.gpus, job.cpus, job.memory_mb, strategy)
            return (part,) if part is not None else None
        return self._place_split(job, largest, strategy)

    def _place_split(self, job: Job, largest: int, strategy: PlacementStrategy) -> Placement | None:
        unit = job.split_unit
        full = largest - largest % unit  # whole pods on the largest node
        if full == 0:
            return None
        sizes = [full] * (job.gpus // full)
        if job.gpus % full:
            sizes.append(job.gpus % full)
        parts: list[Part] = []
        for size in sizes:
            share = size / job.gpus
            part = self._find(job, size, job.cpus * share, job.memory_mb * share, strategy)
            if part is None:
                break
            parts.append(part)
            self.allocate((part,))  # later parts must land on other nodes
        for part in parts:
            self.release((part,))
        return tuple(parts) if len(parts) == len(sizes) else None

    def _find(
        self, job: Job, gpus: int, cpus: float, mem: float, strategy: PlacementStrategy
    ) -> Part | None:
        if not cpus and not mem:
            i = self._first_candidate(job, gpus, strategy)
            return None if i is None else self._gpu_part(i, gpus)
        for i in self._candidates(job, gpus, strategy):
            if self._fits_cpu_mem(i, cpus, mem):
                return Part(i, self.nodes[i].name, gpus, cpus, mem)
        return None

    def _gpu_part(self, i: int, gpus: int) -> Part:
        part = self._parts.get((i, gpus))
        if part is None:
            part = self._parts[i, gpus] = Part(i, self.nodes[i].name, gpus, 0.0, 0.0)
        return part

    def _fits_cpu_mem(self, i: int, cpus: float, mem: float) -> bool:
        node = self.nodes[i]
        if cpus and node.cpus and self._free_cpus[i] + 1e-9 < cpus:
            return False
        return not (mem and node.memory_mb and self._free_mem[i] + 1e-9 < mem)

    def _first_candidate(self, job: Job, gpus: int, strategy: PlacementStrategy) -> int | None:
        """The node a GPU-only request takes: the heads of the level lists decide."""
        groups = [self._buckets[t] for t in self._types_for(job)]
        if strategy is PlacementStrategy.BEST_FIT:
            top = max((len(levels) for levels in groups), default=0)
            for level in range(gpus, top):
                heads = [
                    levels[level][0] for levels in groups if level < len(levels) and levels[level]
                ]
                if heads:
                    return min(heads)
            return None
        first = None  # the lowest node index heading a level with room
        for levels in groups:
            for level in range(gpus, len(levels)):
                nodes = levels[level]
                if nodes and (first is None or nodes[0] < first):
                    first = nodes[0]
        return first

    def _candidates(self, job: Job, gpus: int, strategy: PlacementStrategy) -> Iterator[int]:
        groups = [self._buckets[t] for t in self._types_for(job)]
        if strategy is PlacementStrategy.BEST_FIT:
            top = max((len(levels) for levels in groups), default=0)
            for level in range(gpus, top):
                lists = [levels[level] for levels in groups if level < len(levels)]
                yield from _merged([lst for lst in lists if lst])
            return
        lists = [lst for levels in groups for lst in levels[gpus:] if lst]
        if len(lists) == 1:
            yield from lists[0]
            return
        yield from _merged(lists)

    # -- changes ---------------------------------------------------------------------------
    # (each part's change in the loop itself, not in a call per part: a pass and the
    # simulated cluster allocate and release every start's placement)
    def allocate(self, placement: Placement) -> None:
        for part in placement:
            i = part.node
            free = self._free_gpus[i]
            if part.gpus > free:
                raise ConfigError(f"node {part.node_name} has {free} free GPUs, {part.gpus} asked")
            self._move(i, free, free - part.gpus)
            self._free_cpus[i] -= part.cpus
            self._free_mem[i] -= part.memory_mb

    def release(self, placement: Placement) -> None:
        for part in placement:
            i = part.node
            free = self._free_gpus[i]
            if free + part.gpus > self.nodes[i].gpus:
                raise ConfigError(f"node {part.node_name} would have more free GPUs than it owns")
            self.releases += 1
            self._move(i, free, free + part.gpus)
            self._free_cpus[i] += part.cpus
            self._free_mem[i] += part.memory_mb

    def _move(self, i: int, old: int, new: int) -> None:
        self._free_gpus[i] = new
        node = self.nodes[i]
        if not node.schedulable or old == new:
            return
        self.free_gpus += new - old
        most = self._most_free
        if most is not None and (new > most or old == most):
            # more room than the most: the new most; less on a node that had the most:
            # perhaps others still have it, told when next asked
            self._most_free = new if new > most else None
        levels = self._buckets[node.gpu_type]
        bucket = levels[old]
        del bucket[bisect.bisect_left(bucket, i)]
        bisect.insort(levels[new], i)


#: what ``could_ever_fit`` depends on: GPUs, pods (``split_unit`` follows from the two), GPU
#: type, CPUs, memory
JobShape = tuple[int, int | None, str | None, float, float]


def _merged(lists: list[list[int]]) -> Iterator[int]:
    if len(lists) == 1:
        return iter(lists[0])
    return heapq.merge(*lists)
