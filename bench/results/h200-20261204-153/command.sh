# Run 153: two register budgets tried (library `v2`): the tiled indexer at 2 blocks an SM (128
# registers, 2 lane partials a trip, the heads' queries loaded at each stage; ptxas spills 148 bytes)
# and hc_mix_rows4 at 3 blocks an SM (80 registers, its weights loaded after the staging; 44 bytes
# spilled). ops mhc + attention on v2; an A/B of the prefill (new = bbb433e's library); timelines.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm v2
{ for g in mhc attention; do LD_LIBRARY_PATH=/tmp/v2/bin timeout 150 $t ops --only $g --seed 153; echo "v2 ops $g rc=$?"; done > /tmp/ops.txt 2>&1
  grep -E "^FAIL|checks|rc=" /tmp/ops.txt | cut -c1-200; el; } > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(new='' v2='bin=/tmp/v2/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -8; el
mkdir -p /tmp/x
for arm in new v2; do
  bin=$m; [ $arm = v2 ] && bin=/tmp/v2/bin/memra
  LD_LIBRARY_PATH=$([ $arm = v2 ] && echo /tmp/v2/bin || echo $P/bin) timeout 60 $bin bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline-$arm.json 2> /dev/null
  python3 bench/timeline.py /tmp/x/timeline-$arm.json --top 40 > $OUT/timeline-$arm.txt 2>&1
  echo "== $arm"; grep -E "^### prefill|indexer_scores|hc_pre" $OUT/timeline-$arm.txt | head -7
done; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .
