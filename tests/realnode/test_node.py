"""The real node: it is Ready beside the control plane, runs pods under PodSecurity
``restricted``, gives them addresses on its bridge, and its pods reach the API server through
the ``kubernetes`` Service (kube-proxy's iptables rules) and each other by pod IP.

No CoreDNS runs: the tests use addresses (the Service's ClusterIP from the pod's environment,
``KUBERNETES_SERVICE_HOST``), since nothing here needs names.
"""

from __future__ import annotations

import ipaddress

from tests.realnode.pods import Pods
from tests.support.realnode import NODE, POD_SUBNET, RealNode


def test_the_node_is_ready_and_reports_the_pinned_kubelet(real_node: RealNode) -> None:
    node = real_node.kube.request("GET", f"/api/v1/nodes/{NODE}")
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == real_node.kube.version
    assert info["containerRuntimeVersion"].startswith("containerd://")
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == real_node.kube.host
    assert not node["spec"].get("taints")


def test_a_pod_runs_to_completion_and_its_output_is_in_the_log(pods: Pods) -> None:
    pods.run("hello", "echo hello from $(hostname); exit 0")
    pod = pods.wait_phase("hello", "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Succeeded"
    assert pods.log("hello") == "hello from hello\n"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_a_pod_reaches_the_api_server_through_the_kubernetes_service(pods: Pods) -> None:
    # plain HTTP to the HTTPS port: only Go's TLS server answers this sentence
    pods.run(
        "to-api",
        'echo "service $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; '
        'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 5 "$KUBERNETES_SERVICE_HOST" '
        '"$KUBERNETES_SERVICE_PORT"',
    )
    pod = pods.wait_phase("to-api", "Succeeded", "Failed")
    out = pods.log("to-api")
    assert out.startswith("service 10.0.0.1:443\n"), out
    assert "Client sent an HTTP request to an HTTPS server" in out, out
    assert pod["status"]["phase"] == "Succeeded", out
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(POD_SUBNET)


def test_pods_reach_each_other_by_pod_ip(pods: Pods) -> None:
    pods.run("server", "echo pong | nc -l -p 8080; echo served")
    server = pods.wait_phase("server", "Running")
    ip = server["status"]["podIP"]
    pods.run(
        "client",
        f"for i in 1 2 3 4 5 6 7 8 9 10; do nc -w 2 {ip} 8080 && exit 0; sleep 1; done; exit 1",
    )
    client = pods.wait_phase("client", "Succeeded", "Failed")
    assert client["status"]["phase"] == "Succeeded", pods.log("client")
    assert pods.log("client") == "pong\n"
    assert pods.wait_phase("server", "Succeeded")["status"]["phase"] == "Succeeded"
    assert pods.log("server") == "served\n"
