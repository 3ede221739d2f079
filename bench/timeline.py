#!/usr/bin/env python3
"""bench/timeline.py: the per-launch device times of `memra bench --timeline --json` as tables.

usage: bench/timeline.py memra-bench.json [--top N]
Each timed forward (prefill, decode per context, verify per block, batch per size) gets its sites,
largest first, with their share of the summed device time and the measured (graphed) step beside it.
"""
import argparse
import json
import sys


def show(label, t, top):
    total = t["device_ms_sum"]
    print(f"\n### {label}: {total:.3f} ms of device time over the sites; measured step {t['measured_ms']:.3f} ms")
    print("| site | ms | share | launches |\n|---|---|---|---|")
    for s in t["sites"][:top]:
        print(f"| {s['site']} | {s['ms']:.4f} | {100 * s['ms'] / total:.1f}% | {s['launches']:.0f} |")
    rest = t["sites"][top:]
    if rest:
        ms = sum(s["ms"] for s in rest)
        print(f"| ({len(rest)} more sites) | {ms:.4f} | {100 * ms / total:.1f}% | {sum(s['launches'] for s in rest):.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_json")
    ap.add_argument("--top", type=int, default=16)
    a = ap.parse_args()
    try:
        b = json.load(open(a.bench_json))
    except (OSError, ValueError) as e:
        print(f"timeline.py: error: {a.bench_json}: {e}", file=sys.stderr)
        return 2
    print(f"{b.get('memra', '?')}, {b.get('device', '?')}, layers {b['geometry']['layers']}")
    found = False
    if "timeline" in b.get("prefill", {}):
        show(f"prefill {b['prefill']['tokens']} tokens (cuda-fast)", b["prefill"]["timeline"], a.top)
        found = True
    for d in b.get("decode", []):
        if "timeline" in d:
            show(f"decode batch 1 @ {d['context']} (exact)", d["timeline"], a.top)
            found = True
    for v in b.get("verify", []):
        if "timeline" in v:
            show(f"verify {v['block']} tokens @ {v['context']} (exact)", v["timeline"], a.top)
            found = True
    for x in b.get("batch", []):
        if "timeline" in x:
            show(f"decode batch {x['batch']} @ {x['context']} (exact)", x["timeline"], a.top)
            found = True
    if not found:
        print("timeline.py: error: no timelines in this file", file=sys.stderr)
        print("hint: run memra bench --timeline --json", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
