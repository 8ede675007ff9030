"""moreau.trainers.runlog: a training run's log.csv, one row per iteration, appended across resumes.

A run folder keeps ``log.csv``; results/ keeps it compressed (``log.csv.xz``, ``compress_log``):
``find_log`` and ``read_log`` take either, and a run resumed from a compressed log goes on in a
plain one.
"""
from __future__ import annotations

import csv
import io
import os
from typing import Dict, List, Optional

from .._compressed import SUFFIXES, find, open_text

__all__ = ["CsvLog", "TIMING_DIGITS", "find_log", "read_log", "compress_log"]

TIMING_DIGITS = 5  # significant digits compress_log keeps of the timing columns


def find_log(run_dir: str) -> Optional[str]:
    """The run folder's log: log.csv, else log.csv.xz or log.csv.gz; None if there is none."""
    return find(os.path.join(run_dir, "log.csv"))


def read_log(path: str) -> List[Dict[str, str]]:
    """The rows of a log (plain or compressed), as csv.DictReader gives them."""
    with open_text(path, newline="") as f:
        return list(csv.DictReader(f))


def _timing(column: str) -> bool:
    return column in ("wall_time", "fps", "iteration_time") or column.startswith("time_")


def _round(value: str, digits: int) -> str:
    """A float as written, to ``digits`` significant digits (repr of the rounded float); integers,
    empty cells, nan and inf as they are."""
    if not value or not any(c in value for c in ".eE"):
        return value
    try:
        x = float(value)
    except ValueError:
        return value
    if x != x or x in (float("inf"), float("-inf")):
        return value
    return repr(float(f"{x:.{digits}g}"))


def compress_log(src: str, dst: str, digits: int = TIMING_DIGITS) -> None:
    """Writes the log ``src`` (plain or compressed) to ``dst`` (.xz or .gz), with the timing columns
    (wall_time, fps, iteration_time, time_*: measurements whose noise is far above 1e-5) rounded to
    ``digits`` significant digits; every other cell as written. About 4x smaller than the plain
    log; ``read_log`` reads it."""
    with open_text(src, newline="") as f:
        text = f.read()
    newline = "\r\n" if "\r\n" in text else "\n"
    rows = csv.reader(io.StringIO(text, newline=""))
    out = io.StringIO(newline="")
    w = csv.writer(out, lineterminator=newline)
    header = next(rows, None)
    if header is not None:
        w.writerow(header)
        timing = [_timing(c) for c in header]
        for r in rows:
            w.writerow([_round(v, digits) if i < len(timing) and timing[i] else v for i, v in enumerate(r)])
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    root, ext = os.path.splitext(dst)
    tmp = f"{root}.tmp{ext}"  # compressed as dst is
    with open_text(tmp, "w", newline="") as f:
        f.write(out.getvalue())
    os.replace(tmp, dst)


class CsvLog:
    """Appends rows (dicts) to ``path``. On a resume (``iteration``: the iteration the run goes on
    from) rows past that iteration, written after the checkpoint it resumed from, are dropped; the
    first row fixes the columns and a file with other columns is rewritten with them (values of
    columns it lacks left empty). A compressed log (``path`` + .xz or .gz, restored from results/)
    is read the same way and replaced by ``path`` at the first write."""

    def __init__(self, path: str, iteration: int = 0):
        self.path = path
        self.keys: Optional[List[str]] = None  # this run's columns, from its first row
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.rows: List[Dict[str, str]] = []  # the earlier rows kept, until the first write
        found = find(path)
        if found is not None and os.path.getsize(found) > 0:
            self.rows = [r for r in read_log(found) if int(float(r["iteration"])) <= iteration]
        self.file = None
        self.writer = None

    def write(self, row: Dict) -> None:
        if self.file is None:
            keys = list(row)
            with open(self.path + ".tmp", "w", newline="") as f:  # what is kept, with this run's columns
                w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
                w.writeheader()
                w.writerows(self.rows)
            os.replace(self.path + ".tmp", self.path)
            for suffix in SUFFIXES:  # the compressed log it went on from: its rows are in path now
                if os.path.exists(self.path + suffix):
                    os.remove(self.path + suffix)
            self.keys, self.rows = keys, []
            self.file = open(self.path, "a", newline="")
            self.writer = csv.writer(self.file)
        self.writer.writerow([row.get(k, "") for k in self.keys])
        self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
