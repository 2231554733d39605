"""Tasks on the wire: a list of ``(depth, node)`` pairs as one compact buffer where it can be.

Compiled cores dump their nodes as ``bytes``; a batch of them travels as three buffers (depths,
lengths, the concatenated nodes) instead of one pickled tuple per node.  Other nodes travel as
the list itself.
"""

from __future__ import annotations

from array import array
from typing import Any


def pack(tasks: list) -> Any:
    """The message payload for ``tasks``."""
    if tasks and all(type(node) is bytes for _, node in tasks):
        depths = array("i", [depth for depth, _ in tasks])
        lengths = array("i", [len(node) for _, node in tasks])
        return ("bytes", depths.tobytes(), lengths.tobytes(), b"".join(node for _, node in tasks))
    return ("list", tasks)


def unpack(payload: Any) -> list:
    """The tasks ``pack`` put in ``payload``."""
    if payload[0] == "list":
        return payload[1]
    _, raw_depths, raw_lengths, blob = payload
    depths, lengths = array("i"), array("i")
    depths.frombytes(raw_depths)
    lengths.frombytes(raw_lengths)
    tasks, offset = [], 0
    view = memoryview(blob)
    for depth, length in zip(depths, lengths):
        tasks.append((depth, bytes(view[offset:offset + length])))
        offset += length
    return tasks
