"""The `geometry` object of a dump manifest, resolved from a loaded DeepseekV4Config.

The C++ side writes the same keys in `memra load --json` .geometry, and test/shell/oracle_*.sh
compares the two key by key, so this is the one place that decides what a config *means*:
values are taken after transformers' own resolution (`__post_init__`, nested rope_parameters), and
YaRN's attention_factor is the one the rotary module actually applies.
"""

GEOMETRY_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "qk_rope_head_dim", "q_lora_rank", "o_groups", "o_lora_rank", "sliding_window",
    "layer_types", "compress_rates", "mlp_layer_types", "n_routed_experts", "num_experts_per_tok",
    "n_shared_experts", "moe_intermediate_size", "scoring_func", "norm_topk_prob",
    "routed_scaling_factor", "swiglu_limit", "hc_mult", "hc_sinkhorn_iters", "hc_eps",
    "index_n_heads", "index_head_dim", "index_topk", "rope_theta", "compress_rope_theta",
    "rms_norm_eps", "rope_parameters",
)

YARN_KEYS = ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "attention_factor")

LAYER_CODES = {"S": "sliding_attention", "C": "compressed_sparse_attention", "H": "heavily_compressed_attention"}


def _rope_entry(params, attention_scaling):
    rope_type = params.get("rope_type", params.get("type", "default"))
    out = {"rope_type": rope_type, "rope_theta": float(params["rope_theta"])}
    if rope_type == "yarn":
        out["factor"] = float(params["factor"])
        out["original_max_position_embeddings"] = int(params["original_max_position_embeddings"])
        # transformers' _compute_yarn_parameters: `get("beta_fast") or 32`, `get("beta_slow") or 1`
        out["beta_fast"] = float(params.get("beta_fast") or 32.0)
        out["beta_slow"] = float(params.get("beta_slow") or 1.0)
        out["attention_factor"] = float(attention_scaling)
    elif rope_type != "default":
        raise ValueError(f"rope type {rope_type!r} is not handled by the memra oracle")
    return out


def geometry_from_config(config, model=None):
    """Returns the manifest geometry dict. `model` (a DeepseekV4ForCausalLM) supplies the applied
    YaRN attention factor; without it the factor comes from the config (or transformers' default)."""
    g = {}
    for key in GEOMETRY_KEYS:
        if key == "qk_rope_head_dim":
            g[key] = int(config.head_dim * config.partial_rotary_factor)
        elif key == "compress_rates":
            g[key] = {k: int(v) for k, v in config.compress_rates.items()}
        elif key in ("layer_types", "mlp_layer_types"):
            g[key] = list(getattr(config, key))
        elif key == "rope_parameters":
            rope = {}
            for label in ("main", "compress"):
                params = config.rope_parameters[label]
                if model is not None:
                    scaling = getattr(model.model.rotary_emb, f"{label}_attention_scaling")
                else:
                    scaling = params.get("attention_factor")
                    if scaling is None:
                        import math
                        f = float(params.get("factor", 1.0))
                        scaling = 1.0 if f <= 1 else 0.1 * math.log(f) + 1.0
                rope[label] = _rope_entry(params, scaling)
            g[key] = rope
        else:
            value = getattr(config, key)
            if isinstance(value, bool) or isinstance(value, str):
                g[key] = value
            elif isinstance(value, int):
                g[key] = int(value)
            elif isinstance(value, float):
                g[key] = float(value)
            else:
                raise ValueError(f"config field {key} has unexpected type {type(value).__name__}")
    for key in ("rope_theta", "compress_rope_theta", "routed_scaling_factor", "swiglu_limit", "hc_eps", "rms_norm_eps"):
        g[key] = float(g[key])
    return g
