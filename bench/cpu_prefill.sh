#!/usr/bin/env bash
# CPU prefill, side by side in one run on the same checkpoint, tokens and thread count: memra's
# exact path (`cpu`), memra's fast realization (`cpu-fast`) and transformers (float32, eager),
# interleaved repetitions, medians and ratios. Checkpoints: the bundled fixtures (400 tokens) and a
# random one with hidden 1024 made by the oracle (1024 tokens; cached under $MEMRA_BENCH_CACHE).
# Writes bench/results/cpu-prefill-<date>.txt with machine, commit and command.
#   bench/cpu_prefill.sh [BUILD_DIR] [REPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build}/memra"
reps="${2:-5}"
py="$("$root/tools/oracle/setup-venv.sh" 2>/dev/null)"
cache="${MEMRA_BENCH_CACHE:-$HOME/.cache/memra/bench}"
out="$root/bench/results/cpu-prefill-$(date -u +%Y%m%d).txt"
threads="$(nproc)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$cache"

big="$cache/random-h1024"
if [[ ! -f "$big/config.json" ]]; then
  echo "cpu_prefill: making the hidden-1024 checkpoint in $big (once)" >&2
  "$py" "$root/tools/oracle/make_checkpoint.py" --out "$big" --seed 11 --hidden 1024 --heads 8 --head-dim 128 \
    --rope-dim 32 --q-lora 256 --o-groups 4 --o-lora 128 --window 128 --index-heads 8 --index-dim 64 --index-topk 16 \
    --experts 8 --topk 2 --moe-inter 512 --vocab 4096 --hca-rate 128 >&2
fi

median() { "$py" -c "import sys,statistics; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

{
  echo "# CPU prefill: memra cpu, memra cpu-fast, transformers (float32 eager), same run"
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$root" rev-parse --short=12 HEAD)"
  echo "machine: $threads cores, $(lscpu | sed -n 's/^Model name: *//p'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: bench/cpu_prefill.sh $*  (threads: memra worker pool = $threads, torch.set_num_threads($threads))"
  printf '%-14s %6s | %10s %10s %12s | %9s %9s %9s | %s\n' model tokens cpu_s fast_s transformers_s "cpu/tf" "fast/tf" "fast/cpu" "(tokens/s: cpu fast tf)"
  for spec in "tiny:$root/models/tiny:400" "tiny-bf16:$root/models/tiny-bf16:400" "random-h1024:$big:1024"; do
    IFS=: read -r name dir n <<< "$spec"
    vocab=$("$py" -c "import json; print(json.load(open('$dir/config.json'))['vocab_size'])")
    "$py" -c "print(' '.join(str(2 + (i * 37) % ($vocab - 2)) for i in range($n)))" > "$tmp/t.txt"
    c=(); f=(); t=()
    for ((r = 0; r < reps; r++)); do  # interleaved, so load changes hit all three alike
      c+=("$("$bin" -q prefill "$dir" --tokens "$tmp/t.txt" --backend cpu --json | "$py" -c "import json,sys; print(json.load(sys.stdin)['prefill_seconds'])")")
      f+=("$("$bin" -q prefill "$dir" --tokens "$tmp/t.txt" --backend cpu-fast --json | "$py" -c "import json,sys; print(json.load(sys.stdin)['prefill_seconds'])")")
      t+=("$("$py" "$root/bench/transformers_prefill.py" "$dir" "$tmp/t.txt" --threads "$threads" --reps 1 2>/dev/null | "$py" -c "import json,sys; print(json.load(sys.stdin)['seconds'][0])")")
    done
    mc=$(median "${c[@]}"); mf=$(median "${f[@]}"); mt=$(median "${t[@]}")
    "$py" -c "
c,f,t,n=$mc,$mf,$mt,$n
print(f'%-14s %6d | %10.4f %10.4f %12.4f | %8.2fx %8.2fx %8.2fx | %.0f %.0f %.0f' % ('$name', n, c, f, t, t/c, t/f, c/f, n/c, n/f, n/t))"
  done
  echo "ratios: cpu/tf and fast/tf are speed-ups over transformers (tokens/s ratio); medians of $reps interleaved runs"
} | tee "$out"
