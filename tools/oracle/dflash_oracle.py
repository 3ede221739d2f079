"""The DFlash-family drafter: z-lab's DFlashDraftModel (the `dflash` package on PyPI, installed with
--no-deps beside the pinned transformers) run on DeepSeek-V4 taps, plus the optional Markov and
confidence heads of SpecForge's DSpark-on-DFlash export (drafter_heads.py).

The reference forward is the package's: ctx = hidden_norm(fc(taps)); per Qwen3-style draft layer,
q from the block rows, K/V from [ctx ; block rows] (ctx not layer-normed, k_norm on both), RoPE
(rotate-half, full head_dim) at [ctx positions ; block positions], bidirectional within the block
unless the layer is causal (sliding layers are, by the package's default), window on sliding
layers; final norm. Embedding and LM head are the trunk's.

Checkpoint: the package's module names (fc.weight, hidden_norm.weight, layers.L.self_attn.q_proj.weight,
..., norm.weight) + markov_head.markov_w1.weight / markov_w2.weight + confidence_head.proj.weight/.bias.
"""
import torch
from torch import nn

from drafter_heads import ConfidenceHead, MarkovHead


def qwen3_config(c):
    from transformers.models.qwen3.modeling_qwen3 import Qwen3Config

    raw = dict(c["raw"])
    for k in ("architectures", "auto_map", "model_type", "transformers_version", "dtype", "torch_dtype"):
        raw.pop(k, None)
    cfg = Qwen3Config(**raw)
    cfg._attn_implementation = "sdpa"
    return cfg


class DFlashDrafter(nn.Module):
    def __init__(self, c):
        super().__init__()
        from dflash.model import DFlashDraftModel

        self.c = c
        self.qcfg = qwen3_config(c)
        self.model = DFlashDraftModel(self.qcfg)
        if list(self.model.target_layer_ids) != list(c["target_layer_ids"]):
            raise ValueError(f"dflash resolved target_layer_ids {self.model.target_layer_ids}, memra {c['target_layer_ids']}")
        if int(self.model.block_size) != c["block_size"]:
            raise ValueError(f"dflash resolved block_size {self.model.block_size}, memra {c['block_size']}")
        r = c["markov_rank"]
        self.markov = MarkovHead(c["vocab_size"], r) if r > 0 else None
        self.confidence = None
        if c["enable_confidence_head"]:
            in_dim = c["hidden_size"] + (r if c["confidence_head_with_markov"] else 0)
            self.confidence = ConfidenceHead(in_dim, c["confidence_head_bias"])

    def ctx_features(self, taps):
        """hidden_norm(fc(taps)) [..., S, D] from taps [..., S, n_taps, D]."""
        return self.model.hidden_norm(self.model.fc(taps.flatten(-2)))

    def forward_block(self, taps, block_embeddings, trace=None):
        """One block after ctx = taps [S, n_taps, D] (positions 0..S-1); block at S..S+b-1.
        Returns (prenorm [b, D], final [b, D]). trace collects each layer's output rows."""
        S = taps.shape[0]
        b = block_embeddings.shape[0]
        positions = torch.arange(S + b).unsqueeze(0)
        handles = []
        trace = {} if trace is None else trace
        for li, layer in enumerate(self.model.layers):
            handles.append(layer.register_forward_hook(
                lambda mod, args, out, li=li: trace.__setitem__(f"layer.{li}.hidden", out.detach()[0])))
        handles.append(self.model.norm.register_forward_hook(
            lambda mod, args, out: trace.__setitem__("prenorm", args[0].detach()[0])))
        try:
            final = self.model(position_ids=positions, noise_embedding=block_embeddings.unsqueeze(0),
                               target_hidden=taps.flatten(-2).unsqueeze(0))[0]
        finally:
            for h in handles:
                h.remove()
        return trace["prenorm"], final

    def forward_blocks_masked(self, taps, block_embeddings, anchors, attention_mask):
        """Training form: many blocks over one sequence's ctx. taps [B, S, n_taps, D];
        block_embeddings [B, N*b, D]; anchors [B, N]; attention_mask bool [B, 1, N*b, S+N*b]."""
        B, S = taps.shape[:2]
        b = self.c["block_size"]
        pos_block = (anchors.unsqueeze(-1) + torch.arange(b)).reshape(B, -1)
        positions = torch.cat([torch.arange(S).expand(B, S), pos_block], dim=1)
        return self.model(position_ids=positions, noise_embedding=block_embeddings,
                          target_hidden=taps.flatten(-2), attention_mask=attention_mask)

    def confidence_hidden(self, prenorm, final):
        return prenorm if self.c["confidence_input"] == "prenorm" else final


def checkpoint_names(model):
    names = [(k, "model." + k) for k in model.model.state_dict().keys() if not k.endswith("inv_freq")]
    if model.markov is not None:
        names += [("markov_head.markov_w1.weight", "markov.markov_w1.weight"),
                  ("markov_head.markov_w2.weight", "markov.markov_w2.weight")]
    if model.confidence is not None:
        names.append(("confidence_head.proj.weight", "confidence.proj.weight"))
        if model.confidence.proj.bias is not None:
            names.append(("confidence_head.proj.bias", "confidence.proj.bias"))
    return names


def state_dict_official(model):
    sd = model.state_dict()
    return {name: sd[path].detach().clone().contiguous() for name, path in checkpoint_names(model)}


@torch.no_grad()
def load_official(model, tensors):
    want = checkpoint_names(model)
    names = {n for n, _ in want}
    extra = sorted(set(tensors) - names)
    missing = sorted(names - set(tensors))
    if extra or missing:
        raise ValueError(f"DFlash checkpoint: missing {missing[:5]}, unexpected {extra[:5]}")
    params = dict(model.named_parameters())
    for name, path in want:
        dst, src = params[path], tensors[name]
        if tuple(src.shape) != tuple(dst.shape):
            raise ValueError(f"DFlash checkpoint: {name} has shape {tuple(src.shape)}, expected {tuple(dst.shape)}")
        dst.copy_(src.to(dst.dtype))
