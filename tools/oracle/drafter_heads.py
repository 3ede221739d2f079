"""The heads both drafter families share, and the harvest conventions (drafters.md sections 4-5).

Harvest: which rows of the drafter's b output rows become drafts.
  dflash  mask-fill: rows 1..b-1 give b-1 drafts (z-lab DFlash; row k predicts the token at p+k)
  dspark  shifted:   rows 0..b-1 give b drafts   (DSpark; row k predicts the token at p+k+1)

Markov head ("vanilla", paper Eq. 5): bias_k = W2 . W1[x_{k-1}], added to the base logits of draft
k; greedy chain from the anchor (x_0 = anchor). W1 = markov_w1 [V, r] (an embedding), W2 = markov_w2
[V, r] (a bias-free linear r -> V), both float32.

Confidence head (paper Eq. 7): c_k = w . [h_k ; W1[x_{k-1}]] (+ b), a logit (sigma(c_k) is the
acceptance probability). h_k is the drafter's post-norm hidden ("final", SpecForge / DeepSpec) or the
hc-collapsed hidden before the norm ("prenorm", the DeepSeek-V4 reference); the config says which.
"""
import torch
from torch import nn

HARVESTS = ("dflash", "dspark")


def n_drafts(harvest, block_size):
    if harvest == "dflash":
        return block_size - 1
    if harvest == "dspark":
        return block_size
    raise ValueError(f"unknown harvest convention {harvest!r} (dflash or dspark)")


def first_row(harvest):
    if harvest not in HARVESTS:
        raise ValueError(f"unknown harvest convention {harvest!r} (dflash or dspark)")
    return 1 if harvest == "dflash" else 0


def label_offset(harvest):
    """Row k of the block predicts the token at anchor position + k + offset."""
    return 0 if harvest == "dflash" else 1


class MarkovHead(nn.Module):
    def __init__(self, vocab_size, rank):
        super().__init__()
        self.markov_w1 = nn.Embedding(vocab_size, rank)
        self.markov_w2 = nn.Linear(rank, vocab_size, bias=False)

    def prev_embeddings(self, prev_ids):
        return self.markov_w1(prev_ids.long()).float()

    def bias(self, prev_ids):
        return self.markov_w2(self.prev_embeddings(prev_ids))


class ConfidenceHead(nn.Module):
    def __init__(self, in_dim, bias):
        super().__init__()
        self.proj = nn.Linear(in_dim, 1, bias=bias)

    def forward(self, hidden, prev_embeddings=None):
        x = hidden.float() if prev_embeddings is None else torch.cat([hidden.float(), prev_embeddings.float()], -1)
        return self.proj(x).squeeze(-1)


@torch.no_grad()
def markov_chain(base_logits, anchor, markov):
    """Greedy chain: x_0 = anchor; for k: logits_k = base_k + W2 W1[x_k], x_{k+1} = argmax (first
    maximum wins a tie). base_logits [nd, V]. Returns (tokens [nd], logits [nd, V], margins [nd]:
    largest minus second largest refined logit, 0 for an exact tie)."""
    nd = base_logits.shape[0]
    prev = torch.tensor([int(anchor)], dtype=torch.long)
    tokens, rows, margins = [], [], []
    for k in range(nd):
        row = base_logits[k].float() + markov.bias(prev)[0]
        tok = int(torch.argmax(row))
        top2 = torch.topk(row, 2).values
        tokens.append(tok)
        rows.append(row)
        margins.append(float(top2[0] - top2[1]))
        prev = torch.tensor([tok], dtype=torch.long)
    return torch.tensor(tokens, dtype=torch.long), torch.stack(rows), torch.tensor(margins)


def previous_tokens(anchor, drafts):
    """x_{k-1} for draft k: [anchor, d_1, ..., d_{nd-1}]."""
    return torch.cat([torch.tensor([int(anchor)], dtype=torch.long), drafts[:-1].long()])
