# Run 152: the tiled indexer kernel after run 151's ncu (its rows' sequence scan ran 32 × 32 times a
# thread: 24% of its instructions; 2 partials a loop trip with their moves): the scan once a row,
# 4 partials a trip (a V(8, ·) subtree). ops attention on the new library and on one with the tree's
# subtrees taken in c order (planted), an A/B of the prefill against the warp kernels in the same
# binary (MEMRA_CUDA_INDEXER_TILED=0), a timeline, ncu of the tiled kernel in full.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm planted
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 152 > /tmp/ops.txt 2>&1; echo "ops attention rc=$?" >> /tmp/ops.txt
  grep -E "^FAIL|checks|rc=|indexer" /tmp/ops.txt | cut -c1-230 | sed "s/^/new: /"
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only attention --seed 152 > /tmp/ops-planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/ops-planted.txt | cut -c1-230 | sed "s/^/planted: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops attention rc=0" /tmp/ops.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' warp='MEMRA_CUDA_INDEXER_TILED=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -8; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -12; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
BB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json"
k=indexer_scores_tiled
timeout 100 $NCU --clock-control none --kernel-name-base demangled -k regex:$k --launch-count 1 --set full --import-source no -o /tmp/x/$k $m bench --layers C ${BB#bench } > /dev/null 2>&1
$NCU -i /tmp/x/$k.ncu-rep --page details > /tmp/x/$k-details.txt 2>&1
$NCU -i /tmp/x/$k.ncu-rep --page source --csv --print-source sass > /tmp/x/$k-source.csv 2>&1; rm -f /tmp/x/$k.ncu-rep
grep -E "Duration|Registers Per|Executed Ipc A|Issue Slots|No Eligible|Achieved Occ" /tmp/x/$k-details.txt | head -8
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
