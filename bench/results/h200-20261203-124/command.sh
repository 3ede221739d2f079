# Run 124: (1) session 34's review mends, never run on a GPU (ab_switch.h readers, the close's shared
# passes, the norm checks' comparison): every ops group and the backend on tiny-bf16, also with the
# L2 prefetch windows on; (2) A/B, three passes: L2 prefetch windows (MEMRA_CUDA_L2_PREFETCH: 1 beside
# hc_pre (attention): wq_a + wq_b's first bytes, 2 beside the attention: wo_a's, 4 beside hc_pre (ffn):
# router + shared w1/w3; 32 MB a window, and 7 at 48), the shared expert forked after the router,
# the indexer's wide form from 4 rows; graph marks of the default and pf7; (3) ncu source counters of
# route_kernel (ops topk: 7 rows, E = 256), the stall reasons behind its ~10 us.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in linear norm mhc topk compressor attention moe synthetic packed; do
    timeout 90 $t ops --only $g --seed 124 2>&1 | grep -E "^FAIL|checks|l2_prefetch" | cut -c1-200 | tail -3 | sed "s/^/$g: /"; done
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -2 | sed "s/^/backend: /"
  MEMRA_CUDA_L2_PREFETCH=7 timeout 120 $t backend models/tiny-bf16 2>&1 | tail -2 | sed "s/^/backend pf7: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' pf1='MEMRA_CUDA_L2_PREFETCH=1' pf2='MEMRA_CUDA_L2_PREFETCH=2' pf4='MEMRA_CUDA_L2_PREFETCH=4'
      pf7='MEMRA_CUDA_L2_PREFETCH=7' pf7b='MEMRA_CUDA_L2_PREFETCH=7 MEMRA_CUDA_L2_PREFETCH_MB=48'
      sar='MEMRA_CUDA_SHARED_AFTER_ROUTER=1' iw4='MEMRA_CUDA_INDEXER_WIDE_ROWS=4')
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -60; el
for a in def pf7 pf2; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,verify,batch --top 14 | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
grep -E "decode 2048|H:linear_exact \((wq_b|wo_a|wq_a|router)" $OUT/marks.txt | head -40; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 120 $NCU --clock-control none -k regex:route_kernel --launch-count 1 --set full --import-source no -o /tmp/route $t ops --only topk --seed 124 > /tmp/ncu.log 2>&1
echo "ncu rc=$?"; tail -3 /tmp/ncu.log
$NCU --import /tmp/route.ncu-rep --page source --csv --print-source sass > /tmp/route_source.csv 2>&1
$NCU --import /tmp/route.ncu-rep --page details > $OUT/route_details.txt 2>&1
xz -6 -c /tmp/route_source.csv > $OUT/route_source.csv.xz
grep -E "Duration|Registers|Executed Instructions|Warp Cycles Per Issued|Achieved Occ" $OUT/route_details.txt | head; el
