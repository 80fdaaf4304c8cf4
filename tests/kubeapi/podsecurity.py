"""Pod Security admission, ``restricted`` level only, as the stand-in's pod-create check.

A namespace labelled ``pod-security.kubernetes.io/enforce: restricted`` refuses (403
Forbidden) every Pod that breaks one of the restricted profile's checks below, with the real
plugin's message: ``pods "<name>" is forbidden: violates PodSecurity "restricted:latest":
<check> (<detail>), ...``. Workload objects (Jobs) are not refused (the real plugin only
warns about their templates), so a Job's pods are refused at creation and its controller
reports ``FailedCreate``.

Checks (a subset of the restricted profile, the ones a pod template usually misses):
``allowPrivilegeEscalation != false``, ``unrestricted capabilities`` (drop ``ALL``),
``runAsNonRoot != true``, ``runAsUser=0``, ``seccompProfile`` (``RuntimeDefault`` or
``Localhost``), ``privileged``, ``restricted volume types`` (``hostPath``).
"""

from __future__ import annotations

from typing import Any

from tests.kubeapi.status import ApiError

Obj = dict[str, Any]
ENFORCE = "pod-security.kubernetes.io/enforce"


def admit_pod(pod: Obj, namespace: Obj | None) -> None:
    """Refuse the pod if its namespace enforces ``restricted`` and the pod breaks it."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(ENFORCE) != "restricted":
        return
    problems = violations(pod.get("spec") or {})
    if problems:
        name = pod["metadata"].get("name", "")
        raise ApiError(
            403,
            "Forbidden",
            f'pods "{name}" is forbidden: violates PodSecurity '
            f'"restricted:latest": {", ".join(problems)}',
            {"name": name, "kind": "pods"},
        )


def violations(spec: Obj) -> list[str]:
    pod_ctx = spec.get("securityContext") or {}
    containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
    out: list[str] = []

    def each(test: Any) -> list[str]:
        return [str(c.get("name")) for c in containers if test(c.get("securityContext") or {})]

    if bad := each(lambda c: c.get("privileged") is True):
        out.append(f"privileged ({_names(bad)} must not set securityContext.privileged=true)")
    if bad := each(lambda c: c.get("allowPrivilegeEscalation") is not False):
        out.append(
            f"allowPrivilegeEscalation != false ({_names(bad)} must set "
            "securityContext.allowPrivilegeEscalation=false)"
        )
    if bad := each(lambda c: "ALL" not in ((c.get("capabilities") or {}).get("drop") or ())):
        out.append(
            f"unrestricted capabilities ({_names(bad)} must set "
            'securityContext.capabilities.drop=["ALL"])'
        )
    if hostpaths := [str(v.get("name")) for v in spec.get("volumes") or () if "hostPath" in v]:
        quoted = ", ".join(f'"{h}"' for h in hostpaths)
        out.append(
            f"restricted volume types (volume{'s' if len(hostpaths) > 1 else ''} "
            f"{quoted} use{'' if len(hostpaths) > 1 else 's'} restricted volume type "
            '"hostPath")'
        )
    non_root = pod_ctx.get("runAsNonRoot") is True
    if bad := each(
        lambda c: (
            c.get("runAsNonRoot") is False or (not non_root and c.get("runAsNonRoot") is not True)
        )
    ):
        out.append(
            f"runAsNonRoot != true (pod or {_names(bad)} must set "
            "securityContext.runAsNonRoot=true)"
        )
    setters = ["pod"] if pod_ctx.get("runAsUser") == 0 else []
    if bad := each(lambda c: c.get("runAsUser") == 0):
        setters.append(_names(bad))
    if setters:
        out.append(f"runAsUser=0 ({' and '.join(setters)} must not set runAsUser=0)")
    seccomp_ok = _seccomp_ok(pod_ctx)
    if bad := each(lambda c: not _seccomp_ok(c) if "seccompProfile" in c else not seccomp_ok):
        out.append(
            f"seccompProfile (pod or {_names(bad)} must set "
            'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
        )
    return out


def _seccomp_ok(ctx: Obj) -> bool:
    return (ctx.get("seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")


def _names(names: list[str]) -> str:
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"container{'s' if len(names) > 1 else ''} {quoted}"
