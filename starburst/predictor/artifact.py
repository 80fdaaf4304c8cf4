"""Versioned model artifacts: one joblib file holding the model and what it was trained on.

An artifact records its *model version* (``rt-<trained at>-<digest>``, the string every
prediction carries in ``Estimate.source``), the *feature schema version*, the *training window*
(first and last submit time), the number of jobs, cross-validated metrics (``training``), the
chosen form with every candidate's cross-validated score, the scikit-learn version,
and a snapshot of the training history (so it can predict without a store).

Invariants: ``load_artifact`` either returns an artifact whose format, schema version and
scikit-learn version match this code, or raises ``ModelLoadError`` with a message saying what
is wrong and what to do — never a bare unpickling exception and never a half-usable model.
Loading unpickles code, so a model file is trusted only as far as its *digest*: ``save_artifact``
writes the file 0600 with a sidecar ``<file>.sha256`` (0600) holding its SHA-256, and
``load_artifact`` unpickles nothing unless the sidecar exists, both files are owned by this
user (or root) and writable by no one else, and the digest matches. A job or another OS user
that swaps the model file therefore gets a ``ModelLoadError``, never code execution.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from starburst.core.errors import StarburstError
from starburst.predictor.features import FEATURE_SCHEMA_VERSION
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import RuntimeModel

ARTIFACT_FORMAT = "starburst-runtime-model/1"


class ModelLoadError(StarburstError):
    """A model file that cannot be used: missing, corrupt, or made by incompatible code."""


@dataclass(slots=True)
class ModelArtifact:
    model: RuntimeModel
    version: str
    trained_at: str
    window: tuple[float, float]
    jobs: int
    metrics: dict[str, float] = field(default_factory=dict)
    history: HistoryIndex | None = None
    schema_version: int = FEATURE_SCHEMA_VERSION
    sklearn_version: str = ""
    format: str = ARTIFACT_FORMAT

    def describe(self) -> str:
        first, last = self.window
        lines = [
            f"model version      {self.version}",
            f"trained at         {self.trained_at}",
            f"training window    submit {first:.0f}s … {last:.0f}s ({self.jobs} jobs)",
            f"feature schema     v{self.schema_version} ({len(self.model.encoder.names)} columns)",
            f"scikit-learn       {self.sklearn_version}",
            f"band shifts        p10 {-self.model.shift[0]:+.3f}, p90 {self.model.shift[1]:+.3f} "
            "(log space, conformal on out-of-fold predictions)",
            f"chosen form        {self.model.form.describe()}",
        ]
        plain = {k: v for k, v in self.metrics.items() if not k.startswith("cv_malr[")}
        lines += [f"metric {k:<26} {v:.4g}" for k, v in sorted(plain.items())]
        lines.append("cross-validated MALR by form (pooled, then per fold; best first):")
        lines += self.model.form.table()
        return "\n".join(lines)


def model_version(trained_at: datetime, window: tuple[float, float], jobs: int) -> str:
    digest = hashlib.sha1(f"{window}|{jobs}|{FEATURE_SCHEMA_VERSION}".encode()).hexdigest()[:8]
    return f"rt-{trained_at:%Y%m%dT%H%M%SZ}-{digest}"


def save_artifact(artifact: ModelArtifact, path: str | Path) -> Path:
    """Write atomically (temp file + rename), so a crash never leaves a half-written model."""
    import joblib

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    joblib.dump(artifact, tmp, compress=3)
    digest_tmp = out.with_name(out.name + ".sha256.tmp")
    digest_tmp.unlink(missing_ok=True)
    fd = os.open(digest_tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as sidecar:
        sidecar.write(f"{_sha256(tmp)}\n")
    digest_tmp.replace(digest_path(out))
    tmp.replace(out)
    return out


def digest_path(path: str | Path) -> Path:
    """The sidecar holding the SHA-256 of the model file ``path``."""
    src = Path(path)
    return src.with_name(src.name + ".sha256")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_trusted(src: Path) -> None:
    """Refuse before unpickling a file that is not exactly what ``save_artifact`` wrote."""
    sidecar = digest_path(src)
    if not sidecar.is_file():
        raise ModelLoadError(
            f"model file {src} is corrupt or not a Starburst model: it has no digest file "
            f"{sidecar.name}; retrain with `starburst predictor train`"
        )
    me = os.geteuid()
    for file in (src, sidecar):
        info = file.stat()
        if info.st_uid not in (me, 0) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ModelLoadError(
                f"model file {file} is owned by another user or writable by others; not "
                "loading it (it would run as this process). Retrain with `starburst "
                "predictor train`"
            )
    expected = sidecar.read_text(encoding="utf-8", errors="replace").strip()
    if _sha256(src) != expected:
        raise ModelLoadError(
            f"model file {src} is corrupt or was changed after it was written: its SHA-256 "
            f"does not match {sidecar.name}; not loading it. Retrain with `starburst "
            "predictor train`"
        )


def load_artifact(path: str | Path) -> ModelArtifact:
    """Load and check an artifact; any problem becomes a ``ModelLoadError``."""
    import joblib
    import sklearn
    from sklearn.exceptions import InconsistentVersionWarning

    src = Path(path)
    if not src.is_file():
        raise ModelLoadError(f"no model file at {src}; train one with `starburst predictor train`")
    _check_trusted(src)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", InconsistentVersionWarning)
            artifact = joblib.load(src)
    except InconsistentVersionWarning as exc:
        raise ModelLoadError(
            f"model file {src} was written by scikit-learn {exc.original_sklearn_version}, this is "
            f"{sklearn.__version__}; retrain with `starburst predictor train`"
        ) from None
    except Exception as exc:  # unpickling can raise almost anything on a damaged file
        raise ModelLoadError(
            f"model file {src} is corrupt or not a Starburst model ({type(exc).__name__}: {exc})"
        ) from None
    _check(artifact, src, sklearn.__version__)
    return artifact  # type: ignore[no-any-return]


def _check(artifact: object, src: Path, sklearn_version: str) -> None:
    if not isinstance(artifact, ModelArtifact) or getattr(artifact, "format", None) != (
        ARTIFACT_FORMAT
    ):
        raise ModelLoadError(f"{src} is not a Starburst runtime model ({ARTIFACT_FORMAT})")
    if artifact.schema_version != FEATURE_SCHEMA_VERSION:
        raise ModelLoadError(
            f"model {artifact.version} uses feature schema v{artifact.schema_version}, this "
            f"Starburst computes v{FEATURE_SCHEMA_VERSION}; retrain with "
            "`starburst predictor train`"
        )
    if artifact.sklearn_version != sklearn_version:
        raise ModelLoadError(
            f"model {artifact.version} was trained with scikit-learn "
            f"{artifact.sklearn_version}, this is {sklearn_version}; retrain"
        )
