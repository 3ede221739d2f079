#!/usr/bin/env bash
# Calibrates the band rule (docs/bands.md) against real drift: for each bundled fixture, the drift
# between honest realization pairs (cpu vs cpu-fast on the dump's tokens; cpu vs the oracle's f32
# logits), the band memra derives for that pair, and their ratio; then the same pairs with noise at
# 10x the measured drift, which the band gate must FAIL. Writes bench/results/band-calibration-<date>.txt.
#   bench/band_calibration.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build}/memra"
py="$("$root/tools/oracle/setup-venv.sh" 2>/dev/null)"
out="$root/bench/results/band-calibration-$(date -u +%Y%m%d).txt"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

ratio() {  # a b precision-a precision-b model → "max_abs worst_ratio verdict"
  "$bin" -q gate band "$1" "$2" --model "$5" --precision-a "$3" --precision-b "$4" --json |
    "$py" -c "import json,sys; g=json.load(sys.stdin); f=dict(g['figures']) if isinstance(g.get('figures'),list) else g['figures']; print(f['max_abs'], f['worst_diff_over_band'], g['verdict'] if 'verdict' in g else g['result'])"
}

{
  echo "# band calibration: honest drift vs the derived band, and 10x noise"
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$root" rev-parse --short=12 HEAD)"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
  echo "command: bench/band_calibration.sh"
  printf '%-10s %-22s %12s %12s %10s %-8s | %-14s\n' model pair max_abs worst_ratio rows verdict "10x-noise"
  for model in tiny tiny-bf16; do
    dir="$root/models/$model"
    "$py" - "$dir/dump/arrays.safetensors" "$tmp/$model" <<'PY'
import sys, numpy as np
from safetensors.numpy import load_file
a = load_file(sys.argv[1])
np.savetxt(sys.argv[2] + ".tokens.txt", a["tokens"].reshape(1, -1), fmt="%d")
np.save(sys.argv[2] + ".oracle.npy", a["logits"].astype(np.float32))
PY
    for b in cpu cpu-fast; do
      "$bin" -q prefill "$dir" --tokens "$tmp/$model.tokens.txt" --backend "$b" --logits "$tmp/$model.$b.npy" > /dev/null
    done
    for pair in "cpu cpu-fast $tmp/$model.cpu.npy $tmp/$model.cpu-fast.npy" "f32 cpu $tmp/$model.oracle.npy $tmp/$model.cpu.npy"; do
      set -- $pair
      read -r max_abs worst verdict < <(ratio "$3" "$4" "$1" "$2" "$dir")
      # noise at 10x the measured drift of each row, on B
      "$py" - "$3" "$4" "$tmp/noisy.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = np.abs(a - b).max(axis=1, keepdims=True)
rng = np.random.default_rng(0)
np.save(sys.argv[3], (a + 10 * d * rng.uniform(-1, 1, a.shape)).astype(np.float32))
PY
      read -r n_abs n_worst n_verdict < <(ratio "$3" "$tmp/noisy.npy" "$1" "$2" "$dir")
      printf '%-10s %-22s %12.4g %12.4g %10s %-8s | %s (ratio %.3g)\n' "$model" "$1 vs $2" "$max_abs" "$worst" "$(( $(wc -w < "$tmp/$model.tokens.txt") ))" "$verdict" "$n_verdict" "$n_worst"
    done
  done
} | tee "$out"
