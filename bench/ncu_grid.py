#!/usr/bin/env python3
"""Per-kernel, per-grid medians of `ncu --csv --page raw` (a device run's kernels without their launch
gaps), so the kernels of a decode step, a batch and a prefill read apart by their grids.

    ncu_grid.py NCU_RAW_CSV

One line per (kernel, grid, block): launches, median duration (us, from gpu__time_duration.sum in
whatever unit ncu wrote), and the median of every other metric column the run collected. Exit 2
with a one-line error when the file is unreadable or holds no ncu table.
"""
import csv
import re
import statistics
import sys
from collections import defaultdict

SCALE_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
FIXED = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Device",
         "CC", "Grid Size", "Block Size", "Section Name", "Metric Name", "Metric Unit", "Metric Value"}


def fail(msg):
    print(f"ncu_grid.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def short(name):
    name = name.replace("(anonymous namespace)", "")
    name = re.sub(r"\(.*", "", name)  # the argument list
    name = re.sub(r"<.*", "", name)  # template arguments
    return name.split("::")[-1].replace("void ", "").strip()


def number(text):
    return float(text.replace(",", ""))


def main():
    if len(sys.argv) != 2:
        fail("usage: ncu_grid.py NCU_RAW_CSV")
    try:
        rows = list(csv.reader(open(sys.argv[1], errors="replace")))
    except OSError as e:
        fail(f"{sys.argv[1]}: {e.strerror}")
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "gpu__time_duration.sum" in r), None)
    if head is None or head + 1 >= len(rows):
        fail(f"{sys.argv[1]}: no ncu raw table with gpu__time_duration.sum (hint: ncu --csv --page raw --metrics gpu__time_duration.sum,...)")
    h, units = rows[head], rows[head + 1]
    col = {k: i for i, k in enumerate(h)}
    dur = col["gpu__time_duration.sum"]
    scale = SCALE_US.get(units[dur], None)
    if scale is None:
        fail(f"unknown duration unit {units[dur]!r}")
    extra = [k for k in h if k not in FIXED and k != "gpu__time_duration.sum"]
    groups = defaultdict(list)
    for r in rows[head + 2:]:
        if len(r) != len(h):
            continue
        try:
            key = (short(r[col["Kernel Name"]]), r[col["Grid Size"]], r[col["Block Size"]])
            groups[key].append([number(r[dur]) * scale] + [number(r[col[k]]) for k in extra])
        except (ValueError, KeyError):
            continue
    if not groups:
        fail(f"{sys.argv[1]}: the ncu table holds no kernel rows")
    print(f"{'kernel':30s} {'grid':>16s} {'block':>12s} {'n':>5s} {'us med':>9s} " + " ".join(f"{k[:24]:>24s}" for k in extra))
    for key, vals in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        med = [statistics.median(v[j] for v in vals) for j in range(len(vals[0]))]
        print(f"{key[0][:30]:30s} {key[1]:>16s} {key[2]:>12s} {len(vals):5d} {med[0]:9.2f} " +
              " ".join(f"{m:24.1f}" for m in med[1:]))


if __name__ == "__main__":
    main()
