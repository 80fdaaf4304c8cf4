"""The Pod Security Standards' ``restricted`` profile (Kubernetes 1.34), checked on pod specs.

Each check is one rule of https://kubernetes.io/docs/concepts/security/pod-security-standards/
(baseline rules included, as ``restricted`` is a superset). ``violations(pod_spec)`` returns one
line per broken rule, naming the container; an empty list means the pod would be admitted in
a namespace labelled ``pod-security.kubernetes.io/enforce: restricted``.
"""

from __future__ import annotations

from typing import Any

ALLOWED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *spec.get("initContainers", []),
        *spec.get("containers", []),
        *spec.get("ephemeralContainers", []),
    ]


def _effective(pod: dict[str, Any], container: dict[str, Any], key: str) -> Any:
    own = (container.get("securityContext") or {}).get(key)
    return own if own is not None else pod.get(key)


def _pod_rules(spec: dict[str, Any]) -> list[str]:
    out = [
        f"spec.{k} must not be true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)
    ]
    out += [
        f"volume {v['name']}: type not allowed"
        for v in spec.get("volumes", [])
        if not set(v) - {"name"} <= ALLOWED_VOLUMES
    ]
    pod_ctx = spec.get("securityContext") or {}
    out += [
        f"sysctl {s['name']} not allowed"
        for s in pod_ctx.get("sysctls", [])
        if s["name"] not in SAFE_SYSCTLS
    ]
    if pod_ctx.get("runAsUser") == 0:
        out.append("spec.securityContext.runAsUser must not be 0")
    return out


def _container_rules(pod_ctx: dict[str, Any], c: dict[str, Any]) -> list[str]:
    name, ctx = c["name"], c.get("securityContext") or {}
    out: list[str] = []
    if ctx.get("privileged"):
        out.append(f"{name}: privileged")
    if ctx.get("allowPrivilegeEscalation") is not False:
        out.append(f"{name}: allowPrivilegeEscalation must be false")
    caps = ctx.get("capabilities") or {}
    if "ALL" not in (caps.get("drop") or []):
        out.append(f"{name}: capabilities.drop must include ALL")
    if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
        out.append(f"{name}: capabilities.add may only hold NET_BIND_SERVICE")
    if _effective(pod_ctx, c, "runAsNonRoot") is not True:
        out.append(f"{name}: runAsNonRoot must be true")
    if ctx.get("runAsUser") == 0:
        out.append(f"{name}: runAsUser must not be 0")
    seccomp = (_effective(pod_ctx, c, "seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        out.append(f"{name}: seccompProfile.type must be RuntimeDefault or Localhost")
    if any(p.get("hostPort") for p in c.get("ports", [])):
        out.append(f"{name}: hostPort not allowed")
    if ctx.get("procMount") not in (None, "Default"):
        out.append(f"{name}: procMount must be Default")
    return out


def violations(spec: dict[str, Any]) -> list[str]:
    """Every ``restricted`` rule the pod spec breaks (empty: it passes)."""
    pod_ctx = spec.get("securityContext") or {}
    out = _pod_rules(spec)
    for container in _containers(spec):
        out += _container_rules(pod_ctx, container)
    return out
