#!/usr/bin/env python3
"""Makes a small DeepSeek-V4 checkpoint in the released layout and dtypes, with its oracle dump.

    make_quantized.py --out DIR --seed S --experts-fp4|--experts-fp8 [--tokens N] [--shards K] [make_checkpoint options]

1. make_checkpoint.py builds a random transformers model (f32) with the given geometry.
2. Every tensor is stored as the release stores it (docs/quantization.md, dsv4-architecture.md §2, §6):
   FP8 e4m3 with ue8m0 scales per 128x128 block (`P.scale`, F8_E8M0 [ceil(N/128), ceil(K/128)]) for
   wq_a, wq_b, wkv, wo_a, wo_b, the indexer's wq_b and the shared experts; routed experts FP4 e2m1
   packed two per byte (I8 [N, K/2], low nibble = even column) with ue8m0 scales per 1x32 block
   (F8_E8M0 [N, K/32]) for --experts-fp4 (instruct), FP8 for --experts-fp8 (base); BF16 for the
   embedding, head, router, norms, indexer weights_proj and compressor wkv/wgate; F32 for hc_*, ape,
   attn_sink and the router bias; I64 tid2eid. Names are the upstream ones (no `model.` prefix) and
   config.json is the released form (compress_ratios with the trailing MTP entry, num_hash_layers,
   rope_scaling, quantization_config, expert_dtype). An MTP block (`mtp.0.*`, random, quantised the
   same way) is added, as the release has one; memra lists it and does not use it.
3. The dequantised weights (decode(code) * 2^(e-127) in f32) replace the model's weights, and
   dump_reference.py writes DIR/dump from that f32 model: the reference for parity.
4. DIR/dequant.json records the XXH3-128 of every dequantised tensor (f32 little-endian bytes) under
   its canonical name, so a test can check memra's decoding bit for bit.

Scales: s = 2^ceil(log2(amax / qmax)) per block (qmax 448 for e4m3, 6 for e2m1; amax >= 1e-4), the
ue8m0 rounding DeepSeek's kernels use; codes round to nearest (ties to even). Deterministic for a
seed and the pinned library versions.
"""
import argparse
import json
import math
import os
import shlex
import shutil
import sys
import tempfile

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import dump_reference  # noqa: E402
import make_checkpoint  # noqa: E402

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
E2M1_DECODE = torch.tensor(E2M1 + [-v for v in E2M1], dtype=torch.float32)
E2M1_DECODE[8] = -0.0  # code 8 is S=1, exponent 0, mantissa 0: negative zero


def canonical(saved):
    """transformers' saved name -> memra's canonical (upstream) name."""
    n = saved[6:] if saved.startswith("model.") else saved
    n = {"embed_tokens.weight": "embed.weight", "lm_head.weight": "head.weight", "hc_head.hc_fn": "hc_head_fn",
         "hc_head.hc_base": "hc_head_base", "hc_head.hc_scale": "hc_head_scale"}.get(n, n)
    if n.startswith("layers.") and n.endswith(".attn.norm.weight"):
        n = n[: -len(".attn.norm.weight")] + ".attn.kv_norm.weight"
    return n


def role(name, experts):
    """How the release stores a canonical tensor: fp8 | fp4 | bf16 | f32 | i64."""
    if name.endswith("tid2eid"):
        return "i64"
    if ".hc_" in name or name.startswith("hc_") or name.endswith(".ape") or name.endswith("attn_sink") \
            or name.endswith("gate.bias"):
        return "f32"
    if ".ffn.experts." in name:
        return experts
    fp8 = (".attn.wq_a.", ".attn.wq_b.", ".attn.wkv.", ".attn.wo_a.", ".attn.wo_b.", ".indexer.wq_b.",
           ".shared_experts.", ".e_proj.", ".h_proj.")
    if any(s in name for s in fp8):
        return "fp8"
    return "bf16"  # embed, head, router weight, norms, weights_proj, compressor wkv/wgate


def pow2_scale_exponent(amax, qmax):
    """e such that 2^e = 2^ceil(log2(amax / qmax)), elementwise (amax > 0)."""
    m, e = torch.frexp(amax / qmax)  # x = m * 2^e, m in [0.5, 1)
    return torch.where(m == 0.5, e - 1, e)


def quant_fp8(w, br, bc):
    """[N, K] f32 -> (F8_E4M3 [N, K], e8m0 bytes [ceil(N/br), ceil(K/bc)], dequantised f32 [N, K])."""
    N, K = w.shape
    R, C = -(-N // br), -(-K // bc)
    pad = torch.zeros(R * br, C * bc, dtype=torch.float32)
    pad[:N, :K] = w
    blocks = pad.view(R, br, C, bc)
    amax = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-4)
    e = pow2_scale_exponent(amax, 448.0)
    scale = torch.ldexp(torch.ones_like(amax), e)
    q = (blocks / scale[:, None, :, None]).to(torch.float8_e4m3fn).view(R * br, C * bc)[:N, :K].contiguous()
    full = scale.repeat_interleave(br, 0).repeat_interleave(bc, 1)[:N, :K]
    deq = q.float() * full
    return q, (e + 127).to(torch.uint8), deq


def quant_fp4(w, block=32):
    """[N, K] f32 -> (packed I8 [N, K/2], e8m0 bytes [N, ceil(K/32)], dequantised f32 [N, K])."""
    N, K = w.shape
    assert K % 2 == 0, K
    C = -(-K // block)
    pad = torch.zeros(N, C * block, dtype=torch.float32)
    pad[:, :K] = w
    blocks = pad.view(N, C, block)
    amax = blocks.abs().amax(dim=2).clamp_min(1e-4)
    e = pow2_scale_exponent(amax, 6.0)
    scale = torch.ldexp(torch.ones_like(amax), e)
    x = (blocks / scale[:, :, None]).view(N, C * block)[:, :K]  # |x| <= 6, exact (power-of-two divide)
    grid = torch.tensor(E2M1, dtype=torch.float32)
    dist = (x.abs()[..., None] - grid).abs()  # [N, K, 8]
    best = dist.min(dim=-1, keepdim=True).values
    cand = (dist == best)
    even_tie = cand & (torch.arange(8) % 2 == 0)  # ties go to the even code (even mantissa)
    code = torch.where(even_tie.any(-1), even_tie.float().argmax(-1), cand.float().argmax(-1))
    code = code | ((x < 0) | ((x == 0) & (torch.signbit(x)))).long() * 8
    packed = (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8)
    deq = E2M1_DECODE[code] * scale.repeat_interleave(block, 1)[:, :K]
    return packed.view(torch.int8), (e + 127).to(torch.uint8), deq


def xxh3_f32(t):
    import xxhash
    return xxhash.xxh3_128_hexdigest(t.contiguous().float().numpy().astype("<f4").tobytes())


def upstream_config(hf, experts, n_hash):
    """The released config.json form (as DeepSeek-V4-Pro's) of a transformers-form config."""
    kinds = hf["layer_types"]
    ratios = {"sliding_attention": 0, "compressed_sparse_attention": hf["compress_rates"]["compressed_sparse_attention"],
              "heavily_compressed_attention": hf["compress_rates"]["heavily_compressed_attention"]}
    compress = hf["rope_parameters"]["compress"]
    head_dim = hf["head_dim"]
    cfg = {
        "architectures": ["DeepseekV4ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": hf["bos_token_id"], "eos_token_id": hf["eos_token_id"],
        "hc_eps": hf["hc_eps"], "hc_mult": hf["hc_mult"], "hc_sinkhorn_iters": hf["hc_sinkhorn_iters"],
        "head_dim": head_dim, "hidden_act": "silu", "hidden_size": hf["hidden_size"],
        "index_head_dim": hf["index_head_dim"], "index_n_heads": hf["index_n_heads"], "index_topk": hf["index_topk"],
        "initializer_range": 0.02, "max_position_embeddings": hf["max_position_embeddings"], "model_type": "deepseek_v4",
        "moe_intermediate_size": hf["moe_intermediate_size"], "n_routed_experts": hf["n_routed_experts"],
        "n_shared_experts": hf["n_shared_experts"], "norm_topk_prob": hf["norm_topk_prob"],
        "num_attention_heads": hf["num_attention_heads"], "num_experts_per_tok": hf["num_experts_per_tok"],
        "num_hidden_layers": hf["num_hidden_layers"], "num_hash_layers": n_hash, "num_key_value_heads": 1,
        "num_nextn_predict_layers": 1, "o_groups": hf["o_groups"], "o_lora_rank": hf["o_lora_rank"],
        "q_lora_rank": hf["q_lora_rank"], "qk_rope_head_dim": round(hf["partial_rotary_factor"] * head_dim),
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                "scale_fmt": "ue8m0", "weight_block_size": [128, 128]},
        "rms_norm_eps": hf["rms_norm_eps"], "rope_theta": hf["rope_theta"],
        "routed_scaling_factor": hf["routed_scaling_factor"], "scoring_func": hf["scoring_func"],
        "sliding_window": hf["sliding_window"], "swiglu_limit": hf["swiglu_limit"], "tie_word_embeddings": False,
        "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": hf["vocab_size"],
        "compress_rope_theta": hf["compress_rope_theta"],
        "compress_ratios": [ratios[k] for k in kinds] + [0],  # the trailing entry is the MTP block (SWA)
    }
    if compress.get("rope_type") == "yarn":
        cfg["rope_scaling"] = {"beta_fast": compress["beta_fast"], "beta_slow": compress["beta_slow"],
                               "factor": compress["factor"],
                               "original_max_position_embeddings": compress["original_max_position_embeddings"],
                               "type": "yarn"}
    if experts == "fp4":
        cfg["expert_dtype"] = "fp4"
    return dict(sorted(cfg.items()))


def mtp_block(canon, gen):
    """Random mtp.0.* tensors (f32) shaped like a sliding-attention block with learned routing."""
    src_layer = next(n.split(".")[1] for n in canon if n.startswith("layers.") and ".attn.compressor." not in n
                     and f"layers.{n.split('.')[1]}.attn.compressor.ape" not in canon)
    D = canon["embed.weight"].shape[1]
    E = canon[f"layers.{src_layer}.ffn.gate.weight"].shape[0]
    out = {}
    for n, t in canon.items():
        if not n.startswith(f"layers.{src_layer}.") or n.endswith("tid2eid"):
            continue
        out["mtp.0." + n[len(f"layers.{src_layer}."):]] = torch.randn(t.shape, generator=gen) * 0.02
    out["mtp.0.ffn.gate.bias"] = torch.randn(E, generator=gen) * 0.05
    for n in ("e_proj.weight", "h_proj.weight"):
        out["mtp.0." + n] = torch.randn(D, D, generator=gen) * 0.02
    for n in ("enorm.weight", "hnorm.weight", "norm.weight"):
        out["mtp.0." + n] = 1 + torch.randn(D, generator=gen) * 0.1
    for n in ("hc_head_fn", "hc_head_base", "hc_head_scale"):
        out["mtp.0." + n] = torch.randn(canon[n].shape, generator=gen) * 0.1
    return out


def store(name, t, r):
    """(stored tensors {name: tensor}, dequantised f32 or None) of one tensor with role r, as the
    release stores it: i64 / f32 / bf16 as they are, fp8 and fp4 as codes + an e8m0 `.scale`."""
    if r == "i64":
        return {name: t.to(torch.int64)}, None
    t = t.float()
    if r == "f32":
        return {name: t}, t
    if r == "bf16":
        b = t.to(torch.bfloat16)
        return {name: b}, b.float()
    q, s, d = quant_fp8(t, 128, 128) if r == "fp8" else quant_fp4(t)
    return {name: q, name[: -len(".weight")] + ".scale": s.view(torch.float8_e8m0fnu)}, d


def write_dequant_json(path, roles, deq):
    """dequant.json: every dequantised tensor's format and XXH3-128 of its f32 bytes."""
    with open(path, "w") as f:
        json.dump({"format": "memra.dequant-hashes", "hash": "xxh3-128 of the f32 little-endian bytes",
                   "tensors": {n: {"format": roles[n], "xxh3": xxh3_f32(d)} for n, d in sorted(deq.items())}},
                  f, indent=1)
        f.write("\n")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    # No abbreviations: the geometry options pass through to make_checkpoint (--experts N would
    # otherwise be taken for an abbreviation of --experts-fp4/--experts-fp8).
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, required=True)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--experts-fp4", dest="experts", action="store_const", const="fp4")
    g.add_argument("--experts-fp8", dest="experts", action="store_const", const="fp8")
    p.add_argument("--tokens", type=int, default=96, help="dump length")
    p.add_argument("--shards", type=int, default=1, help="write model-0000i-of-0000K.safetensors + index")
    args, geometry = p.parse_known_args(argv)

    out = os.path.abspath(args.out)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".make_quantized.", dir=parent)
    try:
        hf_dir = os.path.join(stage, "hf")
        make_checkpoint.main(["--out", hf_dir, "--seed", str(args.seed)] + geometry)
        from safetensors.torch import load_file, save_file
        hf_cfg = json.load(open(os.path.join(hf_dir, "config.json")))
        saved = load_file(os.path.join(hf_dir, "model.safetensors"))
        canon = {canonical(k): v for k, v in saved.items()}
        to_saved = {canonical(k): k for k in saved}
        n_hash = sum(1 for t in hf_cfg["mlp_layer_types"] if t == "hash_moe")

        gen = torch.Generator().manual_seed(args.seed * 7 + 3)
        stored, deq, roles = {}, {}, {}
        for name, t in list(canon.items()) + list(mtp_block(canon, gen).items()):
            r = role(name, args.experts)
            roles[name] = r
            s, d = store(name, t, r)
            stored.update(s)
            if d is not None and not name.startswith("mtp."):
                deq[name] = d

        # The f32 model the oracle runs: the transformers save with its weights replaced by the dequantised ones.
        deq_dir = os.path.join(stage, "deq")
        shutil.copytree(hf_dir, deq_dir)
        save_file({to_saved[n]: (d if canon[n].is_floating_point() else canon[n]).contiguous()
                   for n, d in list(deq.items()) + [(n, canon[n]) for n in canon if n not in deq]},
                  os.path.join(deq_dir, "model.safetensors"), metadata={"format": "pt"})
        dump_dir = os.path.join(stage, "dump")
        dump_reference.main([deq_dir, "--out", dump_dir, "--tokens", str(args.tokens), "--seed", str(args.seed)])
        manifest_path = os.path.join(dump_dir, "manifest.json")
        manifest = json.load(open(manifest_path))
        regen = "\"$(tools/oracle/setup-venv.sh)\" " + shlex.join(["tools/oracle/make_quantized.py"] + argv)
        manifest["regenerate"] = regen
        manifest["model"]["weights_dtype"] = "float32 (dequantised from the checkpoint's fp8/fp4 codes)"
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")

        model_dir = os.path.join(stage, "model")
        os.makedirs(model_dir)
        with open(os.path.join(model_dir, "config.json"), "w") as f:
            json.dump(upstream_config(hf_cfg, args.experts, n_hash), f, indent=2)
            f.write("\n")
        names = list(stored)
        if args.shards <= 1:
            save_file(stored, os.path.join(model_dir, "model.safetensors"), metadata={"format": "pt"})
        else:
            per = -(-len(names) // args.shards)
            weight_map = {}
            for i in range(args.shards):
                fname = f"model-{i + 1:05d}-of-{args.shards:05d}.safetensors"
                part = {n: stored[n] for n in names[i * per:(i + 1) * per]}
                save_file(part, os.path.join(model_dir, fname), metadata={"format": "pt"})
                weight_map.update({n: fname for n in part})
            total = sum(t.numel() * t.element_size() for t in stored.values())
            with open(os.path.join(model_dir, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
                f.write("\n")
        shutil.copy(os.path.join(hf_dir, "generation_config.json"), model_dir)
        write_dequant_json(os.path.join(model_dir, "dequant.json"), roles, deq)
        oracle = json.load(open(os.path.join(hf_dir, "oracle.json")))
        oracle["regenerate"] = regen
        oracle["quantized"] = {"experts": args.experts, "fp8_block": [128, 128], "fp4_block": [1, 32],
                               "scale": "ue8m0 = 2^ceil(log2(amax/qmax)), amax >= 1e-4",
                               "rounding": "nearest, ties to even", "mtp_block": "mtp.0.* random, unused"}
        with open(os.path.join(model_dir, "oracle.json"), "w") as f:
            json.dump(oracle, f, indent=1)
            f.write("\n")
        shutil.move(dump_dir, os.path.join(model_dir, "dump"))
        for root, dirs, files in os.walk(model_dir):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        if os.path.lexists(out):
            if not os.path.exists(os.path.join(out, "config.json")):
                raise SystemExit(f"make_quantized: error: {out} exists and is not a model folder; not replacing it")
            shutil.rmtree(out)
        os.replace(model_dir, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out) if os.path.isfile(os.path.join(out, f)))
    print(f"make_quantized: {out}: experts {args.experts}, {len(stored)} stored tensors, {size / 1e6:.2f} MB", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
