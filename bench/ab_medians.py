#!/usr/bin/env python3
"""Per-arm medians over the passes of bench/ab_arms.sh, and the arm of the most batch-64 tokens/s.

    python3 bench/ab_medians.py [--sites REGEX] [--per-site REGEX] [--phases] OUTDIR [CANDIDATE,CANDIDATE,...]

OUTDIR holds ab_arms.sh's ARMpass.json files (pass 1-9, the last digit of the name). One line per
arm: the median over its passes of decode ms/layer (the first context), batch 8 / 32 / 64 tokens/s,
verify 6 / 16 ms, and the timeline sites matching REGEX (default linear_exact) summed at batch 32 /
64 in ms (ab_summary.py's site_sum; '-' where a run lacks the measure). With --per-site, then one
line per round (b8 ... v16) and timeline site matching REGEX: each arm's median in us and, after the
first arm, its change against the first (where an A/B gained or lost, site by site). With --phases,
then one line per round (decode at the first context, each verify block) and arm: the medians of
its phases_us (memra bench: where a step's wall time goes, host and device) in us. Last line:
"winner ARM", the candidate (default: every arm) with the most batch-64 tokens/s, so a device run
can choose the setting its next step runs under ("winner -" where no candidate measured batch 64).
An unreadable file is named on stderr and skipped; exit 2 with a one-line error when no run could
be read.
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


PHASES = (("host_total", "host"), ("device_total", "device"), ("host_outside_device", "outside"),
          ("host_plan", "plan"), ("host_launch", "launch"), ("host_after_launch", "after"),
          ("device_plan_copy", "d.plan"), ("device_round", "d.round"), ("device_logits_copies", "d.copies"))


def measures(doc, pattern, per_site=None, phases=False):
    out = {}
    if phases:  # ("phase", round, key) -> us, for --phases
        rounds = [("decode", x) for x in (doc.get("decode") or [])[:1]]
        rounds += [(f"v{x.get('block')}", x) for x in doc.get("verify") or []]
        for tag, x in rounds:
            for key, _ in PHASES:
                if key in (x.get("phases_us") or {}):
                    out[("phase", tag, key)] = x["phases_us"][key]
    if per_site:  # ("site", round, name) -> us, for --per-site
        for key, tag in (("batch", "b"), ("verify", "v")):
            for x in doc.get(key) or []:
                for s in (x.get("timeline") or {}).get("sites") or []:
                    if per_site.search(s["site"]):
                        out[("site", f"{tag}{x.get('batch', x.get('block'))}", s["site"])] = s["ms"] * 1000.0
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


def print_per_site(runs):
    arms = list(runs)
    keys = sorted({k for ms in runs.values() for m in ms for k in m if isinstance(k, tuple) and k[0] == "site"},
                  key=lambda k: (k[1][0], int(k[1][1:]), k[2]))
    print(f"{'round':5s} {'site':44s} " + " ".join(f"{a:>8s}" + ("" if i == 0 else f" {'change':>7s}")
                                                   for i, a in enumerate(arms)) + "  (us, medians over passes)")
    for k in keys:
        meds = [med([m[k] for m in runs[a] if k in m]) for a in arms]
        cells = []
        for i, v in enumerate(meds):
            cells.append(f"{v:8.1f}" if v is not None else f"{'-':>8s}")
            if i:
                cells.append(f"{v - meds[0]:+7.1f}" if v is not None and meds[0] is not None else f"{'-':>7s}")
        print(f"{k[1]:5s} {k[2]:44s} " + " ".join(cells))


def print_phases(runs):
    tags = sorted({k[1] for ms in runs.values() for m in ms for k in m if isinstance(k, tuple) and k[0] == "phase"},
                  key=lambda t: (t != "decode", int(t[1:]) if t != "decode" else 0))
    print(f"{'round':6s} {'arm':6s} " + " ".join(f"{h:>8s}" for _, h in PHASES) + "  (phases, us, medians over passes)")
    for tag in tags:
        for arm, ms in runs.items():
            meds = [med([m[("phase", tag, k)] for m in ms if ("phase", tag, k) in m]) for k, _ in PHASES]
            print(f"{tag:6s} {arm:6s} " + " ".join(f"{v:8.1f}" if v is not None else f"{'-':>8s}" for v in meds))


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line with a hint (argparse's own print the usage first)."""

    def error(self, message):
        print(f"ab_medians.py: error: {message} (hint: ab_medians.py [--sites REGEX] [--per-site REGEX] [--phases] OUTDIR "
              "[CANDIDATE,...]; OUTDIR is ab_arms.sh's)", file=sys.stderr)
        sys.exit(2)


def main():
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sites", default="linear_exact", help="regex of timeline sites to sum at batch 32 / 64")
    ap.add_argument("--per-site", metavar="REGEX", help="per round, each matching timeline site's median per arm (us)")
    ap.add_argument("--phases", action="store_true", help="per round and arm, the medians of phases_us (us)")
    ap.add_argument("outdir")
    ap.add_argument("candidates", nargs="?")
    args = ap.parse_args()
    compiled = {}
    for flag, text in (("--sites", args.sites), ("--per-site", args.per_site)):
        try:
            compiled[flag] = re.compile(text) if text is not None else None
        except re.error as e:
            print(f"ab_medians.py: error: {flag}: {e}", file=sys.stderr)
            return 2
    pattern, per_site = compiled["--sites"], compiled["--per-site"]
    runs = {}
    for f in sorted(glob.glob(os.path.join(args.outdir, "*.json"))):
        m = re.match(r"(.+)(\d)\.json$", os.path.basename(f))
        if not m:
            continue
        try:
            with open(f) as fh:
                runs.setdefault(m.group(1), []).append(measures(json.load(fh), pattern, per_site, args.phases))
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
    if per_site:
        print_per_site(runs)
    if args.phases:
        print_phases(runs)
    names = args.candidates.split(",") if args.candidates else list(rows)
    cands = {a: rows[a]["b64"] for a in names if a in rows and rows[a]["b64"] is not None}
    if not cands:  # no candidate measured batch 64: name none rather than pick one unmeasured
        print(f"ab_medians.py: no candidate among {','.join(names)} has a batch-64 measure", file=sys.stderr)
    print("winner", max(cands, key=cands.get) if cands else "-")
    return 0


if __name__ == "__main__":
    sys.exit(main())
