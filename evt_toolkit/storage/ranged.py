"""Seekable readers over fetched bytes: a whole-object buffer, and a ranged reader for large objects."""

from __future__ import annotations

import io
from collections.abc import Callable

#: Large objects are fetched in blocks of this size, aligned, so neighbouring small reads (a log block's header
#: fields, a Parquet footer and its length) share one request.
RANGE_BLOCK = 1024 * 1024


class Buffer(io.BytesIO):
    """An in-memory file over one whole-object GET (``read``, ``seek``, ``tell``, ``size()``)."""

    def size(self) -> int:
        return len(self.getbuffer())


class RangedReader(io.RawIOBase):
    """A seekable reader of one large object that fetches aligned blocks on demand and keeps them.

    Args:
        size: object size in bytes.
        fetch: ``fetch([(start, end), ...]) -> [bytes, ...]`` (end exclusive); one coalesced request per run of
            adjacent blocks.
        name: the object's full URI (for ``repr``).
        prefix: bytes already fetched from offset 0 (the first GET of an object of unknown size).
    """

    def __init__(
        self,
        size: int,
        fetch: Callable[[list[tuple[int, int]]], list[bytes]],
        name: str,
        prefix: bytes = b"",
        block: int = RANGE_BLOCK,
    ) -> None:
        super().__init__()
        self._size = size
        self._fetch = fetch
        self._pos = 0
        self._block = block
        self._blocks: dict[int, bytes] = {}
        self.name = name
        # Only whole blocks of the prefix are kept, so every cached block has its full length.
        for i in range(len(prefix) // block):
            self._blocks[i] = prefix[i * block : (i + 1) * block]
        if prefix and len(prefix) >= size:
            self._blocks = {i: prefix[i * block : (i + 1) * block] for i in range((size + block - 1) // block)}

    def size(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def _ensure(self, first: int, last: int) -> None:
        missing = [i for i in range(first, last + 1) if i not in self._blocks]
        if not missing:
            return
        runs: list[tuple[int, int]] = []
        for i in missing:
            if runs and runs[-1][1] == i - 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
        ranges = [(a * self._block, min(self._size, (b + 1) * self._block)) for a, b in runs]
        for (a, b), data in zip(runs, self._fetch(ranges), strict=True):
            for i in range(a, b + 1):
                off = (i - a) * self._block
                self._blocks[i] = data[off : off + self._block]

    def read(self, n: int | None = -1) -> bytes:
        if self._pos >= self._size:
            return b""
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        first, last = self._pos // self._block, (end - 1) // self._block
        self._ensure(first, last)
        out = b"".join(self._blocks[i] for i in range(first, last + 1))
        start = self._pos - first * self._block
        data = out[start : start + (end - self._pos)]
        self._pos = end
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)
