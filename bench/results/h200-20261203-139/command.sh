# Run 139: the review mend of session 36 (test/cuda/ops_test.cpp: place_keys shared by attention_case
# and the misaligned-rows check): ops attention, and ops attention again at another seed.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for s in 139 1390; do timeout 90 $t ops --only attention --seed $s 2>&1 | grep -E "^FAIL|off 16|checks" | cut -c1-200 | sed "s/^/seed $s: /"; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
