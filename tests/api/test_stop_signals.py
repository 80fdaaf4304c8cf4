"""``starburst server|controller|api`` stop on SIGTERM/SIGINT whenever it arrives: before
uvicorn serves (while the controller is built and started) as well as while it serves; and
the heap is settled for the cycle collector before serving starts."""

from __future__ import annotations

import gc
import signal
from collections.abc import Iterator

import pytest

from starburst.api.serve import YOUNG_THRESHOLD, StopSignals


class FakeServer:
    """What ``StopSignals.serve`` needs of a ``uvicorn.Server``."""

    def __init__(self, signal_while_serving: bool = False) -> None:
        self.should_exit = False
        self.ran = False
        self._signal = signal_while_serving

    def run(self) -> None:
        self.ran = True
        if self._signal:
            signal.raise_signal(signal.SIGTERM)


@pytest.fixture
def restored() -> Iterator[None]:
    """The signal handlers and the cycle collector's settings as they were."""
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    threshold = gc.get_threshold()
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_before_serving_is_remembered_and_nothing_is_served(sig: int) -> None:
    stops = StopSignals().install()
    signal.raise_signal(sig)  # the process lives on: the handler absorbed it
    server = FakeServer()
    stops.serve(server)
    assert stops.requested and not server.ran


@pytest.mark.usefixtures("restored")
def test_a_stop_while_serving_tells_the_server_to_exit() -> None:
    stops = StopSignals().install()
    server = FakeServer(signal_while_serving=True)
    stops.serve(server)
    assert server.ran and server.should_exit and stops.requested


@pytest.mark.usefixtures("restored")
def test_without_a_stop_the_server_runs() -> None:
    server = FakeServer()
    StopSignals().install().serve(server)
    assert server.ran and not server.should_exit


@pytest.mark.usefixtures("restored")
def test_the_heap_is_settled_before_the_server_runs() -> None:
    gc.unfreeze()
    seen: dict[str, int] = {}

    class Watching(FakeServer):
        def run(self) -> None:
            seen["frozen"], seen["young"] = gc.get_freeze_count(), gc.get_threshold()[0]

    StopSignals().install().serve(Watching())
    assert seen["frozen"] > 0  # start-up's objects are out of the collector's sight
    assert seen["young"] == YOUNG_THRESHOLD
