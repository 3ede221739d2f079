#!/usr/bin/env python3
"""Makes a small random DeepSeek-V4 checkpoint with transformers (the HF save format).

Builds a DeepseekV4Config from geometry options (or a preset), instantiates
DeepseekV4ForCausalLM(config), randomises everything transformers initialises to 0/1 so every
mechanism is live (docs/architecture.md §2-§3), casts to the storage dtype, saves with
save_pretrained, reloads with from_pretrained and asserts the state_dict round-trips bit-exactly.

    make_checkpoint.py --out DIR --seed S [--preset tiny|tiny-bf16|flash|random] [--config-form hf|upstream]
                       [geometry options]

Options given explicitly override the preset. Runs on CPU; deterministic for a given seed and
library versions. Also writes DIR/oracle.json (how the checkpoint was made).
"""
import argparse
import json
import os
import random
import shlex
import shutil
import sys
import tempfile
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import tiestable  # noqa: E402
from geometry import LAYER_CODES, geometry_from_config  # noqa: E402

# Geometry defaults (the "tiny" preset): every mechanism live within ~100 tokens.
DEFAULTS = dict(
    layers="S,C,H,C", hash_layers=1, hc_mult=4, hidden=128, heads=4, head_dim=64, rope_dim=16,
    q_lora=64, o_groups=2, o_lora=16, window=24, csa_rate=4, hca_rate=16, index_heads=4,
    index_dim=32, index_topk=4, experts=8, topk=2, moe_inter=16, scoring="sqrtsoftplus",
    yarn_factor=16.0, yarn_orig=512, rope_theta=10000.0, compress_rope_theta=160000.0,
    vocab=512, dtype="f32", routed_scale=1.5, swiglu_limit=10.0, clamp_scale=40.0, shard_kb=0,
    sinkhorn_iters=20,
)

PRESETS = {
    "tiny": {},
    "tiny-bf16": dict(
        layers="H,S,C,H,C", hash_layers=2, hc_mult=2, hidden=128, heads=4, head_dim=64, rope_dim=16,
        q_lora=64, o_groups=2, o_lora=32, window=20, csa_rate=4, hca_rate=8, index_heads=4,
        index_dim=32, index_topk=5, experts=6, topk=2, moe_inter=48, scoring="sigmoid",
        yarn_factor=4.0, yarn_orig=256, vocab=512, dtype="bf16",
    ),
    # V4-Flash per-layer shapes at two layers (CSA then HCA, the first routed by hash): head_dim 512
    # with rope 64, window 128, HCA rate 128, indexer heads of 128 with top-64, YaRN x16 over 65536,
    # 20 Sinkhorn iterations. Heads are 8 instead of 64, with q_lora (1/32 of H*d), o_groups (4
    # heads per group) and o_lora (G*R = H*d/4) scaled in proportion; hidden, vocab and experts are
    # small so the CPU oracle and engine stay fast. 600+ tokens wrap the window, close the 128-block
    # several times and give the indexer far more than 64 candidates.
    "flash": dict(
        layers="C,H", hash_layers=1, hc_mult=4, hidden=256, heads=8, head_dim=512, rope_dim=64, q_lora=128,
        o_groups=2, o_lora=512, window=128, csa_rate=4, hca_rate=128, index_heads=16, index_dim=128,
        index_topk=64, experts=8, topk=2, moe_inter=64, scoring="sqrtsoftplus", yarn_factor=16.0,
        yarn_orig=65536, vocab=512, dtype="bf16",
    ),
}


def random_geometry(seed):
    """A random small geometry drawn from the seed: 3-6 layers mixing S/C/H (each kind present),
    hc_mult 2 or 4, f32 or bf16, varied widths, YaRN on or off, sigmoid or sqrtsoftplus."""
    r = random.Random(seed * 7919 + 17)
    n = r.randint(3, 6)
    kinds = ["S", "C", "H"] + [r.choice("SCH") for _ in range(n - 3)]
    r.shuffle(kinds)
    heads = r.choice([2, 4])
    head_dim = r.choice([32, 64])
    rope_dim = r.choice([8, 16])
    index_dim = r.choice([16, 32])
    hca_rate = r.choice([8, 16])
    window = r.choice([w for w in range(10, 30) if w % hca_rate and w % 4])
    experts = r.randint(4, 8)
    g = dict(
        layers=",".join(kinds), hash_layers=r.randint(1, min(2, n - 1)), hc_mult=r.choice([2, 4]),
        hidden=r.choice([64, 96, 128]), heads=heads, head_dim=head_dim, rope_dim=rope_dim,
        q_lora=r.choice([32, 48, 64]), o_groups=r.choice([g for g in (2, 4) if heads % g == 0]),
        o_lora=r.choice([16, 32]), window=window, csa_rate=4, hca_rate=hca_rate,
        index_heads=r.choice([2, 4, 8]), index_dim=index_dim, index_topk=r.randint(3, 8),
        experts=experts, topk=r.randint(1, min(3, experts - 1)), moe_inter=r.choice([16, 32, 48]),
        scoring=r.choice(["sqrtsoftplus", "sigmoid"]), yarn_factor=r.choice([0.0, 4.0, 16.0]),
        yarn_orig=r.choice([128, 256, 512]), vocab=r.choice([256, 384, 512]),
        dtype=r.choice(["f32", "bf16"]), shard_kb=r.choice([0, 0, 512]),
    )
    return g


def build_config_dict(g):
    from geometry import LAYER_CODES as codes
    kinds = [k.strip().upper() for k in g["layers"].split(",") if k.strip()]
    bad = [k for k in kinds if k not in codes]
    if bad or not kinds:
        raise SystemExit(f"make_checkpoint: error: --layers {g['layers']!r}: use a comma list of S, C, H")
    n = len(kinds)
    if not 0 <= g["hash_layers"] <= n:
        raise SystemExit(f"make_checkpoint: error: --hash-layers {g['hash_layers']} not in [0, {n}]")
    if g["heads"] % g["o_groups"]:
        raise SystemExit(f"make_checkpoint: error: --o-groups {g['o_groups']} must divide --heads {g['heads']}")
    if g["rope_dim"] % 2 or g["rope_dim"] > g["head_dim"] or g["rope_dim"] > g["index_dim"]:
        raise SystemExit("make_checkpoint: error: --rope-dim must be even and <= --head-dim and --index-dim")
    if g["topk"] > g["experts"]:
        raise SystemExit("make_checkpoint: error: --topk must be <= --experts")
    prf = g["rope_dim"] / g["head_dim"]
    compress = {"rope_type": "default", "rope_theta": float(g["compress_rope_theta"]), "partial_rotary_factor": prf}
    if g["yarn_factor"] and g["yarn_factor"] > 0:
        compress.update(rope_type="yarn", factor=float(g["yarn_factor"]),
                        original_max_position_embeddings=int(g["yarn_orig"]), beta_fast=32.0, beta_slow=1.0,
                        attention_factor=1.0)
    return {
        "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
        "vocab_size": g["vocab"], "hidden_size": g["hidden"], "num_hidden_layers": n,
        "num_attention_heads": g["heads"], "num_key_value_heads": 1, "head_dim": g["head_dim"],
        "partial_rotary_factor": prf, "q_lora_rank": g["q_lora"], "o_groups": g["o_groups"],
        "o_lora_rank": g["o_lora"], "sliding_window": g["window"],
        "layer_types": [codes[k] for k in kinds],
        "compress_rates": {"compressed_sparse_attention": g["csa_rate"], "heavily_compressed_attention": g["hca_rate"]},
        "mlp_layer_types": ["hash_moe"] * g["hash_layers"] + ["moe"] * (n - g["hash_layers"]),
        "rope_theta": float(g["rope_theta"]), "compress_rope_theta": float(g["compress_rope_theta"]),
        "rope_parameters": {
            "main": {"rope_type": "default", "rope_theta": float(g["rope_theta"]), "partial_rotary_factor": prf},
            "compress": compress,
        },
        # YaRN: keep max_position_embeddings = factor * original (as the released models do).
        "max_position_embeddings": int(g["yarn_orig"] * g["yarn_factor"]) if g["yarn_factor"] > 0 else 1048576,
        "index_n_heads": g["index_heads"], "index_head_dim": g["index_dim"], "index_topk": g["index_topk"],
        "n_routed_experts": g["experts"], "n_shared_experts": 1, "num_experts_per_tok": g["topk"],
        "moe_intermediate_size": g["moe_inter"], "scoring_func": g["scoring"], "norm_topk_prob": True,
        "routed_scaling_factor": float(g["routed_scale"]), "swiglu_limit": float(g["swiglu_limit"]),
        "hc_mult": g["hc_mult"], "hc_sinkhorn_iters": g["sinkhorn_iters"], "hc_eps": 1e-6, "rms_norm_eps": 1e-6,
        "num_nextn_predict_layers": 0, "hidden_act": "silu", "tie_word_embeddings": False,
        "bos_token_id": 0, "eos_token_id": 1, "initializer_range": 0.02, "dtype": "float32",
    }


def to_upstream_form(cfg):
    """The HF-native config.json rewritten in the legacy/upstream spelling transformers still reads
    (DeepseekV4Config.__post_init__): per-layer `compress_ratios` (0 sliding, 4 CSA, 128 HCA, plus
    the trailing MTP entry the released configs carry), `num_hash_layers`, `qk_rope_head_dim` and a
    flat `rope_scaling` YaRN dict for the compressed layers."""
    out = dict(cfg)
    rates = cfg["compress_rates"]
    if rates["compressed_sparse_attention"] != 4 or rates["heavily_compressed_attention"] != 128:
        raise SystemExit("make_checkpoint: error: --config-form upstream needs CSA rate 4 and HCA rate 128 "
                         "(transformers maps compress_ratios through {0, 4, 128} only)")
    ratios = [0 if t == "sliding_attention" else rates[t] for t in cfg["layer_types"]] + [0]
    mlp = cfg["mlp_layer_types"]
    n_hash = mlp.count("hash_moe")
    if mlp[:n_hash] != ["hash_moe"] * n_hash:
        raise SystemExit("make_checkpoint: error: --config-form upstream needs the hash layers first")
    compress = cfg["rope_parameters"]["compress"]
    for key in ("layer_types", "compress_rates", "mlp_layer_types", "partial_rotary_factor", "rope_parameters"):
        out.pop(key, None)
    out["compress_ratios"] = ratios
    out["num_hash_layers"] = n_hash
    out["qk_rope_head_dim"] = int(round(cfg["partial_rotary_factor"] * cfg["head_dim"]))
    if compress.get("rope_type") == "yarn":
        out["rope_scaling"] = {"type": "yarn", "factor": compress["factor"],
                               "original_max_position_embeddings": compress["original_max_position_embeddings"],
                               "beta_fast": compress["beta_fast"], "beta_slow": compress["beta_slow"]}
    return out


@torch.no_grad()
def randomise(model, seed, clamp_scale):
    """Randomise what _init_weights leaves at 0/1 (docs/architecture.md §3)."""
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m

    gen = torch.Generator().manual_seed(seed * 1000003 + 7)

    def normal_(t, mean, std):
        t.copy_(torch.randn(t.shape, generator=gen, dtype=torch.float32) * std + mean)

    cfg = model.config
    for name, mod in model.named_modules():
        if isinstance(mod, m.DeepseekV4RMSNorm):
            normal_(mod.weight, 1.0, 0.1)
        elif isinstance(mod, m.DeepseekV4Attention):
            normal_(mod.sinks, 0.0, 1.0)
        elif isinstance(mod, (m.DeepseekV4HCACompressor, m.DeepseekV4CSACompressor, m.DeepseekV4Indexer)):
            normal_(mod.position_bias, 0.0, 0.5)
        elif isinstance(mod, m.DeepseekV4HyperConnection):
            normal_(mod.base, 0.0, 0.5)
            mod.scale.copy_(torch.rand(mod.scale.shape, generator=gen) + 0.5)
        elif isinstance(mod, m.DeepseekV4HyperHead):
            normal_(mod.hc_base, 0.0, 0.5)
            mod.hc_scale.copy_(torch.rand(mod.hc_scale.shape, generator=gen) + 0.5)
        elif isinstance(mod, m.DeepseekV4TopKRouter):
            normal_(mod.e_score_correction_bias, 0.0, 0.05)
        elif isinstance(mod, m.DeepseekV4HashRouter):
            rows = [torch.randperm(cfg.n_routed_experts, generator=gen)[: cfg.num_experts_per_tok] for _ in range(cfg.vocab_size)]
            mod.tid2eid.copy_(torch.stack(rows).to(mod.tid2eid.dtype))
        if isinstance(mod, m.DeepseekV4Indexer):
            # Large indexer weights so top-k margins are large (few near-ties).
            normal_(mod.q_b_proj.weight, 0.0, 0.1)
            normal_(mod.kv_proj.weight, 0.0, 0.1)
            normal_(mod.scorer.weights_proj.weight, 0.0, 0.1)
    clamped = []
    if clamp_scale and clamp_scale > 0:
        # One routed expert per layer (and the first layer's shared expert) gets gate/up scaled
        # up and down scaled down, so |gate|,|up| > swiglu_limit for many tokens.
        for i, layer in enumerate(model.model.layers):
            e = int(torch.randint(cfg.n_routed_experts, (1,), generator=gen))
            layer.mlp.experts.gate_up_proj[e].mul_(clamp_scale)
            layer.mlp.experts.down_proj[e].div_(clamp_scale)
            clamped.append(f"layer {i} expert {e}")
        shared = model.model.layers[0].mlp.shared_experts
        shared.gate_proj.weight.mul_(clamp_scale)
        shared.up_proj.weight.mul_(clamp_scale)
        shared.down_proj.weight.div_(clamp_scale)
        clamped.append("layer 0 shared expert")
    return clamped


def state_dict_cpu(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_round_trip(expected, model, what):
    got = model.state_dict()
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    if missing or extra:
        raise AssertionError(f"{what}: state_dict keys differ: missing {missing[:5]} extra {extra[:5]}")
    bad = []
    for k, v in expected.items():
        w = got[k]
        if v.dtype != w.dtype or v.shape != w.shape:
            bad.append(f"{k}: {v.dtype}{tuple(v.shape)} vs {w.dtype}{tuple(w.shape)}")
        elif not torch.equal(v.view(torch.uint8) if v.is_floating_point() else v,
                             w.view(torch.uint8) if w.is_floating_point() else w):
            bad.append(f"{k}: values differ (max abs {float((v.float() - w.float()).abs().max()):.3g})")
    if bad:
        raise AssertionError(f"{what}: {len(bad)} tensors do not round-trip bit-exactly: " + "; ".join(bad[:6]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output model folder (replaced)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--preset", choices=["tiny", "tiny-bf16", "flash", "random"], default="tiny")
    p.add_argument("--config-form", choices=["hf", "upstream"], default="hf",
                   help="config.json spelling: transformers-native (default) or the legacy/upstream keys")
    opt = p.add_argument_group("geometry (override the preset)")
    for key, val in DEFAULTS.items():
        flag = "--" + key.replace("_", "-")
        typ = type(val) if not isinstance(val, bool) else int
        opt.add_argument(flag, dest=key, type=typ, default=None, help=f"default {val}")
    opt.set_defaults()
    args = p.parse_args(argv)
    if args.dtype is not None and args.dtype not in ("f32", "bf16"):
        p.error("--dtype must be f32 or bf16")
    if args.scoring is not None and args.scoring not in ("sqrtsoftplus", "sigmoid"):
        p.error("--scoring must be sqrtsoftplus or sigmoid")

    g = dict(DEFAULTS)
    g.update(random_geometry(args.seed) if args.preset == "random" else PRESETS[args.preset])
    for key in DEFAULTS:
        if getattr(args, key) is not None:
            g[key] = getattr(args, key)

    t0 = time.time()
    tiestable.install()
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    from transformers import DeepseekV4Config, DeepseekV4ForCausalLM
    import transformers
    transformers.utils.logging.disable_progress_bar()

    cfg_dict = build_config_dict(g)
    config = DeepseekV4Config(**{k: v for k, v in cfg_dict.items() if k not in ("architectures", "model_type")})
    config.architectures = ["DeepseekV4ForCausalLM"]
    model = DeepseekV4ForCausalLM(config).eval()
    clamped = randomise(model, args.seed, g["clamp_scale"])

    out = os.path.abspath(args.out)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".make_checkpoint.", dir=parent)
    try:
        save_kwargs = {"max_shard_size": f"{g['shard_kb']}KB"} if g["shard_kb"] else {}
        if g["dtype"] == "bf16":
            # Let transformers decide which tensors stay fp32 (_keep_in_fp32_modules_strict: hc, sinks,
            # position_bias, router bias, norms), exactly as a bf16 load would.
            f32_dir = os.path.join(stage, "f32")
            model.save_pretrained(f32_dir)
            model = DeepseekV4ForCausalLM.from_pretrained(f32_dir, dtype=torch.bfloat16).eval()
        expected = state_dict_cpu(model)
        model_dir = os.path.join(stage, "model")
        model.save_pretrained(model_dir, **save_kwargs)
        reloaded = DeepseekV4ForCausalLM.from_pretrained(model_dir, dtype="auto").eval()
        assert_round_trip(expected, reloaded, "save_pretrained -> from_pretrained")
        # The main-attention kv_norm is saved as attn.norm (docs/architecture.md §2): check it really came back.
        for i, layer in enumerate(reloaded.model.layers):
            w = layer.self_attn.kv_norm.weight
            if torch.all(w == 1):
                raise AssertionError(f"layer {i} self_attn.kv_norm came back as all ones")
        geometry = geometry_from_config(reloaded.config, reloaded)
        if args.config_form == "upstream":
            # Rewrite config.json in the upstream spelling and check transformers resolves it to
            # the same geometry and loads the same weights (the oracle then runs from this form).
            cfg_path = os.path.join(model_dir, "config.json")
            with open(cfg_path) as f:
                native = json.load(f)
            with open(cfg_path, "w") as f:
                json.dump(to_upstream_form(native), f, indent=2, sort_keys=True)
                f.write("\n")
            again = DeepseekV4ForCausalLM.from_pretrained(model_dir, dtype="auto").eval()
            assert_round_trip(expected, again, "upstream-form config.json -> from_pretrained")
            if geometry_from_config(again.config, again) != geometry:
                raise AssertionError("the upstream-form config.json resolves to another geometry in transformers")
        dtypes = sorted({str(v.dtype).replace("torch.", "") for v in expected.values()})
        n_params = sum(v.numel() for k, v in expected.items())
        meta = {
            "format": "memra.oracle-checkpoint", "format_version": "1.0",
            "producer": {"tool": "tools/oracle/make_checkpoint.py", "transformers": transformers.__version__,
                         "torch": torch.__version__, "python": sys.version.split()[0]},
            "seed": args.seed, "preset": args.preset, "config_form": args.config_form,
            "regenerate": "\"$(tools/oracle/setup-venv.sh)\" " + shlex.join(
                ["tools/oracle/make_checkpoint.py"] + (argv if argv is not None else sys.argv[1:])),
            "options": g, "weights_dtype": "bfloat16" if g["dtype"] == "bf16" else "float32",
            "tensor_dtypes": dtypes, "parameters": n_params, "clamp_scaled": clamped,
            "round_trip": "bit-exact", "geometry": geometry,
        }
        with open(os.path.join(model_dir, "oracle.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        if os.path.lexists(out):
            if os.path.isdir(out) and not os.path.islink(out):
                if os.listdir(out) and not os.path.exists(os.path.join(out, "config.json")):
                    raise SystemExit(f"make_checkpoint: error: {out} exists and is not a model folder; not replacing it")
                shutil.rmtree(out)
            else:
                raise SystemExit(f"make_checkpoint: error: {out} exists and is not a folder")
        os.replace(model_dir, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"make_checkpoint: {out}: {g['layers']} hc{g['hc_mult']} {meta['weights_dtype']} "
          f"{n_params} params, {size / 1e6:.2f} MB, round trip bit-exact, {time.time() - t0:.1f}s", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
