"""The Compose Specification's JSON schema for tests, from a pinned package-registry wheel.

No Docker engine (nor the ``docker compose`` plugin) runs in the test environment, so Compose
files are validated against the compose-spec schema Docker shipped in PyPI's
``docker-compose==1.29.2`` wheel (``compose/config/compose_spec.json``, draft 2019-09),
fetched with pip and cached under ``~/.cache/starburst/tools/`` like ``helmtool``.
``require_compose_schema()`` skips when it cannot be fetched, or fails under ``CI``.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.helmtool import ToolUnavailable, download_wheel, tools_dir

WHEEL = "docker-compose==1.29.2"
MEMBER = "compose/config/compose_spec.json"


def schema_path() -> Path:
    return tools_dir().parent / f"compose-spec-{WHEEL.split('==')[1]}.json"


def compose_schema() -> dict[str, Any]:
    path = schema_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="starburst-tools-") as scratch:
            wheel = download_wheel(Path(scratch), WHEEL)
            with zipfile.ZipFile(wheel) as archive:
                text = archive.read(MEMBER).decode()
        staging = path.with_suffix(f".{os.getpid()}.tmp")
        staging.write_text(text)
        staging.replace(path)
    return dict(json.loads(path.read_text()))


def require_compose_schema() -> dict[str, Any]:
    try:
        return compose_schema()
    except (ToolUnavailable, OSError, KeyError, ValueError) as exc:
        message = f"the compose-spec schema is unavailable: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
