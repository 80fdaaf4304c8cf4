"""The decision core: pure scheduling semantics shared by the simulator and the controller.

Standard library only. Time, randomness and I/O come in as arguments; nothing here reads the
clock or touches a network. The rules implemented here are the contract in
docs/scheduling.md; where the core sits among the layers and ports, docs/architecture.md.
"""
