"""One proposal of a drafter (either family), with every intermediate the dumps record.

The block is [x_0, noise, ..., noise] at positions p..p+b-1 with p = the number of context rows
(taps of positions 0..p-1; the anchor's own taps are not known yet). Drafts are harvested from the
rows the harvest convention names; with a Markov head they are the greedy chain from the anchor,
otherwise the argmax of the base logits (first maximum wins a tie)."""
import torch

from drafter_heads import first_row, markov_chain, n_drafts, previous_tokens


@torch.no_grad()
def propose(model, taps, anchor, harvest, embed_fn, head_fn, block_size=None):
    """taps [p, n_taps, D]; anchor: token id. Returns a dict of tensors (see dump_drafter.py)."""
    c = model.c
    b = block_size or c["block_size"]
    p = taps.shape[0]
    block_ids = torch.full((b,), c["noise_token_id"], dtype=torch.long)
    block_ids[0] = int(anchor)
    emb = embed_fn(block_ids).float()  # [b, D]
    out = {"block_ids": block_ids, "block_embeddings": emb}
    trace = {}
    if c["family"] == "dspark":
        main_x = model.ctx_features(taps)  # [p, D]
        out["ctx_features"] = main_x
        W = c["sliding_window"]
        lo = max(0, p - W)
        for s in range(c["num_hidden_layers"]):
            out[f"stage.{s}.ring"] = model.stage_kv(s, main_x[lo:], torch.arange(lo, p))  # [min(W,p), d]
        windows = model.windows(main_x.unsqueeze(0), torch.zeros(1, dtype=torch.long), torch.tensor([p]))
        prenorm, final = model.forward_blocks(emb.unsqueeze(0), torch.tensor([p]), windows, trace)
        prenorm, final = prenorm[0], final[0]
        for s in range(c["num_hidden_layers"]):
            out[f"stage.{s}.hidden"] = trace[f"stage.{s}.hidden"][0]
            logits = trace[f"stage.{s}.router.logits"]  # [b, E]
            gate = model.stages[s].mlp.gate
            select = gate.score_fn(logits) + gate.e_score_correction_bias
            order = torch.sort(select, dim=-1, descending=True, stable=True)
            k = c["num_experts_per_tok"]
            out[f"stage.{s}.router.experts"] = torch.sort(order.indices[:, :k], dim=-1).values
            if not torch.equal(out[f"stage.{s}.router.experts"], torch.sort(trace[f"stage.{s}.router.indices"], dim=-1).values):
                raise AssertionError(f"stage {s}: router selection is not the tie-stable top-{k}")
            if select.shape[-1] > k:
                out[f"stage.{s}.router.margin"] = order.values[:, k - 1] - order.values[:, k]
            else:
                out[f"stage.{s}.router.margin"] = torch.full((b,), float("inf"))
    else:
        out["ctx_features"] = model.ctx_features(taps)
        prenorm, final = model.forward_block(taps, emb, trace)
        for li in range(c["num_hidden_layers"]):
            out[f"layer.{li}.hidden"] = trace[f"layer.{li}.hidden"]
    out["prenorm"], out["final"] = prenorm, final
    nd, r0 = n_drafts(harvest, b), first_row(harvest)
    base = head_fn(final[r0:r0 + nd]).float()  # [nd, V]
    out["base_logits"] = base
    if model.markov is not None:
        toks, logits, margins = markov_chain(base, anchor, model.markov)
        out["markov_tokens"], out["markov_logits"], out["markov_margin"] = toks, logits, margins
        drafts = toks
    else:
        drafts = torch.argmax(base, dim=-1)
    out["draft_tokens"] = drafts
    if model.confidence is not None:
        h = model.confidence_hidden(prenorm, final)[r0:r0 + nd]
        prev = model.markov.prev_embeddings(previous_tokens(anchor, drafts)) if c["confidence_head_with_markov"] else None
        out["confidence"] = model.confidence(h, prev)
    return out
