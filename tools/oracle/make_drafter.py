#!/usr/bin/env python3
"""Makes a random-weight drafter folder (config.json + model.safetensors + oracle.json) for a trunk.

    make_drafter.py --family dspark|dflash --trunk MODEL_DIR --out DIR --seed S [geometry options]

The drafter's vocab and hidden size are the trunk's (it borrows the trunk's embedding and LM head).
Every parameter is drawn from the seed so every mechanism is live: weights N(0, 0.02), RMSNorm
weights 1 + N(0, 0.1), attention sinks N(0, 1), hc base N(0, 0.5) and scales U(0.5, 1.5), router
bias N(0, 0.05), Markov W1 N(0, 1) and W2 N(0, 0.05), confidence weights N(0, 0.05); with
--clamp-scale X one routed expert per DSpark stage gets gate/up x X and down / X so the SwiGLU clamp
fires. --preset random draws every geometry option from the seed (tests on fresh drafters).
--harvest "" leaves the harvest convention out of a DFlash config (as z-lab and SpecForge
exports do; dumps must then name it). The folder is saved, reloaded through the drafter loader, and the reload must reproduce every
tensor bit for bit.
"""
import argparse
import json
import os
import random
import shlex
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import drafter_config  # noqa: E402
import drafter_io  # noqa: E402
import tiestable  # noqa: E402

DSPARK_DEFAULTS = dict(layers=2, taps="1,2,3", block=8, heads=2, head_dim=32, rope_dim=16, q_lora=32, o_groups=2,
                       o_lora=16, window=12, experts=4, topk=2, moe_inter=16, hc_mult=4, rank=32, rope_theta=10000.0,
                       scoring="sqrtsoftplus", harvest="dspark", noise=0, confidence=1, conf_input="prenorm",
                       conf_bias=0, clamp_scale=40.0)
DFLASH_DEFAULTS = dict(layers=2, taps="0,1,2", block=8, heads=4, kv_heads=2, head_dim=32, inter=128, window=10,
                       sliding="1", causal="", rank=32, rope_theta=1000000.0, harvest="dflash", noise=0, confidence=1,
                       conf_input="final", conf_bias=1)


def random_geometry(family, seed, trunk_layers, vocab):
    """A small random drafter geometry drawn from the seed (--preset random): every option varies,
    both harvest conventions, block sizes 2-16, windows shorter and longer than typical contexts."""
    r = random.Random(seed * 104729 + (1 if family == "dspark" else 2))
    top = trunk_layers - 1 if family == "dspark" else trunk_layers - 2  # the last tappable id
    n_taps = r.randint(1, min(3, top + 1))
    g = dict(layers=r.randint(1, 3), taps=",".join(str(i) for i in sorted(r.sample(range(top + 1), n_taps))),
             block=r.randint(2, 16), noise=r.randrange(vocab), harvest=r.choice(["dflash", "dspark"]),
             rope_theta=r.choice([10000.0, 1000000.0]), head_dim=r.choice([16, 32]))
    if family == "dspark":
        heads = r.choice([1, 2, 4])
        g.update(heads=heads, rope_dim=r.choice([8, 16]), q_lora=r.choice([16, 32]),
                 o_groups=r.choice([x for x in (1, 2) if heads % x == 0]), o_lora=r.choice([8, 16]),
                 window=r.randint(2, 24), experts=r.randint(2, 6), moe_inter=r.choice([8, 16, 32]),
                 hc_mult=r.choice([1, 2, 4]), rank=r.choice([8, 16, 32]), scoring=r.choice(["sqrtsoftplus", "sigmoid"]),
                 confidence=r.randint(0, 1), conf_input=r.choice(["prenorm", "final"]), conf_bias=r.randint(0, 1),
                 clamp_scale=r.choice([0.0, 40.0]))
        g["topk"] = r.randint(1, min(3, g["experts"]))
    else:
        heads = r.choice([2, 4])
        sliding = [i for i in range(g["layers"]) if r.random() < 0.5]
        g.update(heads=heads, kv_heads=r.choice([x for x in (1, 2, 4) if heads % x == 0]), inter=r.choice([32, 64, 128]),
                 window=r.randint(2, 24), sliding=",".join(map(str, sliding)), causal=r.choice(["", "true", "false"]),
                 rank=r.choice([0, 8, 16, 32]), confidence=r.randint(0, 1), conf_input=r.choice(["prenorm", "final"]),
                 conf_bias=r.randint(0, 1))
        if r.random() < 0.3:
            g["harvest"] = ""  # the dump names it
    return g


def dspark_config(trunk_cfg, g):
    return {
        "architectures": ["DSparkV4DraftModel"], "model_type": "deepseek_v4_dspark_draft",
        "vocab_size": trunk_cfg.vocab_size, "hidden_size": trunk_cfg.hidden_size, "num_hidden_layers": g["layers"],
        "num_target_layers": trunk_cfg.num_hidden_layers, "rms_norm_eps": 1e-6,
        "num_attention_heads": g["heads"], "num_key_value_heads": 1, "head_dim": g["head_dim"],
        "qk_rope_head_dim": g["rope_dim"], "q_lora_rank": g["q_lora"], "o_lora_rank": g["o_lora"],
        "o_groups": g["o_groups"], "sliding_window": g["window"], "rope_theta": float(g["rope_theta"]),
        "n_routed_experts": g["experts"], "n_shared_experts": 1, "num_experts_per_tok": g["topk"],
        "moe_intermediate_size": g["moe_inter"], "scoring_func": "sqrtsoftplus", "routed_scaling_factor": 1.5,
        "swiglu_limit": 10.0, "hc_mult": g["hc_mult"], "hc_sinkhorn_iters": 20, "hc_eps": 1e-6,
        "block_size": g["block"], "harvest": g["harvest"],
        "enable_confidence_head": bool(g["confidence"]), "confidence_head_with_markov": True,
        "confidence_input": g["conf_input"], "confidence_head_bias": bool(g["conf_bias"]),
        "dflash_config": {"target_layer_ids": [int(x) for x in g["taps"].split(",")], "mask_token_id": g["noise"],
                          "markov_rank": g["rank"], "kv_fake_quant": False},
    }


def dflash_config(trunk_cfg, g):
    sliding = {int(x) for x in g["sliding"].split(",") if x.strip()} if g["sliding"] else set()
    raw = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3",
        "vocab_size": trunk_cfg.vocab_size, "hidden_size": trunk_cfg.hidden_size, "num_hidden_layers": g["layers"],
        "num_target_layers": trunk_cfg.num_hidden_layers, "intermediate_size": g["inter"],
        "num_attention_heads": g["heads"], "num_key_value_heads": g["kv_heads"], "head_dim": g["head_dim"],
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "attention_bias": False, "tie_word_embeddings": False,
        "max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default", "rope_theta": float(g["rope_theta"])},
        "use_sliding_window": bool(sliding), "sliding_window": g["window"] if sliding else None,
        "layer_types": ["sliding_attention" if i in sliding else "full_attention" for i in range(g["layers"])],
        "block_size": g["block"], "harvest": g["harvest"], "markov_rank": g["rank"], "markov_head_type": "vanilla",
        "enable_confidence_head": bool(g["confidence"]), "confidence_head_with_markov": g["rank"] > 0,
        "confidence_input": g["conf_input"], "confidence_head_bias": bool(g["conf_bias"]),
        "dflash_config": {"mask_token_id": g["noise"], "target_layer_ids": [int(x) for x in g["taps"].split(",")]},
    }
    if not g["harvest"]:  # like the z-lab / SpecForge exports: the dump must name the convention
        del raw["harvest"]
    if g["causal"]:
        raw["is_causal"] = g["causal"] == "true"
    return raw


@torch.no_grad()
def randomise(model, seed, clamp_scale=0.0):
    gen = torch.Generator().manual_seed(seed * 1000003 + 11)

    def normal(t, mean, std):
        t.copy_(torch.randn(t.shape, generator=gen) * std + mean)

    for name, p in sorted(model.named_parameters()):
        leaf = name.rsplit(".", 1)[-1]
        if "norm" in name and leaf == "weight" and p.dim() == 1:
            normal(p, 1.0, 0.1)
        elif leaf == "sinks":
            normal(p, 0.0, 1.0)
        elif leaf in ("base", "hc_base"):
            normal(p, 0.0, 0.5)
        elif leaf in ("scale", "hc_scale"):
            p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
        elif "markov_w1" in name:
            normal(p, 0.0, 1.0)
        elif "markov_w2" in name or "confidence" in name:
            normal(p, 0.0, 0.05)
        else:
            normal(p, 0.0, 0.02)
    for name, buf in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            normal(buf, 0.0, 0.05)
    clamped = []
    if clamp_scale and model.c["family"] == "dspark":
        for s, layer in enumerate(model.stages):
            e = int(torch.randint(model.c["n_routed_experts"], (1,), generator=gen))
            layer.mlp.experts.gate_up_proj[e].mul_(clamp_scale)
            layer.mlp.experts.down_proj[e].div_(clamp_scale)
            clamped.append(f"stage {s} expert {e}")
    return clamped


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", choices=["dspark", "dflash"], required=True)
    p.add_argument("--trunk", required=True, help="trunk model folder (vocab, hidden size, layer count)")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--preset", choices=["default", "random"], default="default",
                   help="random: a geometry drawn from the seed (options given explicitly still override)")
    for key in sorted(set(DSPARK_DEFAULTS) | set(DFLASH_DEFAULTS)):
        sample = DSPARK_DEFAULTS.get(key, DFLASH_DEFAULTS.get(key))
        p.add_argument("--" + key.replace("_", "-"), dest=key, type=type(sample), default=None)
    args = p.parse_args(argv)
    g = dict(DSPARK_DEFAULTS if args.family == "dspark" else DFLASH_DEFAULTS)
    from transformers import AutoConfig
    trunk_cfg = AutoConfig.from_pretrained(args.trunk)
    if args.preset == "random":
        g.update(random_geometry(args.family, args.seed, trunk_cfg.num_hidden_layers, trunk_cfg.vocab_size))
    for key in g:
        if getattr(args, key) is not None:
            g[key] = getattr(args, key)

    t0 = time.time()
    tiestable.install()
    torch.manual_seed(args.seed)
    raw = (dspark_config if args.family == "dspark" else dflash_config)(trunk_cfg, g)
    c = drafter_config.resolve(raw)
    model = drafter_io.build(c).float().eval()
    clamped = randomise(model, args.seed, g.get("clamp_scale", 0.0))
    import transformers
    meta = {
        "format": "memra.oracle-drafter", "format_version": "1.0",
        "producer": {"tool": "tools/oracle/make_drafter.py", "transformers": transformers.__version__,
                     "torch": torch.__version__, "python": sys.version.split()[0]},
        "family": args.family, "seed": args.seed, "trunk": args.trunk, "options": g, "clamp_scaled": clamped,
        "regenerate": "\"$(tools/oracle/setup-venv.sh)\" " + shlex.join(["tools/oracle/make_drafter.py"] + argv),
        "parameters": sum(v.numel() for v in drafter_io.official_state(model).values()),
    }
    drafter_io.save_drafter(model, args.out, meta)
    reloaded, _ = drafter_io.load_drafter(args.out)
    a, b = drafter_io.official_state(model), drafter_io.official_state(reloaded)
    bad = [k for k in a if not torch.equal(a[k], b[k])]
    if bad:
        raise SystemExit(f"make_drafter: error: reload differs in {bad[:5]}")
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"make_drafter: {args.out}: {args.family} {meta['parameters']} params, {size / 1e6:.2f} MB, "
          f"reload bit-exact, {time.time() - t0:.1f}s", file=sys.stderr)
    print(os.path.abspath(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
