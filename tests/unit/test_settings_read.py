"""Every setting is read by the product: a field nothing reads is a knob that does nothing.

A field counts as read when some module of ``starburst`` reads it as an attribute
(``settings.pass_interval_s``, ``self.local_job_uids``); its declaration in ``Settings`` is not
a read. The chart's schema is generated from ``Settings``, so a dead setting removed here also
leaves the chart (``tests/helm/test_settings_schema.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import starburst
from starburst.settings import Settings

PACKAGE = Path(starburst.__file__).parent


def test_every_setting_is_read_somewhere() -> None:
    sources = [path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")]
    unread = [
        name
        for name in Settings.model_fields
        if not any(re.search(rf"\.{name}\b", text) for text in sources)
    ]
    assert unread == [], f"settings nothing reads (remove them, and from the chart): {unread}"
