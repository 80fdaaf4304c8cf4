"""Issue 38, finding 1: a job's ``--workdir`` is entered as the job's own uid.

The controller checked the path as written (every component's mode bits, as if the job's uid
asked), and the root wrapper then ``cd``-ed into it as root — following a symbolic link the
check never looked through. ``/tmp/…/private`` (0700 root) holds ``inner/secret.txt``
(0755/0644) and ``/tmp/…/pub/link`` points at ``private/inner``: naming ``private/inner``
was refused, naming ``pub/link`` printed the secret as a job uid. A job can plant such a
link itself (in ``/run/lock``, say) for a later job. Now the path is resolved and checked
component by component as the job's uid (a refusal in one line), and the job itself enters
it after dropping to its uid, so the kernel checks every link as the job — even one swapped
after the controller's check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from starburst.adapters.local import LocalCluster, processes
from starburst.core.errors import PermanentError
from tests.local.lives import job, on_local
from tests.security.local_jobs import outside, pool, run

__all__ = ["outside"]

SECRET = "secret-9d41-behind-a-link"


def private_tree(outside: Path) -> Path:
    """``outside/private`` (0700 root) holding ``inner/secret.txt``; ``outside/pub/link``
    pointing at ``private/inner``. Returns the link."""
    inner = outside / "private" / "inner"
    inner.mkdir(parents=True)
    os.chmod(outside / "private", 0o700)
    os.chmod(inner, 0o755)
    (inner / "secret.txt").write_text(SECRET + "\n")
    os.chmod(inner / "secret.txt", 0o644)
    (outside / "pub").mkdir(mode=0o755)
    link = outside / "pub" / "link"
    link.symlink_to(inner)
    return link


def test_a_workdir_through_a_link_into_a_private_directory_is_refused(
    outside: Path, tmp_path: Path
) -> None:
    link = private_tree(outside)
    cluster = LocalCluster(tmp_path / "state", 1, users=pool(outside / "work"))
    with pytest.raises(PermanentError) as refused:
        cluster.start(job("through-link", "cat secret.txt", workdir=str(link)), on_local(1), "")
    reason = str(refused.value)
    assert f"workdir {link} is not readable by the job's own user (uid 608" in reason
    assert f"{outside / 'private'} does not let it in" in reason and "\n" not in reason
    assert not (tmp_path / "state" / "through-link" / "output.log").exists()  # nothing ran
    # the positive control: the same tree through a path the job may walk runs
    os.chmod(outside / "private", 0o755)
    ok = run(cluster, "allowed", "cat secret.txt", workdir=str(link))
    assert ok.succeeded and SECRET in cluster.logs("allowed"), ok.reason


def test_a_link_swapped_after_the_check_still_does_not_let_the_job_in(
    outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller's check passes (here: it is skipped, as if the link a job planted was
    swapped right after it); the job enters the directory as its uid, so the kernel refuses."""
    link = private_tree(outside)
    monkeypatch.setattr(processes, "usable_workdir", lambda path, user: Path(path))
    cluster = LocalCluster(tmp_path / "state", 1, users=pool(outside / "work"))
    end = run(cluster, "swapped", "cat secret.txt; echo RAN", workdir=str(link))
    logs = cluster.logs("swapped")
    assert SECRET not in logs and "RAN" not in logs, logs
    assert not end.succeeded
    assert f"workdir {link} cannot be entered by the job's user (uid 608" in end.reason, end.reason
