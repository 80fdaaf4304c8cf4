"""SkyPilot checks: its API server answers (the team's ``skypilot_api_server``, else the
SkyPilot client's own default), and which clouds it has enabled (``sky check``)."""

from __future__ import annotations

import time

from starburst.adapters.skypilot.api import REQUEST_FINISHED, SkyApi
from starburst.doctor.checks import Check, failed
from starburst.settings import Settings

ANSWER_TIMEOUT_S = 60.0


def configured(settings: Settings) -> Check:
    """Which cloud the settings select, whatever it is (nothing is contacted here)."""
    if settings.cloud == "skypilot":
        where = settings.skypilot_api_server or "SkyPilot's default endpoint"
        return Check("cloud", True, f"skypilot, through the API server at {where}")
    if settings.cloud == "emulated":
        return Check(
            "cloud",
            True,
            "emulated: bursts run as local processes, costed at the price table (no cloud account)",
        )
    return Check("cloud", True, "none: jobs never burst, they wait for the cluster")


def skypilot(settings: Settings, timeout: float = ANSWER_TIMEOUT_S) -> list[Check]:
    from starburst.adapters.skypilot import load_sky

    endpoint = settings.skypilot_api_server or "SkyPilot's default endpoint"
    try:
        sky = load_sky(settings.skypilot_api_server, settings.skypilot_token())
        info = sky.api_info()
    except Exception as exc:
        return [
            failed(
                "skypilot",
                exc,
                "start the API server (sky api start) or set skypilot_api_server and its token",
            )
        ]
    status = str(getattr(info, "status", "") or "").rsplit(".", 1)[-1].lower()
    version = getattr(info, "version", "?")
    if "healthy" not in status:
        return [
            Check(
                "skypilot",
                False,
                f"{endpoint} answers but is {status or 'unknown'}",
                "check the API server's logs (sky api logs)",
            )
        ]
    found = [Check("skypilot", True, f"API server {version} at {endpoint} is healthy")]
    try:
        clouds = _enabled_clouds(sky, timeout)
    except Exception as exc:
        return [*found, failed("skypilot clouds", exc, "sky check")]
    if not clouds:
        return [
            *found,
            Check(
                "skypilot clouds",
                False,
                "no cloud enabled in SkyPilot",
                "run `sky check` (with the cloud credentials the server uses)",
            ),
        ]
    return [*found, Check("skypilot clouds", True, "enabled: " + ", ".join(clouds))]


def _enabled_clouds(api: SkyApi, timeout: float) -> list[str]:
    """Ask and wait (bounded): a person waits for doctor, the scheduling loop never does."""
    request = api.enabled_clouds()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = [str(getattr(p, "status", "")) for p in api.api_status(request_ids=[request])]
        if statuses and statuses[0].upper() in REQUEST_FINISHED:
            return sorted(str(c) for c in api.get(request) or [])
        time.sleep(0.2)
    raise TimeoutError(f"the API server did not answer enabled_clouds within {timeout:.0f} s")
