"""Cloud bursting through SkyPilot managed jobs (``sky`` is imported lazily, only here).

``SkyPilotCloud(clock, prices, api=None)`` implements the core's ``Cloud`` port; ``api`` is the
SDK seam (``SkyApi``), the real ``sky`` module by default, loaded on first use.
"""

from starburst.adapters.skypilot.api import SkyApi, SkyJobsApi, load_sky
from starburst.adapters.skypilot.backoff import Backoff
from starburst.adapters.skypilot.cloud import SkyPilotCloud
from starburst.adapters.skypilot.launch import Launch, Phase
from starburst.adapters.skypilot.outcomes import Failure, FailureKind, classify, managed_status
from starburst.adapters.skypilot.task import (
    LaunchOption,
    base_name,
    build_task,
    launch_name,
    launch_options,
)

__all__ = [
    "Backoff",
    "Failure",
    "FailureKind",
    "Launch",
    "LaunchOption",
    "Phase",
    "SkyApi",
    "SkyJobsApi",
    "SkyPilotCloud",
    "base_name",
    "build_task",
    "classify",
    "launch_name",
    "launch_options",
    "load_sky",
    "managed_status",
]
