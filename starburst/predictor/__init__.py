"""Runtime prediction: a scikit-learn model of how long a job will run, with its uncertainty.

Compute-Wait gives each job a wait budget proportional to GPUs × runtime, so it needs each
job's runtime before the job runs. This package learns it from the cluster's own history.

Modules (each one concept):
- ``history``: leak-free look-ups of what a user / team / job family ran before an instant.
- ``features``: the submit-time feature matrix (schema version 3).
- ``baselines``: history baselines that need no fit (global, user's, user×GPUs, shrunk medians).
- ``forms``: how the boosted models and a baseline combine into the estimate;
  ``selection``: which form, chosen by rolling-origin cross-validation and kept only if it
  beats the best baseline consistently.
- ``model``: the fitted quantile models, the chosen form and the conformal band;
  ``fitting``: features once, the cross-validation, the final fit.
- ``training`` / ``artifact``: completed jobs → a versioned joblib artifact and back.
- ``estimator``: the ``RuntimeEstimator`` port — the model, and the cold-start fallback chain
  (declared → user history → global median → default prior), with ``Estimate.source``.
- ``store``: training from and recording into the SQL store (duck-typed; no SQLAlchemy here).
- ``evaluation`` / ``scheduling``: model vs baselines on a time-ordered split, and the effect
  on Starburst's cost (oracle vs predicted vs no estimate).
- ``workload``: a seeded synthetic workload with learnable structure.

Invariant: importing this package (or ``history``, ``features``, ``estimator``, ``workload``)
never imports scikit-learn; it is imported when a model is trained or loaded.
"""
