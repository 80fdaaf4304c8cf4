"""What ``starburst doctor`` checks, each check a small function returning ``Check`` lines.

Terms: a *check* names one dependency (``database``, ``kubernetes rbac``, ``skypilot``, …);
its ``detail`` says what was found, and a failed one its ``fix``. Checks never raise: an
exception becomes a problem line with its message. Heavy SDKs are imported only by the
checks the settings ask for (``cluster: kubernetes``, ``cloud: skypilot``).
"""

from __future__ import annotations

from starburst.doctor.checks import Check, run_checks

__all__ = ["Check", "run_checks"]
