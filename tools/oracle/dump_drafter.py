#!/usr/bin/env python3
"""Writes a reference dump of one drafter proposal: the oracle forward on fixed-seed synthetic taps
(isolating the drafter from the trunk) or on taps the transformers DeepSeek-V4 trunk produced.

    dump_drafter.py DRAFTER_DIR --trunk MODEL_DIR --out DUMP_DIR --taps synthetic|trunk --ctx N --seed S
                    [--harvest dflash|dspark]

Context: taps of positions 0..ctx-1; the block [x_0, noise...] sits at positions ctx..ctx+b-1.
synthetic: taps ~ N(0, 1) and x_0 uniform in [2, V), both from the seed.
trunk:     ctx prompt ids uniform in [2, V) from the seed; the trunk's one-shot forward gives the
           taps (mean over hc streams of each tapped layer's input) and x_0 = its greedy next token.
The trunk always supplies the embeddings of the block ids and the LM head (base logits = head(final)).
--harvest: the convention to compute with when the drafter config does not say (it must agree
when it does); it is written into the manifest geometry.

DUMP_DIR/arrays.safetensors + manifest.json (temp + rename, manifest last); array list in README.md.
"""
import argparse
import json
import os
import shlex
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import drafter_config  # noqa: E402
import drafter_io  # noqa: E402
import tiestable  # noqa: E402
from drafter_propose import propose  # noqa: E402
from dump_reference import write_atomic, xxh3_128  # noqa: E402


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("drafter_dir")
    p.add_argument("--trunk", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--taps", choices=["synthetic", "trunk"], required=True)
    p.add_argument("--ctx", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--harvest", choices=["dflash", "dspark"], default=None)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    if args.ctx < 1:
        p.error("--ctx must be >= 1")

    t0 = time.time()
    tiestable.install()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, args.threads))
    import transformers
    transformers.utils.logging.disable_progress_bar()
    model, c = drafter_io.load_drafter(args.drafter_dir)
    trunk = drafter_io.load_trunk(args.trunk)
    drafter_io.check_pair(trunk, c)
    harvest = c["harvest"] or args.harvest
    if harvest is None:
        raise SystemExit("dump_drafter: error: the drafter config has no harvest; give --harvest dflash|dspark")
    if args.harvest and c["harvest"] and args.harvest != c["harvest"]:
        raise SystemExit(f"dump_drafter: error: --harvest {args.harvest} disagrees with the config's {c['harvest']}")

    V, D, n_taps = c["vocab_size"], c["hidden_size"], len(c["target_layer_ids"])
    gen = torch.Generator().manual_seed(args.seed)
    tokens = None
    with torch.no_grad():
        if args.taps == "synthetic":
            taps = torch.randn(args.ctx, n_taps, D, generator=gen)
            anchor = int(torch.randint(2, V, (1,), generator=gen))
        else:
            tokens = torch.randint(2, V, (args.ctx,), generator=gen)
            logits, taps = drafter_io.trunk_forward(trunk, tokens[None], c["tap_layer_inputs"])
            taps = taps[0]
            anchor = int(torch.argmax(logits[0, -1]))
        out = propose(model, taps, anchor, harvest, lambda ids: drafter_io.embed(trunk, ids),
                      lambda x: drafter_io.head(trunk, x))

    arrays = {"taps": taps}
    if tokens is not None:
        arrays["tokens"] = tokens
    arrays.update(out)
    int_names = {"tokens", "block_ids", "markov_tokens", "draft_tokens"} | {k for k in out if k.endswith(".experts")}
    np_arrays = {}
    for k, v in arrays.items():
        v = v.detach()
        np_arrays[k] = np.ascontiguousarray(v.to(torch.int32).numpy().astype("<i4") if k in int_names
                                            else v.float().numpy().astype("<f4"))

    geometry = drafter_config.geometry(c)
    geometry["harvest"] = harvest
    geometry["ctx"] = args.ctx
    stats = {}
    if "markov_margin" in out:
        stats["markov_margin_min"] = float(out["markov_margin"].min())
    # inf margins (every expert selected) are not statistics, and not valid JSON.
    router = [float(out[k][torch.isfinite(out[k])].min()) for k in out
              if k.endswith("router.margin") and torch.isfinite(out[k]).any()]
    if router:
        stats["router_margin_min"] = min(router)
    producer = {"tool": "tools/oracle/dump_drafter.py", "transformers": transformers.__version__,
                "torch": torch.__version__, "python": sys.version.split()[0], "compute_dtype": "float32",
                "device": "cpu", "topk_tie_rule": tiestable.TIE_RULE, "threads": max(1, args.threads)}
    if c["family"] == "dflash":
        from importlib.metadata import version
        producer["dflash"] = version("dflash")
    manifest = {
        "format": "memra.drafter-dump", "format_version": "1.0", "producer": producer, "seed": args.seed,
        "regenerate": "\"$(tools/oracle/setup-venv.sh)\" " + shlex.join(["tools/oracle/dump_drafter.py"] + argv),
        "taps_source": args.taps, "anchor": anchor, "geometry": geometry, "stats": stats,
        "data_file": "arrays.safetensors",
        "arrays": {k: {"dtype": "I32" if v.dtype.kind == "i" else "F32", "shape": list(v.shape), "xxh3": xxh3_128(v)}
                   for k, v in np_arrays.items()},
    }
    from safetensors.numpy import save_file
    os.makedirs(args.out, exist_ok=True)
    write_atomic(os.path.join(args.out, "arrays.safetensors"),
                 lambda path: save_file(np_arrays, path, metadata={"format": "memra.drafter-dump"}))

    def write_manifest(path):
        with open(path, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    write_atomic(os.path.join(args.out, "manifest.json"), write_manifest)
    drafts = out["draft_tokens"].tolist()
    print(f"dump_drafter: {args.out}: {c['family']} harvest={harvest} ctx={args.ctx} anchor={anchor} drafts={drafts} "
          f"stats={stats} {time.time() - t0:.1f}s", file=sys.stderr)
    print(os.path.abspath(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
