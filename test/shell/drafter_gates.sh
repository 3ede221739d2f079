#!/usr/bin/env bash
# shell.drafter_gates: `memra gate speculative` and `memra gate drafter-restore` PASS on the bundled
# trunk with the committed drafters of both families (both harvest conventions, and a block size
# other than the config's), `gate all --drafter` runs them after the trunk gates with a report valid
# against manifests/report.schema.json; fewer than 96 steps, a non-exact realization and a missing
# --drafter are usage errors (exit 2).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
m="$src/models/tiny"
d="$src/models/drafters"
for f in tiny-dspark tiny-dflash-trained; do
  expect 0 "\[speculative\] PASS .*tokens_equal=true trunk_bits_equal=true state_bits_equal=true" -- "$bin" -q gate speculative "$m" --drafter "$d/$f"
  expect 0 "\[drafter-restore\] PASS .*format=1.1.*captures_equal=true continuation_equal=true" -- "$bin" -q gate drafter-restore "$m" --drafter "$d/$f"
done
expect 0 "\[speculative\] PASS family=dspark harvest=dflash block=5" -- "$bin" -q gate speculative "$m" --drafter "$d/tiny-dspark" --harvest dflash --block-size 5 --runs 1
expect 0 "\[drafter-restore\] PASS family=dflash block=3" -- "$bin" -q gate drafter-restore "$m" --drafter "$d/tiny-dflash-trained" --block-size 3 --prompt 20
"$bin" -q gate all "$m" --drafter "$d/tiny-dflash-trained" --json > "$work/all.json"
expect 0 "speculative drafter-restore PASS" -- python3 -c "
import json; j=json.load(open('$work/all.json')); n=[g['name'] for g in j['gates']]
print(' '.join(n[-2:]), j['result'])"
expect 0 "valid" -- "$py" "$src/tools/validate_report.py" "$work/all.json"
expect 2 "too small; give an integer in \[96" -- "$bin" -q gate speculative "$m" --drafter "$d/tiny-dspark" --steps 50
expect 2 "exact realization" -- "$bin" -q gate drafter-restore "$m" --drafter "$d/tiny-dspark" --backend cpu-fast
expect 2 "drafter is required" -- "$bin" -q gate speculative "$m"
exit $fail
