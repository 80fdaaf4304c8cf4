"""Shared fixtures: one small structured workload and one model trained on its past, built once
per session so the predictor tests stay fast (small boosting settings, ~1,500 jobs)."""

from __future__ import annotations

import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.evaluation import time_split
from starburst.predictor.model import TrainParams
from starburst.predictor.training import train_artifact
from starburst.predictor.workload import WorkloadSpec, generate

SMALL = TrainParams(max_iter=40, band_iter=15, min_samples_leaf=10, threads=1)


@pytest.fixture(scope="session")
def workload() -> list[Job]:
    return generate(WorkloadSpec(jobs=1500, users=40, teams=5, jobs_per_hour=20.0, seed=7))


@pytest.fixture(scope="session")
def split(workload: list[Job]) -> tuple[list[Job], list[Job]]:
    return time_split(workload, 0.7)


@pytest.fixture(scope="session")
def artifact(split: tuple[list[Job], list[Job]]) -> ModelArtifact:
    return train_artifact(split[0], SMALL)
