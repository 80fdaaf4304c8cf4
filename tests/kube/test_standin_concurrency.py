"""Many clients at once: writes are serialised, resourceVersions strictly increase, and a watch
sees every change exactly once, in order."""

from __future__ import annotations

import threading

from kubernetes import client, watch

from tests.kube.builders import pod_body


def test_concurrent_writers_and_one_watcher(kube, core):
    start_rv = core.list_namespaced_pod("default").metadata.resource_version
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        api_client = kube.api_client()  # each writer its own connection pool
        try:
            api = client.CoreV1Api(api_client)
            for i in range(20):
                name = f"w{n}-{i:02d}"
                api.create_namespaced_pod("default", pod_body(name, schedulerName="manual"))
                api.patch_namespaced_pod(name, "default", {"metadata": {"labels": {"n": "1"}}})
        except BaseException as err:
            errors.append(err)
        finally:
            api_client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    w, seen = watch.Watch(), []
    for event in w.stream(
        core.list_namespaced_pod, "default", resource_version=start_rv, timeout_seconds=10
    ):
        seen.append(
            (
                event["type"],
                event["raw_object"]["metadata"]["name"],
                int(event["raw_object"]["metadata"]["resourceVersion"]),
            )
        )
        if len(seen) == 160:
            w.stop()
    rvs = [rv for _, _, rv in seen]
    assert rvs == sorted(set(rvs))  # strictly increasing: one total order of writes
    assert sorted(n for t, n, _ in seen if t == "ADDED") == sorted(
        f"w{n}-{i:02d}" for n in range(4) for i in range(20)
    )
    assert sum(1 for t, _, _ in seen if t == "MODIFIED") == 80
    assert len(core.list_namespaced_pod("default", label_selector="n=1").items) == 80
