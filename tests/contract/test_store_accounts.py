"""The ``Accounts`` and ``ModelRegistry`` contracts, and the port surface itself: every
store implementation has a repository of every port, with every port method and the port's
parameters, each written in the repository itself (none forwards to another object), and
every port method is exercised by this suite."""

from __future__ import annotations

import ast
import inspect
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest

from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.ports import (
    Accounts,
    JobReads,
    Ledger,
    Lifecycle,
    ModelRegistry,
    Store,
    Submissions,
    TuningLog,
)
from starburst.core.records import JobNotFound, JobSpec, Prediction, Role, User

#: Each store port and the attribute of ``Store`` that holds its repository.
REPOSITORIES: dict[type, str] = {
    Submissions: "submissions",
    JobReads: "jobs",
    Lifecycle: "lifecycle",
    Ledger: "ledger",
    Accounts: "accounts",
    ModelRegistry: "models",
    TuningLog: "tuning",
}
PORTS = (*REPOSITORIES, Store)


def port_methods() -> dict[str, type]:
    return {
        name: port
        for port in PORTS
        for name, member in vars(port).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


# ---- accounts -------------------------------------------------------------------------------
def test_tokens_keep_roles_expire_and_revoke(store, clock):  # type: ignore[no-untyped-def]
    store.accounts.save_user("fin", team="finance", email="f@example.org")
    issued = store.accounts.issue_token(
        "fin", Role.FINANCE, label="reports", expires_at=clock.now() + 3600
    )
    assert issued.secret.startswith("sb_") and (issued.user, issued.role) == ("fin", Role.FINANCE)
    who = store.accounts.authenticate(issued.secret)
    assert (who.token_id, who.user, who.team, who.role) == (
        issued.id,
        "fin",
        "finance",
        Role.FINANCE,
    )
    assert store.accounts.authenticate(issued.secret + "x") is None
    assert store.accounts.authenticate(issued.secret, at=clock.now() + 3600) is None  # expired
    assert store.accounts.revoke_token(issued.id) and not store.accounts.revoke_token(issued.id)
    assert store.accounts.authenticate(issued.secret) is None
    assert not store.accounts.revoke_token(12345)
    with pytest.raises(ConfigError, match="no user"):
        store.accounts.issue_token("ghost", Role.ADMIN)


def test_a_secret_chosen_outside_must_look_generated(store):  # type: ignore[no-untyped-def]
    store.accounts.save_user("root")
    chosen = "sb_" + "k" * 32
    issued = store.accounts.issue_token("root", Role.ADMIN, secret=chosen)
    assert issued.secret == chosen and store.accounts.authenticate(chosen).role is Role.ADMIN
    for bad in ("sb_short", "xx_" + "k" * 40):
        with pytest.raises(ConfigError, match="32\\+ characters"):
            store.accounts.issue_token("root", Role.ADMIN, secret=bad)


def test_users_are_saved_and_updated(store):  # type: ignore[no-untyped-def]
    assert store.accounts.user("ann") is None
    assert store.accounts.save_user("ann", team="ml").team == "ml"
    store.accounts.save_user("ann", team="cv", email="ann@example.org")
    assert (store.accounts.user("ann").team, store.accounts.user("ann").email) == (
        "cv",
        "ann@example.org",
    )
    assert store.accounts.save_user("ann").team is None  # saving sets the team, even to none
    with pytest.raises(ConfigError, match="non-empty name"):
        store.accounts.save_user("  ")
    issued = store.accounts.issue_token("ann", Role.USER)
    store.accounts.save_user("ann", team="nlp")
    assert store.accounts.authenticate(issued.secret).team == "nlp"  # the user's team as it is now


def test_users_teams_and_tokens_are_listed_without_secrets(store, clock):  # type: ignore[no-untyped-def]
    assert (store.accounts.users(), store.accounts.teams(), store.accounts.tokens()) == ([], [], [])
    store.accounts.save_user("zoe", team="ml")
    store.accounts.save_user("ann", team="cv", email="ann@example.org")
    store.accounts.ensure_team("empty")
    assert [u.name for u in store.accounts.users()] == ["ann", "zoe"]
    assert store.accounts.users(team="ml") == [User("zoe", "ml", None)]
    assert store.accounts.teams() == ["cv", "empty", "ml"]
    first = store.accounts.issue_token("zoe", Role.USER, label="laptop")
    second = store.accounts.issue_token("ann", Role.ADMIN, expires_at=clock.now() + 60)
    store.accounts.revoke_token(first.id)
    listed = store.accounts.tokens()
    assert [(t.id, t.user, t.role, t.label) for t in listed] == [
        (first.id, "zoe", Role.USER, "laptop"),
        (second.id, "ann", Role.ADMIN, None),
    ]
    assert listed[0].revoked_at is not None and listed[1].revoked_at is None
    assert listed[1].expires_at == pytest.approx(clock.now() + 60)
    assert first.secret not in repr(listed) and second.secret not in repr(listed)
    assert [t.id for t in store.accounts.tokens(user="ann")] == [second.id]


def test_team_budgets_upsert(store):  # type: ignore[no-untyped-def]
    store.accounts.ensure_team("empty")
    store.accounts.ensure_team("empty")  # idempotent
    assert store.accounts.team_budget("ml") is None and store.accounts.team_budgets() == []
    store.accounts.set_team_budget("ml", Decimal("1000"))
    budget = store.accounts.set_team_budget("ml", Decimal("2500.50"), currency="EUR")
    assert (budget.team, budget.monthly_limit, budget.currency) == ("ml", Decimal("2500.50"), "EUR")
    assert store.accounts.team_budget("ml") == budget
    store.accounts.set_team_budget("ai", Decimal("0.0000001"))
    assert [(b.team, b.monthly_limit) for b in store.accounts.team_budgets()] == [
        ("ai", Decimal(0)),
        ("ml", Decimal("2500.50")),
    ]
    with pytest.raises(ConfigError):
        store.accounts.set_team_budget("ml", Decimal("-1"))
    assert store.accounts.team_budget("ml") == budget


def test_a_budget_alert_is_claimed_once_per_team_month_and_threshold(store):  # type: ignore[no-untyped-def]
    assert store.accounts.claim_budget_alert("ml", "2026-11", 0.8, Decimal("800"))
    assert not store.accounts.claim_budget_alert("ml", "2026-11", 0.8, Decimal("850"))
    assert not store.accounts.claim_budget_alert(
        "ml", "2026-11", 0.8001, Decimal("850")
    )  # per mille
    assert store.accounts.claim_budget_alert("ml", "2026-11", 0.5, Decimal("500"))
    assert store.accounts.claim_budget_alert("ml", "2026-12", 0.8, Decimal("800"))
    assert store.accounts.claim_budget_alert("cv", "2026-11", 1.0, Decimal("10"))
    assert store.accounts.budget_alerts("2026-11") == {"cv": [1.0], "ml": [0.5, 0.8]}
    assert store.accounts.budget_alerts("2027-01") == {}


# ---- model registry -----------------------------------------------------------------------
def test_predictions_set_the_estimate_and_models_have_one_active_version(store, clock):  # type: ignore[no-untyped-def]
    job_id = store.submissions.submit(JobSpec(gpus=1, declared_runtime=600.0)).job.id
    assert (
        store.models.active_model("runtime") is None
        and store.models.model_versions("runtime") == []
    )
    v1 = store.models.register_model("runtime", "1", trained_on=100, metrics={"mae": 0.4})
    v2 = store.models.register_model("runtime", "2", trained_on=200, artifact_uri="file:///m2")
    shadow = store.models.register_model("runtime", "3", trained_on=300, activate=False)
    other = store.models.register_model("budget", "1", trained_on=1)
    store.models.record_predictions(
        [
            Prediction(job_id, 900.0, 450.0, 1800.0, "model", clock.now(), v1.id),
            Prediction(job_id, 1800.0, 900.0, 3600.0, "model", clock.now(), v2.id, {"0.9": 3600.0}),
        ]
    )
    got = store.jobs.get(job_id)
    assert (got.job.estimate, got.predicted_runtime, got.declared_runtime) == (
        1800.0,
        1800.0,
        600.0,
    )
    assert got.version == 1  # not a state change
    first, last = store.models.predictions(job_id)
    assert (first.value, last.model_version_id, dict(last.quantiles)) == (
        900.0,
        v2.id,
        {"0.9": 3600.0},
    )
    assert last.created_at == clock.now() and store.models.predictions("ghost") == []
    assert (
        store.models.active_model("runtime").id == v2.id
        and store.models.active_model("budget") == other
    )
    assert [m.active for m in store.models.model_versions("runtime")] == [False, True, False]
    assert [m.id for m in store.models.model_versions("runtime")] == [v1.id, v2.id, shadow.id]
    assert v1.metrics == {"mae": 0.4} and v2.artifact_uri == "file:///m2"
    assert (v2.trained_on, v2.created_at) == (200, clock.now())
    with pytest.raises(JobNotFound):
        store.models.record_predictions([Prediction("ghost", 1.0, 1.0, 1.0, "model", clock.now())])
    mixed = [Prediction(i, 5.0, 5.0, 5.0, "model", clock.now()) for i in (job_id, "ghost", "x")]
    with pytest.raises(JobNotFound, match="ghost"):  # the first unknown, and nothing written
        store.models.record_predictions(mixed)
    assert store.jobs.get(job_id).predicted_runtime == 1800.0
    assert len(store.models.predictions(job_id)) == 2
    # kept without setting the job's estimate (the admission's move writes it)
    store.models.record_predictions(
        [Prediction(job_id, 60.0, 30.0, 90.0, "prior", clock.now())], set_runtime=False
    )
    assert store.jobs.get(job_id).predicted_runtime == 1800.0
    assert [p.value for p in store.models.predictions(job_id)] == [900.0, 1800.0, 60.0]
    with pytest.raises(JobNotFound, match="ghost"):  # an unknown job refused all the same
        store.models.record_predictions(mixed, set_runtime=False)
    assert len(store.models.predictions(job_id)) == 3


def test_a_batch_of_predictions_sets_every_jobs_estimate_and_keeps_every_prediction(  # type: ignore[no-untyped-def]
    store, clock
):
    """Predictions for many jobs are written together (PostgreSQL: one statement per table):
    none is lost, and a job predicted twice in the batch keeps the later value."""
    ids = [s.job.id for s in store.submissions.submit_many([JobSpec(gpus=1)] * 40)]
    batch = [
        Prediction(job_id, 100.0 + n, 50.0, 200.0, "prior", clock.now())
        for n, job_id in enumerate(ids)
    ]
    batch += [
        Prediction(job_id, 7.0 + n, 5.0, 9.0, "model", clock.now(), None, {"p50": 7.0 + n})
        for n, job_id in enumerate(ids[::5])
    ]
    store.models.record_predictions(batch)
    for n, job_id in enumerate(ids):
        again = n % 5 == 0
        assert store.jobs.get(job_id).predicted_runtime == (7.0 + n // 5 if again else 100.0 + n)
        kept = store.models.predictions(job_id)
        assert [(p.value, p.source) for p in kept] == [(100.0 + n, "prior")] + (
            [(7.0 + n // 5, "model")] if again else []
        )
        assert dict(kept[-1].quantiles) == ({"p50": 7.0 + n // 5} if again else {})


def test_history_keeps_the_most_recent_finished_jobs_in_end_order(store, clock):  # type: ignore[no-untyped-def]
    ids = []
    for _ in range(5):
        clock.advance(1)
        spec = JobSpec(gpus=1, image="img", command="run", declared_runtime=9.0)
        ids.append(store.submissions.submit(spec).job.id)
        store.lifecycle.transition(ids[-1], JobState.QUEUED, reason="admitted", actor="c")
    outcomes = [JobState.SUCCEEDED, JobState.FAILED, JobState.SUCCEEDED, JobState.SUCCEEDED]
    for job_id, outcome in zip(ids, outcomes, strict=False):
        store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="c")
        clock.advance(10)
        store.lifecycle.transition(job_id, outcome, reason="ended", actor="c")
    store.lifecycle.transition(ids[4], JobState.CANCELLED, reason="never ran", actor="c")
    assert [h.job.id for h in store.models.history()] == [ids[0], ids[2], ids[3]]
    assert [h.job.id for h in store.models.history(limit=2)] == [ids[2], ids[3]]
    both = store.models.history(
        states=[JobState.SUCCEEDED, JobState.FAILED], since=clock.now() - 15
    )
    assert [h.job.id for h in both] == [ids[2], ids[3]]
    assert [h.job.id for h in store.models.history(until=clock.now() - 10)] == [ids[0]]
    assert store.models.history(states=[JobState.CANCELLED]) == []  # no start: no measured runtime
    last = store.models.history()[-1]
    assert (last.image, last.command, last.declared_runtime, last.state) == (
        "img",
        "run",
        9.0,
        JobState.SUCCEEDED,
    )
    assert (last.ended_at - last.started_at, last.job.runtime) == (10.0, 10.0)


# ---- the port surface -----------------------------------------------------------------------
def test_a_store_has_every_port_method_with_the_ports_parameters(store):  # type: ignore[no-untyped-def]
    assert isinstance(store, Store)
    for name, port in port_methods().items():
        target = store if port is Store else getattr(store, REPOSITORIES[port])
        if isinstance(vars(port)[name], property):
            assert name in vars(target) or isinstance(getattr(type(target), name), property), name
            continue
        wanted = list(inspect.signature(getattr(port, name)).parameters)
        mine = list(inspect.signature(getattr(type(target), name)).parameters)
        assert mine == wanted, f"{type(target).__name__}.{name}{mine} differs from {wanted}"
    store.close()


def test_each_repository_implements_its_port_itself(store):  # type: ignore[no-untyped-def]
    """No forwarding layer: each port method is defined in its repository's own class (not
    inherited) and does more than hand the call to another object (``self._x.same(...)``),
    so a method lives in the port and one repository per store, nowhere else."""
    for port, attribute in REPOSITORIES.items():
        repository = type(getattr(store, attribute))
        for name, member in vars(port).items():
            if name.startswith("_") or not callable(member):
                continue
            assert name in vars(repository), f"{repository.__name__}.{name} is not its own"
            forwards_to = _forwarded(vars(repository)[name])
            assert forwards_to is None, f"{repository.__name__}.{name} only calls {forwards_to}"
    store.close()


def _forwarded(method: object) -> str | None:
    """``self.<attribute>.<method>`` when that call is all ``method`` does, else None."""
    source = inspect.getsource(method)  # type: ignore[arg-type]
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    body = [
        node
        for node in function.body
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Return | ast.Expr):
        return None
    call = body[0].value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    target = call.func.value
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return f"self.{target.attr}.{call.func.attr}"
    return None


def test_every_port_method_is_exercised_by_the_contract() -> None:
    called: set[str] = set()
    for path in Path(__file__).parent.glob("test_store_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and _is_a_store(node.value):
                called.add(node.attr)
    assert sorted(set(port_methods()) - called) == []


def _is_a_store(node: ast.expr) -> bool:
    """``store``, ``records`` (its tuning log) or one of its repositories (``store.jobs``)."""
    if isinstance(node, ast.Name):
        return node.id in ("store", "records")
    return (
        isinstance(node, ast.Attribute)
        and node.attr in REPOSITORIES.values()
        and _is_a_store(node.value)
    )
