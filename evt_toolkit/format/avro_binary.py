"""Avro binary primitives shared by the hand-built encoders (object containers, log blocks, delete records)."""

from __future__ import annotations


def zigzag_long(n: int) -> bytes:
    """Avro ``int``/``long``: zig-zag encoding, then a base-128 varint (least significant group first)."""
    z = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def avro_bytes(data: bytes) -> bytes:
    """Avro ``bytes``/``string``: length as a long, then the bytes."""
    return zigzag_long(len(data)) + data
