#!/usr/bin/env python3
"""Side-by-side summary of `memra bench --json` runs of one binary under different settings (A/B arms).

    python3 bench/ab_summary.py [--sites REGEX] ARM=FILE.json [ARM=FILE.json ...]

One line per arm and measure: decode ms/layer and its logits hash, each batch's tokens/s, floor
ratio and whether its last sequence matched running alone, each verify block's ms and floor ratio.
With --sites (and runs made with --timeline), the device time of the timeline sites whose name
matches REGEX, summed per measure, so an A/B of one kernel reads at a glance. An arm whose file is
missing or unreadable is named on stderr and the others still print (a killed arm in a device run
must not hide the rest); exit 2 when no arm could be read or an argument is malformed.
"""
import argparse
import json
import re
import sys


def site_sum(entry, pattern):
    sites = (entry.get("timeline") or {}).get("sites") or []
    return sum(s["ms"] for s in sites if pattern.search(s["site"])) * 1000.0


def lines(arm, doc, pattern):
    for d in doc.get("decode", []):
        extra = f" sites {site_sum(d, pattern):8.1f} us" if pattern else ""
        if "graph_critical_kernels" in d:  # the step graph's longest kernel chain (memra bench)
            extra += f" chain {d['graph_critical_kernels']:.0f} kernels"
        yield (f"decode@{d['context']}", arm,
               f"{d['ms_per_layer_token']:.4f} ms/layer {d['ratio_to_floor']:.2f}x hash {d['logits_xxh3'][:12]}{extra}")
    for b in doc.get("batch", []):
        extra = f" sites {site_sum(b, pattern):8.1f} us" if pattern else ""
        yield (f"batch {b['batch']}", arm,
               f"{b['tokens_per_s']:8.0f} tok/s {b['ratio_to_floor']:.3f}x alone-bits "
               f"{b.get('last_sequence_bits_equal_alone')}{extra}")
    for v in doc.get("verify", []):
        extra = f" sites {site_sum(v, pattern):8.1f} us" if pattern else ""
        r = v.get("round")  # a speculative round's own costs (memra bench measures them at 2+ rows)
        if isinstance(r, dict):
            extra += (f" mark {r['mark_ms'] * 1e3:.1f} us journaled {r['journaled_ms']:.3f} ms"
                      f" keep {r['kept_rows']} {r['keep_ms'] * 1e3:.1f} us")
        yield (f"verify {v['block']}", arm, f"{v['ms']:.3f} ms {v['ratio_to_floor']:.3f}x{extra}")
    p = doc.get("prefill")
    if isinstance(p, dict) and "tokens_per_s" in p:
        exact = p.get("exact_tokens_per_s")
        h = p.get("last_logits_xxh3")
        yield ("prefill", arm, f"{p['tokens_per_s']:.0f} tok/s (cuda-fast)" +
               (f", exact {exact:.0f} tok/s" if exact else "") +
               (f" hash {h[:12]}" + ("" if p.get("reps_same_bits", True) else " REPS DIFFER") if h else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sites", help="regex of timeline sites to sum per measure")
    ap.add_argument("arms", nargs="+", metavar="ARM=FILE")
    args = ap.parse_args()
    try:
        pattern = re.compile(args.sites) if args.sites else None
    except re.error as e:
        print(f"ab_summary.py: error: --sites: {e}", file=sys.stderr)
        return 2
    rows = {}
    order = []
    read = 0
    for spec in args.arms:
        arm, eq, path = spec.partition("=")
        if not eq or not arm or not path:
            print(f"ab_summary.py: error: '{spec}' is not ARM=FILE (hint: new=run.json)", file=sys.stderr)
            return 2
        try:
            with open(path) as f:
                doc = json.load(f)
            found = list(lines(arm, doc, pattern))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"ab_summary.py: {arm}: unreadable ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        read += 1
        for key, a, text in found:
            if key not in rows:
                rows[key] = []
                order.append(key)
            rows[key].append((a, text))
    if read == 0:
        print("ab_summary.py: error: no arm could be read (hint: each FILE is `memra bench --json` output)",
              file=sys.stderr)
        return 2
    for key in order:
        print(key)
        for a, text in rows[key]:
            print(f"  {a:10s} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
