#!/usr/bin/env python3
"""Summarises `ncu --section SpeedOfLight --csv` of memra forwards (bench/gpu_bench.sh PROFILE=1):
one block per forward (a forward starts at its embed_kernel), kernels grouped by name with their
summed duration, share of the forward's kernel time and mean DRAM throughput (% of peak).

    ncu_summary.py NCU_CSV
"""
import csv
import re
import sys
from collections import OrderedDict, defaultdict


def short(name):
    name = re.sub(r"\(.*", "", name)  # drop argument lists
    name = re.sub(r"^void ", "", name)
    name = name.replace("memra::cuda::", "").replace("(anonymous namespace)::", "")
    return name[:60]


def main():
    rows = list(csv.reader(open(sys.argv[1], errors="replace")))
    head = None
    kernels = OrderedDict()  # id -> {name, metrics}
    for r in rows:
        if r and r[0] == "ID":
            head = {k: i for i, k in enumerate(r)}
            continue
        if not head or len(r) < len(head) or not r[0].isdigit():
            continue
        kid = int(r[0])
        k = kernels.setdefault(kid, {"name": r[head["Kernel Name"]], "grid": r[head.get("Grid Size", 0)],
                                     "block": r[head.get("Block Size", 0)], "m": {}})
        unit = r[head["Metric Unit"]]
        try:
            v = float(r[head["Metric Value"]].replace(",", ""))
        except ValueError:
            continue
        k["m"][r[head["Metric Name"]]] = (v, unit)
    if not kernels:
        print("no kernels in", sys.argv[1])
        return
    segments, cur = [], []
    for kid, k in kernels.items():
        if "embed_kernel" in k["name"] and cur:
            segments.append(cur)
            cur = []
        cur.append(k)
    if cur:
        segments.append(cur)

    def dur_us(k):
        v, unit = k["m"].get("Duration", (0.0, "us"))
        if v != v:  # nan: the launch failed under the profiler
            return 0.0
        return {"ns": v / 1e3, "nsecond": v / 1e3, "us": v, "usecond": v, "ms": v * 1e3, "msecond": v * 1e3}.get(unit, v)

    for i, seg in enumerate(segments):
        total = sum(dur_us(k) for k in seg)
        print(f"== forward {i + 1}: {len(seg)} kernels, {total:.1f} us of kernel time")
        agg = defaultdict(lambda: [0, 0.0, 0.0])
        for k in seg:
            a = agg[short(k["name"])]
            a[0] += 1
            a[1] += dur_us(k)
            a[2] += k["m"].get("DRAM Throughput", (0.0, "%"))[0] * dur_us(k)
        print(f"   {'kernel':60s} {'n':>4s} {'us':>9s} {'share':>6s} {'DRAM %':>7s}")
        for name, (n, us, w) in sorted(agg.items(), key=lambda x: -x[1][1]):
            print(f"   {name:60s} {n:4d} {us:9.1f} {100 * us / total if total else 0:5.1f}% {w / us if us else 0:7.1f}")
    print("\nper kernel (first forward):")
    for k in segments[0]:
        print(f"   {short(k['name']):60s} grid {k['grid']:>16s} block {k['block']:>12s} {dur_us(k):8.1f} us "
              f"DRAM {k['m'].get('DRAM Throughput', (0, ''))[0]:5.1f}%")


if __name__ == "__main__":
    main()
