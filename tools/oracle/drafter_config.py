"""A drafter's config.json resolved into one flat dict, and the geometry a drafter dump's manifest
records. The C++ side (lib/drafter/drafter_config.cpp) applies the same rules and writes the same
geometry keys; memra parity --drafter compares the two field by field.

Families (from `architectures` / `model_type`):
  dspark  DeepSeek-V4 native (architectures ["DSparkV4DraftModel"], model_type deepseek_v4_dspark_draft):
          stages mtp.0..S-1, each an mHC + sliding-window attention with sink + MoE block.
  dflash  z-lab / SpecForge HF export (architectures ["DFlashDraftModel"], Qwen3 draft layers).
Fields looked up in more than one place (top level, then `dflash_config`, then the DeepSeek-V4
`dspark_*` spelling); two places with different values is an error:
  block_size, target_layer_ids, noise token (mask_token_id | noise_token_id | dspark_noise_token_id),
  markov_rank, harvest.
Taps: a tap is the mean over the trunk's hc streams of the INPUT of trunk layer j (DeepSeek-V4's
own convention, drafters.md 5.4). DSpark's target_layer_ids name j directly; DFlash's follow the HF
hidden_states convention (id = the output of layer id, i.e. j = id + 1).
"""
import json
import os

FAMILY_BY_ARCH = {"DSparkV4DraftModel": "dspark", "DFlashDraftModel": "dflash"}
FAMILY_BY_TYPE = {"deepseek_v4_dspark_draft": "dspark"}

# Geometry fields a dump may leave out: reported as absent, never read as agreement.
OPTIONAL_GEOMETRY = ("sliding_window", "layer_sliding", "layer_causal", "markov_rank", "rms_norm_eps")


class ConfigError(ValueError):
    pass


def _lookup(raw, *paths):
    found, where = None, None
    for path in paths:
        node = raw
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        if found is not None and node != found:
            raise ConfigError(f"config.json: {path} = {node!r} disagrees with {where} = {found!r}")
        if found is None:
            found, where = node, path
    return found


def _int(raw, name, default=None, lo=0, hi=1 << 24, paths=None):
    v = _lookup(raw, *(paths or [name]))
    if v is None:
        if default is None:
            raise ConfigError(f"config.json: {name} is missing")
        v = default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"config.json: {name} must be an integer")
    if not lo <= v <= hi:
        raise ConfigError(f"config.json: {name} = {v} is out of range [{lo}, {hi}]")
    return v


def build_target_layer_ids(num_target_layers, num_draft_layers):
    """The dflash package's default tap spread (when target_layer_ids is absent)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [round(start + (i * (end - start)) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


def family_of(raw):
    archs = raw.get("architectures") or []
    fam = FAMILY_BY_ARCH.get(archs[0]) if archs else None
    fam = fam or FAMILY_BY_TYPE.get(raw.get("model_type"))
    if fam is None:
        raise ConfigError(f"config.json: architectures {archs} / model_type {raw.get('model_type')!r} is not a drafter "
                          "memra knows (DSparkV4DraftModel, DFlashDraftModel)")
    return fam


def resolve(raw):
    """The flat, validated drafter config (raw kept under "raw")."""
    fam = family_of(raw)
    c = {"family": fam, "raw": raw}
    c["vocab_size"] = _int(raw, "vocab_size", lo=1)
    c["hidden_size"] = _int(raw, "hidden_size", lo=1)
    c["num_hidden_layers"] = _int(raw, "num_hidden_layers", lo=1, hi=4096)
    c["num_attention_heads"] = _int(raw, "num_attention_heads", lo=1)
    c["rms_norm_eps"] = float(raw.get("rms_norm_eps", 1e-6))
    c["block_size"] = _int(raw, "block_size", lo=1, hi=4096,
                           paths=["block_size", "dflash_config.block_size", "dspark_block_size"])
    ids = _lookup(raw, "dflash_config.target_layer_ids", "target_layer_ids", "dspark_target_layer_ids")
    if ids is None and fam == "dflash" and raw.get("num_target_layers") is not None:
        ids = build_target_layer_ids(int(raw["num_target_layers"]), c["num_hidden_layers"])
    if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise ConfigError("config.json: target_layer_ids must be a non-empty list of layer indices")
    c["target_layer_ids"] = ids
    c["tap_layer_inputs"] = [i if fam == "dspark" else i + 1 for i in ids]
    c["noise_token_id"] = _int(raw, "noise_token_id", hi=c["vocab_size"] - 1,
                               paths=["dflash_config.mask_token_id", "mask_token_id", "noise_token_id", "dspark_noise_token_id"])
    harvest = _lookup(raw, "harvest", "dflash_config.harvest")
    if harvest is not None and harvest not in ("dflash", "dspark"):
        raise ConfigError(f"config.json: harvest {harvest!r} is not dflash or dspark")
    c["harvest"] = harvest
    c["markov_rank"] = _int(raw, "markov_rank", default=0, hi=1 << 20,
                            paths=["markov_rank", "dflash_config.markov_rank", "dspark_markov_rank"])
    if str(raw.get("markov_head_type", "vanilla")).lower() != "vanilla":
        raise ConfigError("config.json: markov_head_type must be vanilla")
    c["enable_confidence_head"] = bool(raw.get("enable_confidence_head", False))
    c["confidence_head_with_markov"] = bool(raw.get("confidence_head_with_markov", True))
    if c["enable_confidence_head"] and c["confidence_head_with_markov"] and c["markov_rank"] == 0:
        raise ConfigError("config.json: confidence_head_with_markov needs a Markov head (markov_rank > 0)")
    c["confidence_input"] = raw.get("confidence_input", "prenorm" if fam == "dspark" else "final")
    if c["confidence_input"] not in ("prenorm", "final"):
        raise ConfigError("config.json: confidence_input must be prenorm or final")
    bias = raw.get("confidence_head_bias")  # absent: the checkpoint decides (drafter_io.load_drafter)
    c["confidence_head_bias"] = None if bias is None else bool(bias)
    if fam == "dspark":
        _resolve_dspark(raw, c)
    else:
        _resolve_dflash(raw, c)
    return c


def _resolve_dspark(raw, c):
    c["num_key_value_heads"] = _int(raw, "num_key_value_heads", default=1, lo=1)
    if c["num_key_value_heads"] != 1:
        raise ConfigError("config.json: num_key_value_heads must be 1 (DeepSeek-V4 shares one K=V head)")
    for k in ("head_dim", "qk_rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups", "sliding_window",
              "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size"):
        c[k] = _int(raw, k, lo=1)
    c["n_shared_experts"] = _int(raw, "n_shared_experts", default=1, lo=1, hi=1)
    c["scoring_func"] = raw.get("scoring_func", "sqrtsoftplus")
    c["routed_scaling_factor"] = float(raw.get("routed_scaling_factor", 1.5))
    c["swiglu_limit"] = float(raw.get("swiglu_limit", 10.0))
    c["hc_mult"] = _int(raw, "hc_mult", default=4, lo=1, hi=64)
    c["hc_sinkhorn_iters"] = _int(raw, "hc_sinkhorn_iters", default=20, lo=1)
    c["hc_eps"] = float(raw.get("hc_eps", 1e-6))
    c["rope_theta"] = float(raw.get("rope_theta", 10000.0))
    if bool(_lookup(raw, "dflash_config.kv_fake_quant", "kv_fake_quant")):
        raise ConfigError("config.json: kv_fake_quant is set: fp8 K/V fake quantization is not part of memra's drafters")
    c["layer_sliding"] = [True] * c["num_hidden_layers"]
    c["layer_causal"] = [False] * c["num_hidden_layers"]


def _resolve_dflash(raw, c):
    H = c["num_attention_heads"]
    c["num_key_value_heads"] = _int(raw, "num_key_value_heads", default=H, lo=1)
    c["head_dim"] = _int(raw, "head_dim", default=c["hidden_size"] // H, lo=1)
    c["intermediate_size"] = _int(raw, "intermediate_size", lo=1)
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError("config.json: hidden_act must be silu")
    if raw.get("attention_bias", False):
        raise ConfigError("config.json: attention_bias is not supported")
    rp = raw.get("rope_parameters") or {}
    if rp.get("rope_type", rp.get("type", "default")) != "default" or rp.get("partial_rotary_factor", 1.0) != 1.0:
        raise ConfigError("config.json: only default full-width RoPE is supported")
    c["rope_theta"] = float(rp.get("rope_theta", raw.get("rope_theta", 10000.0)))
    for k, default in (("input_embedding_scale", 1.0), ("output_multiplier", 1.0)):
        if float(_lookup(raw, f"dflash_config.{k}", k) or default) != default:
            raise ConfigError(f"config.json: {k} != {default} is not supported")
    if _lookup(raw, "dflash_config.final_logit_softcapping", "final_logit_softcapping"):
        raise ConfigError("config.json: final_logit_softcapping is not supported")
    L = c["num_hidden_layers"]
    window = raw.get("sliding_window") if raw.get("use_sliding_window", False) else None
    types = raw.get("layer_types")
    if types is None:
        mwl = raw.get("max_window_layers", 28)
        types = ["sliding_attention" if window is not None and i >= mwl else "full_attention" for i in range(L)]
    if len(types) != L or any(t not in ("full_attention", "sliding_attention") for t in types):
        raise ConfigError("config.json: layer_types must list full_attention / sliding_attention per layer")
    c["sliding_window"] = window
    c["layer_sliding"] = [t == "sliding_attention" for t in types]
    causal = raw.get("is_causal")
    c["layer_causal"] = [bool(causal) if causal is not None else s for s in c["layer_sliding"]]


def geometry(c):
    """The manifest geometry of a dump made with drafter config c (harvest and ctx are added by
    the dump writer). Keys and values are what the C++ DrafterConfig::geometry_json() writes."""
    g = {
        "family": c["family"], "vocab_size": c["vocab_size"], "hidden_size": c["hidden_size"],
        "num_layers": c["num_hidden_layers"], "block_size": c["block_size"],
        "target_layer_ids": list(c["target_layer_ids"]), "n_taps": len(c["target_layer_ids"]),
        "num_attention_heads": c["num_attention_heads"], "num_key_value_heads": c["num_key_value_heads"],
        "head_dim": c["head_dim"], "rope_theta": float(c["rope_theta"]), "rms_norm_eps": float(c["rms_norm_eps"]),
        "noise_token_id": c["noise_token_id"], "sliding_window": c["sliding_window"],
        "layer_sliding": list(c["layer_sliding"]), "layer_causal": list(c["layer_causal"]),
        "markov_vocab": c["vocab_size"] if c["markov_rank"] > 0 else 0, "markov_rank": c["markov_rank"],
        "confidence": {"enabled": c["enable_confidence_head"],
                       "with_markov": c["enable_confidence_head"] and c["confidence_head_with_markov"],
                       "input": c["confidence_input"] if c["enable_confidence_head"] else "none",
                       "bias": bool(c["enable_confidence_head"] and c["confidence_head_bias"])},
    }
    if c["family"] == "dspark":
        for k in ("qk_rope_head_dim", "q_lora_rank", "o_groups", "o_lora_rank", "hc_mult", "hc_sinkhorn_iters",
                  "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "scoring_func"):
            g[k] = c[k]
        for k in ("hc_eps", "routed_scaling_factor", "swiglu_limit"):
            g[k] = float(c[k])
    else:
        g["intermediate_size"] = c["intermediate_size"]
    return g


def load_config(folder):
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        return resolve(json.load(f))
