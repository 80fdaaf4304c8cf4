"""``starburst doctor``: check everything Starburst depends on, one line per check.

Each line is ``OK``, ``WARNING`` or ``PROBLEM`` with what was found, and for a warning or a
problem the fix (``  fix: ...``). The exit code is 0 when no line is a problem, 1 otherwise
(2 for settings that cannot be read, like every command). What is checked
(``starburst.doctor``):

- *database*: reachable, and its schema at the newest migration (a SQLite file that does
  not exist is reported, not created);
- *cluster* and *cloud*: which ones the settings select (local with its GPU slots, or
  Kubernetes; emulated, SkyPilot or none);
- *kubernetes* (``cluster: kubernetes``): the API server answers; every verb of the RBAC
  rules in ``starburst/adapters/kubernetes/rbac.yaml`` is granted to this identity
  (SelfSubjectAccessReview); nodes with ``nvidia.com/gpu`` are seen;
- *kueue* (``cluster: kubernetes``): whether Kueue is installed (API discovery), its
  ClusterQueues and which queues Starburst bursts for (``starburst.io/burst: "true"``);
- *skypilot* (``cloud: skypilot``): the API server answers, and which clouds it has enabled;
- *prices*: the price table's age (the date its prices were taken; the shipped table's age
  is a warning, an admin's own table's a problem);
- *runtime model* (``model_path`` set): its version and age;
- *leader*: which replica leads (from the database), and whether its lock is held now
  (none yet: a warning; not checked while the database lines are problems).
"""

from __future__ import annotations

import typer

from starburst.cli.server_settings import ConfigOption, settings_for


def doctor(config: ConfigOption = None) -> None:
    """Check the database, Kubernetes, SkyPilot, prices, the runtime model and leadership."""
    from starburst.doctor import run_checks

    results = run_checks(settings_for(config))
    for result in results:
        typer.echo(result.render())
    problems = sum(not r.ok for r in results)
    warnings = sum(r.warning for r in results)
    typer.echo(
        f"{len(results) - problems - warnings} OK, {warnings} warning(s), {problems} problem(s)"
    )
    raise typer.Exit(1 if problems else 0)
