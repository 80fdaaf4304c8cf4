"""The store in memory: ``MemoryStore`` implements the core's ``Store`` (its repositories
``submissions``, ``jobs``, ``lifecycle``, ``ledger``, ``accounts``, ``models`` and ``tuning``
implement the ports ``Submissions``, ``JobReads``, ``Lifecycle``, ``Ledger``, ``Accounts``,
``ModelRegistry`` and ``TuningLog``) with the SQL store's semantics
and passes the same contract suite. Standard library only: the controller runs on it on virtual
time, and tests use it where a database is not what they test.

Entry points: ``MemoryStore(clock=...)`` and ``MemoryLeaderLock(store)``.
"""
