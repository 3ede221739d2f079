"""The official DeepSeek-V4 inference code's QAT simulations, installed into transformers' reference
(which does not apply them), so the oracle can produce a dump for `memra ... --qat`:

- window kv (attention) and compressed kv (HCA/CSA compressors): the non-RoPE dims go through FP8
  e4m3 quant-dequant in blocks of 64 (a shorter last block where d - r is not a multiple of 64);
- indexer queries and compressed keys: orthonormal Walsh-Hadamard transform (size di), then FP4
  e2m1 quant-dequant in blocks of 32.

Per block: amax = max|x| (at least 1e-4 for FP8, 6 * 2^-126 for FP4), scale s = 2^ceil(log2(amax /
qmax)) (frexp, exact), x <- round_nearest_even(clamp(x / s, +-qmax)) * s. The Hadamard transform is
the same butterfly as memra's (stages h = 1, 2, 4, ...: (a, b) -> (a + b, a - b), then * 1/sqrt(n)
rounded to f32), so the two agree bit for bit on equal inputs (lib/numerics/qat.h).

The hook wraps modeling_deepseek_v4.apply_rotary_pos_emb: every site above applies RoPE last, so
the simulation runs on the result, chosen by the calling module (and, in the attention, only for
the kv tensor: q and the output's inverse rotation are left alone).
"""
import sys

import torch


def _pow2_ceil(v):
    m, e = torch.frexp(v)
    e = torch.where(m == 0.5, e - 1, e)
    return torch.ldexp(torch.ones_like(v), e)


def _blocks(x, block):
    """Split the last dim into blocks of `block` (the last one may be shorter)."""
    return list(torch.split(x, block, dim=-1))


def _round_e2m1(a):
    a = a.abs().clamp(max=6.0)
    step = torch.where(a < 2.0, 0.5, torch.where(a < 4.0, 1.0, 2.0)).to(a.dtype)
    return torch.round(a / step) * step


def fp8_qdq(x, block=64):
    out = []
    for b in _blocks(x.float(), block):
        amax = b.abs().amax(dim=-1, keepdim=True).clamp(min=1e-4)
        s = _pow2_ceil(amax * torch.tensor(1.0 / 448.0, dtype=torch.float32))
        q = (b / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).float()
        out.append(q * s)
    return torch.cat(out, dim=-1).to(x.dtype)


def fp4_qdq(x, block=32):
    out = []
    for b in _blocks(x.float(), block):
        amax = b.abs().amax(dim=-1, keepdim=True).clamp(min=6.0 * 2.0 ** -126)
        s = _pow2_ceil(amax * torch.tensor(1.0 / 6.0, dtype=torch.float32))
        y = (b / s).clamp(-6.0, 6.0)
        out.append(torch.copysign(_round_e2m1(y), y) * s)
    return torch.cat(out, dim=-1).to(x.dtype)


def hadamard(x):
    n = x.shape[-1]
    assert n & (n - 1) == 0, f"Hadamard size {n} is not a power of two"
    y = x.float().clone()
    h = 1
    while h < n:
        v = y.view(*y.shape[:-1], n // (2 * h), 2, h)
        a, b = v[..., 0, :].clone(), v[..., 1, :].clone()
        v[..., 0, :] = a + b
        v[..., 1, :] = a - b
        h *= 2
    scale = torch.tensor(1.0 / (n ** 0.5), dtype=torch.float64).float()
    return (y * scale).to(x.dtype)


def install():
    """Wraps apply_rotary_pos_emb in transformers' DeepSeek-V4 module. Returns an uninstall function."""
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m

    original = m.apply_rotary_pos_emb

    def rope_then_qat(x, cos, sin, unsqueeze_dim=1):
        y = original(x, cos, sin, unsqueeze_dim)
        caller = sys._getframe(1).f_locals
        owner = type(caller.get("self")).__name__
        rope_dim = 2 * cos.shape[-1]
        if owner == "DeepseekV4Attention":
            if x is not caller.get("kv"):
                return y  # q, or the output's inverse rotation
            return torch.cat([fp8_qdq(y[..., :-rope_dim]), y[..., -rope_dim:]], dim=-1)
        if owner in ("DeepseekV4HCACompressor", "DeepseekV4CSACompressor"):
            return torch.cat([fp8_qdq(y[..., :-rope_dim]), y[..., -rope_dim:]], dim=-1)
        if owner == "DeepseekV4Indexer":  # its queries and its compressed keys
            return fp4_qdq(hadamard(y))
        raise RuntimeError(f"qat_sim: apply_rotary_pos_emb called from {owner}, which this hook does not know")

    m.apply_rotary_pos_emb = rope_then_qat
    return lambda: setattr(m, "apply_rotary_pos_emb", original)
