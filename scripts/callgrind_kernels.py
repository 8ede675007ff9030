"""Instructions of a callgrind dump per kernels/ function: the self cost of every source line
(inlined code included, as the debug line tables give it) summed over the function that encloses
the line in kernels/*.h; spatial.h's small helpers, inlined everywhere, are one bucket.

    python3 scripts/callgrind_kernels.py DUMP PHYSICS_STEPS [TOP]
"""
import collections
import os
import re
import sys

FUNC = re.compile(r"^MOREAU_HD\w*\s.*?\b(\w+)\s*\(")


def line_costs(path):
    """(file, line) -> Ir, self costs only (the cost line after calls= is a call's inclusive cost)."""
    names, costs = {}, collections.Counter()
    sub = None  # the file the cost lines belong to (fl=, or an inlined one: fi=/fe=)
    pos, skip = 0, False
    for raw in open(path):
        line = raw.rstrip("\n")
        m = re.match(r"^(fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$", line)  # one namespace of file names
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if not m.group(1).startswith("c"):  # cfi/cfl name a callee's file
                sub = names[m.group(2)]
            continue
        if line.startswith("calls="):
            skip = True
            continue
        if not line or not (line[0].isdigit() or line[0] in "+-*"):
            continue
        field, *vals = line.split()
        pos = pos + int(field) if field[0] in "+-" else (pos if field == "*" else int(field))
        if skip:
            skip = False
            continue
        if vals and sub:
            costs[(sub, pos)] += int(vals[0])
    return costs


def functions(path):
    """Sorted (first line, name) of the MOREAU_HD functions of a kernels/ header."""
    out = []
    for i, text in enumerate(open(path), 1):
        m = FUNC.match(text)
        if m:
            out.append((i, m.group(1)))
    return out


def main():
    dump, steps = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    costs = line_costs(dump)
    total = sum(costs.values())
    by = collections.Counter()
    cache = {}
    for (f, ln), ir in costs.items():
        if "/kernels/" not in f:
            by["(outside kernels/: simulator API, backend loop, libm)"] += ir
            continue
        base = os.path.basename(f)
        if base == "spatial.h":
            by["spatial.h helpers (inlined everywhere)"] += ir
            continue
        fs = cache.setdefault(f, functions(f) if os.path.exists(f) else [])
        name = next((n for start, n in reversed(fs) if start <= ln), "?")
        by[f"{base}:{name}"] += ir
    print(f"{'function':52s} {'Ir/step':>9s} {'share':>6s}")
    for name, ir in by.most_common(top):
        print(f"{name:52s} {ir / steps:9.0f} {100 * ir / total:5.1f}%")
    print(f"{'total':52s} {total / steps:9.0f}")


if __name__ == "__main__":
    main()
