"""Test harnesses the project owns (not imported by the product code).

``starburst.testing.kubeapi`` is a Kubernetes API stand-in server: no real kube-apiserver can
run on the development machines, so the Kubernetes adapter is tested against this server
through the official ``kubernetes`` client over loopback HTTP.
"""
