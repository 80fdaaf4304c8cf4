"""``starburst server|controller|api`` stop on SIGTERM/SIGINT whenever it arrives: before
uvicorn serves (while the controller is built and started) as well as while it serves."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from starburst.api.serve import StopSignals


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
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


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
