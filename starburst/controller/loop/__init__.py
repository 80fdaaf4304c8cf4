"""The controller's pass: what one scheduling pass reads, decides and does, handed ports, a
lock and a locality (``SchedulingLoop`` in ``scheduling``; the queue view, the moves, the
cloud side, the gates and ceilings it uses). Nothing here imports an adapter (an import
contract); the process around the pass (leadership, periodic work, probes, logs, the
wiring) is the package above, ``starburst.controller``."""
