"""A job's cloud choices: where it may run if it bursts (a SkyPilot task's ``resources``).

Terms: they matter only in the cloud (a job that starts on-prem ignores them) and travel in
``Job.extra`` as text, as every backend's extras do:
- ``USE_SPOT`` (``"true"``/``"false"``): rent spot GPUs, or not, overriding the server's
  ``use_spot`` setting;
- ``CLOUDS``: comma-separated clouds allowed (``aws,gcp``);
- ``REGIONS``: comma-separated ``cloud/region`` (``aws/us-east-1``); when given, only those
  clouds and regions are used;
- ``DISK_GB``: the boot disk's size in GB (SkyPilot's ``disk_size``).
The SkyPilot adapter reads them (``adapters/skypilot/task.py``); the API writes them
(``cloud_extra``), so both agree on the words.
"""

from __future__ import annotations

USE_SPOT = "use_spot"
CLOUDS = "clouds"
REGIONS = "regions"
DISK_GB = "disk_gb"


def cloud_extra(
    use_spot: bool | None = None,
    cloud: str | None = None,
    region: str | None = None,
    disk_gb: int | None = None,
) -> dict[str, str]:
    """The ``Job.extra`` entries for these choices (a region needs its cloud)."""
    extra: dict[str, str] = {}
    if use_spot is not None:
        extra[USE_SPOT] = "true" if use_spot else "false"
    if cloud is not None:
        extra[CLOUDS] = cloud.lower()
        if region is not None:
            extra[REGIONS] = f"{cloud.lower()}/{region}"
    if disk_gb is not None:
        extra[DISK_GB] = str(disk_gb)
    return extra
