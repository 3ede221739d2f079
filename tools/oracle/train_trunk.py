#!/usr/bin/env python3
"""Fine-tunes the bundled tiny trunk on a synthetic language whose greedy continuation is learnable.

    train_trunk.py MODEL_DIR --out DIR [--minutes M] [--steps N] [--seed S] [--threads T]

Why: models/tiny has random weights; its logits are nearly flat and its greedy continuation is
determined by nothing a drafter can learn in minutes (bench/NOTES.md "Trained drafter pair"), so
acceptance stalls near tau 1.8. A drafter can only be as good as the trunk is predictable.

The language (seeded, V ids, ids >= 2): every id x has 4 successors S(x); after ... a, x the next
id is S(x)[a mod 4] with probability 0.7, else one of the other three successors. The trunk must
attend to the previous token to know which successor is favoured, and its greedy continuation is
then x_{t+1} = S(x_t)[x_{t-1} mod 4]: deterministic, learnable from the context, not a bigram.

Training: AdamW on every weight (the hash router's table stays), next-token cross-entropy on
batches of fresh sequences of 128 ids, CPU. The result is written with save_pretrained in the
trunk's own dtype beside a copy of config.json, generation_config.json and tokenizer.json, so it
is a model folder memra loads like the bundled one. DIR/oracle.json records the command, the
steps, the loss and the greedy rule's agreement with the trunk's greedy continuation.
"""
import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import drafter_io  # noqa: E402


def language(V, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(2, V, (V, 4), generator=g)  # S[x] = the 4 successors of x


def sample(S, batch, length, gen, p_rule=0.7):
    V = S.shape[0]
    x = torch.empty(batch, length, dtype=torch.long)
    x[:, :2] = torch.randint(2, V, (batch, 2), generator=gen)
    for t in range(2, length):
        favoured = x[:, t - 2] % 4
        other = (favoured + torch.randint(1, 4, (batch,), generator=gen)) % 4
        j = torch.where(torch.rand(batch, generator=gen) < p_rule, favoured, other)
        x[:, t] = S[x[:, t - 1], j]
    return x


@torch.no_grad()
def rule_agreement(model, S, gen, prompts=32, prompt_len=16, new=48):
    """Share of the trunk's greedy tokens that follow the rule S(x_t)[x_{t-1} mod 4]."""
    V = S.shape[0]
    ids = torch.randint(2, V, (prompts, prompt_len), generator=gen)
    for _ in range(new):
        nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], 1)
    t = torch.arange(prompt_len, prompt_len + new)
    want = S[ids[:, t - 1], ids[:, t - 2] % 4]
    return (ids[:, t] == want).float().mean().item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--out", required=True)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    from transformers import DeepseekV4ForCausalLM

    model = DeepseekV4ForCausalLM.from_pretrained(a.model_dir, dtype="auto", experts_implementation="eager")
    dtype = next(model.parameters()).dtype
    model = model.float().train()
    V = model.config.vocab_size
    S = language(V, a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=a.lr, weight_decay=0.0)
    start, step, losses = time.time(), 0, []
    budget = a.minutes * 60
    while step < a.steps and time.time() - start < budget:
        lr = a.lr * min(1.0, (step + 1) / 50) * max(0.05, 1 - (time.time() - start) / budget)
        for g in opt.param_groups:
            g["lr"] = lr
        x = sample(S, a.batch, a.length, gen)
        logits = model(x).logits[:, 2:-1]  # predictions of positions 3.. (the rule needs two ids)
        loss = F.cross_entropy(logits.reshape(-1, V), x[:, 3:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        if step % 20 == 0:
            print(f"step {step} loss {sum(losses[-20:]) / 20:.4f} lr {lr:.2e} {time.time() - start:.0f}s", flush=True)
    model.eval()
    agree = rule_agreement(model, S, torch.Generator().manual_seed(a.seed + 2))
    print(f"greedy continuation follows the rule: {agree:.3f}", flush=True)
    out = os.path.abspath(a.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".train_trunk.", dir=os.path.dirname(out))
    try:
        model.to(dtype).save_pretrained(stage)
        for f in ("config.json", "generation_config.json", "tokenizer.json"):
            if os.path.exists(os.path.join(a.model_dir, f)):
                shutil.copy(os.path.join(a.model_dir, f), os.path.join(stage, f))
        with open(os.path.join(stage, "oracle.json"), "w") as f:
            json.dump({"command": "tools/oracle/train_trunk.py " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
                       "steps": step, "seconds": round(time.time() - start),
                       "final_loss": sum(losses[-20:]) / max(1, len(losses[-20:])), "greedy_rule_agreement": agree,
                       "torch": torch.__version__}, f, indent=1)
        drafter_io.replace_folder(stage, out, "train_trunk")
    finally:
        shutil.rmtree(stage, ignore_errors=True)


if __name__ == "__main__":
    main()
