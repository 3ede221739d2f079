#!/usr/bin/env python3
"""Times transformers' DeepSeek-V4 (eager, bf16, one GPU) on the model `memra bench` times: the same
config (memra bench --config-out) and the same weights and token streams, rebuilt here from the seed
with the formulas of lib/model/synthetic.h and kernels/synthetic_weights.cu (bit-identical values).
Prints one JSON document with the keys of memra bench's JSON; bench/compare.py joins the two.

    transformers_bench.py CONFIG_JSON [--seed 1] [--contexts 2048,32768] [--batches 8,32,64]
                          [--verify 6,16] [--prefill 2048] [--steps 16] [--reps 3] [--check-values]

Decode at a context: a prefill of that many tokens (in chunks of 2048 through the cache past 2048),
then single-token steps through the cache; wall clock around each forward after a device sync.
A measurement that fails (out of memory, an unsupported continuation) is reported with its reason.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

M32 = 0xFFFFFFFF
DEV = os.environ.get("MEMRA_BENCH_DEVICE", "cuda")  # cpu: a smoke test of the script on a small config


# ---- the synthetic value stream (lib/model/synthetic.h), in int64 arithmetic mod 2^32 ----------

def mix_int(x):
    x &= M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    x ^= x >> 16
    return x


def key_of(name, seed):
    f = 2166136261
    for c in name.encode():
        f ^= c
        f = (f * 16777619) & M32
    return mix_int(f + ((seed & M32) * 0x9E3779B9 & M32))


def mul32(x, c):
    """(x * c) mod 2^32 for an int64 tensor x < 2^32, without int64 overflow."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + ((x * hi) & 0xFFFF) * 65536) & M32


def mix(x):
    x = x ^ (x >> 16)
    x = mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def hashes(key, start, n, device):
    i = torch.arange(start, start + n, device=device, dtype=torch.int64) & M32
    return mix((key + mul32(i, 0x85EBCA6B)) & M32)


def values(key, start, n, scale, offset, device):
    """bf16_rne((2u - 1) * scale + offset), u = (h >> 8) * 2^-24, f32 arithmetic rounded per op."""
    u = (hashes(key, start, n, device) >> 8).to(torch.float32) * (2.0 ** -24)
    s = torch.tensor(np.float32(scale), device=device)
    o = torch.tensor(np.float32(offset), device=device)
    return ((u * 2.0 - 1.0) * s + o).to(torch.bfloat16)


def fill(param, name, seed, scale, offset=0.0, start=0):
    n = param.numel()
    v = values(key_of(name, seed), start, n, scale, offset, param.device)
    with torch.no_grad():
        param.copy_(v.view(param.shape).to(param.dtype))


def mat_scale(cols):
    return float(np.float32(math.sqrt(3.0 / cols)))


def tokens(stream, seed, n, vocab, start=0):
    h = hashes(key_of(stream, seed), start, n, "cpu")
    return (h % vocab).to(torch.int64)


# ---- weights: the table of kernels/synthetic_weights.cu, by transformers parameter -------------

def fill_model(model, cfg, seed):
    D, n = cfg["hidden_size"], cfg["hc_mult"]
    I, E = cfg["moe_intermediate_size"], cfg["n_routed_experts"]
    hc = float(np.float32(math.sqrt(3.0 / (n * D))))
    m = model.model
    fill(m.embed_tokens.weight, "embed.weight", seed, 1.0)
    fill(model.lm_head.weight, "head.weight", seed, mat_scale(D))
    fill(m.norm.weight, "norm.weight", seed, 0.1, 1.0)
    fill(m.hc_head.hc_fn, "hc_head_fn", seed, hc)
    fill(m.hc_head.hc_base, "hc_head_base", seed, 0.5)
    fill(m.hc_head.hc_scale, "hc_head_scale", seed, 0.5, 1.0)
    for l, layer in enumerate(m.layers):
        p = f"layers.{l}."
        for hf, ours in ((layer.attn_hc, "hc_attn"), (layer.ffn_hc, "hc_ffn")):
            fill(hf.fn, p + ours + "_fn", seed, hc)
            fill(hf.base, p + ours + "_base", seed, 0.5)
            fill(hf.scale, p + ours + "_scale", seed, 0.5, 1.0)
        fill(layer.input_layernorm.weight, p + "attn_norm.weight", seed, 0.1, 1.0)
        fill(layer.post_attention_layernorm.weight, p + "ffn_norm.weight", seed, 0.1, 1.0)
        a = layer.self_attn
        lin = lambda mod, name: fill(mod.weight, name, seed, mat_scale(mod.weight.shape[1]))
        lin(a.q_a_proj, p + "attn.wq_a.weight")
        fill(a.q_a_norm.weight, p + "attn.q_norm.weight", seed, 0.1, 1.0)
        lin(a.q_b_proj, p + "attn.wq_b.weight")
        lin(a.kv_proj, p + "attn.wkv.weight")
        fill(a.kv_norm.weight, p + "attn.kv_norm.weight", seed, 0.1, 1.0)
        fill(a.sinks, p + "attn.attn_sink", seed, 1.0)
        # o_a_proj: [G·R, H·d/G] as upstream wo_a (GroupedLinear keeps nn.Linear's [out, in])
        fill(a.o_a_proj.weight, p + "attn.wo_a.weight", seed, mat_scale(a.o_a_proj.weight.shape[-1]))
        lin(a.o_b_proj, p + "attn.wo_b.weight")
        comp = getattr(a, "compressor", None)
        if comp is not None:
            c = p + "attn.compressor."
            lin(comp.kv_proj, c + "wkv.weight")
            lin(comp.gate_proj, c + "wgate.weight")
            fill(comp.position_bias, c + "ape", seed, 0.5)
            fill(comp.kv_norm.weight, c + "norm.weight", seed, 0.1, 1.0)
            idx = getattr(comp, "indexer", None)
            if idx is not None:
                c = p + "attn.indexer.compressor."
                lin(idx.kv_proj, c + "wkv.weight")
                lin(idx.gate_proj, c + "wgate.weight")
                fill(idx.position_bias, c + "ape", seed, 0.5)
                fill(idx.kv_norm.weight, c + "norm.weight", seed, 0.1, 1.0)
                lin(idx.q_b_proj, p + "attn.indexer.wq_b.weight")
                lin(idx.scorer.weights_proj, p + "attn.indexer.weights_proj.weight")
        mlp = layer.mlp
        lin(mlp.gate, p + "ffn.gate.weight")
        fill(mlp.gate.e_score_correction_bias, p + "ffn.gate.bias", seed, 0.05)
        gu, dn = mlp.experts.gate_up_proj, mlp.experts.down_proj  # [E, 2I, D], [E, D, I]
        with torch.no_grad():
            for e in range(E):
                gu[e, :I].copy_(values(key_of(p + "ffn.experts.w1", seed), e * I * D, I * D, mat_scale(D), 0.0, gu.device).view(I, D).to(gu.dtype))
                gu[e, I:].copy_(values(key_of(p + "ffn.experts.w3", seed), e * I * D, I * D, mat_scale(D), 0.0, gu.device).view(I, D).to(gu.dtype))
                dn[e].copy_(values(key_of(p + "ffn.experts.w2", seed), e * D * I, D * I, mat_scale(I), 0.0, dn.device).view(D, I).to(dn.dtype))
        sh = mlp.shared_experts
        lin(sh.gate_proj, p + "ffn.shared_experts.w1.weight")
        lin(sh.up_proj, p + "ffn.shared_experts.w3.weight")
        lin(sh.down_proj, p + "ffn.shared_experts.w2.weight")


# ---- timing --------------------------------------------------------------------------------

def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def timed(fn):
    sync()
    t0 = time.perf_counter()
    r = fn()
    sync()
    return time.perf_counter() - t0, r


def prefill(model, ids, chunk=2048):
    cache = None
    out = None
    for s in range(0, ids.shape[1], chunk):
        out = model(ids[:, s:s + chunk], past_key_values=cache, use_cache=True)
        cache = out.past_key_values
    return cache, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--contexts", default="2048,32768")
    ap.add_argument("--batches", default="8,32,64")
    ap.add_argument("--verify", default="6,16")
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check-values", action="store_true", help="print a few generated values and exit")
    ap.add_argument("--out", help="also rewrite this JSON file after each section (a timeout keeps what was measured)")
    a = ap.parse_args()
    if a.check_values:
        k = key_of("layers.0.attn.wq_a.weight", 1)
        v = values(k, 0, 8, mat_scale(4096), 0.0, "cpu").float().tolist()
        print(json.dumps({"key": k, "values": v, "tokens": tokens("prompt", 1, 8, 4096).tolist()}))
        return
    from transformers import AutoModelForCausalLM, DeepseekV4Config
    import transformers
    cfg = json.load(open(a.config))
    L, V = cfg["num_hidden_layers"], cfg["vocab_size"]
    config = DeepseekV4Config(**{k: v for k, v in cfg.items() if k not in ("architectures", "model_type", "dtype")})
    config._attn_implementation = "eager"
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "device": torch.cuda.get_device_name(0) if DEV == "cuda" else DEV}
    t0 = time.perf_counter()
    with torch.device(DEV):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    fill_model(model, cfg, a.seed)
    sync()
    out["build_seconds"] = time.perf_counter() - t0
    out["weights_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    seed = a.seed
    contexts = [int(x) for x in a.contexts.split(",")]
    batches = [int(x) for x in a.batches.split(",")]
    blocks = [int(x) for x in a.verify.split(",")]
    torch.set_grad_enabled(False)

    def save():
        if a.out:
            tmp = a.out + ".tmp"
            with open(tmp, "w") as fh:
                json.dump(out, fh, indent=2)
            os.replace(tmp, a.out)

    # prefill
    ids = tokens("prompt", seed, a.prefill, V).view(1, -1).to(DEV)
    try:
        model(ids, use_cache=True)
        ts = [timed(lambda: model(ids, use_cache=True))[0] for _ in range(a.reps)]
        t = float(np.median(ts))
        out["prefill"] = {"tokens": a.prefill, "seconds": t, "tokens_per_s": a.prefill / t}
    except Exception as e:  # noqa: BLE001
        out["prefill"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    if DEV == "cuda":
        torch.cuda.empty_cache()

    save()
    # decode at each context, batch 1
    out["decode"] = []
    nxt = tokens("decode", seed, a.steps + 3, V).to(DEV)
    step0 = None
    for ctx in contexts:
        try:
            cids = tokens("context", seed, ctx, V).view(1, -1).to(DEV)
            fill_s, (cache, _) = timed(lambda: prefill(model, cids))
            ts = []
            for i in range(a.steps + 3):
                t, r = timed(lambda: model(nxt[i].view(1, 1), past_key_values=cache, use_cache=True))
                cache = r.past_key_values
                if i >= 3:
                    ts.append(t)
            t = float(np.median(ts))
            out["decode"].append({"context": ctx, "context_fill_seconds": fill_s, "step_ms": t * 1e3,
                                  "ms_per_layer_token": t * 1e3 / L})
            if step0 is None:
                step0 = t
            del cache
        except Exception as e:  # noqa: BLE001
            out["decode"].append({"context": ctx, "error": f"{type(e).__name__}: {e}"[:300]})
        if DEV == "cuda":
            torch.cuda.empty_cache()

    save()
    # verify blocks at the first context
    out["verify"] = []
    ctx0 = contexts[0]
    cids = tokens("context", seed, ctx0, V).view(1, -1).to(DEV)
    for b in blocks:
        try:
            blk = tokens("verify", seed, b, V).view(1, -1).to(DEV)
            ts = []
            for r in range(a.reps + 1):
                cache, _ = prefill(model, cids)
                t, _ = timed(lambda: model(blk, past_key_values=cache, use_cache=True))
                if r > 0:
                    ts.append(t)
                del cache
            t = float(np.median(ts))
            out["verify"].append({"block": b, "context": ctx0, "ms": t * 1e3,
                                  "block_over_one_step": t / step0 if step0 else None})
        except Exception as e:  # noqa: BLE001
            out["verify"].append({"block": b, "error": f"{type(e).__name__}: {e}"[:300]})
        if DEV == "cuda":
            torch.cuda.empty_cache()

    save()
    # batches at the first context
    out["batch"] = []
    for B in batches:
        try:
            cids = tokens("context", seed, ctx0, V).view(1, -1).repeat(B, 1).to(DEV)
            cache, _ = prefill(model, cids)
            toks = torch.stack([tokens(f"batch.{i}", seed, a.steps + 3, V) for i in range(B)]).to(DEV)  # [B, steps]
            ts = []
            for i in range(a.steps + 3):
                t, r = timed(lambda: model(toks[:, i:i + 1], past_key_values=cache, use_cache=True))
                cache = r.past_key_values
                if i >= 3:
                    ts.append(t)
            t = float(np.median(ts))
            out["batch"].append({"batch": B, "context": ctx0, "step_ms": t * 1e3, "tokens_per_s": B / t})
            del cache
        except Exception as e:  # noqa: BLE001
            out["batch"].append({"batch": B, "context": ctx0, "error": f"{type(e).__name__}: {e}"[:300]})
        if DEV == "cuda":
            torch.cuda.empty_cache()
    save()
    if not a.out:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    sys.exit(main())
