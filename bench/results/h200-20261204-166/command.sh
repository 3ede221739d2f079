# Run 166: ops attention and mhc after the review mend (the indexer checks' shared two-sequence round,
# the hc checks' shared unscaled mix: test code only; hc_pre / shard comments).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
for g in attention mhc; do timeout 150 $t ops --only $g --seed 166 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?"
  grep -E "^FAIL|checks|indexer scores (tiled|cuda-fast)|unscaled" /tmp/ops-$g.txt | cut -c1-200; done; el
cat /tmp/ops-attention.txt /tmp/ops-mhc.txt > $OUT/ops.txt
