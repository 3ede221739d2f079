"""The DSpark drafter (DeepSeek-V4 native) in PyTorch: memra's oracle for it.

No installable reference exists, so this is written from the published definitions (DeepSpec's
deepspec/modeling/dspark, SpecForge's dspark_v4.py, SGLang's DSpark worker; drafters.md 5.4) and
composes transformers' own DeepSeek-V4 modules for everything a stage computes, so only the glue is
ours: each stage IS a transformers DeepseekV4DecoderLayer (mHC pre/post with Sinkhorn, attn_norm,
ffn_norm, learned-routing MoE with the SwiGLU clamp and the shared expert), whose DeepseekV4Attention
is run by WindowAttention below over [the stage's window of main-stream K=V ; the block's own rows]
with transformers' eager_attention_forward (sink included), apply_rotary_pos_emb and grouped output
projection; the collapse is a DeepseekV4HyperHead and the norms are DeepseekV4RMSNorm.

Forward of one block (b rows at positions p..p+b-1, anchor x_0 at p):
  taps [S, n_taps, D] -> main_x = main_norm(main_proj(concat taps))                  (stage 0 owns them)
  stage s ring: K=V of main_x at the W positions p-W..p-1: rope(kv_norm(wkv(main_x)))  (not attn_norm'ed)
  x = embed(block ids) repeated over the hc_mult streams
  per stage: x = DecoderLayer(x) with the window attention (bidirectional within the block, one sink)
  prenorm = hc_head(x); final = norm(prenorm); base logits = trunk head(final)
Checkpoint names are the DeepSeek-V4 bundled layout (mtp.S.*; see NAMES below).
"""
import torch
from torch import nn

from drafter_heads import ConfidenceHead, MarkovHead


def _dsv4():
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m
    return m


def stage_config(c):
    """A DeepseekV4Config describing one DSpark stage (sliding attention, learned-routing MoE)."""
    from transformers import DeepseekV4Config

    prf = c["qk_rope_head_dim"] / c["head_dim"]
    rope = {"rope_type": "default", "rope_theta": float(c["rope_theta"]), "partial_rotary_factor": prf}
    n = c["num_hidden_layers"]
    cfg = DeepseekV4Config(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], num_hidden_layers=n,
        num_attention_heads=c["num_attention_heads"], num_key_value_heads=1, head_dim=c["head_dim"],
        partial_rotary_factor=prf, q_lora_rank=c["q_lora_rank"], o_groups=c["o_groups"],
        o_lora_rank=c["o_lora_rank"], sliding_window=c["sliding_window"],
        layer_types=["sliding_attention"] * n, mlp_layer_types=["moe"] * n,
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
        rope_theta=float(c["rope_theta"]), rope_parameters={"main": dict(rope), "compress": dict(rope)},
        n_routed_experts=c["n_routed_experts"], n_shared_experts=1, num_experts_per_tok=c["num_experts_per_tok"],
        moe_intermediate_size=c["moe_intermediate_size"], scoring_func=c["scoring_func"], norm_topk_prob=True,
        routed_scaling_factor=float(c["routed_scaling_factor"]), swiglu_limit=float(c["swiglu_limit"]),
        hc_mult=c["hc_mult"], hc_sinkhorn_iters=c["hc_sinkhorn_iters"], hc_eps=float(c["hc_eps"]),
        rms_norm_eps=float(c["rms_norm_eps"]), num_nextn_predict_layers=0, max_position_embeddings=1 << 20,
        index_n_heads=1, index_head_dim=c["head_dim"], index_topk=1,
    )
    cfg._experts_implementation = "eager"
    cfg._attn_implementation = "eager"
    return cfg


class WindowAttention(nn.Module):
    """DSpark attention around a transformers DeepseekV4Attention (`inner`): block queries at p..p+b-1
    attend to the stage's window (K=V of main_x at p-W..p-1, invalid slots masked) and to every row of
    their own block, one softmax with the per-head sink; output rope undone at the query position."""

    def __init__(self, inner, rotary):
        super().__init__()
        self.inner = inner
        self._rotary = [rotary]  # shared module, not a parameter owner

    def kv(self, x, positions):
        """Post-norm, post-rope K=V rows [..., S, d] of x [..., S, D] at positions [..., S]."""
        m = _dsv4()
        a = self.inner
        lead = x.shape[:-2]
        x2 = x.reshape(-1, x.shape[-2], x.shape[-1])
        pos = positions.reshape(-1, positions.shape[-1])
        cos, sin = self._rotary[0](x2, position_ids=pos, layer_type="main")
        kv = a.kv_norm(a.kv_proj(x2)).unsqueeze(1)  # [B, 1, S, d]
        kv = m.apply_rotary_pos_emb(kv, cos, sin)
        return kv[:, 0].reshape(*lead, x.shape[-2], a.head_dim)

    def forward(self, hidden_states, window_kv=None, window_valid=None, block_positions=None, **kwargs):
        """hidden_states [N, b, D] (attn_norm'ed block rows); window_kv [N, W, d]; window_valid [N, W]
        bool; block_positions [N, b]. Returns ([N, b, D], None)."""
        m = _dsv4()
        a = self.inner
        N, b, _ = hidden_states.shape
        cos, sin = self._rotary[0](hidden_states, position_ids=block_positions, layer_type="main")
        q_residual = a.q_a_norm(a.q_a_proj(hidden_states))
        q = a.q_b_proj(q_residual).view(N, b, -1, a.head_dim).transpose(1, 2)
        q = m.apply_rotary_pos_emb(a.q_b_norm(q), cos, sin)  # [N, H, b, d]
        kv_block = m.apply_rotary_pos_emb(a.kv_norm(a.kv_proj(hidden_states)).unsqueeze(1), cos, sin)  # [N, 1, b, d]
        W = window_kv.shape[1]
        keys = torch.cat([window_kv.unsqueeze(1).to(kv_block.dtype), kv_block], dim=2)  # [N, 1, W+b, d]
        mask = torch.zeros(N, 1, b, W + b, dtype=q.dtype)
        mask[..., :W] = torch.where(window_valid, 0.0, float("-inf")).to(q.dtype).view(N, 1, 1, W)
        out, _ = m.eager_attention_forward(a, q, keys, keys, mask, scaling=a.scaling)  # [N, b, H, d]
        out = m.apply_rotary_pos_emb(out.transpose(1, 2), cos, -sin).transpose(1, 2)
        grouped = a.o_a_proj(out.reshape(N, b, a.config.o_groups, -1)).flatten(2)
        return a.o_b_proj(grouped), None


class DSparkDrafter(nn.Module):
    """c: the resolved drafter config (drafter_config.resolve)."""

    def __init__(self, c):
        super().__init__()
        m = _dsv4()
        self.c = c
        self.v4 = stage_config(c)
        D = c["hidden_size"]
        self.main_proj = nn.Linear(len(c["target_layer_ids"]) * D, D, bias=False)
        self.main_norm = m.DeepseekV4RMSNorm(D, eps=c["rms_norm_eps"])
        self.rotary = m.DeepseekV4RotaryEmbedding(self.v4)
        self.stages = nn.ModuleList()
        for s in range(c["num_hidden_layers"]):
            layer = m.DeepseekV4DecoderLayer(self.v4, s)
            layer.self_attn = WindowAttention(layer.self_attn, self.rotary)
            self.stages.append(layer)
        self.hc_head = m.DeepseekV4HyperHead(self.v4)
        self.norm = m.DeepseekV4RMSNorm(D, eps=c["rms_norm_eps"])
        r = c["markov_rank"]
        self.markov = MarkovHead(c["vocab_size"], r) if r > 0 else None
        self.confidence = None
        if c["enable_confidence_head"]:
            in_dim = D + (r if c["confidence_head_with_markov"] else 0)
            self.confidence = ConfidenceHead(in_dim, c["confidence_head_bias"])

    def ctx_features(self, taps):
        """main_x [..., S, D] from taps [..., S, n_taps, D]."""
        return self.main_norm(self.main_proj(taps.flatten(-2)))

    def stage_kv(self, s, main_x, positions):
        """Stage s's ring entries for main_x [..., S, D] at positions [..., S]: [..., S, d]."""
        return self.stages[s].self_attn.kv(main_x, positions)

    def windows(self, main_x, seq_index, anchors):
        """Per stage (window_kv [N, W, d], valid [N, W]): the W main-stream positions before each
        block's anchor (p-W..p-1, slot j = position p-W+j), from main_x [B, S, D]."""
        W = self.c["sliding_window"]
        B, S, _ = main_x.shape
        pos = torch.arange(S).expand(B, S)
        idx = anchors.view(-1, 1) + torch.arange(-W, 0).view(1, W)  # [N, W]
        valid = idx >= 0
        out = []
        for s in range(len(self.stages)):
            kv = self.stage_kv(s, main_x, pos)  # [B, S, d]
            win = kv[seq_index.view(-1, 1), idx.clamp(min=0)]  # [N, W, d]
            out.append((win * valid.unsqueeze(-1), valid))
        return out

    def forward_blocks(self, block_embeddings, anchors, windows, trace=None):
        """block_embeddings [N, b, D] (trunk embeddings of [x_0, noise...]); anchors [N]; windows as
        from windows(). Returns (prenorm [N, b, D], final [N, b, D]); trace (a dict) collects the
        per-stage streams and router selections."""
        N, b, D = block_embeddings.shape
        x = block_embeddings.unsqueeze(2).expand(N, b, self.c["hc_mult"], D).contiguous()
        positions = anchors.view(-1, 1) + torch.arange(b).view(1, b)
        for s, layer in enumerate(self.stages):
            handle = None
            if trace is not None:
                def hook(mod, args, out, s=s):
                    logits, _, idx = out
                    trace[f"stage.{s}.router.logits"] = logits.detach()
                    trace[f"stage.{s}.router.indices"] = idx.detach()
                handle = layer.mlp.gate.register_forward_hook(hook)
            win_kv, valid = windows[s]
            x = layer(x, window_kv=win_kv, window_valid=valid, block_positions=positions)
            if handle is not None:
                handle.remove()
                trace[f"stage.{s}.hidden"] = x.detach()
        prenorm = self.hc_head(x)
        return prenorm, self.norm(prenorm)

    def confidence_hidden(self, prenorm, final):
        return prenorm if self.c["confidence_input"] == "prenorm" else final


def _stage_names(s, E):
    """(official name, module path, expert slice) for stage s. Expert w1/w3 are the two halves of
    transformers' fused gate_up_proj[e] (gate first), w2 is down_proj[e]."""
    p, q = f"mtp.{s}.", f"stages.{s}."
    a = q + "self_attn.inner."
    names = [
        (p + "hc_attn_fn", q + "attn_hc.fn", None), (p + "hc_attn_base", q + "attn_hc.base", None),
        (p + "hc_attn_scale", q + "attn_hc.scale", None), (p + "hc_ffn_fn", q + "ffn_hc.fn", None),
        (p + "hc_ffn_base", q + "ffn_hc.base", None), (p + "hc_ffn_scale", q + "ffn_hc.scale", None),
        (p + "attn_norm.weight", q + "input_layernorm.weight", None),
        (p + "ffn_norm.weight", q + "post_attention_layernorm.weight", None),
        (p + "attn.wq_a.weight", a + "q_a_proj.weight", None), (p + "attn.q_norm.weight", a + "q_a_norm.weight", None),
        (p + "attn.wq_b.weight", a + "q_b_proj.weight", None), (p + "attn.wkv.weight", a + "kv_proj.weight", None),
        (p + "attn.kv_norm.weight", a + "kv_norm.weight", None), (p + "attn.wo_a.weight", a + "o_a_proj.weight", None),
        (p + "attn.wo_b.weight", a + "o_b_proj.weight", None), (p + "attn.attn_sink", a + "sinks", None),
        (p + "ffn.gate.weight", q + "mlp.gate.weight", None),
        (p + "ffn.gate.bias", q + "mlp.gate.e_score_correction_bias", None),
        (p + "ffn.shared_experts.w1.weight", q + "mlp.shared_experts.gate_proj.weight", None),
        (p + "ffn.shared_experts.w2.weight", q + "mlp.shared_experts.down_proj.weight", None),
        (p + "ffn.shared_experts.w3.weight", q + "mlp.shared_experts.up_proj.weight", None),
    ]
    for e in range(E):
        names.append((p + f"ffn.experts.{e}.w1.weight", q + "mlp.experts.gate_up_proj", (e, 0)))
        names.append((p + f"ffn.experts.{e}.w3.weight", q + "mlp.experts.gate_up_proj", (e, 1)))
        names.append((p + f"ffn.experts.{e}.w2.weight", q + "mlp.experts.down_proj", (e, None)))
    return names


def checkpoint_names(model):
    """Every checkpoint tensor: [(official name, module path, expert slice)], in a stable order."""
    c = model.c
    S = c["num_hidden_layers"]
    last = f"mtp.{S - 1}."
    names = [("mtp.0.main_proj.weight", "main_proj.weight", None), ("mtp.0.main_norm.weight", "main_norm.weight", None)]
    for s in range(S):
        names += _stage_names(s, c["n_routed_experts"])
    names += [(last + "norm.weight", "norm.weight", None), (last + "hc_head_fn", "hc_head.hc_fn", None),
              (last + "hc_head_base", "hc_head.hc_base", None), (last + "hc_head_scale", "hc_head.hc_scale", None)]
    if model.markov is not None:
        names += [(last + "markov_head.markov_w1.weight", "markov.markov_w1.weight", None),
                  (last + "markov_head.markov_w2.weight", "markov.markov_w2.weight", None)]
    if model.confidence is not None:
        names.append((last + "confidence_head.proj.weight", "confidence.proj.weight", None))
        if model.confidence.proj.bias is not None:
            names.append((last + "confidence_head.proj.bias", "confidence.proj.bias", None))
    return names


def _slice(t, sl, I):
    if sl is None:
        return t
    e, half = sl
    t = t[e]
    if half is None:
        return t
    return t[:I] if half == 0 else t[I:]


def state_dict_official(model):
    sd = model.state_dict()
    I = model.c["moe_intermediate_size"]
    return {name: _slice(sd[path], sl, I).detach().clone().contiguous() for name, path, sl in checkpoint_names(model)}


@torch.no_grad()
def load_official(model, tensors):
    """Fills model from {official name: tensor}; every expected name must be present, nothing extra."""
    want = checkpoint_names(model)
    names = {n for n, _, _ in want}
    extra = sorted(set(tensors) - names)
    missing = sorted(names - set(tensors))
    if extra or missing:
        raise ValueError(f"DSpark checkpoint: missing {missing[:5]}, unexpected {extra[:5]}")
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    I = model.c["moe_intermediate_size"]
    for name, path, sl in want:
        dst = _slice(params[path], sl, I)
        src = tensors[name]
        if tuple(src.shape) != tuple(dst.shape):
            raise ValueError(f"DSpark checkpoint: {name} has shape {tuple(src.shape)}, expected {tuple(dst.shape)}")
        dst.copy_(src.to(dst.dtype))
