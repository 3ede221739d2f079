"""Tie-stable top-k for the memra oracle.

memra defines one tie rule for every top-k (indexer, router): among exactly equal scores the lower
index wins (docs/architecture.md §5). Stock torch.topk breaks ties in a way that depends on
the tensor length, which makes the transformers DeepSeek-V4 reference non-causal (the indexer scores
are sums of ReLU terms, so exact 0.0 ties are common). Every oracle script patches torch.topk and
torch.Tensor.topk with `stable_topk` before any forward:

    import tiestable
    tiestable.install()          # process-wide, or
    with tiestable.patched():    # scoped
        model(...)

stable_topk = torch.sort(descending=largest, stable=True) then the first k along `dim`. It always
returns sorted values (sorted=False only promises an unspecified order, so sorted output is valid).
"""
import contextlib

import torch

_ORIGINAL_TOPK = torch.topk
_ORIGINAL_TENSOR_TOPK = torch.Tensor.topk
TIE_RULE = "lower-index"


def stable_topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """torch.topk with ties broken by the lower index; returns torch.return_types.topk."""
    del sorted  # always sorted: a valid choice for sorted=False too
    if input.dim() == 0:
        result = _ORIGINAL_TOPK(input, k, dim=dim, largest=largest)
    else:
        n = input.shape[dim]
        if k < 0 or k > n:
            raise RuntimeError(f"stable_topk: k ({k}) out of range for dimension of size {n}")
        values, indices = torch.sort(input, dim=dim, descending=largest, stable=True)
        result = torch.return_types.topk((values.narrow(dim, 0, k).contiguous(), indices.narrow(dim, 0, k).contiguous()))
    if out is not None:
        out_values, out_indices = out
        out_values.resize_(result.values.shape).copy_(result.values)
        out_indices.resize_(result.indices.shape).copy_(result.indices)
        return torch.return_types.topk((out_values, out_indices))
    return result


def _tensor_topk(self, k, dim=-1, largest=True, sorted=True):
    return stable_topk(self, k, dim=dim, largest=largest, sorted=sorted)


def install():
    """Patch torch.topk and torch.Tensor.topk for the rest of the process."""
    torch.topk = stable_topk
    torch.Tensor.topk = _tensor_topk


def uninstall():
    torch.topk = _ORIGINAL_TOPK
    torch.Tensor.topk = _ORIGINAL_TENSOR_TOPK


def is_installed():
    return torch.topk is stable_topk and torch.Tensor.topk is _tensor_topk


@contextlib.contextmanager
def patched():
    """Scoped patch; restores whatever was installed before."""
    saved = (torch.topk, torch.Tensor.topk)
    install()
    try:
        yield
    finally:
        torch.topk, torch.Tensor.topk = saved


def self_test():
    """Checks the tie rule and the torch.topk calling conventions; raises AssertionError on failure."""
    x = torch.tensor([[0.0, 3.0, 0.0, 3.0, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]])
    with patched():
        v, i = torch.topk(x, 3)
        assert i.tolist() == [[1, 3, 4], [0, 1, 2]], i
        assert v.tolist() == [[3.0, 3.0, 1.0], [2.0, 2.0, 2.0]], v
        r = x.topk(2, dim=1, largest=False, sorted=False)
        assert r.indices.tolist() == [[0, 2], [0, 1]], r
        assert r.values.tolist() == [[0.0, 0.0], [2.0, 2.0]], r
        r = x.topk(1, dim=0)
        assert r.indices.tolist() == [[1, 0, 1, 0, 1, 1]], r
        masked = torch.tensor([0.0, float("-inf"), 0.0, float("-inf")])
        assert torch.topk(masked, 4).indices.tolist() == [0, 2, 1, 3]
        ov, oi = torch.empty(0), torch.empty(0, dtype=torch.long)
        torch.topk(x[0], 2, out=(ov, oi))
        assert oi.tolist() == [1, 3]
        y = torch.randn(5, 40)
        ref = _ORIGINAL_TOPK(y, 7, dim=-1)
        got = y.topk(7, dim=-1)
        assert torch.equal(ref.values, got.values) and torch.equal(ref.indices, got.indices)
    assert torch.topk is _ORIGINAL_TOPK or not is_installed()


if __name__ == "__main__":
    self_test()
    print("tiestable: ok")
