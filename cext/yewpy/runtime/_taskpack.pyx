# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled half of ``yewpy.runtime.taskpack``: a share of tasks whose nodes are all ``bytes``
packed into three buffers and back without a Python object per task on the way (a steal is on the
critical path of an idle thief, and T3L-like trees steal a thousand times a second per rank)."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy


def pack_bytes(list tasks):
    """``(depths, lengths, blob)`` for ``(depth, node)`` tasks whose nodes are all bytes (native
    int32 depths and lengths, the nodes concatenated); None if some node is not bytes."""
    cdef Py_ssize_t n = len(tasks), i, total = 0, offset = 0, size
    cdef int value
    cdef object task, node
    for i in range(n):
        task = tasks[i]
        if type(task[1]) is not bytes:
            return None
        total += PyBytes_GET_SIZE(task[1])
    depths = PyBytes_FromStringAndSize(NULL, 4 * n)
    lengths = PyBytes_FromStringAndSize(NULL, 4 * n)
    blob = PyBytes_FromStringAndSize(NULL, total)
    cdef char* d = PyBytes_AS_STRING(depths)
    cdef char* s = PyBytes_AS_STRING(lengths)
    cdef char* b = PyBytes_AS_STRING(blob)
    for i in range(n):
        task = tasks[i]
        node = task[1]
        size = PyBytes_GET_SIZE(node)
        value = task[0]
        memcpy(d + 4 * i, &value, 4)
        value = <int>size
        memcpy(s + 4 * i, &value, 4)
        memcpy(b + offset, PyBytes_AS_STRING(node), size)
        offset += size
    return depths, lengths, blob


def unpack_bytes(bytes depths, bytes lengths, bytes blob):
    """The ``(depth, node)`` tasks that ``pack_bytes`` put in the three buffers."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(depths) // 4, i, offset = 0
    cdef int depth, size
    cdef const char* d = PyBytes_AS_STRING(depths)
    cdef const char* s = PyBytes_AS_STRING(lengths)
    cdef const char* b = PyBytes_AS_STRING(blob)
    cdef list out = [None] * n
    for i in range(n):
        memcpy(&depth, d + 4 * i, 4)
        memcpy(&size, s + 4 * i, 4)
        if size < 0 or offset + size > PyBytes_GET_SIZE(blob):
            raise ValueError("a task buffer is shorter than its lengths say")
        out[i] = (depth, PyBytes_FromStringAndSize(b + offset, size))
        offset += size
    return out
