"""The search runtime: the one worker loop and the transports it runs on.

``loop.drive`` runs an engine over a worker's tasks; a transport connects the worker to the others:
``local.LocalTransport`` for one process, ``mpi.MPITransport`` for MPI ranks (work stealing over a
spanning tree of control messages).  The runtime knows the engine and the coordination interface
(``engine_options``, ``make_pool``, ``after_budget``, ``steal``), never an app or a particular
coordination.
"""
