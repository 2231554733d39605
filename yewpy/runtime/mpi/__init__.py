"""Work stealing over MPI: every rank searches, idle ranks steal, control travels on a spanning tree.

Rank 0 starts from the root; every other rank starts idle and steals.  A victim hands a thief a
share of its open work (``steal``: half of it by default, shallowest first, packed into one
buffer); busy ranks read messages every ``slice_nodes`` nodes, a count adapted so that a slice
lasts about ``SLICE_TARGET`` seconds whatever a node costs (longer where every thief can ring the
victim's doorbell, ``doorbells``).  Thieves pick a random rank on their
own node first, then random remote ones, and retry the last rank that gave them work.

Everything else is a wave or a flood on a binary spanning tree (``tree.SpanningTree``), so each
event costs O(log P) hops and at most three messages per rank: incumbents and STOP flood out,
progress reports and checkpoint parts come up, checkpoint and resume orders go down, and
termination is detected by waves that add up the work messages each rank has sent and received
(Mattern's four-counter method: two waves that see the same totals, sent = received, answered
only by idle ranks).  Sends are synchronous-mode and non-blocking (``issend``), and the final
non-blocking barrier starts only once a rank's own sends are matched, so no message is left in
flight when the job ends.

One module per protocol, each a mixin of :class:`MPITransport` that owns its tags and their
handlers: ``stealing`` (STEAL, WORK, NOWORK), ``termination`` (WAVE, ECHO), ``checkpoints``
(CHECKPOINT, PARTS, RESUME) and ``progress`` (PROGRESS); the floods (INCUMBENT, STOP), the
message loop and the search loop's hooks are in ``transport``; the tags in ``tags``.
"""

from yewpy.runtime.mpi.stealing import Victims
from yewpy.runtime.mpi.transport import MPITransport

__all__ = ["MPITransport", "Victims"]
