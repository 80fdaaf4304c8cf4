"""Jobs as users create them on the real tier: suspended, queued for Starburst, and with the
security context PodSecurity ``restricted`` asks of every container."""

from __future__ import annotations

from typing import Any

SECURE = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def suspended_job(
    name: str, gpus: int = 1, pods: int = 1, suspend: bool = True, queue: str | None = "default"
) -> dict[str, Any]:
    labels = {"starburst.io/queue": queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "suspend": suspend,
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "trainer:1",
                            "command": ["python", "train.py"],
                            "securityContext": SECURE,
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
                }
            },
        },
    }


def condition(job: Any, kind: str) -> bool:
    """Has the Job (an official-client model) the condition ``kind`` with status True?"""
    return any(c.type == kind and c.status == "True" for c in job.status.conditions or ())
