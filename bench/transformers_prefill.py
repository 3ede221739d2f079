#!/usr/bin/env python3
"""Times transformers' DeepSeek-V4 prefill on the CPU: one forward over a token list (use_cache on,
float32, no grad), after one warm-up, on the thread count given. Prints one JSON line with every
repetition's seconds; bench/cpu_prefill.sh runs it side by side with memra.

    transformers_prefill.py MODEL_DIR TOKENS_TXT [--threads 2] [--reps 5]
"""
import argparse
import json
import os
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("tokens")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ids = torch.tensor([[int(t) for t in open(a.tokens).read().split()]])
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    times = []
    with torch.no_grad():
        model(ids, use_cache=True)  # warm-up
        for _ in range(a.reps):
            t0 = time.perf_counter()
            model(ids, use_cache=True)
            times.append(time.perf_counter() - t0)
    print(json.dumps({"tokens": ids.shape[1], "threads": a.threads, "seconds": times,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
