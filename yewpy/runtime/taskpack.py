"""Tasks on the wire: a list of ``(depth, node)`` pairs as one compact buffer where it can be.

Compiled cores dump their nodes as ``bytes``; a batch of them travels as three buffers (depths,
lengths, the concatenated nodes) instead of one pickled tuple per node, packed and unpacked in C
(``_taskpack``; ``YEWPY_TASKPACK=python`` uses the Python below, for side-by-side runs).  Other
nodes travel as the list itself.
"""

from __future__ import annotations

import os
from array import array
from itertools import accumulate
from operator import itemgetter
from typing import Any

from yewpy.runtime import _taskpack

COMPILED = os.environ.get("YEWPY_TASKPACK", "c") != "python"


def pack(tasks: list) -> Any:
    """The message payload for ``tasks``."""
    if COMPILED:
        packed = _taskpack.pack_bytes(tasks) if tasks else None
        return ("list", tasks) if packed is None else ("bytes", *packed)
    nodes = [node for _, node in tasks]
    if nodes and all(type(node) is bytes for node in nodes):
        depths = array("i", map(itemgetter(0), tasks))
        lengths = array("i", map(len, nodes))
        return ("bytes", depths.tobytes(), lengths.tobytes(), b"".join(nodes))
    return ("list", tasks)


def unpack(payload: Any) -> list:
    """The tasks ``pack`` put in ``payload``."""
    if payload[0] == "list":
        return payload[1]
    _, raw_depths, raw_lengths, blob = payload
    if COMPILED:
        return _taskpack.unpack_bytes(raw_depths, raw_lengths, blob)
    depths, lengths = array("i"), array("i")
    depths.frombytes(raw_depths)
    lengths.frombytes(raw_lengths)
    return [(depth, blob[end - length:end])
            for depth, length, end in zip(depths, lengths, accumulate(lengths))]
