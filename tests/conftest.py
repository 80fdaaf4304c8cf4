"""Fixtures every test package may use: the real Kubernetes control plane (``real_kube``,
one per session, built and started only when a test asks for it) and a fresh PodSecurity-
restricted namespace in it (``real_namespace``). See ``tests.support.controlplane``."""

from tests.support.controlplane import real_kube, real_namespace  # noqa: F401 (fixtures)
