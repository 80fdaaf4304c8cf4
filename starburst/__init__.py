"""Starburst: a cost-aware scheduler for hybrid-cloud GPU clusters.

Importing this package is cheap on purpose: heavy SDKs (kubernetes, SkyPilot, scikit-learn,
SQLAlchemy) are optional extras imported lazily by the modules that need them.
"""

__version__ = "0.1.0"
