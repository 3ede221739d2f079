#!/usr/bin/env bash
# Puts a pair trained by tools/oracle/train-pair.sh into models/drafters/ (replacing
# tiny-dspark-trained and tiny-dflash-trained) and prints what their oracle.json records: steps,
# held-out accuracy per row and the oracle's tau. Refuses a folder without weights or record.
#   tools/oracle/adopt-pair.sh SRC_DIR [NAMES]   (SRC_DIR = train-pair.sh's OUT_DIR; NAMES the folder
#                                                 names in models/drafters/, %s = the family:
#                                                 tiny-%s-trained, or tiny-trained-%s for the pair
#                                                 trained against models/tiny-trained)
# Afterwards: bench/speculative.sh BUILD_DIR (memra's own loop: tau, tokens/s; writes
# bench/results/speculative-cpu-<date>.txt) and the drafter tests (ctest -R 'drafter|speculative|draft').
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: tools/oracle/adopt-pair.sh SRC_DIR [NAMES]" >&2; exit 2; }
names="${2:-tiny-%s-trained}"
for f in tiny-dspark-trained tiny-dflash-trained; do
  for x in config.json model.safetensors oracle.json; do
    [[ -s "$1/$f/$x" ]] || { echo "adopt-pair: error: $1/$f/$x is missing" >&2; exit 1; }
  done
done
for fam in dspark dflash; do
  f="tiny-$fam-trained"
  # shellcheck disable=SC2059
  dest="$(printf "$names" "$fam")"
  stage="$root/models/drafters/.$dest.new"
  rm -rf "$stage" && mkdir -p "$stage"
  cp "$1/$f/config.json" "$1/$f/model.safetensors" "$1/$f/oracle.json" "$stage/"
  chmod 0755 "$stage" && chmod 0644 "$stage"/*
  rm -rf "$root/models/drafters/$dest" && mv "$stage" "$root/models/drafters/$dest"
  python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); e = j.get('eval') or {}
print(f\"{sys.argv[2]}: {j.get('steps_run')} steps x {j.get('ranks', 1)} ranks in {j.get('train_seconds')} s, \"
      f\"held-out accuracy per row {j.get('held_out_accuracy_per_row')}, oracle tau \"
      f\"{e.get('tau', 'not measured')} ({e.get('prompts')} prompts x {e.get('new_tokens')} tokens, block {e.get('block_size')}), \"
      f\"machine {j.get('machine')}\")" "$root/models/drafters/$dest/oracle.json" "$dest"
done
