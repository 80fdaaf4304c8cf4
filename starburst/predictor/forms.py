"""The predictor's *form*: how the boosted models and a history baseline combine into one
estimate. Which form is used is chosen by cross-validation (``selection``).

Terms (log seconds, per job, leak-free):
- *m*: the boosted p50 of log runtime (``fitting``).
- *b*: the *reference baseline*: of the history baselines (``baselines``), the one with the
  lowest cross-validated error on the training jobs.
- *r*: a second, small and slow boosted p50 of the *residual* log runtime − b.
- *n*: how many finished jobs the user had.

| form               | centre                      | boosted models it needs |
|--------------------|-----------------------------|-------------------------|
| a baseline's name  | that baseline               | none                    |
| ``model``          | m                           | p50                     |
| ``residual``       | b + r                       | residual                |
| ``residual-0.5``   | b + r / 2 (damped)          | residual                |
| ``blend-W``        | W·m + (1 − W)·b, W ∈ ``BLEND_WEIGHTS`` | p50          |
| ``shrink-K``       | (n·b + K·m) / (n + K)       | p50                     |

``shrink-K`` is shrinkage for users with little history: a new user's estimate is the model's,
a user with many finished jobs gets their own baseline. Few candidates on purpose: each one
is another chance to win the validation by luck (the choice guards against that too).
"""

from __future__ import annotations

import numpy as np

from starburst.predictor.baselines import BASELINES, HistoryView

BLEND_WEIGHTS = (0.25, 0.5, 0.75)
SHRINK_JOBS = 5.0
DAMPING = 0.5
MODEL_FORMS = (
    "model",
    "residual",
    f"residual-{DAMPING:g}",
    *(f"blend-{w:g}" for w in BLEND_WEIGHTS),
    f"shrink-{SHRINK_JOBS:g}",
)
FORMS = (*BASELINES, *MODEL_FORMS)


def needs_median(form: str) -> bool:
    """Does the form read the boosted p50 (m)?"""
    return form == "model" or form.startswith(("blend-", "shrink-"))


def needs_residual(form: str) -> bool:
    """Does the form read the residual model (r)?"""
    return form.startswith("residual")


def model_centres(
    m: np.ndarray | None, r: np.ndarray | None, b: np.ndarray, n: np.ndarray
) -> dict[str, np.ndarray]:
    """The centre of every model form computable from m and r (either may be None), the
    reference baseline b and the user's finished jobs n."""
    out: dict[str, np.ndarray] = {}
    if r is not None:
        out["residual"] = b + r
        out[f"residual-{DAMPING:g}"] = b + DAMPING * r
    if m is not None:
        out["model"] = m
        for w in BLEND_WEIGHTS:
            out[f"blend-{w:g}"] = w * m + (1.0 - w) * b
        out[f"shrink-{SHRINK_JOBS:g}"] = (n * b + SHRINK_JOBS * m) / (n + SHRINK_JOBS)
    return out


def centre(
    form: str,
    reference: str,
    view: HistoryView,
    global_log: float,
    m: np.ndarray | None,
    r: np.ndarray | None,
) -> np.ndarray:
    """The centre of one form (``m``/``r`` may be None when the form does not need them)."""
    if form in BASELINES:
        return view.centre(form, global_log)
    b = view.centre(reference, global_log)
    found = model_centres(m, r, b, view.user_jobs).get(form)
    if found is None:
        raise ValueError(f"form {form!r} needs a model output it was not given")
    return found
