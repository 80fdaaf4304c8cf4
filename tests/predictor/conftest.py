"""Shared fixtures: one small structured workload and one model trained on its past, built once
per run so the predictor tests stay fast (small boosting settings, ~1,500 jobs): the model is
trained by the first xdist worker that asks and loaded from its saved artifact by the others
(``tests.support.shared``)."""

from __future__ import annotations

import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact, load_artifact, save_artifact
from starburst.predictor.evaluation import time_split
from starburst.predictor.model import TrainParams
from starburst.predictor.training import train_artifact
from starburst.predictor.workload import WorkloadSpec, generate
from tests.support.shared import once_per_run

SMALL = TrainParams(max_iter=40, band_iter=15, min_samples_leaf=10, threads=1)


@pytest.fixture(scope="session")
def workload() -> list[Job]:
    return generate(WorkloadSpec(jobs=1500, users=40, teams=5, jobs_per_hour=20.0, seed=7))


@pytest.fixture(scope="session")
def split(workload: list[Job]) -> tuple[list[Job], list[Job]]:
    return time_split(workload, 0.7)


@pytest.fixture(scope="session")
def artifact(
    split: tuple[list[Job], list[Job]], tmp_path_factory: pytest.TempPathFactory
) -> ModelArtifact:
    shared = once_per_run(
        tmp_path_factory,
        "predictor-artifact",
        lambda directory: save_artifact(train_artifact(split[0], SMALL), directory / "model"),
    )
    return load_artifact(shared / "model")
