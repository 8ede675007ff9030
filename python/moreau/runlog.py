"""moreau.runlog: a training run's log.csv, one row per iteration, appended across resumes."""
from __future__ import annotations

import csv
import os
from typing import Dict, List, Optional

__all__ = ["CsvLog"]


class CsvLog:
    """Appends rows (dicts) to ``path``. On a resume (``iteration``: the iteration the run goes on
    from) rows past that iteration, written after the checkpoint it resumed from, are dropped; the
    first row fixes the columns and a file with other columns is rewritten with them (values of
    columns it lacks left empty)."""

    def __init__(self, path: str, iteration: int = 0):
        self.path = path
        self.keys: Optional[List[str]] = None  # this run's columns, from its first row
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.rows: List[Dict[str, str]] = []  # the earlier rows kept, until the first write
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path, newline="") as f:
                self.rows = [r for r in csv.DictReader(f) if int(float(r["iteration"])) <= iteration]
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
            self.keys, self.rows = keys, []
            self.file = open(self.path, "a", newline="")
            self.writer = csv.writer(self.file)
        self.writer.writerow([row.get(k, "") for k in self.keys])
        self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
