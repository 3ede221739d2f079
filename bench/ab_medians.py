#!/usr/bin/env python3
"""Per-arm medians over the passes of bench/ab_arms.sh, and the arm of the most batch-64 tokens/s.

    python3 bench/ab_medians.py [--sites REGEX] OUTDIR [CANDIDATE,CANDIDATE,...]

OUTDIR holds ab_arms.sh's ARMpass.json files (pass 1-9, the last digit of the name). One line per
arm: the median over its passes of decode ms/layer (the first context), batch 8 / 32 / 64 tokens/s,
verify 6 / 16 ms, and the timeline sites matching REGEX (default linear_exact) summed at batch 32 /
64 in ms (ab_summary.py's site_sum; '-' where a run lacks the measure). Last line: "winner ARM", the candidate (default: every arm) with the most
batch-64 tokens/s, so a device run can choose the setting its next step runs under ("winner -"
where no candidate measured batch 64). An unreadable
file is named on stderr and skipped; exit 2 with a one-line error when no run could be read.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

from ab_summary import site_sum


def med(xs):
    return statistics.median(xs) if xs else None


def measures(doc, pattern):
    out = {}
    dec = doc.get("decode") or []
    if dec:
        out["decode"] = dec[0]["ms_per_layer_token"]
    for b in doc.get("batch") or []:
        out[f"b{b['batch']}"] = b["tokens_per_s"]
        if (b.get("timeline") or {}).get("sites") is not None:
            out[f"sites{b['batch']}"] = site_sum(b, pattern) / 1000.0
    for v in doc.get("verify") or []:
        out[f"v{v['block']}"] = v["ms"]
    return out


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line with a hint (argparse's own print the usage first)."""

    def error(self, message):
        print(f"ab_medians.py: error: {message} (hint: ab_medians.py [--sites REGEX] OUTDIR [CANDIDATE,...]; OUTDIR is "
              "ab_arms.sh's)", file=sys.stderr)
        sys.exit(2)


def main():
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sites", default="linear_exact", help="regex of timeline sites to sum at batch 32 / 64")
    ap.add_argument("outdir")
    ap.add_argument("candidates", nargs="?")
    args = ap.parse_args()
    try:
        pattern = re.compile(args.sites)
    except re.error as e:
        print(f"ab_medians.py: error: --sites: {e}", file=sys.stderr)
        return 2
    runs = {}
    for f in sorted(glob.glob(os.path.join(args.outdir, "*.json"))):
        m = re.match(r"(.+)(\d)\.json$", os.path.basename(f))
        if not m:
            continue
        try:
            with open(f) as fh:
                runs.setdefault(m.group(1), []).append(measures(json.load(fh), pattern))
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"ab_medians.py: {os.path.basename(f)}: unreadable ({type(e).__name__})", file=sys.stderr)
    if not runs:
        print(f"ab_medians.py: error: no run could be read in {args.outdir} (hint: ARMpass.json files of bench/ab_arms.sh)",
              file=sys.stderr)
        return 2
    cols = [("decode", "decode", "{:8.4f}"), ("b8", "b8", "{:7.0f}"), ("b32", "b32", "{:7.0f}"), ("b64", "b64", "{:7.0f}"),
            ("v6", "v6 ms", "{:7.3f}"), ("v16", "v16 ms", "{:7.3f}"), ("sites32", "sites32", "{:7.3f}"),
            ("sites64", "sites64", "{:7.3f}")]
    print(f"{'arm':6s} " + " ".join(f"{h:>{len(fmt.format(0))}s}" for _, h, fmt in cols) + "  (medians over passes)")
    rows = {}
    for arm, ms in runs.items():
        rows[arm] = {k: med([m[k] for m in ms if k in m]) for k, _, _ in cols}
        cells = [fmt.format(rows[arm][k]) if rows[arm][k] is not None else f"{'-':>{len(fmt.format(0))}s}" for k, _, fmt in cols]
        print(f"{arm:6s} " + " ".join(cells))
    names = args.candidates.split(",") if args.candidates else list(rows)
    cands = {a: rows[a]["b64"] for a in names if a in rows and rows[a]["b64"] is not None}
    if not cands:  # no candidate measured batch 64: name none rather than pick one unmeasured
        print(f"ab_medians.py: no candidate among {','.join(names)} has a batch-64 measure", file=sys.stderr)
    print("winner", max(cands, key=cands.get) if cands else "-")
    return 0


if __name__ == "__main__":
    sys.exit(main())
