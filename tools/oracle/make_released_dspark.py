#!/usr/bin/env python3
"""Makes a checkpoint in the released layout that carries its own DSpark drafter.

    make_released_dspark.py --trunk models/tiny --drafter models/drafters/tiny-dspark-trained \
        --out models/tiny-dspark-released (--experts-fp4 | --experts-fp8)

The trunk (a transformers save, f32) and a separate DSpark drafter folder (memra's form, f32) become
one folder as DeepSeek releases a model with its drafter:
- every trunk tensor under its upstream name, stored as make_quantized.py stores it (FP8 e4m3 with
  ue8m0 128x128 block scales for the attention projections and shared experts, routed experts
  packed FP4 e2m1 with 1x32 scales for --experts-fp4 or FP8 for --experts-fp8, BF16 embedding,
  head, router and norms, F32 hc / ape / sinks / router bias, I64 tid2eid);
- the drafter's tensors as `mtp.*` beside them, stored the same way (main_proj FP8 like the other
  projections; the Markov head and the confidence head BF16, as the released ones are);
- config.json in the released form with the drafter's settings as trunk fields:
  num_nextn_predict_layers = stages, compress_ratios with one trailing 0 per stage,
  dspark_block_size, dspark_target_layer_ids, dspark_noise_token_id, dspark_markov_rank,
  dspark_n_routed_experts, dspark_num_experts_per_tok (as releases write them), and
  dspark_<field> for every other stage field whose value differs from the trunk's;
- dequant.json: the XXH3-128 of every tensor's dequantised f32 bytes (trunk and drafter), so a test
  can check memra's decoding bit for bit; generation_config.json and tokenizer.json copied.
The drafter conventions a release fixes (dspark harvest, prenorm confidence input with the Markov
embedding) must hold for --drafter; anything else is refused. No oracle dump: the trunk is the
source trunk quantised, and tools/oracle/extract_drafter.py gives the drafter back dequantised.
Deterministic (no randomness; codes round to nearest, ties to even).
"""
import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

import drafter_config  # noqa: E402
import drafter_io  # noqa: E402
import make_quantized  # noqa: E402

# The stage fields that default to the trunk's (released_drafter.h) and always-written ones.
STAGE_FIELDS = ["num_attention_heads", "head_dim", "qk_rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups",
                "sliding_window", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "scoring_func",
                "routed_scaling_factor", "swiglu_limit", "hc_mult", "hc_sinkhorn_iters", "hc_eps", "rope_theta"]
ALWAYS = ("n_routed_experts", "num_experts_per_tok")


def drafter_role(name, experts):
    """How the release stores a drafter tensor."""
    if ".main_proj." in name:
        return "fp8"
    if ".markov_head." in name or ".confidence_head." in name:
        return "bf16"
    return make_quantized.role(name, experts)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trunk", required=True)
    p.add_argument("--drafter", required=True)
    p.add_argument("--out", required=True)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--experts-fp4", dest="experts", action="store_const", const="fp4")
    g.add_argument("--experts-fp8", dest="experts", action="store_const", const="fp8")
    args = p.parse_args(argv)

    hf_cfg = json.load(open(os.path.join(args.trunk, "config.json")))
    raw = json.load(open(os.path.join(args.drafter, "config.json")))
    dc = drafter_config.resolve(raw)
    if dc["family"] != "dspark":
        raise SystemExit("make_released_dspark: --drafter is not a DSpark drafter")
    if dc["harvest"] != "dspark" or (dc["enable_confidence_head"] and (
            dc["confidence_input"] != "prenorm" or not dc["confidence_head_with_markov"])):
        raise SystemExit("make_released_dspark: the drafter's harvest / confidence head differ from the released "
                         "convention (dspark harvest, prenorm input with the Markov embedding)")
    for k in ("vocab_size", "hidden_size", "rms_norm_eps"):
        if dc[k] != hf_cfg[k]:
            raise SystemExit(f"make_released_dspark: the drafter's {k} {dc[k]} differs from the trunk's {hf_cfg[k]}")

    saved = load_file(os.path.join(args.trunk, "model.safetensors"))
    canon = {make_quantized.canonical(k): v for k, v in saved.items()}
    n_hash = sum(1 for t in hf_cfg["mlp_layer_types"] if t == "hash_moe")
    cfg = make_quantized.upstream_config(hf_cfg, args.experts, n_hash)
    trunk_fields = dict(cfg)
    trunk_fields["rope_theta"] = hf_cfg["rope_parameters"]["main"]["rope_theta"]
    S = dc["num_hidden_layers"]
    cfg["num_nextn_predict_layers"] = S
    cfg["compress_ratios"] = cfg["compress_ratios"][: hf_cfg["num_hidden_layers"]] + [0] * S
    cfg["dspark_block_size"] = dc["block_size"]
    cfg["dspark_target_layer_ids"] = dc["target_layer_ids"]
    cfg["dspark_noise_token_id"] = dc["noise_token_id"]
    if dc["markov_rank"]:
        cfg["dspark_markov_rank"] = dc["markov_rank"]
    for f in STAGE_FIELDS:
        if f in ALWAYS or dc[f] != trunk_fields[f]:
            cfg["dspark_" + f] = dc[f]
    cfg = dict(sorted(cfg.items()))

    drafter = load_file(os.path.join(args.drafter, "model.safetensors"))
    if any(not n.startswith("mtp.") for n in drafter):
        raise SystemExit("make_released_dspark: the drafter holds tensors outside mtp.*")
    stored, deq, roles = {}, {}, {}
    for name, t in list(canon.items()) + sorted(drafter.items()):
        r = drafter_role(name, args.experts) if name.startswith("mtp.") else make_quantized.role(name, args.experts)
        roles[name] = r
        s, d = make_quantized.store(name, t, r)
        stored.update(s)
        if d is not None:
            deq[name] = d

    out = os.path.abspath(args.out)
    stage = tempfile.mkdtemp(prefix=".make_released_dspark.", dir=os.path.dirname(out))
    try:
        with open(os.path.join(stage, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        save_file(stored, os.path.join(stage, "model.safetensors"), metadata={"format": "pt"})
        for f in ("generation_config.json", "tokenizer.json"):
            if os.path.exists(os.path.join(args.trunk, f)):
                shutil.copy(os.path.join(args.trunk, f), stage)
        make_quantized.write_dequant_json(os.path.join(stage, "dequant.json"), roles, deq)
        regen = "\"$(tools/oracle/setup-venv.sh)\" " + shlex.join(["tools/oracle/make_released_dspark.py"] + argv)
        with open(os.path.join(stage, "oracle.json"), "w") as f:
            json.dump({"made_by": "tools/oracle/make_released_dspark.py", "trunk": args.trunk, "drafter": args.drafter,
                       "experts": args.experts, "fp8_block": [128, 128], "fp4_block": [1, 32],
                       "scale": "ue8m0 = 2^ceil(log2(amax/qmax)), amax >= 1e-4", "rounding": "nearest, ties to even",
                       "torch": torch.__version__, "regenerate": regen}, f, indent=1)
            f.write("\n")
        drafter_io.replace_folder(stage, out, "make_released_dspark")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"make_released_dspark: {out}: {len(stored)} stored tensors ({sum(n.startswith('mtp.') for n in stored)} "
          f"mtp.*), {size / 1e6:.2f} MB", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
