#!/usr/bin/env bash
# shell.drafter_parity: `memra parity --drafter DIR DUMP` on the committed drafter dumps: ALL PASS
# (exit 0) for both families, with and without the trunk, and a --json report valid against
# manifests/report.schema.json; REFUSED (exit 1) naming the field, with the regeneration command,
# for a dump without a harvest (Markov head present), a disagreeing harvest, a disagreeing geometry
# field; a trunk dump or a missing DUMP is a usage/runtime error (exit 2, one error line + hint).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
d="$src/models/drafters"
mutate() {  # mutate SRC_DUMP NAME PYTHON-EXPR-ON-m
  rm -rf "$work/$2"; cp -r "$1" "$work/$2"
  python3 -c "import json; p='$work/$2/manifest.json'; m=json.load(open(p)); $3; json.dump(m, open(p,'w'))"
}
for f in tiny-dspark tiny-dflash; do
  for k in dump-synthetic dump-trunk; do
    expect 0 "\[parity\] ALL PASS" -- "$bin" -q parity --drafter "$d/$f" "$d/$f/$k"
    expect 0 "draft_logits  PASS" -- "$bin" -q parity "$src/models/tiny" --drafter "$d/$f" "$d/$f/$k"
  done
done
expect 0 "harvest dspark (from the dump (the config names none))" -- "$bin" -q parity --drafter "$d/tiny-dflash" "$d/tiny-dflash/dump-synthetic"
"$bin" -q parity "$src/models/tiny" --drafter "$d/tiny-dspark" "$d/tiny-dspark/dump-trunk" --json > "$work/report.json"
expect 0 "valid" -- "$py" "$src/tools/validate_report.py" "$work/report.json"
mutate "$d/tiny-dspark/dump-synthetic" noharvest "del m['geometry']['harvest']"
expect 1 "REFUSED the dump manifest has no 'harvest'" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$work/noharvest"
expect 1 "regenerate: .*dump_drafter.py" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$work/noharvest"
mutate "$d/tiny-dspark/dump-synthetic" wrongharvest "m['geometry']['harvest'] = 'dflash'"
expect 1 "REFUSED geometry field 'harvest': config says dspark, dump says dflash" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$work/wrongharvest"
mutate "$d/tiny-dflash/dump-trunk" sliding "m['geometry']['layer_sliding'] = [True, True]"
expect 1 "REFUSED geometry field 'layer_sliding'" -- "$bin" -q parity --drafter "$d/tiny-dflash" "$work/sliding"
mutate "$d/tiny-dspark/dump-trunk" window "m['geometry']['sliding_window'] = 16"
expect 1 "REFUSED geometry field 'sliding_window'" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$work/window"
mutate "$d/tiny-dspark/dump-trunk" optional "del m['geometry']['sliding_window']"
expect 0 "absent (optional): sliding_window" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$work/optional"
expect 1 "\"result\": \"REFUSED\"" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$work/wrongharvest" --json
expect 2 "memra: error: .*memra.drafter-dump" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$src/models/tiny/dump"
expect 2 "memra: hint: this is a trunk dump" -- "$bin" -q parity --drafter "$d/tiny-dspark" "$src/models/tiny/dump"
expect 2 "memra: error: .*DUMP" -- "$bin" -q parity --drafter "$d/tiny-dspark"
expect 2 "memra: error: .*MODEL and DUMP" -- "$bin" -q parity "$src/models/tiny"
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed"
exit $fail
