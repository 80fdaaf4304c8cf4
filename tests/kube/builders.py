"""Builders for the stand-in tests: plain-dict Pods and Jobs, and raw requests.

Bodies are dicts (what ``kubectl apply`` would send); the official client serialises them
unchanged. ``call`` sends a request the typed API cannot express (a merge patch, say) through
the same official ``ApiClient``.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client


def call(
    api: client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> Any:
    return api.call_api(
        path,
        method,
        query_params=query or [],
        body=body,
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        response_type="object",
        _return_http_data_only=True,
    )


def pod_body(
    name: str | None = None, labels: dict[str, str] | None = None, gpus: int = 0, **spec: Any
) -> dict[str, Any]:
    resources = {"requests": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    meta: dict[str, Any] = {"labels": labels or {}}
    if name:
        meta["name"] = name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
            **spec,
        },
    }


def job_body(
    name: str,
    gpus: int = 1,
    parallelism: int = 1,
    suspend: bool = False,
    labels: dict[str, str] | None = None,
    **pod_spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "suspend": suspend,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "trainer:1",
                            "resources": {
                                "requests": {
                                    "nvidia.com/gpu": str(gpus),
                                    "cpu": "1",
                                    "memory": "1Gi",
                                },
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                    **pod_spec,
                }
            },
        },
    }
