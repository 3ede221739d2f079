#!/usr/bin/env bash
# CPU reference engine speed on the bundled fixtures: prefill tokens/s (one call, and chunk 64) and
# decode ms/token. Writes bench/results/cpu-engine-<date>.txt with machine, commit and commands.
#   bench/cpu_engine.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build}/memra"
out="$root/bench/results/cpu-engine-$(date -u +%Y%m%d).txt"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
{
  echo "# memra CPU reference engine: prefill and decode speed"
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$root" rev-parse --short=12 HEAD)"
  echo "binary: $("$bin" --version)"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "command: bench/cpu_engine.sh"
  for model in tiny tiny-bf16; do
    python3 -c "print(' '.join(str(2 + (i * 37) % 500) for i in range(400)))" | tr '\n' ' ' > "$tmp/p.txt"
    for chunk in 0 64; do
      best=""
      for rep in 1 2 3; do
        s=$("$bin" -q prefill "$root/models/$model" --tokens "$tmp/p.txt" --chunk "$chunk" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['prefill_seconds'])")
        best=$(python3 -c "print(min([x for x in [$s, ${best:-1e9}]]))")
      done
      python3 -c "print(f'$model prefill 400 tokens chunk=${chunk/#0/all}: best of 3 {${best}:.4f} s = {400/${best}:.1f} tokens/s')"
    done
    # decode: prefill 64 then 128 greedy steps (wall time of the whole run minus the prefill)
    python3 -c "print(' '.join(str(2 + (i * 37) % 500) for i in range(64)))" | tr '\n' ' ' > "$tmp/d.txt"
    t0=$(date +%s.%N); "$bin" -q prefill "$root/models/$model" --tokens "$tmp/d.txt" --json > "$tmp/p64.json"; t1=$(date +%s.%N)
    "$bin" -q prefill "$root/models/$model" --tokens "$tmp/d.txt" --generate 128 --ignore-eos --json > /dev/null; t2=$(date +%s.%N)
    python3 -c "p=$t1-$t0; g=$t2-$t1; print(f'$model decode 128 greedy steps after a 64-token prompt: {(g-p)/128*1000:.2f} ms/token (run {g:.3f} s minus prefill-only run {p:.3f} s)')"
  done
} | tee "$out"
