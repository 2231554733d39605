from yewpy.core import EnumerationCore

class NQueensCore(EnumerationCore):
    n: int
    def __init__(self, n: int) -> None: ...
