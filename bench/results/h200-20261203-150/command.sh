# Run 150: the HCA close split by channels over blocks (compressor_pool + compressor_finish, form 2)
# and hc_post / hc_post_moe four elements a thread for many-row rounds (hc_post_rows_kernel). ops
# compressor + mhc on the new library and on one with both planted (a store to the neighbour lane's
# channel; two output elements swapped), an A/B of the prefill against the old forms in the same
# binary (MEMRA_CUDA_CLOSE_FORM=3 MEMRA_CUDA_HC_POST_ROWS=0), a timeline, ncu of the prefill's mHC,
# indexer and compressor kernels (sections), and of hc_mix_rows / indexer_scores_wide (full, SASS).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm planted
{ $m --version | head -1
  { timeout 100 $t ops --only compressor --seed 150 && timeout 100 $t ops --only mhc --seed 150; } > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|compressor|forms 2" /tmp/ops.txt | cut -c1-220 | sed "s/^/new: /"; cat /tmp/ops.rc
  for g in compressor mhc; do LD_LIBRARY_PATH=/tmp/planted/bin timeout 100 $t ops --only $g --seed 150; echo "planted ops $g rc=$?"; done > /tmp/ops-planted.txt 2>&1
  grep "rc=" /tmp/ops-planted.txt
  grep -E "^FAIL|checks" /tmp/ops-planted.txt | cut -c1-220 | sed "s/^/planted: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' old='MEMRA_CUDA_CLOSE_FORM=3 MEMRA_CUDA_HC_POST_ROWS=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -14; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -44; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats"
BB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json"
timeout 150 $NCU --clock-control none --kernel-name-base demangled -k 'regex:hc_rms|hc_mix_rows|hc_pre_norm|hc_post_rows|compressor_pool|compressor_finish|indexer_scores_wide' \
  --launch-count 16 $S $m $BB > $OUT/ncu.txt 2>&1; echo "ncu rc=$?"
grep -E "^  [a-z].*\(|Duration|Registers Per|Achieved Occ|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued" $OUT/ncu.txt | sed 's/memra::cuda::<unnamed>:://' | cut -c1-110 | head -100; el
for k in hc_mix_rows indexer_scores_wide; do
  timeout 100 $NCU --clock-control none --kernel-name-base demangled -k regex:$k --launch-count 1 --set full --import-source no -o $OUT/$k $m bench --layers C ${BB#bench } > /dev/null 2>&1
  $NCU -i $OUT/$k.ncu-rep --page details > $OUT/$k-details.txt 2>&1
  $NCU -i $OUT/$k.ncu-rep --page source --csv --print-source sass > $OUT/$k-source.csv 2>&1; xz -T4 $OUT/$k-source.csv; rm -f $OUT/$k.ncu-rep
  grep -E "Duration|Registers Per|Executed Ipc A|Issue Slots|No Eligible|Achieved Occ" $OUT/$k-details.txt | head -8; el
done
