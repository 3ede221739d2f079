#!/usr/bin/env python3
"""What one more layer costs: two `memra bench --json` runs of one binary, the second with more layers.

    python3 bench/marginal.py [--json] SHORT.json LONG.json

`memra bench` divides a step by its layer count, so the ends (embedding, hc head, final norm, LM head:
a few launches on the critical path, ~1/43 of a step in V4-Flash) weigh on each of its two layers as
on one of 43 they would not. Runs at `--layers CH` and `--layers CHCH` (same seed, contexts, batches,
verify blocks) differ by two layers and the same ends: (LONG − SHORT) / (extra layers) is the cost of
a layer, measured and floor alike (the floor of each run from its own routing). One line per decode
context, batch and verify block, and the prefill's ms a layer. Exit 2 on unreadable or mismatched runs.
"""
import argparse
import json
import sys


def fail(msg):
    print(f"marginal.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e} (hint: the JSON of `memra bench --json`)")
    if not isinstance(doc, dict) or "geometry" not in doc:
        fail(f"{path}: not a `memra bench --json` document (no geometry)")
    return doc


# Each timed measure: the list in the bench's JSON, the fields that name one entry, its line's label,
# and the field holding its milliseconds.
MEASURES = [
    ("decode", ("context",), lambda k: f"decode batch 1 @ {k[0]}", "step_ms"),
    ("batch", ("batch", "context"), lambda k: f"decode batch {k[0]} @ {k[1]}", "step_ms"),
    ("verify", ("block", "context"), lambda k: f"verify {k[0]}-token block @ {k[1]}", "ms"),
]


def rows(short, long_, extra):
    def per_layer(a, b):
        return (b - a) / extra

    for field, keys, label, ms_key in MEASURES:
        needed = keys + (ms_key, "floor_ms", "ratio_to_floor")  # an entry without them (an error line) is not timed
        entries = [{tuple(e[k] for k in keys): e for e in doc.get(field) or [] if all(k in e for k in needed)}
                   for doc in (short, long_)]
        for key in sorted(set(entries[0]) & set(entries[1])):
            s, l = entries[0][key], entries[1][key]
            ms, floor = per_layer(s[ms_key], l[ms_key]), per_layer(s["floor_ms"], l["floor_ms"])
            yield {"measure": label(key), "ms_per_layer": ms, "floor_ms_per_layer": floor, "ratio_to_floor": ms / floor,
                   "divided_ms_per_layer": s.get("ms_per_layer_token"), "divided_ratio": s["ratio_to_floor"]}
    sp, lp = short.get("prefill"), long_.get("prefill")
    if isinstance(sp, dict) and isinstance(lp, dict) and "seconds" in sp and "seconds" in lp and sp.get("tokens") == lp.get("tokens"):
        ms = per_layer(sp["seconds"], lp["seconds"]) * 1e3
        yield {"measure": f"prefill {sp['tokens']} tokens (cuda-fast)", "ms_per_layer": ms, "floor_ms_per_layer": None,
               "ratio_to_floor": None, "divided_ms_per_layer": sp["seconds"] * 1e3 / len(short["geometry"]["layers"]),
               "divided_ratio": None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ap.add_argument("short")
    ap.add_argument("long")
    args = ap.parse_args()
    short, long_ = load(args.short), load(args.long)
    gs, gl = dict(short["geometry"]), dict(long_["geometry"])
    ls, ll = str(gs.pop("layers", "")), str(gl.pop("layers", ""))
    if gs != gl:
        fail("the two runs differ in more than their layers (hint: the same seed, vocab and geometry)")
    extra = len(ll) - len(ls)
    if not ls or extra <= 0:
        fail(f"LONG must have more layers than SHORT ({ll or '?'} vs {ls or '?'})")
    out = list(rows(short, long_, extra))
    if not out:
        fail("no measure in both runs (hint: the same --contexts / --batches / --verify / --prefill)")
    if args.json:
        print(json.dumps({"short_layers": ls, "long_layers": ll, "extra_layers": extra, "rows": out}, indent=1))
        return
    print(f"one layer more: {ll} vs {ls} ({extra} layers), (LONG − SHORT) / {extra}")
    print(f"{'measure':34s} {'ms/layer':>9s} {'floor':>8s} {'ratio':>6s}   {'as ' + ls + ' reads':>16s}")
    for r in out:
        fl = f"{r['floor_ms_per_layer']:8.4f}" if r["floor_ms_per_layer"] is not None else f"{'-':>8s}"
        ra = f"{r['ratio_to_floor']:5.2f}x" if r["ratio_to_floor"] is not None else f"{'-':>6s}"
        dv = f"{r['divided_ratio']:5.2f}x" if r["divided_ratio"] is not None else (
            f"{r['divided_ms_per_layer']:.4f} ms" if r["divided_ms_per_layer"] is not None else "-")
        print(f"{r['measure']:34s} {r['ms_per_layer']:9.4f} {fl} {ra}   {dv:>16s}")


if __name__ == "__main__":
    main()
