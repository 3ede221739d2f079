#!/usr/bin/env python3
"""The oracle's greedy speculative loop: measures a drafter's mean accepted length tau against the
transformers trunk and checks that it is lossless (the emitted tokens are exactly plain greedy).

    spec_decode.py DRAFTER_DIR --trunk MODEL_DIR [--prompts N] [--prompt-len P] [--new T] [--seed S]
                   [--block-size B] [--json]

Each round: the drafter proposes from the taps of the committed positions (anchor x_0 = the last
committed token, its own taps not used); the trunk verifies [x_0, d_1..d_nd] in one forward; the
longest matching prefix plus the trunk's bonus token is committed (tau_round = accepted + 1).
The transformers trunk cannot rewind its compressor state (it refuses assisted generation), so the
oracle re-runs the trunk one-shot over the whole committed sequence + drafts every round; it is
causal, so the committed positions' taps and logits are those of plain decoding. Prompts are
uniform ids in [2, V) from the seed; plain greedy runs incrementally (batched, HF cache).
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import drafter_io  # noqa: E402
import tiestable  # noqa: E402
from drafter_heads import n_drafts  # noqa: E402
from drafter_propose import propose  # noqa: E402


@torch.no_grad()
def greedy(trunk, prompts, new):
    """Plain greedy continuation of each prompt row [B, P] by `new` tokens, incremental."""
    from transformers.cache_utils import DynamicCache

    cache = DynamicCache(config=trunk.config)
    out = trunk(input_ids=prompts, past_key_values=cache, use_cache=True)
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    toks = []
    for _ in range(new):
        toks.append(nxt)
        out = trunk(input_ids=nxt, past_key_values=cache, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    return torch.cat(toks, dim=1)


@torch.no_grad()
def speculative(trunk, model, prompt, new, harvest, block_size):
    """Speculative greedy continuation of one prompt [P]. Returns (tokens [new], accepted per round)."""
    c = model.c
    embed_fn = lambda ids: drafter_io.embed(trunk, ids)  # noqa: E731
    head_fn = lambda x: drafter_io.head(trunk, x)  # noqa: E731
    seq = prompt.tolist()
    logits, taps = drafter_io.trunk_forward(trunk, torch.tensor([seq]), c["tap_layer_inputs"])
    seq.append(int(torch.argmax(logits[0, -1])))
    nd = n_drafts(harvest, block_size)
    accepted = []
    while len(seq) - len(prompt) < new:
        p = len(seq) - 1  # the anchor's position; taps known for 0..p-1
        drafts = propose(model, taps[0, :p], seq[p], harvest, embed_fn, head_fn, block_size)["draft_tokens"].tolist()
        drafts = drafts[:nd]
        logits, taps = drafter_io.trunk_forward(trunk, torch.tensor([seq + drafts]), c["tap_layer_inputs"])
        posterior = torch.argmax(logits[0, p:p + nd + 1], dim=-1).tolist()
        acc = 0
        while acc < nd and drafts[acc] == posterior[acc]:
            acc += 1
        seq += drafts[:acc] + [posterior[acc]]
        accepted.append(acc)
    return torch.tensor(seq[len(prompt):len(prompt) + new]), accepted


def measure(trunk, model, harvest, prompts=8, prompt_len=16, new=64, seed=1234, block_size=None, pool=None):
    """tau over `prompts` random prompts; raises AssertionError when any output is not plain greedy.
    pool: a multiprocessing pool made by worker_pool(); the prompts then run on its workers (same result)."""
    b = block_size or model.c["block_size"]
    gen = torch.Generator().manual_seed(seed)
    V = model.c["vocab_size"]
    P = torch.randint(2, V, (prompts, prompt_len), generator=gen)
    if pool is None:
        ref = greedy(trunk, P, new)
        runs = [(i, toks, acc) for i in range(prompts) for toks, acc in [speculative(trunk, model, P[i], new, harvest, b)]]
        refs = list(ref)
    else:
        out = pool.map(_worker_prompt, [(P[i], new, harvest, b) for i in range(prompts)], chunksize=1)
        runs = [(i, torch.from_numpy(t), acc) for i, (t, acc, _) in enumerate(out)]
        refs = [torch.from_numpy(r) for _, _, r in out]
    rounds, per_pos = [], [0] * (n_drafts(harvest, b) + 1)
    for i, toks, acc in runs:
        if not torch.equal(toks, refs[i]):
            bad = int((toks != refs[i]).nonzero()[0])
            raise AssertionError(f"prompt {i}: speculative output differs from plain greedy at token {bad}")
        rounds += acc
        for a in acc:
            per_pos[a] += 1
    tau = sum(a + 1 for a in rounds) / len(rounds)
    return {"tau": tau, "rounds": len(rounds), "tokens": prompts * new, "prompts": prompts, "prompt_len": prompt_len,
            "new_tokens": new, "block_size": b, "drafts_per_round": n_drafts(harvest, b), "harvest": harvest,
            "accepted_histogram": per_pos, "lossless": True, "seed": seed}


_WORKER = {}


def _worker_init(trunk_dir, drafter_dir):
    torch.set_num_threads(1)
    tiestable.install()
    import transformers
    transformers.utils.logging.disable_progress_bar()
    _WORKER["trunk"] = drafter_io.load_trunk(trunk_dir)
    _WORKER["model"] = drafter_io.load_drafter(drafter_dir)[0]


def _worker_prompt(job):
    """One prompt [P]: (speculative tokens, accepted per round, plain greedy tokens) as numpy/lists."""
    prompt, new, harvest, b = job
    trunk, model = _WORKER["trunk"], _WORKER["model"]
    toks, acc = speculative(trunk, model, prompt, new, harvest, b)
    return toks.numpy(), acc, greedy(trunk, prompt[None], new)[0].numpy()


def worker_pool(trunk_dir, drafter_dir, workers):
    """A pool of `workers` processes (one thread each) holding the trunk and the drafter folder."""
    import multiprocessing
    return multiprocessing.get_context("spawn").Pool(workers, _worker_init, (trunk_dir, drafter_dir))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("drafter_dir")
    p.add_argument("--trunk", required=True)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--new", type=int, default=64)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--harvest", choices=["dflash", "dspark"], default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    tiestable.install()
    torch.set_num_threads(max(1, args.threads))
    import transformers
    transformers.utils.logging.disable_progress_bar()
    t0 = time.time()
    model, c = drafter_io.load_drafter(args.drafter_dir)
    trunk = drafter_io.load_trunk(args.trunk)
    drafter_io.check_pair(trunk, c)
    harvest = c["harvest"] or args.harvest
    if harvest is None:
        p.error("the drafter config has no harvest; give --harvest")
    r = measure(trunk, model, harvest, args.prompts, args.prompt_len, args.new, args.seed, args.block_size)
    r["seconds"] = round(time.time() - t0, 1)
    r["drafter"] = args.drafter_dir
    r["trunk"] = args.trunk
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        print(f"tau {r['tau']:.3f} over {r['rounds']} rounds ({r['tokens']} tokens, block {r['block_size']}, "
              f"{r['drafts_per_round']} drafts/round, harvest {harvest}); accepted-length histogram "
              f"{r['accepted_histogram']}; lossless: every output equals plain greedy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
