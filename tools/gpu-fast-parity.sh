#!/usr/bin/env bash
# tools/gpu-fast-parity.sh: the fast realization against transformers under the parity tool's rules
# (router and indexer decisions compared with their margins: a flip within the band is IN-BAND and
# the values after it are not compared; a floor of compared rows), beside the exact one, on the
# bundled dumps and on FRESH oracle checkpoints made on this machine; then the chunk-semantics gate
# (fast monolithic vs exact chunk-1) at 66, 100 and 160 tokens. Why: the backend test's logits-only
# check of cuda-fast cannot tell an internal decision flip from a wrong kernel.
#   bash tools/gpu-fast-parity.sh [FRESH_COUNT]   (env: MEMRA=path to memra, EXACT=cuda, FAST=cuda-fast,
#                                                  OUT=where fast.txt goes)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
memra=${MEMRA:-build-gpu-pack/bin/memra}
exact=${EXACT:-cuda}
fast=${FAST:-cuda-fast}
out=${OUT:-.}/fast.txt
fresh=${1:-2}
say() { echo "$*" | tee -a "$out"; }
step() {  # step NAME CMD...: logs the command and its whole output, prints the verdict line
  echo "=== $1: ${*:2}" >> "$out"
  "${@:2}" >> "$out" 2>&1
  local rc=$?
  say "$(printf '%-52s rc=%d  %s' "$1" "$rc" "$(grep -E '^\[(parity|chunk-semantics)\] (ALL|PASS|FAIL|INCONCLUSIVE|REFUSED)' "$out" | tail -1 | cut -c1-150)")"
}
cases=()
for m in models/tiny models/tiny-bf16 models/tiny-fp8 models/tiny-fp4; do cases+=("$m:$m/dump"); done
py=$(command -v python3)
for k in $(seq 1 "$fresh"); do
  s=$(( $(date +%s) % 1000000 + 100 + k )); d=${TMPDIR:-/tmp}/memra-fastp-$s
  if MEMRA_PYTHON="$py" tools/oracle/fresh_case.sh "$s" "$d" >> "$out" 2>&1; then cases+=("$d/model:$d/dump"); else say "fresh case $s: oracle failed"; fi
done
for c in "${cases[@]}"; do
  m=${c%%:*} d=${c#*:}
  step "parity $exact $m" "$memra" parity "$m" "$d" --backend "$exact" -v
  step "parity $fast $m" "$memra" parity "$m" "$d" --backend "$fast" -v
  for p in 66 100 160; do
    step "gate semantics $m --prompt-len $p" "$memra" gate semantics "$m" --backend "$exact" --prompt-len "$p"
  done
done
