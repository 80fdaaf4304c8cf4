"""The Kubernetes API stand-in for the doctor's Kubernetes lines."""

from tests.kubeapi import fixtures as standin

kube = standin.kube
