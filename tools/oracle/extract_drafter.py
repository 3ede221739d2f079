#!/usr/bin/env python3
"""Extracts a released checkpoint's own DSpark drafter into a separate drafter folder, dequantised.

    extract_drafter.py MODEL_DIR --out DIR

MODEL_DIR is a DeepSeek-V4 folder in the released layout whose checkpoint carries a DSpark drafter:
`mtp.*` tensors (FP8 e4m3 + ue8m0 block scales, packed FP4 routed experts + 1x32 scales, BF16, F32)
and the drafter's settings as fields of the trunk's config.json (dspark_block_size,
dspark_target_layer_ids, dspark_noise_token_id, dspark_markov_rank, num_nextn_predict_layers, and
dspark_<stage field> where a stage differs from the trunk). DIR gets a drafter folder in memra's
separate form (config.json of a DSparkV4DraftModel, model.safetensors with every tensor in f32
under memra's names), dequantised with torch (float8_e4m3fn codes times 2^(e-127) per block; e2m1
codes from the table). memra reads MODEL_DIR's drafter with its own C++ mapping and decoder; the
two must give identical proposals (test/shell/released_drafter.sh). The same rules as
lib/drafter/released_drafter.h, written again here on purpose.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import drafter_io  # noqa: E402

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
E2M1_DECODE = torch.tensor(E2M1 + [-v for v in E2M1], dtype=torch.float32)
E2M1_DECODE[8] = -0.0

# Released spelling -> memra's (suffix after mtp.S.).
RELEASED_NAMES = {"markov_head.embed.weight": "markov_head.markov_w1.weight",
                  "markov_head.head.weight": "markov_head.markov_w2.weight"}
STAGE_FIELDS = ["num_attention_heads", "head_dim", "qk_rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups",
                "sliding_window", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "scoring_func",
                "routed_scaling_factor", "swiglu_limit", "hc_mult", "hc_sinkhorn_iters", "hc_eps", "rope_theta"]


def load_tensors(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    out = {}
    for f in files:
        with safe_open(os.path.join(model_dir, f), framework="pt") as st:
            for k in st.keys():
                if k.removeprefix("model.").startswith("mtp."):
                    out[k.removeprefix("model.")] = st.get_tensor(k)
    return out


def dequant(w, scale, block):
    """A stored weight (and its e8m0 scale) as f32."""
    if scale is None:
        return w.float()
    e = scale.view(torch.uint8).to(torch.int32)
    s = torch.ldexp(torch.ones(e.shape), e - 127)
    if w.dtype == torch.float8_e4m3fn:
        br, bc = block
        full = s.repeat_interleave(br, 0).repeat_interleave(bc, 1)[: w.shape[0], : w.shape[1]]
        return w.float() * full
    b = w.view(torch.uint8).to(torch.int64)  # packed FP4: low nibble = even column
    codes = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(b.shape[0], -1)
    return E2M1_DECODE[codes] * s.repeat_interleave(32, 1)[:, : codes.shape[1]]


def drafter_config(trunk):
    """The separate drafter config.json the trunk's fields declare (lib/drafter/released_drafter.h)."""
    if trunk.get("dspark_block_size") is None:
        raise SystemExit("extract_drafter: config.json declares no DSpark drafter (no dspark_block_size)")
    ratios = trunk.get("compress_ratios") or []
    L = trunk["num_hidden_layers"]
    assert all(r in (0, 1) for r in ratios[L:]), ratios
    rope = {"rope_theta": trunk.get("rope_theta", 10000.0)}
    d = {"architectures": ["DSparkV4DraftModel"], "model_type": "deepseek_v4_dspark_draft",
         "vocab_size": trunk["vocab_size"], "hidden_size": trunk["hidden_size"],
         "num_hidden_layers": trunk["num_nextn_predict_layers"], "rms_norm_eps": trunk["rms_norm_eps"],
         "num_key_value_heads": 1, "n_shared_experts": 1, "harvest": "dspark", "confidence_input": "prenorm",
         "block_size": trunk["dspark_block_size"], "target_layer_ids": trunk["dspark_target_layer_ids"],
         "noise_token_id": trunk["dspark_noise_token_id"], "markov_rank": trunk.get("dspark_markov_rank") or 0}
    for f in STAGE_FIELDS:
        d[f] = trunk.get("dspark_" + f, trunk.get(f, rope.get(f)))
    return d


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    trunk = json.load(open(os.path.join(args.model_dir, "config.json")))
    cfg = drafter_config(trunk)
    block = tuple((trunk.get("quantization_config") or {}).get("weight_block_size", [128, 128]))
    stored = load_tensors(args.model_dir)
    out = {}
    for name, w in stored.items():
        if name.endswith(".scale"):
            continue
        scale = stored.get(name[: -len(".weight")] + ".scale") if name.endswith(".weight") else None
        stage, rest = name.split(".", 2)[1], name.split(".", 2)[2]
        out[f"mtp.{stage}.{RELEASED_NAMES.get(rest, rest)}"] = dequant(w, scale, block).contiguous()
    last = f"mtp.{cfg['num_hidden_layers'] - 1}."
    cfg["enable_confidence_head"] = last + "confidence_head.proj.weight" in out
    cfg["confidence_head_with_markov"] = cfg["enable_confidence_head"] and cfg["markov_rank"] > 0
    cfg["confidence_head_bias"] = last + "confidence_head.proj.bias" in out
    out_dir = os.path.abspath(args.out)
    stage_dir = tempfile.mkdtemp(prefix=".extract_drafter.", dir=os.path.dirname(out_dir))
    try:
        with open(os.path.join(stage_dir, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
            f.write("\n")
        save_file(dict(sorted(out.items())), os.path.join(stage_dir, "model.safetensors"), metadata={"format": "pt"})
        drafter_io.replace_folder(stage_dir, out_dir, "extract_drafter")
    finally:
        shutil.rmtree(stage_dir, ignore_errors=True)
    print(f"extract_drafter: {out_dir}: {len(out)} tensors, {cfg['num_hidden_layers']} stages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
