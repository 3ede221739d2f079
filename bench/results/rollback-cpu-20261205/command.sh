#!/usr/bin/env bash
# Session 45: memra's speculative loop keeping the verify's accepted rows (--rollback keep, the
# default) against running them again (--rollback rerun), on the exact CPU realization, the trained
# tiny pair (tiny-trained + tiny-trained-dspark), models/prompt.txt, 96 steps, drafter blocks 5 and
# 15 (verifies of 6 and 16 rows), 5 interleaved runs each (memra draft's own medians). The same
# tokens and final state either way (lossless, checked by memra draft); what differs is the trunk
# rows and the rollback seconds.
set -euo pipefail
bin="${1:-build-cuda/memra}"
out="$(dirname "$0")"
for b in 5 15; do
  for rb in keep rerun; do
    "$bin" -q draft models/tiny-trained --drafter models/drafters/tiny-trained-dspark --tokens models/prompt.txt \
      --steps 96 --ignore-eos --block-size "$b" --rollback "$rb" --runs 5 --backend cpu --json > "$out/block$b-$rb.json"
  done
done
python3 - "$out" <<'PY'
import json, sys, os
d = sys.argv[1]
print("| drafter block | rollback | tau | rounds | rollbacks | trunk rows | rollback s | speculative s (median of 5) | tokens/s | lossless |")
print("|---|---|---|---|---|---|---|---|---|---|")
for b in (5, 15):
    for rb in ("keep", "rerun"):
        j = json.load(open(os.path.join(d, f"block{b}-{rb}.json")))
        med = sorted(j["speculative_seconds"])[len(j["speculative_seconds"]) // 2]
        print(f"| {b} | {rb} | {j['tau']:.2f} | {j['rounds']} | {j['rollbacks']} | {j['trunk_rows']} | "
              f"{j['seconds']['rollback']:.4f} | {med:.4f} | {j['speculative_tokens_per_s']:.1f} | {j['identical_to_greedy']} |")
PY
