"""Runtime prediction: a scikit-learn model of how long a job will run, with its uncertainty.

Compute-Wait gives each job a wait budget proportional to GPUs × runtime, so it needs each
job's runtime before the job runs. This package learns it from the cluster's own history.

Modules (each one concept):
- ``history``: leak-free look-ups of what a user / job family ran before an instant.
- ``features``: the submit-time feature matrix (schema version 2).
- ``model``: quantile gradient-boosting models (p10, p50, p90, residual) and conformal
  calibration; ``forms``: which of model, residual, blend or baseline the estimate uses, chosen
  on the most recent held-out slice of the training jobs.
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
