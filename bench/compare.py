#!/usr/bin/env python3
"""Joins `memra bench --json` and bench/transformers_bench.py's JSON (same geometry, weights and
token streams) into the table of issue 13 (memra, floor, transformers, memra/transformers) and a
plot of decode ms/layer/token against context for memra, transformers and the HBM floor.

    compare.py MEMRA_JSON TRANSFORMERS_JSON [--table OUT.md] [--plot OUT.png] [--tau TAU_JSON]
               [--rerun-steps VERIFY_JSON] [--marginal LONG_JSON]

With --tau (bench/tau.py's tau.json: the trained tiny pair's rounds at each verify block, measured),
each verify block also gets two projected speculative-generation lines per token and layer, for
memra and for transformers alike (bench/tau.py's project()): the block's measured verify plus one
drafter layer over it, per tau tokens, with the accepted rows kept (memra's loop: the verify's
journal, State::rewind(mark, rows); the reference loop's KV crop), and the same with
`memra draft --rollback rerun`'s second forward over the accepted rows after a partial block (k
rows charged at the smallest measured verify of ≥ k rows: the main bench's, or with --rerun-steps
those of a bench run at many verify sizes in the same call); and memra's speed-up over its own
decode for both.
With --marginal (the same bench at more layers), what one layer more costs against its floor
(bench/marginal.py), for each decode context, batch and verify block both runs timed.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import marginal  # noqa: E402  (bench/marginal.py: what one layer more costs)
import tau as tau_py  # noqa: E402  (bench/tau.py: speculative rounds projected onto measured steps)


def optional_json(path, what):
    """A side input of the table (tau, the longer run): unreadable is a note on stderr, not a lost table."""
    try:
        return json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"compare.py: note: {what} {path} unreadable ({e}); its lines are left out", file=sys.stderr)
        return None


def by(items, key):
    return {i[key]: i for i in items if "error" not in i}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("memra")
    ap.add_argument("transformers")
    ap.add_argument("--table")
    ap.add_argument("--plot")
    ap.add_argument("--tau")
    ap.add_argument("--rerun-steps")
    ap.add_argument("--marginal")
    a = ap.parse_args()
    m = json.load(open(a.memra))
    t = json.load(open(a.transformers))
    rows = []

    def row(what, mv, floor, tv, unit, higher_is_better):
        ratio_floor = (mv / floor if not higher_is_better else floor / mv) if mv and floor else None
        speedup = None
        if mv and tv:
            speedup = mv / tv if higher_is_better else tv / mv
        rows.append((what, mv, floor, ratio_floor, tv, speedup, unit))

    md, td = by(m["decode"], "context"), by(t.get("decode", []), "context")
    for ctx, d in sorted(md.items()):
        row(f"decode batch 1 @ {ctx}", d["ms_per_layer_token"], d["floor_ms_per_layer"],
            td.get(ctx, {}).get("ms_per_layer_token"), "ms/layer/token", False)
    mb, tb = by(m["batch"], "batch"), by(t.get("batch", []), "batch")
    for b, d in sorted(mb.items()):
        row(f"decode batch {b} @ {d['context']}", d["tokens_per_s"], d["floor_tokens_per_s"],
            tb.get(b, {}).get("tokens_per_s"), "tokens/s", True)
    mv, tv = by(m["verify"], "block"), by(t.get("verify", []), "block")
    for b, d in sorted(mv.items()):
        row(f"verify {b}-token block @ {d['context']}", d["ms"], d["floor_ms"], tv.get(b, {}).get("ms"), "ms", False)
    spec = []  # (block, tau, memra rows kept / re-run ms/layer/token (each its loop when measured), decode ms/layer/token)
    tau_doc = optional_json(a.tau, "--tau") if a.tau else None
    if tau_doc and "blocks" not in tau_doc:
        print(f"compare.py: note: --tau {a.tau} has no per-verify-block rounds (an older tau.json, whose tau was "
              "measured at one draft more than the verify checks); its lines are left out", file=sys.stderr)
    elif tau_doc:
        L = len(m["geometry"]["layers"])
        msteps = {b: d["ms"] for b, d in mv.items()}
        rs = optional_json(a.rerun_steps, "--rerun-steps") if a.rerun_steps else None
        if rs:
            msteps.update({b: d["ms"] for b, d in by(rs.get("verify", []), "block").items()})
        tsteps = {b: d["ms"] for b, d in tv.items() if "ms" in d}
        for b, d in sorted(mv.items()):
            tb, ctx = tau_doc["blocks"].get(str(b)), d["context"]
            if not tb or not tb.get("tau") or ctx not in md:
                continue
            tau = tb["tau"]
            crop, rerun = tau_py.project(d["ms"], md[ctx]["step_ms"], L, tb, msteps)
            tcrop = trerun = None
            if b in tsteps and ctx in td:
                tcrop, trerun = tau_py.project(tsteps[b], td[ctx]["ms_per_layer_token"] * L, L, tb, tsteps)
            head = f"speculative generation, verify {b} ({b - 1} drafts, tau {tau:.2f}, projected)"
            row(f"{head}, accepted rows kept @ {ctx}", crop, d["floor_ms"] / tau / L, tcrop, "ms/layer/token", False)
            row(f"{head}, --rollback rerun (accepted rows re-run) @ {ctx}", rerun, d["floor_ms"] / tau / L, trerun,
                "ms/layer/token", False)
            loop = tau_py.project_loop(crop, d["ms"], L, tb, d.get("round"))
            rerun_loop = tau_py.project_loop(rerun, d["ms"], L, tb, d.get("round"), keep=False)
            if loop is not None:
                row(f"{head}, memra's loop (rows kept; mark, journal and keep measured) @ {ctx}", loop,
                    d["floor_ms"] / tau / L, None, "ms/layer/token", False)
            if rerun_loop is not None:
                row(f"{head}, memra's loop with --rollback rerun (mark measured, rewind priced as the mark) @ {ctx}",
                    rerun_loop, d["floor_ms"] / tau / L, None, "ms/layer/token", False)
            # like with like: both loops with the round's costs where the bench measured them
            spec.append((b, tau, loop if loop is not None else crop, rerun_loop if rerun_loop is not None else rerun,
                         md[ctx]["ms_per_layer_token"]))
    p, tp = m["prefill"], t.get("prefill", {})
    row(f"prefill {p['tokens']} tokens (cuda-fast)", p["tokens_per_s"], None, tp.get("tokens_per_s"), "tokens/s", True)

    def f(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else "-"

    lines = [f"memra {m['memra']} vs transformers {t.get('transformers', '?')} (torch {t.get('torch', '?')}), "
             f"{m.get('device', '?')}, layers {m['geometry']['layers']}, vocab {m['geometry']['vocab']}, seed {m['geometry']['seed']}",
             f"ceilings: copy {m['ceilings']['copy_GBps']:.0f} GB/s, bf16 {m['ceilings']['bf16_TFLOPs']:.0f} TFLOP/s"
             + (f", launch step {m['ceilings']['launch_step_us_pdl']:.2f} us (PDL), grid barrier "
                f"{m['ceilings']['grid_barrier_us']:.2f} us" if 'grid_barrier_us' in m['ceilings'] else ""),
             "",
             "| measure | memra | floor | memra vs floor | transformers | memra / transformers | unit |",
             "|---|---|---|---|---|---|---|"]
    for what, mv_, fl, rf, tv_, sp, unit in rows:
        lines.append(f"| {what} | {f(mv_, '.4g')} | {f(fl, '.4g')} | {f(rf, '.2f')}x | {f(tv_, '.4g')} | {f(sp, '.1f')}x | {unit} |")
    for what in ("verify",):
        for b, d in sorted(mv.items()):
            lines.append(f"| verify {b} vs {b} decode steps (memra) | {d['block_over_steps']:.2f} | | | "
                         f"{f(tv.get(b, {}).get('block_over_one_step'), '.2f')} x one step | | block/steps |")
    for b, tau, crop, rerun, plain_ms in spec:
        lines.append(f"| speculative verify {b} vs decode (memra, projected): rows kept / --rollback rerun | "
                     f"{plain_ms / crop:.2f}x / {f(plain_ms / rerun if rerun else None, '.2f')}x | | | | | tokens/s ratio |")
    long_ = optional_json(a.marginal, "--marginal") if a.marginal else None
    if long_ and "geometry" in long_:
        extra = len(long_["geometry"]["layers"]) - len(m["geometry"]["layers"])
        for r in marginal.rows(m, long_, extra) if extra > 0 else []:
            if r["ratio_to_floor"] is not None:
                lines.append(f"| one layer more ({long_['geometry']['layers']} − {m['geometry']['layers']}): {r['measure']} | "
                             f"{r['ms_per_layer']:.4g} | {r['floor_ms_per_layer']:.4g} | {r['ratio_to_floor']:.2f}x | | | ms/layer |")
    pp = m["prefill"]
    lines.append(f"| prefill linears (tensor cores) | {pp['linear_TFLOPs']:.0f} | {m['ceilings']['bf16_TFLOPs']:.0f} | "
                 f"{pp['linear_share_of_bf16_rate']:.2f} of rate | | | TFLOP/s |")
    sn = m["snapshot"]
    # The bench model's state has a few classes of hundreds of MB, and a class hash is one stream (the
    # file format's): one hashing chain a class, on the device (class_hash.cu; on the host before
    # session 50: one thread a class). The target's figure is the V4-Flash-layout state of
    # gpu-check's bandwidth step (memra_cuda_test bandwidth: 43 layers' classes).
    host = f"; hashed on the host {sn['snapshot_host_hashed_GBps']:.1f}" if "snapshot_host_hashed_GBps" in sn else ""
    lines.append(f"| snapshot (hashed on the device; this 2-layer state: one hashing chain a class{host}) / restore | "
                 f"{sn['snapshot_GBps']:.1f} / {sn['restore_GBps']:.1f} | "
                 f"{m['ceilings']['pinned_d2h_GBps']:.1f} / {m['ceilings']['pinned_h2d_GBps']:.1f} | "
                 f"{sn['snapshot_share_of_pinned_d2h']:.2f} / {sn['restore_share_of_pinned_h2d']:.2f} of pinned | | | GB/s |")
    mem = m["memory"]
    lines.append(f"| device bytes: weights / scratch | {mem['weights_bytes'] / 1e9:.2f} GB / {mem['scratch_bytes'] / 1e6:.0f} MB | | | "
                 f"{f(t.get('weights_bytes', 0) / 1e9, '.2f')} GB | | |")
    lines.append(f"| state bytes per token (this model; V4-Flash 43 layers) | {mem['state_bytes_per_token']:.0f}; "
                 f"{mem['v4_flash_state_bytes_per_token']:.0f} | note (bf16): 6880 | {mem['v4_flash_over_note']:.2f}x | | | B/token |")
    for e in t.get("decode", []) + t.get("batch", []) + t.get("verify", []) + [t.get("prefill", {})]:
        if "error" in e:
            lines.append(f"\ntransformers could not run {json.dumps({k: v for k, v in e.items() if k != 'error'})}: {e['error']}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.table:
        open(a.table, "w").write(text)
    # one line last, for tools/gpu-check.sh's summary (a step's detail is its last line starting "["):
    # decode batch 1 at the first context, batch 32 and prefill, against the floor and transformers
    def brief(prefix, value_unit):
        r = next((r for r in rows if r[0].startswith(prefix)), None)
        if r is None:
            return None
        what, mv_, fl, rf, tv_, sp, unit = r
        floor = f"{f(rf, '.2f')}x floor, " if rf else ""
        return f"{what} {f(mv_, '.4g')} {value_unit} ({floor}{f(sp, '.1f')}x transformers)"
    parts = [brief("decode batch 1 @", "ms/layer"), brief("decode batch 32 @", "tok/s"), brief("prefill", "tok/s")]
    print("[bench] " + "; ".join(p for p in parts if p))
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        xs = sorted(md)
        ax.plot(xs, [md[x]["ms_per_layer_token"] for x in xs], "o-", label="memra (cuda, exact)")
        ax.plot(xs, [md[x]["floor_ms_per_layer"] for x in xs], "k--", label="HBM floor (bytes read / copy bandwidth)")
        tx = sorted(td)
        if tx:
            ax.plot(tx, [td[x]["ms_per_layer_token"] for x in tx], "s-", label=f"transformers {t.get('transformers', '')} eager bf16")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("context (tokens)")
        ax.set_ylabel("decode ms per layer per token (batch 1)")
        # Two lines: the device's name made one line wider than the figure (clipped in runs 181-205).
        ax.set_title(f"DeepSeek-V4 at V4-Flash layer geometry ({m['geometry']['layers']})\n{m.get('device', '')}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)


if __name__ == "__main__":
    main()
