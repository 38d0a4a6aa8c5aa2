"""Crafting zip archives that lie: the declared sizes of a member rewritten in place."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path


def patch_declared(path: Path, member: str, size: int) -> None:
    """Rewrite the uncompressed size ``path`` declares for ``member``, in its local header and
    its central directory entry (sizes below 4 GiB, no zip64 record)."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    struct.pack_into("<I", raw, info.header_offset + 22, size)
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46:at + 46 + name_len] == member.encode():
            struct.pack_into("<I", raw, at + 24, size)
        at = raw.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(raw))
