#!/usr/bin/env bash
# Makes a fresh random test case: a --preset random checkpoint and its reference dump.
#
#   tools/oracle/fresh_case.sh SEED OUTDIR [TOKENS]
#
# OUTDIR/model: the checkpoint (make_checkpoint.py --preset random --seed SEED).
# OUTDIR/dump:  the dump (dump_reference.py --tokens TOKENS --seed SEED); TOKENS defaults to a
#               value in 250..400 drawn from the seed.
# Prints "seed SEED", "model PATH", "dump PATH" on stdout. Uses the venv at
# ${MEMRA_VENV:-$HOME/.cache/memra/venv} (or MEMRA_PYTHON); it does not install anything: run
# tools/oracle/setup-venv.sh first. CPU only. Exit 3: dump_reference.py's NEAR_TIE_EXIT (transformers'
# own float32 forwards part at a near tie for this seed; the tests that draw seeds draw another).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: fresh_case.sh SEED OUTDIR [TOKENS]" >&2
  exit 2
fi
seed="$1"
out="$2"
if ! [[ "$seed" =~ ^[0-9]+$ ]]; then
  echo "fresh_case: error: seed '$seed' is not a non-negative integer" >&2
  exit 2
fi
tokens="${3:-$(( 250 + (seed % 1000003) * 7919 % 151 ))}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${MEMRA_PYTHON:-${MEMRA_VENV:-$HOME/.cache/memra/venv}/bin/python}"
if [[ ! -x "$py" ]]; then
  echo "fresh_case: error: no oracle python at $py" >&2
  echo "fresh_case: hint: run tools/oracle/setup-venv.sh (or set MEMRA_VENV / MEMRA_PYTHON)" >&2
  exit 2
fi
export CUDA_VISIBLE_DEVICES=
mkdir -p "$out"
"$py" "$here/make_checkpoint.py" --preset random --seed "$seed" --out "$out/model" > /dev/null
"$py" "$here/dump_reference.py" "$out/model" --out "$out/dump" --tokens "$tokens" --seed "$seed" > /dev/null
echo "seed $seed"
echo "model $(cd "$out/model" && pwd)"
echo "dump $(cd "$out/dump" && pwd)"
