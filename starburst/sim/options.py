"""Knobs of a simulation run that are not scheduling policy (``sim.engine``, which names
them too).

A plain frozen value, kept apart from the engine so that the engine's module can be compiled
(``setup.py``) while the options stay an ordinary class: pickled to parallel replays, copied,
built anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from starburst.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class SimOptions:
    """Knobs of a simulation run that are not scheduling policy."""

    price_per_gpu_hour: float = 2.5
    cloud_startup_delay: float = 0.0
    estimate_error: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.price_per_gpu_hour < 0:
            raise ConfigError("price per GPU-hour must be ≥ 0")
        if self.cloud_startup_delay < 0:
            raise ConfigError("cloud start-up delay must be ≥ 0")
        if not 0 <= self.estimate_error < 10:
            raise ConfigError("relative estimate error must be in [0, 10)")
