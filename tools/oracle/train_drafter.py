#!/usr/bin/env python3
"""Self-distillation of a tiny drafter on the trunk's own greedy continuations (CPU, minutes).

    train_drafter.py INIT_DRAFTER_DIR --trunk MODEL_DIR --out DIR [--steps N] [--seed S] [--lr X]
                     [--sequences N] [--prompt-len P] [--length S] [--anchors K] [--batch B]

INIT_DRAFTER_DIR is a drafter folder from make_drafter.py (its config and initial weights).
Data: N prompts of P ids uniform in [2, V) (seed), each continued greedily by the trunk to S tokens;
one one-shot trunk forward gives every position's taps. Training picks K random anchors p per
sequence in the greedy part (x_p is a trunk token) and runs the drafter on the block [x_p, noise...]
at p..p+b-1 with the context of positions < p, exactly as at inference:
  dspark (shifted):  row k predicts x_{p+k+1}, k = 0..b-1; the Markov head is teacher-forced with
                     x_{p+k}; the confidence head learns c*_k = p_draft(label) (the one-hot-target
                     case of paper Eq. 8) with BCE.
  dflash (mask-fill): row k predicts x_{p+k}, k = 1..b-1 (row 0 unsupervised); blocks of one sequence
                     share one forward with a mask (ctx < p, own block bidirectional).
Loss = sum_k w_k (CE_k + kl KL(trunk_k || draft_k)) with w_k = exp(-(k-1)/gamma) (gamma 4): the CE on the
trunk's greedy token, the KL to the trunk's whole distribution for the same prediction. Adam. At the end tau is measured with
the oracle's speculative loop (spec_decode.measure) on held-out prompts and written to DIR/oracle.json.
"""
import argparse
import math
import os
import shlex
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import drafter_io  # noqa: E402
import spec_decode  # noqa: E402
import tiestable  # noqa: E402
from drafter_heads import first_row, label_offset, n_drafts  # noqa: E402


_WORKER = {}


def _worker_init(trunk_dir):
    torch.set_num_threads(1)
    tiestable.install()
    import transformers
    transformers.utils.logging.disable_progress_bar()
    _WORKER["trunk"] = drafter_io.load_trunk(trunk_dir)


@torch.no_grad()
def _worker_chunk(job):
    """One chunk of prompts [n, P] (greedy to `new` more tokens when new > 0) -> numpy (ids, taps, logits)."""
    prompts, new, tap_layer_inputs = job
    trunk = _WORKER["trunk"]
    ids = torch.cat([prompts, spec_decode.greedy(trunk, prompts, new)], dim=1) if new > 0 else prompts
    lo, tp = drafter_io.trunk_forward(trunk, ids, tap_layer_inputs)
    return ids.numpy(), tp.numpy(), lo.half().numpy()


@torch.no_grad()
def make_data(trunk, trunk_dir, c, sequences, prompt_len, length, seed, workers=1, ids=None):
    """(ids [N, S], taps [N, S, n_taps, D], trunk logits [N, S, V] as float16). Prompts: N x P ids
    from the seed, continued greedily by the trunk to S tokens (unless ids is given); chunks of 32
    prompts, on `workers` processes of one thread each when workers > 1 (same chunks, same results)."""
    new = 0
    if ids is None:
        gen = torch.Generator().manual_seed(seed)
        ids = torch.randint(2, c["vocab_size"], (sequences, prompt_len), generator=gen)
        new = length - prompt_len
    jobs = [(ids[i:i + 32], new, c["tap_layer_inputs"]) for i in range(0, ids.shape[0], 32)]
    if workers > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(workers, _worker_init, (trunk_dir,)) as pool:
            parts = pool.map(_worker_chunk, jobs, chunksize=1)
    else:
        _WORKER["trunk"] = trunk
        parts = [_worker_chunk(j) for j in jobs]
    return tuple(torch.cat([torch.from_numpy(p[k]) for p in parts]) for k in range(3))


def distill(logits, target_logits, labels, w, kl_weight, kl_temp=1.0):
    """Weighted CE on the trunk's greedy tokens + kl_weight x KL(trunk_T || draft) per row; logits
    [..., rows, V], target_logits the trunk's logits for the same predictions; trunk_T =
    softmax(trunk logits / kl_temp) (the tiny trunk's logits are nearly flat: a temperature < 1
    makes its ranking, which decides the greedy token, visible to the KL)."""
    rows = logits.shape[-2]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none").view(-1, rows)
    loss = ce
    if kl_weight > 0:
        t = F.log_softmax(target_logits.float() / kl_temp, -1)
        kl = (t.exp() * (t - F.log_softmax(logits, -1))).sum(-1).view(-1, rows)
        loss = ce + kl_weight * kl
    return (loss * w).sum(1).mean() / w.sum()


def dspark_loss(model, trunk, ids, taps, tlogits, anchors, gamma, kl_weight, kl_temp=1.0):
    c = model.c
    b = c["block_size"]
    B, K = anchors.shape
    seq_index = torch.arange(B).repeat_interleave(K)
    flat = anchors.reshape(-1)
    rows = flat.view(-1, 1) + torch.arange(b).view(1, b)  # [N, b] positions
    block_ids = torch.full((flat.numel(), b), c["noise_token_id"], dtype=torch.long)
    block_ids[:, 0] = ids[seq_index, flat]
    main_x = model.ctx_features(taps)
    windows = model.windows(main_x, seq_index, flat)
    prenorm, final = model.forward_blocks(drafter_io.embed(trunk, block_ids), flat, windows)
    logits = drafter_io.head(trunk, final)  # [N, b, V]
    prev = ids[seq_index.view(-1, 1), rows]  # x_{p+k}
    labels = ids[seq_index.view(-1, 1), rows + 1]  # x_{p+k+1}
    if model.markov is not None:
        logits = logits + model.markov.bias(prev)
    w = torch.exp(-torch.arange(b, dtype=torch.float32) / gamma)
    loss = distill(logits, tlogits[seq_index.view(-1, 1), rows], labels, w, kl_weight, kl_temp)  # trunk at p+k predicts p+k+1
    if model.confidence is not None:
        pe = model.markov.prev_embeddings(prev) if c["confidence_head_with_markov"] else None
        # The confidence head learns on detached features: it must not pull the drafter's hidden states.
        conf = model.confidence(model.confidence_hidden(prenorm, final).detach(), None if pe is None else pe.detach())
        target = torch.softmax(logits.detach(), -1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        loss = loss + F.binary_cross_entropy_with_logits(conf, target)
    acc = (logits.argmax(-1) == labels).float().mean(0)
    return loss, acc


def dflash_loss(model, trunk, ids, taps, tlogits, anchors, gamma, kl_weight, kl_temp=1.0):
    c = model.c
    b = c["block_size"]
    B, K = anchors.shape
    S = ids.shape[1]
    rows = anchors.unsqueeze(-1) + torch.arange(b)  # [B, K, b]
    block_ids = torch.full((B, K, b), c["noise_token_id"], dtype=torch.long)
    block_ids[:, :, 0] = ids.gather(1, anchors)
    q_block = torch.arange(K).repeat_interleave(b)  # block of each query row
    ctx_ok = torch.arange(S).view(1, 1, S) < anchors.repeat_interleave(b, dim=1).unsqueeze(-1)  # [B, K*b, S]
    own = (q_block.view(-1, 1) == q_block.view(1, -1)).expand(B, -1, -1)  # [B, K*b, K*b]
    mask = torch.cat([ctx_ok, own], dim=-1).unsqueeze(1)
    final = model.forward_blocks_masked(taps, drafter_io.embed(trunk, block_ids.view(B, -1)), anchors, mask)
    logits = drafter_io.head(trunk, final).view(B, K, b, -1)[:, :, 1:]  # rows 1..b-1
    labels = ids.gather(1, rows[:, :, 1:].reshape(B, -1)).view(B, K, b - 1)  # x_{p+k}
    if model.markov is not None:
        prev = ids.gather(1, rows[:, :, :-1].reshape(B, -1)).view(B, K, b - 1)
        logits = logits + model.markov.bias(prev)
    w = torch.exp(-torch.arange(b - 1, dtype=torch.float32) / gamma)
    target = tlogits.gather(1, (rows[:, :, 1:] - 1).reshape(B, -1, 1).expand(-1, -1, tlogits.shape[-1]))
    loss = distill(logits, target.view(B, K, b - 1, -1), labels, w, kl_weight, kl_temp)  # trunk at p+k-1 predicts p+k
    acc = (logits.argmax(-1) == labels).float().reshape(-1, b - 1).mean(0)
    return loss, acc


@torch.no_grad()
def held_out_accuracy(model, loss_fn, trunk, ids, taps, tlogits, lo, hi, args, gen):
    """Accuracy per row (teacher-forced, as in training) on held-out sequences, fixed anchors."""
    accs = []
    for i in range(0, ids.shape[0], args.batch):
        sl = slice(i, min(i + args.batch, ids.shape[0]))
        n = sl.stop - sl.start
        anchors = torch.randint(lo, hi + 1, (n, args.anchors), generator=gen)
        accs.append(loss_fn(model, trunk, ids[sl], taps[sl], tlogits[sl], anchors, args.gamma, 0.0)[1] * n)
    return (torch.stack(accs).sum(0) / ids.shape[0]).tolist()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("init_dir")
    p.add_argument("--trunk", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--sequences", type=int, default=192)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--length", type=int, default=112)
    p.add_argument("--anchors", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--gamma", type=float, default=4.0)
    p.add_argument("--kl", type=float, default=1.0, help="weight of KL(trunk || draft) beside the CE (0: CE only)")
    p.add_argument("--kl-temp", type=float, default=1.0, help="temperature of the trunk's distribution in the KL")
    p.add_argument("--holdout", type=int, default=0,
                   help="keep the last N sequences out of training; their accuracy per row is logged and recorded")
    p.add_argument("--eval-prompts", type=int, default=8)
    p.add_argument("--eval-new", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data-cache", default=None, help="reuse the generated data in this .pt file (made when absent)")
    p.add_argument("--data-only", action="store_true", help="make the --data-cache file and stop")
    p.add_argument("--data-workers", type=int, default=1,
                   help="processes (one thread each) that generate the data; same data for any count")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="wall-clock budget of the run up to the end of training (then evaluate and save); the "
                        "learning-rate schedule follows whichever of steps and time runs out first; "
                        "oracle.json records the steps run")
    args = p.parse_args(argv)

    t0 = time.time()
    tiestable.install()
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, args.threads))
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    if world > 1:  # data parallel over processes (torchrun or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)
        import datetime
        # A rank that dies makes the others' next collective fail after the timeout instead of hanging.
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))

    def log(line):
        if rank == 0:
            print(line, file=sys.stderr, flush=True)

    import transformers
    transformers.utils.logging.disable_progress_bar()
    model, c = drafter_io.load_drafter(args.init_dir)
    trunk = drafter_io.load_trunk(args.trunk)
    trunk.requires_grad_(False)
    drafter_io.check_pair(trunk, c)
    harvest = c["harvest"]
    if harvest is None:
        raise SystemExit("train_drafter: error: the drafter config must name its harvest convention")
    b = c["block_size"]
    key = (args.trunk, args.sequences, args.prompt_len, args.length, args.seed)
    # mmap: the ranks of a data-parallel run share one copy of the (GB-sized) file in the page cache
    cached = torch.load(args.data_cache, mmap=True) if args.data_cache and os.path.exists(args.data_cache) else None
    if cached is not None and cached["key"] == key:
        if cached.get("tap_layer_inputs") == c["tap_layer_inputs"]:
            ids, taps, tlogits = cached["ids"], cached["taps"], cached["tlogits"]
        else:  # one-shot forwards only: the taps depend on the drafter
            ids, taps, tlogits = make_data(trunk, args.trunk, c, 0, 0, 0, 0, args.data_workers, ids=cached["ids"])
    else:
        ids, taps, tlogits = make_data(trunk, args.trunk, c, args.sequences, args.prompt_len, args.length, args.seed,
                                       args.data_workers)
        if args.data_cache:
            tmp = args.data_cache + ".tmp"
            torch.save({"key": key, "ids": ids, "tap_layer_inputs": c["tap_layer_inputs"], "taps": taps,
                        "tlogits": tlogits}, tmp)
            os.replace(tmp, args.data_cache)
    log(f"train_drafter: data {tuple(ids.shape)} in {time.time() - t0:.0f}s")
    if args.data_only:
        return 0
    if not 0 <= args.holdout < ids.shape[0]:
        raise SystemExit(f"train_drafter: error: --holdout {args.holdout} must leave training sequences")
    n_train = ids.shape[0] - args.holdout
    held = (ids[n_train:], taps[n_train:], tlogits[n_train:])

    loss_fn = dspark_loss if c["family"] == "dspark" else dflash_loss
    need = b + label_offset(harvest) - 1  # last label position past the anchor
    lo, hi = args.prompt_len, args.length - 1 - need  # anchors in the greedy part, labels in range
    model.train()
    params = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.Adam(params, lr=args.lr)
    # Progress through the schedule: steps done or time used, whichever is further, so a run cut
    # short by --max-minutes still ends with a decayed learning rate. With several ranks, rank 0's
    # clock decides for all (same learning rate, same last step).
    t_loop = time.time()
    budget = None if args.max_minutes is None else max(1.0, 60 * args.max_minutes - (t_loop - t0))
    now = {"progress": 0.0}
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(1.0, now["progress"]))))
    gen = torch.Generator().manual_seed(args.seed + 17 + 1000 * rank)
    steps_run = 0
    held_acc = None
    world_broken = False
    for step in range(args.steps):
        prog = torch.tensor([max(step / args.steps, 0.0 if budget is None else (time.time() - t_loop) / budget)])
        if world > 1:
            try:
                dist.broadcast(prog, 0)
            except RuntimeError as e:  # a rank is gone: rank 0 keeps what it has trained (saved below)
                print(f"train_drafter: rank {rank}: data parallel broken at step {step} ({str(e)[:120]})", file=sys.stderr)
                if rank != 0:
                    return 1
                world_broken = True
                break
        if prog.item() >= 1.0 and step > 0:
            log(f"train_drafter: --max-minutes {args.max_minutes} reached after {step} steps")
            break
        now["progress"] = prog.item()
        steps_run = step + 1
        rows = torch.randint(0, n_train, (args.batch,), generator=gen)
        anchors = torch.randint(lo, hi + 1, (args.batch, args.anchors), generator=gen)
        loss, acc = loss_fn(model, trunk, ids[rows], taps[rows], tlogits[rows], anchors, args.gamma, args.kl, args.kl_temp)
        opt.zero_grad()
        loss.backward()
        if world > 1:  # data parallel: the mean of every rank's gradient, one flat all-reduce
            grads = [q.grad if q.grad is not None else torch.zeros_like(q) for q in params]
            flat = torch.cat([g.reshape(-1) for g in grads])
            try:
                dist.all_reduce(flat)
            except RuntimeError as e:
                print(f"train_drafter: rank {rank}: data parallel broken at step {step} ({str(e)[:120]})", file=sys.stderr)
                if rank != 0:
                    return 1
                world_broken = True
                break
            flat /= world
            off = 0
            for q in params:
                q.grad = flat[off:off + q.numel()].view_as(q).clone()
                off += q.numel()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0 or step == args.steps - 1:
            line = (f"step {step} loss {loss.item():.3f} acc/row {[round(a, 2) for a in acc.tolist()]} "
                    f"lr {sched.get_last_lr()[0]:.2e} {time.time() - t0:.0f}s")
            if args.holdout and step % 200 == 0 and rank == 0:
                ha = held_out_accuracy(model, loss_fn, trunk, *held, lo, hi, args, torch.Generator().manual_seed(5))
                line += f" held-out {[round(a, 3) for a in ha]}"
            log(line)
    if world > 1:
        if not world_broken:
            dist.destroy_process_group()
        if rank != 0:
            return 0
        torch.set_num_threads(max(1, args.threads) * world)  # the other ranks are done: their cores are free
    if args.holdout:
        held_acc = held_out_accuracy(model, loss_fn, trunk, *held, lo, hi, args, torch.Generator().manual_seed(5))
        log(f"train_drafter: held-out accuracy per row {[round(a, 3) for a in held_acc]} "
            f"({args.holdout} sequences x {args.anchors} anchors)")
    train_seconds = time.time() - t0
    model.eval()
    import json
    with open(os.path.join(args.init_dir, "oracle.json")) as f:
        init_meta = json.load(f)
    meta = {
        "format": "memra.oracle-drafter", "format_version": "1.0",
        "producer": {"tool": "tools/oracle/train_drafter.py", "transformers": transformers.__version__,
                     "torch": torch.__version__, "python": sys.version.split()[0]},
        "family": c["family"], "init": init_meta, "options": vars(args), "ranks": world,
        "regenerate": "\"$(tools/oracle/setup-venv.sh)\" " + shlex.join(["tools/oracle/train_drafter.py"] + argv),
        "eval": None, "train_seconds": round(train_seconds), "steps_run": steps_run,
        "data_parallel_broken": world_broken,
    }
    if held_acc is not None:
        meta["held_out_accuracy_per_row"] = [round(a, 4) for a in held_acc]
    drafter_io.save_drafter(model, args.out, meta)  # the weights first: a run stopped during the evaluation keeps them
    workers = min(args.eval_prompts, max(1, args.threads) * world)
    if workers > 1:  # one process per prompt on the cores training used; reads the folder just saved
        with spec_decode.worker_pool(args.trunk, args.out, workers) as pool:
            r = spec_decode.measure(trunk, model, harvest, args.eval_prompts, args.prompt_len, args.eval_new,
                                    seed=10_000 + args.seed, pool=pool)
    else:
        r = spec_decode.measure(trunk, model, harvest, args.eval_prompts, args.prompt_len, args.eval_new,
                                seed=10_000 + args.seed)
    print(f"train_drafter: tau {r['tau']:.3f} (block {b}, {r['rounds']} rounds, lossless), "
          f"histogram {r['accepted_histogram']}, {time.time() - t0:.0f}s", file=sys.stderr)
    meta["eval"] = r
    meta["total_seconds"] = round(time.time() - t0)
    drafter_io.save_drafter(model, args.out, meta)
    print(os.path.abspath(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
