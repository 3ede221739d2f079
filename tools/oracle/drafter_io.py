"""Drafter folders (config.json + model.safetensors + oracle.json) and the trunk pieces a drafter
borrows: taps (mean over hc streams of a layer's input), token embeddings and the LM head.

Everything runs in float32 on the CPU with the tie-stable top-k (tiestable.py) installed by the
calling script."""
import json
import os
import shutil
import tempfile

import torch

import drafter_config


def build(c):
    if c["family"] == "dspark":
        from dspark_oracle import DSparkDrafter
        return DSparkDrafter(c)
    from dflash_oracle import DFlashDrafter
    return DFlashDrafter(c)


def _module(c):
    if c["family"] == "dspark":
        import dspark_oracle
        return dspark_oracle
    import dflash_oracle
    return dflash_oracle


def load_drafter(folder):
    """(model in eval mode, resolved config). Every checkpoint tensor must be the one the config
    predicts; a confidence bias present or absent against the config is an error."""
    from safetensors.torch import load_file

    c = drafter_config.load_config(folder)
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    has_bias = any(k.endswith("confidence_head.proj.bias") for k in tensors)
    if c["confidence_head_bias"] is None:
        c["confidence_head_bias"] = has_bias
    if c["enable_confidence_head"] and has_bias != c["confidence_head_bias"]:
        raise drafter_config.ConfigError(
            f"{folder}: confidence_head_bias is {c['confidence_head_bias']} but the checkpoint "
            f"{'has' if has_bias else 'lacks'} confidence_head.proj.bias")
    model = build(c)
    _module(c).load_official(model, tensors)
    return model.float().eval(), c


def official_state(model):
    return _module(model.c).state_dict_official(model)


def save_drafter(model, out, meta):
    """Writes out/{config.json, model.safetensors, oracle.json} through a staging folder, then
    replaces `out` (refuses to replace a non-empty folder that is not a drafter folder)."""
    from safetensors.torch import save_file

    out = os.path.abspath(out)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".drafter.", dir=parent)
    try:
        with open(os.path.join(stage, "config.json"), "w") as f:
            json.dump(model.c["raw"], f, indent=1)
            f.write("\n")
        save_file(official_state(model), os.path.join(stage, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(stage, "oracle.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        replace_folder(stage, out, "save_drafter")
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def replace_folder(stage, out, tool):
    """Makes the finished folder `stage` world-readable and moves it to `out` (same file system),
    replacing a previous model or drafter folder there; refuses anything else at `out` (a file, a
    link, a non-empty folder without config.json), so a mistyped --out never deletes user data."""
    for root, _, files in os.walk(stage):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    if os.path.lexists(out):
        if not os.path.isdir(out) or os.path.islink(out):
            raise SystemExit(f"{tool}: error: {out} exists and is not a folder")
        if os.listdir(out) and not os.path.exists(os.path.join(out, "config.json")):
            raise SystemExit(f"{tool}: error: {out} exists and is not a model or drafter folder; not replacing it")
        shutil.rmtree(out)
    os.replace(stage, out)


def load_trunk(folder):
    from transformers import DeepseekV4ForCausalLM

    model = DeepseekV4ForCausalLM.from_pretrained(folder, dtype="auto", experts_implementation="eager")
    return model.float().eval()


def check_pair(trunk, c):
    tc = trunk.config
    if c["vocab_size"] != tc.vocab_size or c["hidden_size"] != tc.hidden_size:
        raise drafter_config.ConfigError(
            f"drafter vocab/hidden {c['vocab_size']}/{c['hidden_size']} do not match the trunk's "
            f"{tc.vocab_size}/{tc.hidden_size}")
    bad = [j for j in c["tap_layer_inputs"] if not 0 <= j < tc.num_hidden_layers]
    if bad:
        raise drafter_config.ConfigError(
            f"drafter taps the input of trunk layer(s) {bad}; the trunk has layers 0..{tc.num_hidden_layers - 1}")


@torch.no_grad()
def trunk_forward(trunk, ids, tap_layer_inputs):
    """One-shot trunk forward over ids [B, S]: (logits [B, S, V], taps [B, S, n_taps, D]) where tap i
    is the mean over the hc streams of the input of layer tap_layer_inputs[i]."""
    out = trunk(input_ids=ids, use_cache=False, output_hidden_states=True)
    hs = out.hidden_states  # [0..L-1]: inputs of layers 0..L-1 as [B, S, n, D]; [L]: the normed final
    taps = torch.stack([hs[j].mean(dim=2) for j in tap_layer_inputs], dim=2)
    return out.logits, taps


def embed(trunk, ids):
    return trunk.model.embed_tokens(ids.long())


def head(trunk, x):
    return trunk.lm_head(x)
