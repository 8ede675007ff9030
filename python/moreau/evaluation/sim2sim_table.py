"""moreau.evaluation.sim2sim_table: the sim-to-sim table of scripts/sim2sim.sh's JSON files.

    python3 -m moreau.evaluation.sim2sim_table results/transfer/walk_fast [more folders ...]

Each folder holds ``exported.json`` (moreau.evaluation.mujoco on moreau's export of the policy's
robot, with moreau's own evaluation beside it), ``menagerie_no_push.json`` and
``menagerie_push.json`` (the Menagerie's ANYmal C as it is, without and with pushes). One row per
folder: planar velocity error [m/s], yaw-rate error [rad/s] and falls per minute of each column,
and the robot-minutes behind each; ``--markdown`` prints a Markdown table. With ``--effects``, the
table of each folder's ``effects/*.json`` instead (moreau.evaluation.evaluate with one
perturbation of the robot each: scripts/transfer.sh).
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Dict, List

__all__ = ["COLUMNS", "read_row", "read_effects", "format_rows", "main"]

# (title, file, which simulator's metrics)
COLUMNS = (("moreau, hard", "exported.json", "moreau"), ("MuJoCo, moreau's export", "exported.json", "mujoco"),
           ("MuJoCo, Menagerie as is", "menagerie_no_push.json", "mujoco"),
           ("as is, with pushes", "menagerie_push.json", "mujoco"))


def read_row(folder: str) -> Dict:
    """{column title: (planar error, yaw-rate error, falls per minute, robot-minutes)} of a folder;
    a column whose file is missing is absent."""
    row = {}
    for title, name, sim in COLUMNS:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            d = json.load(f)
        m = d[sim]
        if m is None:
            raise ValueError(f"{path}: no {sim} evaluation in it")
        minutes = d["num_envs"] * d["seconds"] / 60.0
        row[title] = (m["lin_vel_error"], m["yaw_rate_error"], m["falls_per_minute"], minutes)
    return row


def read_effects(folder: str) -> Dict:
    """{perturbation: (planar error, yaw-rate error, falls per minute, robot-minutes)} of a
    folder's effects/*.json."""
    row = {}
    for name in sorted(os.listdir(os.path.join(folder, "effects"))):
        if name.endswith(".json"):
            with open(os.path.join(folder, "effects", name)) as f:
                m = json.load(f)
            row[name[:-5]] = (m["lin_vel_error"], m["yaw_rate_error"], m["falls_per_minute"], m["num_envs"] * m["seconds"] / 60)
    return row


def format_rows(rows: Dict[str, Dict], markdown: bool = False, titles: List[str] = None) -> str:
    titles = titles or [t for t, _, _ in COLUMNS]
    cell = lambda c: "–" if c is None else f"{c[0]:.3f}, {c[1]:.3f}, {c[2]:.2f}"
    if markdown:
        lines = ["| policy | " + " | ".join(titles) + " |", "|---|" + "---|" * len(titles)]
        lines += [f"| {name} | " + " | ".join(cell(r.get(t)) for t in titles) + " |" for name, r in rows.items()]
    else:
        lines = ["planar error [m/s], yaw-rate error [rad/s], falls per minute"]
        for name, r in rows.items():
            lines.append(name)
            lines += [f"  {t:26s} {cell(r.get(t))}" + (f"  ({r[t][3]:.1f} robot-minutes)" if t in r else "")
                      for t in titles]
    return "\n".join(lines)


def main(argv: List[str] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.evaluation.sim2sim_table", description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--effects", action="store_true", help="the folders' effects/*.json instead")
    a = p.parse_args(argv)
    read = read_effects if a.effects else read_row
    rows = {os.path.basename(f.rstrip("/")): read(f) for f in a.folders}
    titles = sorted({t for r in rows.values() for t in r}) if a.effects else None
    print(format_rows(rows, a.markdown, titles))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
