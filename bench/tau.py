#!/usr/bin/env python3
"""The trained tiny pair's speculative rounds at each verify block a `memra bench` run timed, and
what they cost when projected onto that run's measured verify and decode steps.

    tau.py MEMRA_BIN BENCH_JSON OUT_JSON [--prompts 4] [--steps 96]

A verify of v rows checks the anchor and v − 1 drafts (drafters.md §1.4), so the pair's DSpark
drafter (whose drafts are its block) runs at block v − 1: `memra draft` on the exact CPU
realization (the GPU's exact tokens), `--prompts` fixed prompts of 16 ids, `--steps` tokens each.
OUT_JSON, per verify block v: tau (tokens / rounds), rounds, tokens, the verifies' rows, and the
rollbacks by the accepted rows they kept (`--rollback rerun` runs them again).

project() (bench/compare.py's speculative lines) costs a round as the measured verify of v rows
plus one drafter layer over the block (a V4 DSpark drafter, `mtp.*`, is one such layer: its cost
taken as the verify's per layer), two ways:
  - kept: the state cut back to the accepted rows, nothing re-run (memra's loop, which keeps them
    from the verify's journal; the reference loop's KV crop);
  - rerun: also each rollback's re-run of k rows (`memra draft --rollback rerun`, memra's loop
    before session 45), charged at the smallest measured step that holds k rows (a decode step for
    1, else a verify block): an upper bound.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

PAIR = ("models/tiny-trained", "models/drafters/tiny-trained-dspark")


def measure(memra, blocks, prompts, steps):
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for v in blocks:
            if v < 2:
                continue
            agg = {"drafter_block": v - 1, "tau": None, "rounds": 0, "tokens": 0, "verify_rows": 0,
                   "rerun_rows_histogram": [0] * v, "runs": 0}
            for i in range(prompts):
                r = random.Random(1000 + i)
                path = os.path.join(tmp, f"p{i}.txt")
                with open(path, "w") as f:
                    f.write(" ".join(str(r.randrange(2, 512)) for _ in range(16)) + "\n")
                cmd = [memra, "-q", "draft", PAIR[0], "--drafter", PAIR[1], "--tokens", path, "--steps", str(steps),
                       "--block-size", str(v - 1), "--ignore-eos", "--backend", "cpu", "--json"]
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                    j = json.loads(p.stdout)
                except (subprocess.TimeoutExpired, ValueError) as e:
                    print(f"tau.py: note: verify {v}, prompt {i}: no result ({e})", file=sys.stderr)
                    continue
                if not j.get("identical_to_greedy") or j.get("drafts_per_round", 0) + 1 != v:
                    print(f"tau.py: note: verify {v}, prompt {i}: not lossless or not {v - 1} drafts a round; left out",
                          file=sys.stderr)
                    continue
                agg["runs"] += 1
                agg["rounds"] += j["rounds"]
                agg["tokens"] += len(j["tokens"])
                agg["verify_rows"] += j["verify_rows"]
                for k, n in enumerate(j["rerun_rows_histogram"]):
                    agg["rerun_rows_histogram"][k] += n
            if agg["runs"] == prompts:
                agg["tau"] = agg["tokens"] / agg["rounds"]
                out[str(v)] = agg
    return out


def project(verify_ms, decode_step_ms, layers, tau_block, steps_ms):
    """ms per layer per token (rows kept, --rollback rerun) of speculative generation at a verify block.

    verify_ms: the measured verify of the block (all layers and the ends); decode_step_ms: a decode
    step at the same context; steps_ms: {rows: ms} of every measured verify block (for re-runs)."""
    rounds, tokens = tau_block["rounds"], tau_block["tokens"]
    round_ms = verify_ms * (1 + 1 / layers)  # the verify + one drafter layer over the block
    crop = round_ms * rounds / tokens / layers
    rerun_ms = 0.0
    for k, n in enumerate(tau_block["rerun_rows_histogram"]):
        if n == 0:
            continue
        cost = decode_step_ms if k == 1 else min((ms for rows, ms in steps_ms.items() if rows >= k), default=None)
        if cost is None:
            return crop, None
        rerun_ms += n * cost
    return crop, crop + rerun_ms / tokens / layers


def project_loop(proj, verify_ms, layers, tau_block, round_costs, keep=True):
    """ms per layer per token of memra's loop as it runs: a projection (project()'s rows kept, or
    with keep=False its --rollback rerun) plus what the bench measured of a round's own costs
    (`memra bench` verify[].round). Rows kept: each round's mark and its verify's journal (the
    journaled verify minus the plain one), and each rollback's rewind keeping rows. Rerun: each
    round's mark and each rollback's rewind to it, priced as the mark (one copy of the same bytes
    the other way; the re-run itself is in the projection). None without those measurements."""
    if not round_costs or proj is None:
        return None
    rounds, tokens = tau_block["rounds"], tau_block["tokens"]
    rollbacks = sum(tau_block["rerun_rows_histogram"])
    if not keep:
        return proj + (rounds + rollbacks) * round_costs["mark_ms"] / tokens / layers
    per_round = round_costs["mark_ms"] + max(round_costs["journaled_ms"] - verify_ms, 0.0)
    return proj + (rounds * per_round + rollbacks * round_costs["keep_ms"]) / tokens / layers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("memra")
    ap.add_argument("bench_json")
    ap.add_argument("out")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--steps", type=int, default=96)
    a = ap.parse_args()
    bench = json.load(open(a.bench_json))
    blocks = sorted({v["block"] for v in bench.get("verify", []) if "error" not in v})
    doc = {"pair": " + ".join(PAIR), "prompts": a.prompts, "steps": a.steps, "backend": "cpu (exact)",
           "harvest": "dspark", "blocks": measure(a.memra, blocks, a.prompts, a.steps)}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)
    print(json.dumps({v: round(b["tau"], 3) for v, b in doc["blocks"].items()}))


if __name__ == "__main__":
    main()
