"""``starburst logs --follow``: what is new in each snapshot is printed once, a job not
started yet is waited for, and the output written at the very end is not lost."""

from __future__ import annotations

from starburst.cli.follow import follow, new_part


def test_new_part_handles_growth_and_a_backend_that_keeps_only_its_tail() -> None:
    assert new_part("", "a\n") == "a\n"
    assert new_part("a\nb\n", "a\nb\nc\n") == "c\n"
    assert new_part("a\nb\nc\n", "b\nc\nd\ne\n") == "d\ne\n"  # the oldest line dropped
    assert new_part("a\nb\n", "a\nb\n") == ""
    assert new_part("old\n", "entirely new\n") == "entirely new\n"


def test_follow_waits_for_the_start_prints_growth_once_and_the_last_words() -> None:
    snapshots = iter([None, None, "1\n2\n3\n", "1\n2\n3\n", "2\n3\n4\n", "2\n3\n4\nbye\n"])
    states = iter([False, False, False, False, False, True])
    printed: list[str] = []
    naps: list[float] = []
    follow(
        lambda: next(snapshots),
        lambda: next(states),
        printed.append,
        first_tail=2,
        interval=0.5,
        sleep=naps.append,
    )
    assert printed == ["2\n3\n", "4\n", "bye\n"]  # the first look shows its last 2 lines
    assert naps == [0.5] * 5  # no sleep after the last look


def test_follow_of_an_ended_job_prints_it_and_returns() -> None:
    printed: list[str] = []
    follow(lambda: "done\n", lambda: True, printed.append, sleep=lambda _: None)
    assert printed == ["done\n"]
