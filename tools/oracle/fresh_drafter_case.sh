#!/usr/bin/env bash
# Makes fresh random drafter test cases for a trunk: one DSpark and one DFlash-family drafter with
# random geometry (make_drafter.py --preset random) and a dump of each (dump_drafter.py).
#
#   tools/oracle/fresh_drafter_case.sh SEED OUTDIR [TRUNK]
#
# TRUNK defaults to models/tiny. From the seed: the context length (1-48, so windows are both longer
# and shorter than it), the tap source (synthetic for one family, the trunk for the other, swapped
# by the seed's parity) and, when a drafter config leaves the harvest out, the convention the dump
# uses. OUTDIR/{dspark,dflash}/ hold the drafters, OUTDIR/{dspark,dflash}/dump the dumps. Prints
# "FAMILY DRAFTER DUMP" lines on stdout. Uses the venv at ${MEMRA_VENV:-$HOME/.cache/memra/venv}
# (or MEMRA_PYTHON); run tools/oracle/setup-venv.sh first. CPU only.
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: fresh_drafter_case.sh SEED OUTDIR [TRUNK]" >&2
  exit 2
fi
seed="$1"
out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
trunk="${3:-$here/../../models/tiny}"
if ! [[ "$seed" =~ ^[0-9]+$ ]]; then
  echo "fresh_drafter_case: error: seed '$seed' is not a non-negative integer" >&2
  exit 2
fi
py="${MEMRA_PYTHON:-${MEMRA_VENV:-$HOME/.cache/memra/venv}/bin/python}"
if [[ ! -x "$py" ]]; then
  echo "fresh_drafter_case: error: no oracle python at $py" >&2
  echo "fresh_drafter_case: hint: run tools/oracle/setup-venv.sh (or set MEMRA_VENV / MEMRA_PYTHON)" >&2
  exit 2
fi
export CUDA_VISIBLE_DEVICES=
mkdir -p "$out"
i=0
for family in dspark dflash; do
  i=$((i + 1))
  ctx=$(( 1 + (seed * 7919 + i * 104729) % 48 ))
  if (( (seed + i) % 2 )); then taps=trunk; else taps=synthetic; fi
  harvest=$([[ $(( (seed / 2 + i) % 2 )) -eq 0 ]] && echo dflash || echo dspark)
  "$py" "$here/make_drafter.py" --family "$family" --preset random --seed "$seed" --trunk "$trunk" \
    --out "$out/$family" > /dev/null
  extra=()
  grep -q '"harvest"' "$out/$family/config.json" || extra=(--harvest "$harvest")
  "$py" "$here/dump_drafter.py" "$out/$family" --trunk "$trunk" --out "$out/$family/dump" --taps "$taps" \
    --ctx "$ctx" --seed "$seed" "${extra[@]}" > /dev/null
  echo "$family $(cd "$out/$family" && pwd) $(cd "$out/$family/dump" && pwd)"
done
