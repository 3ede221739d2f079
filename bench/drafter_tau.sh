#!/usr/bin/env bash
# Mean accepted length tau of the committed drafters, measured by the oracle's own greedy
# speculative loop (tools/oracle/spec_decode.py: verify against the transformers trunk, every output
# checked equal to plain greedy). Writes bench/results/drafter-tau-<date>.txt with machine, commit
# and the commands.
#   bench/drafter_tau.sh [PROMPTS] [NEW...]      (default: 16 prompts, 64 and 128 new tokens; the
#   random drafters, a baseline: 4 prompts, 64 new tokens)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="$("$root/tools/oracle/setup-venv.sh" 2>/dev/null)"
prompts="${1:-16}"; shift || true
news=("${@:-64 128}")
out="$root/bench/results/drafter-tau-$(date -u +%Y%m%d).txt"
{
  echo "# memra drafters: mean accepted length tau (oracle speculative loop, greedy, lossless)"
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$root" rev-parse --short=12 HEAD)"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "python: $("$py" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)')"
  for drafter in tiny-dspark-trained tiny-dflash-trained tiny-dspark tiny-dflash; do
    n="$prompts"; ns="${news[*]}"
    [[ $drafter == *-trained ]] || { n=4; ns=64; }  # the random ones (tau ~1: a round per token) as a baseline
    for new in $ns; do
      cmd=(tools/oracle/spec_decode.py "models/drafters/$drafter" --trunk models/tiny --prompts "$n" --prompt-len 16
           --new "$new" --seed 2026 --block-size 8)
      [[ $drafter == tiny-dflash ]] && cmd+=(--harvest dflash)  # its config leaves the harvest to the dump
      echo "command: \"\$(tools/oracle/setup-venv.sh)\" ${cmd[*]} --json"
      (cd "$root" && nice "$py" "${cmd[@]}" --json 2>/dev/null) | python3 -c "
import json, sys
r = json.load(sys.stdin)
print(f\"$drafter new={r['new_tokens']}: tau {r['tau']:.3f} over {r['rounds']} rounds ({r['tokens']} tokens, block {r['block_size']}, \"
      f\"{r['drafts_per_round']} drafts/round, harvest {r['harvest']}), accepted-length histogram {r['accepted_histogram']}, \"
      f\"lossless {r['lossless']}, {r['seconds']} s\")"
    done
  done
} | tee "$out"
