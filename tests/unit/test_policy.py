"""Waiting policies and the budget → coefficient formulas of docs/concepts.md."""

import math

import pytest

from starburst.core.errors import ConfigError
from starburst.core.policy import PolicyKind, WaitPolicy, calibrate, parse_policy
from tests.builders import H, make_job

# runtimes 1 h, 3 h; gpus 1, 4 → Σr = 4 h, Σ(g·r) = 13 GPU-h, mean r = 2 h, mean g = 2.5
JOBS = [make_job("a", gpus=1, runtime=H), make_job("b", gpus=4, runtime=3 * H)]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (PolicyKind.CONSTANT, 0.25 * 2 * H),
        (PolicyKind.RUNTIME, 0.25),
        (PolicyKind.RESOURCE, 0.25 * 2 * H / 2.5),
        (PolicyKind.COMPUTE, 0.25 * 4 / 13),
        (PolicyKind.STAR, 0.25 * 2 * H / 2.5),
        (PolicyKind.NO_WAIT, 0.0),
        (PolicyKind.INFINITE, 0.0),
    ],
)
def test_budget_gives_the_closed_form_coefficient(kind: PolicyKind, expected: float) -> None:
    assert calibrate(kind, 0.25, JOBS) == pytest.approx(expected)


@pytest.mark.parametrize(
    "kind", [PolicyKind.CONSTANT, PolicyKind.RUNTIME, PolicyKind.RESOURCE, PolicyKind.COMPUTE]
)
def test_calibrated_budgets_add_up_to_b_times_total_runtime(kind: PolicyKind) -> None:
    policy = WaitPolicy.from_budget(kind, 0.4, JOBS)
    total_wait = sum(policy.budget(j) for j in JOBS)
    assert total_wait == pytest.approx(0.4 * sum(j.runtime or 0 for j in JOBS))


def test_each_policy_budget_formula() -> None:
    job = make_job(gpus=4, runtime=2 * H)
    assert WaitPolicy(PolicyKind.NO_WAIT).budget(job) == 0
    assert math.isinf(WaitPolicy(PolicyKind.INFINITE).budget(job))
    assert WaitPolicy(PolicyKind.CONSTANT, 600).budget(job) == 600
    assert WaitPolicy(PolicyKind.RUNTIME, 0.5).budget(job) == H
    assert WaitPolicy(PolicyKind.RESOURCE, 100).budget(job) == 400
    assert WaitPolicy(PolicyKind.COMPUTE, 0.1).budget(job) == pytest.approx(0.1 * 4 * 2 * H)
    assert WaitPolicy(PolicyKind.STAR, 100).budget(job) == 0


def test_budget_uses_the_estimate_not_the_true_runtime() -> None:
    job = make_job(gpus=2, runtime=10 * H, estimate=H)
    assert WaitPolicy(PolicyKind.COMPUTE, 0.5).budget(job) == pytest.approx(H)


def test_star_requeue_budget_is_r_times_what_is_left_of_c_gpus() -> None:
    policy = WaitPolicy(PolicyKind.STAR, 1000)
    job = make_job(gpus=4, submit=0)
    assert policy.star_requeue_budget(job, now=900) == pytest.approx(3 * (4000 - 900))
    assert policy.star_requeue_budget(job, now=5000) == 0


def test_unknown_policy_and_bad_budgets_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match=r"unknown policy .fastest..*compute"):
        parse_policy("fastest")
    with pytest.raises(ConfigError, match="≥ 0"):
        calibrate(PolicyKind.COMPUTE, -1, JOBS)
    with pytest.raises(ConfigError, match="without jobs"):
        calibrate(PolicyKind.CONSTANT, 0.25, [])
    with pytest.raises(ConfigError):
        WaitPolicy(PolicyKind.CONSTANT, -5)


def test_expected_runtime_is_the_log_normal_mean_of_the_band() -> None:
    z90 = 1.2815515655446004
    sigma = 0.5
    low, high = H * math.exp(-z90 * sigma), H * math.exp(z90 * sigma)
    job = make_job(gpus=2, runtime=10 * H, estimate=H).with_estimate(H, low, high)
    assert job.expected_runtime == pytest.approx(H * math.exp(sigma**2 / 2))
    assert make_job(runtime=H, estimate=H).expected_runtime == H  # no band: the estimate
    huge = make_job(runtime=H).with_estimate(H, 1.0, 1e9)  # "unknown" is capped, not infinite
    assert huge.expected_runtime == pytest.approx(H * math.exp(2.0**2 / 2))


def test_compute_expected_waits_longer_for_uncertain_jobs_and_paper_compute_ignores_bands() -> None:
    sure = make_job("sure", gpus=2, runtime=H).with_estimate(H, 0.9 * H, 1.1 * H)
    unsure = make_job("unsure", gpus=2, runtime=H).with_estimate(H, 0.05 * H, 20 * H)
    expected = WaitPolicy(PolicyKind.COMPUTE_EXPECTED, 0.5)
    assert expected.budget(unsure) > 3 * expected.budget(sure) > 3 * H
    compute = WaitPolicy(PolicyKind.COMPUTE, 0.5)
    assert compute.budget(sure) == compute.budget(unsure) == pytest.approx(H)
    assert parse_policy(" Compute-Expected ") is PolicyKind.COMPUTE_EXPECTED


def test_compute_expected_calibration_adds_up_over_expected_runtimes() -> None:
    jobs = [JOBS[0].with_estimate(H, 0.2 * H, 5 * H), JOBS[1].with_estimate(3 * H, 2 * H, 4 * H)]
    policy = WaitPolicy.from_budget(PolicyKind.COMPUTE_EXPECTED, 0.4, jobs)
    total_wait = sum(policy.budget(j) for j in jobs)
    assert total_wait == pytest.approx(0.4 * sum(j.expected_runtime for j in jobs))
    # without bands it is Compute-Wait exactly
    assert calibrate(PolicyKind.COMPUTE_EXPECTED, 0.25, JOBS) == calibrate(
        PolicyKind.COMPUTE, 0.25, JOBS
    )


@pytest.mark.parametrize(
    "kind",
    [
        PolicyKind.CONSTANT,
        PolicyKind.RESOURCE,
        PolicyKind.STAR,
        PolicyKind.COMPUTE,
        PolicyKind.COMPUTE_EXPECTED,
    ],
)
@pytest.mark.parametrize(
    "runtimes",
    [
        [1e308, 1e308],
        [math.inf, 3600.0],
        [1e308, 1.0, 5.0],
        [math.nan, 60.0],
    ],
)
def test_calibration_never_overflows(kind: PolicyKind, runtimes: list[float]) -> None:
    """A declared runtime of 1e308 or Infinity once made recalibration raise OverflowError."""
    jobs = [make_job(f"j{i}", gpus=8, runtime=r) for i, r in enumerate(runtimes)]
    coefficient = calibrate(kind, 0.25, jobs)
    assert math.isfinite(coefficient) and coefficient >= 0
    WaitPolicy(kind, coefficient)  # a usable policy


def test_every_policy_is_described_once_and_names_follow_the_description() -> None:
    """A new policy is added in core/policy.py: ``POLICIES`` must cover every kind, and the
    names tables and plots print come from it."""
    from starburst.core.policy import POLICIES
    from starburst.sim.naming import label, series_name

    assert set(POLICIES) == set(PolicyKind)
    assert len({info.name for info in POLICIES.values()}) == len(POLICIES)
    for kind, info in POLICIES.items():
        assert series_name(kind, info.out_of_order) in (info.name, "Starburst")
        if not info.budgetless:
            assert series_name(kind, not info.out_of_order).endswith("order)")
            assert label(kind, info.out_of_order, 0.25).endswith(" b=0.25")
        else:
            assert label(kind, True, 0.25) == info.name
            assert WaitPolicy.from_budget(kind, 0.25, []).coefficient == 0.0
        if info.reference_free:  # calibrated without any reference jobs
            WaitPolicy.from_budget(kind, 0.25, [])


def test_every_policy_says_how_it_computes_a_budget() -> None:
    """``WaitPolicy.formula`` (what ``explain`` and the admission event show) names the
    numbers ``budget`` multiplies, for every policy."""
    from starburst.core.job import Job
    from starburst.core.policy import PolicyKind, WaitPolicy

    job = Job("j", 0.0, 4, estimate=7200.0)
    said = {kind: WaitPolicy(kind, 0.2479).formula(job) for kind in PolicyKind}
    assert said[PolicyKind.COMPUTE] == "4 GPUs × 2h runtime estimate × coefficient 0.2479 (compute)"
    assert said[PolicyKind.RUNTIME] == "2h runtime estimate × coefficient 0.2479 (runtime)"
    assert said[PolicyKind.RESOURCE] == "4 GPUs × coefficient 0.2479 s per GPU (resource)"
    assert WaitPolicy(PolicyKind.CONSTANT, 600).formula(job).startswith("the same 10m ")
    assert "never bursts" in said[PolicyKind.INFINITE]
    assert all(text for text in said.values())
    assert WaitPolicy(PolicyKind.COMPUTE, 0.5).formula(Job("k", 0.0, 1, estimate=60.0)) == (
        "1 GPU × 1m runtime estimate × coefficient 0.5 (compute)"
    )
