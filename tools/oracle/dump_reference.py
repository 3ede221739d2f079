#!/usr/bin/env python3
"""Writes a reference dump of a DeepSeek-V4 checkpoint: transformers forward on CPU, tie-stable top-k.

    dump_reference.py MODEL_DIR --out DUMP_DIR --tokens N --seed S [--float64] [--tokens-file F]

Loads MODEL_DIR with from_pretrained (bf16 weights are upcast: model.float()), runs the one-shot
forward over T tokens (random ids in [2, V) from the seed, or the ids in --tokens-file), captures
per-layer hc streams, router selections and indexer selections with forward hooks, then reruns
the sequence incrementally (prefill P = min(66, T//2) with the HF cache, then one token at a time)
and asserts the incremental logits equal the one-shot ones to <= 1e-5 relative to max. Where they
do not, the pair of forwards is rerun in float64: if they agree there, a near-tie decision (a
router or indexer top-k) went one way on one path and the other way on the other in float32, and
the exit status is 3 (NEAR_TIE_EXIT: this seed's case is ambiguous for the oracle itself; callers
that draw seeds may draw another); any other failure exits 1 (SystemExit with its message).

Writes DUMP_DIR/arrays.safetensors and DUMP_DIR/manifest.json (each temp + rename, manifest last).
Array names, shapes and the manifest layout are documented in tools/oracle/README.md.
"""
import argparse
import json
import math
import os
import re
import shlex
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tiestable  # noqa: E402
from geometry import geometry_from_config  # noqa: E402

INCREMENTAL_TOLERANCE = 1e-5  # relative to max |one-shot logit|
NEAR_TIE_EXIT = 3  # float32's one-shot and incremental forwards parted at a near tie; float64's agree


def parse_tokens_file(path, vocab):
    text = open(path).read()
    ids = [int(x) for x in re.findall(r"-?\d+", text)]
    if not ids:
        raise SystemExit(f"dump_reference: error: {path}: no token ids found")
    bad = [i for i in ids if not 0 <= i < vocab]
    if bad:
        raise SystemExit(f"dump_reference: error: {path}: token id {bad[0]} outside [0, {vocab})")
    return ids


class Capture:
    """Forward hooks that record what the one-shot forward computes (enabled only for it)."""

    def __init__(self, model):
        from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m

        self.m = m
        self.enabled = False
        self.arrays = {}
        self.handles = []
        cfg = model.config
        self.k_route = cfg.num_experts_per_tok
        self.k_index = cfg.index_topk
        for li, layer in enumerate(model.model.layers):
            self.handles.append(layer.register_forward_hook(self._layer_hook(li)))
            self.handles.append(layer.mlp.gate.register_forward_hook(self._router_hook(li)))
            comp = layer.self_attn.compressor
            if isinstance(comp, m.DeepseekV4CSACompressor):
                idx = comp.indexer
                self.handles.append(idx.scorer.register_forward_hook(self._scorer_hook(idx)))
                self.handles.append(idx.register_forward_hook(self._indexer_hook(li, idx), with_kwargs=True))

    def remove(self):
        for h in self.handles:
            h.remove()

    def _layer_hook(self, li):
        def hook(module, args, output):
            if self.enabled:
                self.arrays[f"hidden.{li}"] = output[0].detach().float().numpy()  # [T, n, D]
        return hook

    def _router_hook(self, li):
        def hook(module, args, output):
            if not self.enabled:
                return
            logits, _, indices = output
            indices = indices.detach()
            self.arrays[f"router.{li}.experts"] = torch.sort(indices, dim=-1).values.to(torch.int32).numpy()  # [T, k]
            if isinstance(module, self.m.DeepseekV4TopKRouter):
                select = (module.score_fn(logits) + module.e_score_correction_bias).detach()  # [T, E]
                order = torch.sort(select, dim=-1, descending=True, stable=True)
                k = self.k_route
                expect = torch.sort(order.indices[:, :k], dim=-1).values
                if not torch.equal(expect, torch.sort(indices, dim=-1).values):
                    raise AssertionError(f"layer {li}: router selection is not the tie-stable top-{k}")
                if select.shape[-1] > k:
                    margin = order.values[:, k - 1] - order.values[:, k]
                else:
                    margin = torch.full((select.shape[0],), math.inf, dtype=select.dtype)
                self.arrays[f"router.{li}.margin"] = margin.float().numpy()  # [T]
        return hook

    def _scorer_hook(self, indexer):
        def hook(module, args, output):
            indexer._memra_scores = output.detach()  # [B, S, C]
        return hook

    def _indexer_hook(self, li, indexer):
        def hook(module, args, kwargs, output):
            scores = module.__dict__.pop("_memra_scores", None)
            if not self.enabled:
                return
            position_ids = args[2] if len(args) > 2 else kwargs["position_ids"]
            scores = scores[0]  # [T, C]
            chosen = output.detach()[0]  # [T, k']
            T, C = scores.shape
            K = self.k_index
            visible = ((position_ids[0] + 1) // module.compress_rate).clamp(max=C)  # [T]
            selected = np.full((T, K), -1, dtype=np.int32)
            margin = np.full((T,), np.inf, dtype=np.float32)
            for t in range(T):
                nv = int(visible[t])
                picked = chosen[t][chosen[t] >= 0]
                picked = torch.sort(picked).values
                want = min(K, nv)
                order = torch.sort(scores[t, :nv], descending=True, stable=True)
                expect = torch.sort(order.indices[:want]).values
                if picked.numel() != want or not torch.equal(picked, expect):
                    raise AssertionError(f"layer {li} query {t}: indexer picked {picked.tolist()}, "
                                         f"tie-stable top-{K} of {nv} visible is {expect.tolist()}")
                selected[t, :want] = picked.numpy()
                if K < nv:
                    margin[t] = float(order.values[K - 1] - order.values[K])
            self.arrays[f"indexer.{li}.selected"] = selected  # [T, K]
            self.arrays[f"indexer.{li}.margin"] = margin  # [T]
        return hook


def rel_to_max(a, b):
    """max |a - b| / max |b|."""
    return float((a - b).abs().max() / b.abs().max().clamp(min=1e-30))


def write_atomic(path, write):
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def xxh3_128(array):
    import xxhash
    return xxhash.xxh3_128_hexdigest(np.ascontiguousarray(array).tobytes())


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--out", required=True, help="dump folder (created; arrays.safetensors and manifest.json replaced)")
    p.add_argument("--tokens", type=int, default=None, help="number of tokens T (random ids from --seed)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokens-file", default=None, help="token ids (integers separated by anything) instead of random ones")
    p.add_argument("--float64", action="store_true", help="compute in float64 (arrays are still stored as F32)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: reproducible sums)")
    p.add_argument("--qat", action="store_true",
                   help="apply the official code's QAT simulations (qat_sim.py), the reference for memra --qat")
    args = p.parse_args(argv)
    if args.tokens is None and args.tokens_file is None:
        p.error("give --tokens N or --tokens-file F")

    t_start = time.time()
    tiestable.install()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, args.threads))
    import transformers
    transformers.utils.logging.disable_progress_bar()
    from transformers import DeepseekV4ForCausalLM
    from transformers.cache_utils import DynamicCache

    if args.qat:
        import qat_sim
        qat_sim.install()
    compute_dtype = torch.float64 if args.float64 else torch.float32
    model = DeepseekV4ForCausalLM.from_pretrained(args.model_dir, dtype="auto", experts_implementation="eager")
    weight_dtypes = {v.dtype for v in model.state_dict().values() if v.is_floating_point()}
    weights_dtype = "bfloat16" if torch.bfloat16 in weight_dtypes else "float32"
    model = model.to(compute_dtype).eval()
    cfg = model.config
    V = cfg.vocab_size

    if args.tokens_file:
        ids = parse_tokens_file(args.tokens_file, V)
        if args.tokens is not None:
            if args.tokens > len(ids):
                raise SystemExit(f"dump_reference: error: {args.tokens_file} has {len(ids)} ids, --tokens {args.tokens}")
            ids = ids[: args.tokens]
        tokens = torch.tensor(ids, dtype=torch.long)
    else:
        if args.tokens < 2:
            p.error("--tokens must be >= 2")
        gen = torch.Generator().manual_seed(args.seed)
        tokens = torch.randint(2, V, (args.tokens,), generator=gen, dtype=torch.long)
    T = int(tokens.numel())
    P = min(66, T // 2)

    def incremental(m):  # logits of tokens P … T − 1, one at a time after a P-token prefill
        with torch.no_grad():
            cache = DynamicCache(config=cfg)
            m(input_ids=tokens[None, :P], past_key_values=cache, use_cache=True)
            return torch.stack([m(input_ids=tokens[None, t : t + 1], past_key_values=cache, use_cache=True).logits[0, -1]
                                for t in range(P, T)])  # [T-P, V]

    def first_parted(inc, one_shot):  # the first position past the tolerance (rel_to_max's scale)
        d = (inc.double() - one_shot.double()).abs().amax(-1) / one_shot.double().abs().max().clamp(min=1e-30)
        bad = (~(d <= INCREMENTAL_TOLERANCE)).nonzero().flatten()  # (NaN counts as parted)
        return P + int(bad[0]) if len(bad) else None

    cap = Capture(model)
    with torch.no_grad():
        t0 = time.time()
        cap.enabled = True
        logits = model(input_ids=tokens[None], use_cache=False).logits[0]  # [T, V]
        cap.enabled = False
        t_oneshot = time.time() - t0
    t0 = time.time()
    inc = incremental(model)
    t_inc = time.time() - t0
    cap.remove()

    inc_rel = rel_to_max(inc.double(), logits[P:].double())
    if not inc_rel <= INCREMENTAL_TOLERANCE:
        what = (f"dump_reference: error: {args.model_dir}: incremental logits differ from the one-shot forward by "
                f"{inc_rel:.3g} relative to max (> {INCREMENTAL_TOLERANCE}) from position "
                f"{first_parted(inc, logits[P:])} on")
        if compute_dtype != torch.float64:
            m64 = model.to(torch.float64)
            with torch.no_grad():
                one64 = m64(input_ids=tokens[None], use_cache=False).logits[0]
            rel64 = rel_to_max(incremental(m64).double(), one64[P:].double())
            if rel64 <= INCREMENTAL_TOLERANCE:
                print(what + f"; in float64 they agree ({rel64:.3g}): a near-tie decision parted float32's two "
                      "paths, this case is ambiguous for the oracle itself", file=sys.stderr)
                sys.exit(NEAR_TIE_EXIT)
            what += f"; in float64 too ({rel64:.3g})"
        raise SystemExit(what)

    arrays = {"tokens": tokens.to(torch.int32).numpy(), "logits": logits.float().numpy(),
              "logits_incremental": inc.float().numpy()}
    for name in sorted(cap.arrays, key=lambda s: (int(s.split(".")[1]), s)):
        arrays[name] = cap.arrays[name]
    for li in range(cfg.num_hidden_layers):
        assert f"hidden.{li}" in arrays and f"router.{li}.experts" in arrays, li
    arrays = {k: np.ascontiguousarray(v.astype("<f4" if v.dtype.kind == "f" else "<i4")) for k, v in arrays.items()}

    router_margins = [arrays[k].min() for k in arrays if k.endswith(".margin") and k.startswith("router.")]
    index_margins = [arrays[k][np.isfinite(arrays[k])] for k in arrays if k.startswith("indexer.") and k.endswith(".margin")]
    index_margins = [m.min() for m in index_margins if m.size]
    subset_queries = sum(int(np.isfinite(arrays[k]).sum()) for k in arrays if k.startswith("indexer.") and k.endswith(".margin"))

    python = "\"$(tools/oracle/setup-venv.sh)\""
    manifest = {
        "format": "memra.dump", "format_version": "1.0",
        "producer": {"tool": "tools/oracle/dump_reference.py", "transformers": transformers.__version__,
                     "torch": torch.__version__, "python": sys.version.split()[0],
                     "compute_dtype": "float64" if args.float64 else "float32", "device": "cpu",
                     "topk_tie_rule": tiestable.TIE_RULE, "experts_implementation": "eager",
                     "threads": max(1, args.threads), "qat": bool(args.qat)},
        "seed": args.seed,
        "regenerate": python + " " + shlex.join(["tools/oracle/dump_reference.py"] + argv),
        "model": {"weights_dtype": weights_dtype},
        "geometry": geometry_from_config(cfg, model),
        "tokens": T, "incremental_prefix": P, "incremental_rel_to_max": inc_rel,
        "stats": {"router_margin_min": float(min(router_margins)) if router_margins else None,
                  "indexer_margin_min": float(min(index_margins)) if index_margins else None,
                  "indexer_subset_queries": subset_queries},
        "data_file": "arrays.safetensors",
        "arrays": {k: {"dtype": "F32" if v.dtype.kind == "f" else "I32", "shape": list(v.shape), "xxh3": xxh3_128(v)}
                   for k, v in arrays.items()},
    }

    from safetensors.numpy import save_file
    os.makedirs(args.out, exist_ok=True)
    write_atomic(os.path.join(args.out, "arrays.safetensors"),
                 lambda path: save_file(arrays, path, metadata={"format": "memra.dump"}))

    def write_manifest(path):
        with open(path, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    write_atomic(os.path.join(args.out, "manifest.json"), write_manifest)
    print(f"dump_reference: {args.out}: {T} tokens, incremental rel-to-max {inc_rel:.2e}, "
          f"one-shot {t_oneshot:.1f}s, incremental {t_inc:.1f}s, total {time.time() - t_start:.1f}s", file=sys.stderr)
    print(os.path.abspath(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
