#!/usr/bin/env python3
"""bench/graph_marks.py: the graph marks of `memra bench --json --graph-marks` (kernels/graph_marks.h)
as a table per step: for the main stream, what its chain spent since its previous mark (the site's
in-graph cost, a wait for a side stream's join included); for the side streams, when each site
ended. Then the main chain's sites grouped by name, largest first.

    bench/graph_marks.py BENCH.json [--lines decode,verify,batch] [--top N]

Exit 2 with a one-line error when the file has no graph marks."""
import argparse
import collections
import json
import sys


def steps(doc, lines):
    for key, label in (("decode", "context"), ("verify", "block"), ("batch", "batch")):
        if key not in lines:
            continue
        for d in doc.get(key, []):
            if "graph_marks" in d:
                yield f"{key} {d[label]}", d, d["graph_marks"]


def main():
    ap = argparse.ArgumentParser(description="graph marks of memra bench --graph-marks, as tables")
    ap.add_argument("bench_json")
    ap.add_argument("--lines", default="decode,verify,batch")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    try:
        doc = json.load(open(a.bench_json))
    except (OSError, ValueError) as e:
        print(f"graph_marks.py: error: cannot read {a.bench_json}: {e}", file=sys.stderr)
        return 2
    found = False
    for name, d, gm in steps(doc, a.lines.split(",")):
        found = True
        marks = gm["marks"]
        step = d.get("step_ms", d.get("ms"))
        print(f"{name}: step {step:.3f} ms, marked {gm['step_ms_marked']:.3f} ms, {len(marks)} marks, "
              f"last at {max(m['end_us'] for m in marks):.1f} us")
        main = [m for m in marks if m["stream"] == "main"]
        print(f"  main chain: {len(main)} sites, {sum(m['main_chain_us'] for m in main):.1f} us")
        by = collections.defaultdict(float)
        for m in main:
            by[m["site"]] += m["main_chain_us"]
        for site, us in sorted(by.items(), key=lambda kv: -kv[1])[: a.top]:
            print(f"    {us:8.1f} us  {site}")
        side = collections.defaultdict(list)
        for m in marks:
            if m["stream"] != "main":
                side[m["stream"]].append(m)
        for stream, ms in side.items():
            print(f"  {stream}: " + ", ".join(f"{m['site']} @{m['end_us']:.1f}" for m in ms[:6])
                  + (f", … ({len(ms)} sites)" if len(ms) > 6 else ""))
    if not found:
        print(f"graph_marks.py: error: {a.bench_json} has no graph marks (hint: memra bench --json --graph-marks)",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
