"""Model artifacts: round trip, and every way a file can be unusable."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import joblib
import numpy as np
import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import (
    ModelArtifact,
    ModelLoadError,
    digest_path,
    load_artifact,
    save_artifact,
)
from starburst.predictor.history import HistoryIndex


def test_round_trip_keeps_predictions_and_metadata(
    artifact: ModelArtifact, split: tuple[list[Job], list[Job]], tmp_path: Path
) -> None:
    train, test = split
    path = save_artifact(artifact, tmp_path / "m" / "model.joblib")
    loaded = load_artifact(path)
    assert loaded.version == artifact.version and loaded.version.startswith("rt-")
    assert loaded.window == (train[0].submit_time, train[-1].submit_time)
    assert loaded.jobs == len(train)
    assert set(loaded.metrics) >= {"cv_malr", "cv_within_2x", "cv_coverage_last_fold"}
    history = HistoryIndex(train + test)
    np.testing.assert_array_equal(
        loaded.model.predict(test, history).value, artifact.model.predict(test, history).value
    )
    assert "training window" in loaded.describe()
    assert not (tmp_path / "m" / "model.joblib.tmp").exists()


def trust(path: Path) -> None:
    """Give a hand-made file the digest ``save_artifact`` would have written."""
    digest_path(path).write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")


@pytest.mark.parametrize("content", [b"", b"not a pickle at all", b"\x80\x04garbage"])
def test_corrupt_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "model.joblib"
    path.write_bytes(content)
    trust(path)
    with pytest.raises(ModelLoadError, match="corrupt or not a Starburst model"):
        load_artifact(path)


def test_truncated_file(artifact: ModelArtifact, tmp_path: Path) -> None:
    path = save_artifact(artifact, tmp_path / "model.joblib")
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ModelLoadError, match="corrupt"):
        load_artifact(path)


def test_missing_file_and_foreign_object(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no model file"):
        load_artifact(tmp_path / "absent.joblib")
    joblib.dump({"weights": [1, 2]}, tmp_path / "dict.joblib")
    trust(tmp_path / "dict.joblib")
    with pytest.raises(ModelLoadError, match="not a Starburst runtime model"):
        load_artifact(tmp_path / "dict.joblib")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema_version": 999}, "feature schema v999"),
        ({"sklearn_version": "0.1"}, "scikit-learn 0.1"),
        ({"format": "other/9"}, "not a Starburst runtime model"),
    ],
)
def test_incompatible_artifact(
    artifact: ModelArtifact, tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = save_artifact(dataclasses.replace(artifact, **change), tmp_path / "model.joblib")
    with pytest.raises(ModelLoadError, match=message):
        load_artifact(path)


class Evil:
    """Unpickling this runs code: what a swapped model file would do."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch /tmp/starburst-model-pwned",))


def test_a_swapped_model_file_is_refused_before_unpickling(
    artifact: ModelArtifact, tmp_path: Path
) -> None:
    path = save_artifact(artifact, tmp_path / "model.joblib")
    assert path.stat().st_mode & 0o777 == 0o600
    assert digest_path(path).stat().st_mode & 0o777 == 0o600
    marker = Path("/tmp/starburst-model-pwned")
    marker.unlink(missing_ok=True)
    joblib.dump(Evil(), path)  # swapped after it was written: the digest no longer matches
    with pytest.raises(ModelLoadError, match="does not match"):
        load_artifact(path)
    digest_path(path).unlink()
    with pytest.raises(ModelLoadError, match="no digest file"):
        load_artifact(path)
    assert not marker.exists()


def test_a_model_writable_by_others_is_refused(artifact: ModelArtifact, tmp_path: Path) -> None:
    path = save_artifact(artifact, tmp_path / "model.joblib")
    path.chmod(0o666)
    with pytest.raises(ModelLoadError, match="writable by others"):
        load_artifact(path)
