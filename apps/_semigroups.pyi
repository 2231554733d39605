from yewpy.core import EnumerationCore

MAX_GENUS: int

class SemigroupsCore(EnumerationCore):
    genus: int
    size: int
    zero: tuple[int, ...]
    def __init__(self, genus: int) -> None: ...
    def combine(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]: ...
    def semigroup(self, node: bytes) -> tuple[tuple[int, ...], int, int, int]: ...
