#!/usr/bin/env bash
# shell.quant_parity: the quantised fixtures in the released layout (models/tiny-fp4: FP4 experts +
# FP8; models/tiny-fp8: FP8 throughout, sharded) match the oracle's forward over their dequantised
# weights, stage by stage, within the cpu-f32-exact tolerance (logits 1e-5 relative to max), on the
# CPU backend (which decodes the packed weights row by row: docs/quantization.md).
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
fail=0
for m in tiny-fp4 tiny-fp8; do
  out="$("$bin" -q parity "$src/models/$m" "$src/models/$m/dump" --json 2>&1)"
  rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: memra parity models/$m models/$m/dump exited $rc"
    echo "$out" | tail -20
    fail=1
    continue
  fi
  if ! python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); sys.exit(0 if r["result"] == "PASS" else 1)' <<< "$out"; then
    echo "FAIL: models/$m parity result is not PASS"
    fail=1
    continue
  fi
  echo "ok: models/$m parity PASS"
done
[[ $fail -eq 0 ]] && echo PASS
exit $fail
