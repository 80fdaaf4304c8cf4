"""``starburst doctor``: check everything Starburst depends on, one line per check.

Each line is ``OK`` or ``PROBLEM`` with what was found, and for a problem the fix
(``  fix: ...``). The exit code is 0 when every check is OK, 1 otherwise (2 for settings
that cannot be read, like every command). What is checked (``starburst.doctor``):

- *database*: reachable, and its schema at the newest migration;
- *kubernetes* (``cluster: kubernetes``): the API server answers; every verb of the RBAC
  rules in ``starburst/adapters/kubernetes/rbac.yaml`` is granted to this identity
  (SelfSubjectAccessReview); nodes with ``nvidia.com/gpu`` are seen;
- *skypilot* (``cloud: skypilot``): the API server answers, and which clouds it has enabled;
- *prices*: the price table's age (the date its prices were taken);
- *runtime model* (``model_path`` set): its version and age;
- *leader*: which replica leads (from the database), and whether its lock is held now.
"""

from __future__ import annotations

import typer

from starburst.cli.config import ConfigOption, settings_for


def doctor(config: ConfigOption = None) -> None:
    """Check the database, Kubernetes, SkyPilot, prices, the runtime model and leadership."""
    from starburst.doctor import run_checks

    results = run_checks(settings_for(config))
    for result in results:
        typer.echo(result.render())
    problems = sum(not r.ok for r in results)
    typer.echo(f"{len(results) - problems} OK, {problems} problem(s)")
    raise typer.Exit(1 if problems else 0)
