"""An uncompressed tar archive read whole in one buffer (Storm's binary export of a model,
:mod:`jaxprivmdp.io._prism_source`): its members are NumPy views, no copy per member.
``tarfile`` extracts each member into new bytes (a copy of every array of a 10⁶-state
model), so it serves only the archives this reader does not parse (long names, pax
headers, members over 8 GB)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np


def read_tar(path: Path, names) -> dict[str, np.ndarray]:
    """The named members of an uncompressed tar archive: `uint8` views of one read of the
    file (the data blocks start at multiples of 512 bytes: aligned for any dtype)."""
    raw = np.empty(path.stat().st_size, np.uint8)
    with open(path, "rb", buffering=0) as f:
        done = 0
        while done < raw.size and (n := f.readinto(memoryview(raw)[done:])):
            done += n
    found, at = {}, 0
    while at + 512 <= done:
        header = raw[at : at + 512].tobytes()
        if not header.strip(b"\0"):  # the end of the archive
            return found
        kind, size = header[156:157], header[124:136]
        if kind not in (b"0", b"\0", b"5") or size[:1] >= b"\x80":
            return _read_slowly(path, names)  # long names, pax headers, huge members
        name = header[:100].split(b"\0", 1)[0].decode()
        if header[257:262] == b"ustar" and header[345] != 0:
            name = header[345:500].split(b"\0", 1)[0].decode() + "/" + name
        size = int(size.split(b"\0", 1)[0].strip() or b"0", 8)
        at += 512
        if name in names and kind != b"5":
            found[name] = raw[at : at + size]
            if len(found) == len(names):  # (the rest: labels, rewards, valuations)
                return found
        at += -(-size // 512) * 512
    return found


def _read_slowly(path: Path, names) -> dict[str, np.ndarray]:
    with tarfile.open(path) as archive:
        present = set(archive.getnames())
        return {
            n: np.frombuffer(bytearray(archive.extractfile(n).read()), np.uint8)
            for n in names
            if n in present
        }
