"""The held-out measure (``predictor.heldout``): chosen on one period, judged on the next."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from starburst.core.estimates import EstimateUse
from starburst.core.job import Job
from starburst.core.policy import PolicyKind
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.heldout import held_out
from tests.builders import run_cli
from tests.predictor.conftest import SMALL

LINE = re.compile(
    r"^held-out: savings -?\d+\.\d% at mean JCT [+-]\d+\.\d%; oracle savings -?\d+\.\d% at "
    r"[+-]\d+\.\d%; kept -?\d+\.\d% of the oracle's savings$"
)


def test_the_choice_is_made_on_the_training_period_and_judged_on_the_next(
    workload: list[Job], artifact: ModelArtifact
) -> None:
    result = held_out(
        workload,
        tolerance=0.10,
        load=1.2,
        artifact=artifact,  # trained on the same first 70%
        params=SMALL,
        folds=2,
        policies=(PolicyKind.COMPUTE,),
        budgets=(0.25, 1.0),
        estimates=(EstimateUse.P50, EstimateUse.P90),
        processes=1,
    )
    assert LINE.match(result.line()), result.line()
    assert (result.train_jobs, result.test_jobs) == (1050, 450)
    # No-Wait, Starburst and Compute-Wait in order at two budgets × two estimates, today's
    # row is one of them; the oracle has no band, so only the p50 ones
    assert result.replays == (1 + 2 * 2 * 2) + (1 + 2 * 2)
    for chosen in (result.predicted, result.oracle):
        assert chosen.train_jct_change <= 0.10  # within the tolerance where it was chosen
    assert "p90" not in result.oracle.label  # the truth has no band to read a p90 from
    assert result.oracle.savings > 0
    assert result.kept == pytest.approx(result.predicted.savings / result.oracle.savings)
    assert result.describe().splitlines()[0] == result.line()


def test_evaluate_schedule_tune_prints_the_held_out_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["predictor", "evaluate", "--synthetic", "800", "--seed", "3", "--threads", "1"]
    args += ["--load", "1.5"]
    code, out, err = run_cli(
        [*args, "--schedule", "--tune", "--max-jct-increase", "10%", "--processes", "1"], capsys
    )
    assert code == 0, err
    [line] = [x for x in out.splitlines() if x.startswith("held-out:")]
    assert LINE.match(line), line
    assert "within +10% mean JCT of No-Wait" in out
    code, _, err = run_cli([*args, "--tune"], capsys)
    assert code == 2 and "--tune judges scheduling: give it with --schedule" in err
    code, _, err = run_cli([*args, "--schedule", "--tune", "--max-jct-increase", "x"], capsys)
    assert code == 2 and "is not a number" in err and "Traceback" not in err
