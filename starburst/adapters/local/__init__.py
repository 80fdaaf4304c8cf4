"""Embedded backends for a single machine: the defaults when no cluster or cloud is configured.

- ``LocalCluster`` (``Cluster`` port): on-prem jobs as local process groups on numbered GPU
  slots (``CUDA_VISIBLE_DEVICES``), logs and exit codes in a state directory.
- ``EmulatedCloud`` (``Cloud`` port): burst jobs as local processes, priced from the price
  table and labelled "emulated" everywhere.

A job's command and environment travel in ``Job.extra``: ``command`` (shell command, required),
``env`` (JSON object of strings), ``image`` (noted, not used locally).

Both are restart-safe: a new object on the same state directory adopts the jobs an earlier
one (a controller killed -9) spawned — running or ended — instead of running them again, and
spawns only what never ran (``statedir.py``: the files; ``processes.py``: spawn and adopt;
``procfs.py``: process identity through spawn tokens).
"""

from starburst.adapters.local.cluster import LocalCluster
from starburst.adapters.local.emulated import EMULATED, EmulatedCloud
from starburst.adapters.local.processes import JobProcess, Outcome, command_of, env_of
from starburst.wallclock import WallClock

__all__ = [
    "EMULATED",
    "EmulatedCloud",
    "JobProcess",
    "LocalCluster",
    "Outcome",
    "WallClock",
    "command_of",
    "env_of",
]
