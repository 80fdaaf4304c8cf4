"""A team's budget alert becomes a Kubernetes Event in the team's namespace (through the
adapter's write path), so `kubectl get events -n TEAM` shows it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.controller.loop.budgets import BudgetAlerts, BudgetNotes
from starburst.core.records import CostEntry, JobSpec
from tests.support.databases import upgrade

NOW = 1_795_000_000.0  # 2026-11-18


def test_budget_alerts_are_events_in_the_team_namespace(core, cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(cluster, BudgetNotes)  # resolved so at the composition root
    url = f"sqlite:///{tmp_path / 'b.db'}"
    upgrade(url)
    store = SqlStore.open(url)
    store.submissions.submit(JobSpec(id="j", gpus=1, team="default"), at=NOW - 3600)
    store.submissions.submit(JobSpec(id="k", gpus=1, team="Data Science"), at=NOW - 3600)
    store.ledger.record_costs(
        [
            CostEntry("j", NOW - 3600, NOW, Decimal("90"), "aws"),
            CostEntry("k", NOW - 3600, NOW, Decimal("5"), "aws"),
        ]
    )
    store.accounts.set_team_budget("default", Decimal("100"))
    store.accounts.set_team_budget("Data Science", Decimal("5"))
    fired = BudgetAlerts(store.accounts, store.ledger, [0.8, 1.0], notes=cluster).check(NOW)
    store.close()
    assert sorted((a.state.team, a.threshold) for a in fired) == [
        ("Data Science", 0.8),
        ("Data Science", 1.0),
        ("default", 0.8),
    ]
    events = core.list_namespaced_event("default", field_selector="reason=BudgetAlert").items
    messages = sorted(e.message for e in events)
    assert len(messages) == 3  # "Data Science" is no namespace name: in the adapter's own
    assert messages[0].startswith("team Data Science spent 5.00 of its 5.00 USD")
    assert any(m.startswith("team default spent 90.00 of its 100.00 USD") for m in messages)
    assert {e.involved_object.kind for e in events} == {"Namespace"}
    assert {e.type for e in events} == {"Warning"}


def test_an_alert_lands_in_a_team_namespace_other_than_default(core, cluster) -> None:  # type: ignore[no-untyped-def]
    """The Event names its namespace as its involved object's (a real server refuses a
    Namespace Event outside ``default`` without it: ``involvedObject.namespace ... does not
    match event.namespace``, and the alert went to the fallback namespace instead)."""
    core.create_namespace({"metadata": {"name": "ml"}})
    cluster.note_budget("ml", "BudgetAlert", "team ml spent 80.00 of its 100.00 USD")
    (event,) = core.list_namespaced_event("ml", field_selector="reason=BudgetAlert").items
    assert event.message.startswith("team ml spent 80.00")
    assert (event.involved_object.kind, event.involved_object.name) == ("Namespace", "ml")
    assert event.involved_object.namespace == "ml"
    assert core.list_namespaced_event("default", field_selector="reason=BudgetAlert").items == []
