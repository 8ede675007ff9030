"""moreau._compressed: text files kept compressed (results/ stores training logs and large JSON as
``.xz``): ``find`` gives ``PATH``, ``PATH.xz`` or ``PATH.gz``, whichever exists, and
``open_text`` opens any of them the same way, so every reader takes either form."""
from __future__ import annotations

import gzip
import lzma
import os
from typing import IO, Optional

__all__ = ["SUFFIXES", "find", "open_text"]

SUFFIXES = (".xz", ".gz")


def find(path: str) -> Optional[str]:
    """``path`` if it exists, else ``path`` + ".xz" or + ".gz" if one exists, else None."""
    for p in (path,) + tuple(path + s for s in SUFFIXES):
        if os.path.exists(p):
            return p
    return None


def open_text(path: str, mode: str = "r", newline: Optional[str] = None) -> IO[str]:
    """``open(path, mode, newline=newline)`` for a plain file, lzma's or gzip's for a path ending
    in .xz or .gz (text mode; writing compresses at the highest preset)."""
    mode = mode.replace("t", "") + "t"
    if path.endswith(".xz"):
        return lzma.open(path, mode, newline=newline, **({"preset": 9} if "r" not in mode else {}))
    if path.endswith(".gz"):
        return gzip.open(path, mode, newline=newline)
    return open(path, mode, newline=newline)
