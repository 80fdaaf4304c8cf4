"""The store in memory: ``MemoryStore`` implements every store port of ``core.ports``
(``JobStore``, ``Ledger``, ``Accounts``, ``ModelRegistry``) with the SQL store's semantics and
passes the same contract suite. Standard library only: the controller runs on it on virtual
time, and tests use it where a database is not what they test.

Entry points: ``MemoryStore(clock=...)`` and ``MemoryLeaderLock(store)``.
"""
