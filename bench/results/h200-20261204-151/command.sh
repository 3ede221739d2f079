# Run 151: three many-row kernels with the bits they replace: the indexer's scores tiled (each value's
# dot one thread's, the 32 lane partials added in the butterfly's tree: indexer_scores_tiled_kernel),
# hc_pre's mix 4 rows × 3 values a lane side by side (hc_mix_rows4_kernel), and hc_pre for 64+ rows
# as hc_pre_norm_kernel then the Sinkhorn a warp a row (hc_comb_rows_kernel). ops mhc + attention on
# the new library and on one with each planted (the tree's subtrees taken in c order; rows 4-7's
# chains reversed; the Sinkhorn's lanes swapped in pairs), an A/B of the prefill against the old
# forms in the same binary, a timeline, ncu sections of the new kernels, the tiled kernel in full.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm planted
{ $m --version | head -1
  for g in mhc attention; do timeout 150 $t ops --only $g --seed 151; echo "ops $g rc=$?"; done > /tmp/ops.txt 2>&1
  grep -E "^FAIL|checks|rc=|indexer|35-row" /tmp/ops.txt | cut -c1-230 | sed "s/^/new: /"
  for g in mhc attention; do LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only $g --seed 151; echo "planted ops $g rc=$?"; done > /tmp/ops-planted.txt 2>&1
  grep -E "^FAIL|checks|rc=" /tmp/ops-planted.txt | cut -c1-230 | sed "s/^/planted: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops attention rc=0" /tmp/ops.txt && grep -q "ops mhc rc=0" /tmp/ops.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' old='MEMRA_CUDA_INDEXER_TILED=0 MEMRA_CUDA_HC_MIX_ROWS4=0 MEMRA_CUDA_HC_PRE_ROWS=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | head -30; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -30; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats"
BB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json"
timeout 150 $NCU --clock-control none --kernel-name-base demangled -k 'regex:hc_mix_rows4|hc_pre_norm|hc_comb_rows|indexer_scores_tiled' \
  --launch-count 8 $S $m $BB > $OUT/ncu.txt 2>&1; echo "ncu rc=$?"
grep -E "^  [a-z].*\(|Duration|Registers Per|Achieved Occ|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued" $OUT/ncu.txt | sed 's/memra::cuda::<unnamed>:://' | cut -c1-110 | head -60; el
k=indexer_scores_tiled
timeout 100 $NCU --clock-control none --kernel-name-base demangled -k regex:$k --launch-count 1 --set full --import-source no -o /tmp/x/$k $m bench --layers C ${BB#bench } > /dev/null 2>&1
$NCU -i /tmp/x/$k.ncu-rep --page details > /tmp/x/$k-details.txt 2>&1
$NCU -i /tmp/x/$k.ncu-rep --page source --csv --print-source sass > /tmp/x/$k-source.csv 2>&1; rm -f /tmp/x/$k.ncu-rep
grep -E "Duration|Registers Per|Executed Ipc A|Issue Slots|No Eligible|Achieved Occ|Shared Memory|Bank" /tmp/x/$k-details.txt | head -14
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
