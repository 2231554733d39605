from yewpy.core import EnumerationCore

BIN: int
GEO: int
HYBRID: int
BALANCED: int
LINEAR: int
EXPDEC: int
CYCLIC: int
FIXED: int
MAX_CHILDREN: int

def sha1_implementations() -> list[str]: ...
def sha1_implementation() -> str: ...
def set_sha1_implementation(name: str) -> None: ...
def sha1(data: bytes, implementation: str = "auto") -> bytes: ...
def spawn(parent: bytes, i: int, implementation: str = "auto") -> bytes: ...
def root_digest(seed: int) -> bytes: ...

class UTSCore(EnumerationCore):
    tree_type: int
    b0: float
    gen_mx: int
    shape: int
    q: float
    m: int
    seed: int
    shift: float
    leaves: int
    def __init__(self, tree_type: int = 1, b0: float = 4.0, gen_mx: int = 6, shape: int = 0,
                 q: float = 0.234375, m: int = 4, seed: int = 0, shift: float = 0.5) -> None: ...
    def counters(self) -> dict[str, int]: ...
    def children_of(self, digest: bytes, height: int) -> int: ...
