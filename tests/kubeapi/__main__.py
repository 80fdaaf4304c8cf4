"""Run the stand-in as its own process: ``python -m tests.kubeapi --port N``.

Prints the kubeconfig (and writes it to ``--kubeconfig PATH`` when given) so the official
client, the Starburst daemon and ``kubectl`` can point at it; ``--gpu-nodes N`` adds N
8-GPU nodes. Runs until interrupted (SIGINT/SIGTERM), then stops cleanly.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

import yaml

from tests.kubeapi.server import KubeApiServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kubeapi")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--kubeconfig", type=Path, help="also write the kubeconfig here")
    parser.add_argument("--gpu-nodes", type=int, default=0, help="add this many 8-GPU nodes")
    parser.add_argument("--history", type=int, default=10_000, help="watch history window")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # before the kubeconfig goes out
    server = KubeApiServer(port=args.port, history=args.history).start()
    for i in range(args.gpu_nodes):
        server.add_node(f"gpu-node-{i:04d}", gpus=8)
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    sys.stdout.write(yaml.safe_dump(server.kubeconfig(), sort_keys=False))
    sys.stdout.flush()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
