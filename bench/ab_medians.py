#!/usr/bin/env python3
"""Per-arm medians over the passes of bench/ab_arms.sh, and the arm of the most batch-64 tokens/s.

    python3 bench/ab_medians.py OUTDIR [CANDIDATE,CANDIDATE,...]

OUTDIR holds ab_arms.sh's ARMpass.json files (pass 1-9, the last digit of the name). One line per
arm: the median over its passes of decode ms/layer (the first context), batch 8 / 32 / 64 tokens/s,
verify 6 / 16 ms, and the linears' timeline sites (linear_exact) summed at batch 32 / 64 ('-' where
a run lacks the measure). Last line: "winner ARM", the candidate (default: every arm) with the most
batch-64 tokens/s, so a device run can choose the setting its next step runs under. An unreadable
file is named on stderr and skipped; exit 2 with a one-line error when no run could be read.
"""
import glob
import json
import os
import re
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else None


def measures(doc):
    out = {}
    dec = doc.get("decode") or []
    if dec:
        out["decode"] = dec[0]["ms_per_layer_token"]
    for b in doc.get("batch") or []:
        out[f"b{b['batch']}"] = b["tokens_per_s"]
        sites = (b.get("timeline") or {}).get("sites")
        if sites is not None:
            out[f"lin{b['batch']}"] = sum(s["ms"] for s in sites if "linear_exact" in s["site"])
    for v in doc.get("verify") or []:
        out[f"v{v['block']}"] = v["ms"]
    return out


def main():
    if len(sys.argv) not in (2, 3):
        print("ab_medians.py: error: usage: ab_medians.py OUTDIR [CANDIDATE,...] (hint: ab_arms.sh's OUTDIR)", file=sys.stderr)
        return 2
    runs = {}
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
        m = re.match(r"(.+)(\d)\.json$", os.path.basename(f))
        if not m:
            continue
        try:
            with open(f) as fh:
                runs.setdefault(m.group(1), []).append(measures(json.load(fh)))
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"ab_medians.py: {os.path.basename(f)}: unreadable ({type(e).__name__})", file=sys.stderr)
    if not runs:
        print(f"ab_medians.py: error: no run could be read in {sys.argv[1]} (hint: ARMpass.json files of bench/ab_arms.sh)",
              file=sys.stderr)
        return 2
    cols = [("decode", "decode", "{:8.4f}"), ("b8", "b8", "{:7.0f}"), ("b32", "b32", "{:7.0f}"), ("b64", "b64", "{:7.0f}"),
            ("v6", "v6 ms", "{:7.3f}"), ("v16", "v16 ms", "{:7.3f}"), ("lin32", "lin32", "{:7.3f}"), ("lin64", "lin64", "{:7.3f}")]
    print(f"{'arm':6s} " + " ".join(f"{h:>{len(fmt.format(0))}s}" for _, h, fmt in cols) + "  (medians over passes)")
    rows = {}
    for arm, ms in runs.items():
        rows[arm] = {k: med([m[k] for m in ms if k in m]) for k, _, _ in cols}
        cells = [fmt.format(rows[arm][k]) if rows[arm][k] is not None else f"{'-':>{len(fmt.format(0))}s}" for k, _, fmt in cols]
        print(f"{arm:6s} " + " ".join(cells))
    names = sys.argv[2].split(",") if len(sys.argv) == 3 else list(rows)
    cands = {a: rows[a]["b64"] for a in names if a in rows and rows[a]["b64"] is not None}
    print("winner", max(cands, key=cands.get) if cands else names[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
