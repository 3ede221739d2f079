#!/usr/bin/env bash
# Speculative vs plain greedy decoding on the CPU exact realization (`memra draft`, which checks the
# tokens identical): the committed drafters on their trunks (models/tiny: the random bundled trunk;
# models/tiny-trained: the same fine-tuned on a learnable language), several block sizes,
# PROMPTS fixed prompts of 16 ids, STEPS tokens each, RUNS interleaved timing runs (median) per
# prompt. Reports tau, acceptance by position, tokens/s of both and the speed-up; the machine's load
# average is recorded (timings on a shared machine are only indicative).
# Writes bench/results/speculative-cpu-<date>.txt with machine, commit and commands.
#   bench/speculative.sh [BUILD_DIR] [PROMPTS] [STEPS] [RUNS] [BACKEND]   (BACKEND: cpu, or cuda on a GPU)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build}/memra"
prompts="${2:-4}"; steps="${3:-128}"; runs="${4:-3}"; backend="${5:-cpu}"
out="${OUT:-$root/bench/results}/speculative-$backend-$(date -u +%Y%m%d).txt"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
{
  echo "# memra speculative decoding ($backend, exact): speculative vs plain greedy, same realization"
  echo "date: $(date -u +%FT%TZ)"
  echo "binary: $("$bin" --version 2>&1 | head -1)"  # what ran (a copied tree's git metadata can lag)
  echo "tree commit: $(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "prompts: $prompts x 16 ids (python random.Random(1000+i) in [2, 512)), $steps steps, $runs interleaved runs"
  for pair in tiny:tiny-dspark-trained tiny:tiny-dflash-trained tiny:tiny-dspark \
              tiny-trained:tiny-trained-dspark tiny-trained:tiny-trained-dflash; do
    trunk=${pair%%:*} drafter=${pair#*:}
    [[ -d "$root/models/drafters/$drafter" && -d "$root/models/$trunk" ]] || continue
    for block in 2 4 8 16; do
      tau=(); spec=(); plain=(); acc=""
      for ((i = 0; i < prompts; i++)); do
        python3 -c "import random; r=random.Random(1000+$i); print(' '.join(str(r.randrange(2,512)) for _ in range(16)))" > "$tmp/p$i.txt"
        cmd=("$bin" -q draft "$root/models/$trunk" --drafter "$root/models/drafters/$drafter" --tokens "$tmp/p$i.txt"
             --steps "$steps" --block-size "$block" --runs "$runs" --ignore-eos --backend "$backend" --json)
        [[ $i -eq 0 ]] && echo "command: memra draft models/$trunk --drafter models/drafters/$drafter --tokens PROMPT --steps $steps --block-size $block --runs $runs --ignore-eos --backend $backend --json"
        "${cmd[@]}" > "$tmp/r.json"
        read -r t s p a < <(python3 -c "
import json; j=json.load(open('$tmp/r.json')); assert j['identical_to_greedy']
print(j['tau'], j['speculative_tokens_per_s'], j['greedy_tokens_per_s'], ','.join(f'{x:.2f}' for x in j['acceptance_by_position']))")
        tau+=("$t"); spec+=("$s"); plain+=("$p"); acc="$a"
      done
      python3 -c "
import statistics as st, sys
tau=[float(x) for x in '${tau[*]}'.split()]; s=[float(x) for x in '${spec[*]}'.split()]; p=[float(x) for x in '${plain[*]}'.split()]
print(f'$trunk + $drafter block $block: tau {st.mean(tau):.3f} (per prompt {\" \".join(f\"{x:.2f}\" for x in tau)}), '
      f'tokens/s speculative {st.median(s):.1f}, plain greedy {st.median(p):.1f}, speed-up {st.median(s)/st.median(p):.3f}x '
      f'(medians over prompts), acceptance by position (last prompt) $acc, lossless: all identical')"
    done
  done
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
