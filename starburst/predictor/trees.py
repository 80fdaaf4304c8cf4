"""Prediction straight from the boosted trees, with one input re-encoding for all the models.

``HistGradientBoostingRegressor.predict`` validates its input, re-encodes the categorical
columns (an ``OrdinalEncoder`` inside a ``ColumnTransformer``) and sizes an OpenMP team, per
model and per call. The three or four models of the runtime model are fitted on the same
feature matrix, so their encoders agree: ``TreeEnsemble`` re-encodes a batch once for all of
them and walks each model's trees with scikit-learn's own tree walker on one thread (the
caller splits a large batch over threads, ``model.RuntimeModel``).

Terms:
- *re-encoding*: scikit-learn's view of the feature matrix — the categorical columns first,
  each value replaced by its index among the categories the model saw in training (NaN when
  unseen or missing), then the numeric columns, in their order.

Invariant: ``TreeEnsemble.predict`` returns what each model's ``predict`` returns, to the bit
(the same additions in the same order). It reads scikit-learn internals (``_predictors``,
``_preprocessor``, ``_bin_mapper``, ``_baseline_prediction``, ``_loss``), so ``compile``
builds it only when they are there and agree with the public ``predict`` on a probe batch;
otherwise it returns None and the models predict through the public API.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: rows of the probe batch that checks the ensemble against the public ``predict``
PROBE_ROWS = 256


@dataclass(frozen=True, slots=True)
class Encoding:
    """One re-encoding: which input columns are categorical, and each one's categories."""

    categorical: np.ndarray
    categories: tuple[np.ndarray, ...]

    def same_as(self, other: Encoding) -> bool:
        return np.array_equal(self.categorical, other.categorical) and all(
            np.array_equal(a, b, equal_nan=True)
            for a, b in zip(self.categories, other.categories, strict=True)
        )

    def apply(self, features: np.ndarray) -> np.ndarray:
        out = np.empty(features.shape, dtype=np.float64)
        columns = np.flatnonzero(self.categorical)
        for i, (column, cats) in enumerate(zip(columns, self.categories, strict=True)):
            out[:, i] = _codes(features[:, column], cats)
        out[:, len(columns) :] = features[:, ~self.categorical]
        return out


def _codes(values: np.ndarray, categories: np.ndarray) -> np.ndarray:
    """Each value's index in the sorted ``categories``; NaN for a missing or unseen value."""
    if not len(categories):
        return np.full(len(values), np.nan)
    pos = np.searchsorted(categories, values)
    hit = pos < len(categories)
    hit[hit] = categories[pos[hit]] == values[hit]
    return np.where(hit, pos, np.nan)


@dataclass(frozen=True, slots=True)
class Walker:
    """One model's trees, its starting value and its inverse link."""

    encoding: int
    trees: tuple[Any, ...]
    baseline: float
    known_categories: np.ndarray
    feature_map: np.ndarray
    inverse_link: Any

    def predict(self, encoded: np.ndarray) -> np.ndarray:
        raw = np.full(encoded.shape[0], self.baseline)
        for tree in self.trees:
            raw += tree.predict(encoded, self.known_categories, self.feature_map, 1)
        out: np.ndarray = self.inverse_link(raw)
        return out


@dataclass(frozen=True, slots=True)
class TreeEnsemble:
    """The models' trees over their distinct re-encodings (one, when fitted together)."""

    encodings: tuple[Encoding, ...]
    walkers: tuple[Walker, ...]

    @classmethod
    def compile(cls, models: Sequence[Any], width: int) -> TreeEnsemble | None:
        """The ensemble of fitted ``HistGradientBoostingRegressor`` models over ``width``
        feature columns, or None where scikit-learn's internals are not what it reads."""
        from threadpoolctl import threadpool_limits

        try:
            ensemble = cls._build(models)
            probe = _probe(models, ensemble.encodings, width)
            # one OpenMP thread: a small batch on a busy core pays a thread barrier per tree
            with threadpool_limits(limits=1, user_api="openmp"):
                public = [model.predict(probe) for model in models]
            agrees = all(
                np.array_equal(mine, theirs, equal_nan=True)
                for mine, theirs in zip(ensemble.predict(probe), public, strict=True)
            )
        except Exception as exc:  # another scikit-learn version: the public API still works
            log.debug("tree ensemble not built (%s: %s)", type(exc).__name__, exc)
            return None
        if not agrees:
            log.debug("tree ensemble disagrees with predict on the probe; not used")
            return None
        return ensemble

    @classmethod
    def _build(cls, models: Sequence[Any]) -> TreeEnsemble:
        encodings: list[Encoding] = []
        walkers: list[Walker] = []
        for model in models:
            encoding = _encoding_of(model)
            index = next((i for i, e in enumerate(encodings) if e.same_as(encoding)), None)
            if index is None:
                index = len(encodings)
                encodings.append(encoding)
            if model.n_trees_per_iteration_ != 1:
                raise ValueError("one tree per iteration expected")
            known, feature_map = model._bin_mapper.make_known_categories_bitsets()
            walkers.append(
                Walker(
                    index,
                    tuple(tree for (tree,) in model._predictors),
                    float(np.asarray(model._baseline_prediction).reshape(-1)[0]),
                    known,
                    feature_map,
                    model._loss.link.inverse,
                )
            )
        return cls(tuple(encodings), tuple(walkers))

    def predict(self, features: np.ndarray) -> list[np.ndarray]:
        """Every model's prediction of ``features`` (rows × the encoder's columns)."""
        features = np.asarray(features, dtype=np.float64)
        encoded = [e.apply(features) for e in self.encodings]
        return [w.predict(encoded[w.encoding]) for w in self.walkers]


def _encoding_of(model: Any) -> Encoding:
    pre = model._preprocessor
    categorical = np.asarray(model.is_categorical_, dtype=bool)
    if pre is None:
        raise ValueError("a model without categorical columns has no re-encoding")
    encoder = pre.named_transformers_["encoder"]
    width = len(categorical)
    if pre.output_indices_["encoder"] != slice(0, int(categorical.sum())) or (
        pre.output_indices_["numerical"] != slice(int(categorical.sum()), width)
    ):
        raise ValueError("unexpected column order after re-encoding")
    categories = tuple(np.asarray(c, dtype=np.float64) for c in encoder.categories_)
    return Encoding(categorical, categories)


def _probe(models: Sequence[Any], encodings: Sequence[Encoding], width: int) -> np.ndarray:
    """Rows that reach both sides of many splits: each numeric value one of the models' bin
    thresholds, just above one, or NaN; each categorical value a known category, an unseen
    value or NaN."""
    rng = np.random.default_rng(0)
    choices: list[list[np.ndarray]] = [[np.array([np.nan])] for _ in range(width)]
    for model in models:
        categorical = np.asarray(model.is_categorical_, dtype=bool)
        order = np.concatenate([np.flatnonzero(categorical), np.flatnonzero(~categorical)])
        for column, thresholds in zip(order, model._bin_mapper.bin_thresholds_, strict=True):
            if not categorical[column]:
                t = np.asarray(thresholds, dtype=np.float64)
                choices[column] += [t, np.nextafter(t, np.inf)]
    for encoding in encodings:
        for i, cats in zip(np.flatnonzero(encoding.categorical), encoding.categories, strict=True):
            known = cats[~np.isnan(cats)]
            choices[i] = [known, np.array([known.max(initial=0.0) + 1.0, np.nan])]
    return np.column_stack([rng.choice(np.concatenate(c), size=PROBE_ROWS) for c in choices])
