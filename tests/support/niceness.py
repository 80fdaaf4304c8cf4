"""How niced the tests' training children are.

The product trains in a child at ``predictor.isolated.NICE`` (10) so a retraining never slows
the controller's pass. On the suite's 2 loaded cores such a child gets a tenth of a core beside
the other worker's processes: one training that takes 6 s alone took 34 s there, with its
worker idle meanwhile. The tests check the mechanism — the child is another process, niced
above its parent, and returns the same model — so their children run at ``GENTLE``, above the
parent but not starved; one test keeps the product's default (``test_isolated.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from starburst.predictor import isolated

GENTLE = 1


def train_gently(monkeypatch: pytest.MonkeyPatch) -> list[isolated.Isolated]:
    """Make every ``train_isolated`` of the test run its child at ``GENTLE``; return the list
    of the children it ran (what each ran as), filled as they end."""
    real = isolated.train_isolated
    children: list[isolated.Isolated] = []

    def gentle(*args: Any, **kwargs: Any) -> isolated.Isolated:
        kwargs.setdefault("nice", GENTLE)
        children.append(real(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(isolated, "train_isolated", gentle)
    return children
