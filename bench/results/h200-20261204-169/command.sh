# Run 169: main's review mend (hc_pre's GEMM mix through run_linear, 79456d6) and branch gpu-pending,
# first time on a GPU: the fast indexer's staging with its loads in flight and the queries' RoPE in
# it, the tensor-core attention at two blocks an SM where that fits (32 heads a block: HCA; 16 heads:
# CSA, behind MEMRA_CUDA_ATTN_HEADS16=1) and its heaviest rows first, the batched experts' gate and
# up GEMMs as one cuBLAS batch a bucket, TF32 conversions in one instruction (cvt.rn: ties to even;
# the arm `rna`, a second library, converts as before), the attention's softmax by ex2.approx, the
# indexer's q in fragment order.
# ops attention / mhc / moe; ops attention against a planted library (the staging's RoPE pairs
# swapped; the two-block forms' pass-1 ring reading four dims off; the 16-head form's head 0 taking
# head 1's sink: their lines must FAIL, the one-block lines PASS) and ops moe against the same
# library (gather_rows16's second uint4 stored from the first: the wide-rows line must FAIL); the
# backend test on tiny-bf16 and tiny-fp8; the chunk-semantics gates; an A/B of the prefill
# (5 passes: new, MEMRA_CUDA_INDEXER_ROPE=0, MEMRA_CUDA_ATTN_TWO_BLOCKS=0, MEMRA_CUDA_ATTN_HEADS16=1,
# MEMRA_CUDA_ATTN_ROWS_DOWN=0 — these five the same bits —, MEMRA_CUDA_EXPERT_GU_ONE_CALL=0 (gate and
# up apart: cuBLAS's algorithm may differ), MEMRA_CUDA_ATTN_EXP2=0 (the softmax through expf: other
# bits), rna (other bits where a value ties); run
# 167's hash 46d1be0f4130 is gu_apart's unless 79456d6's GEMM changed the bits); a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
  for g in attention mhc moe; do timeout 150 $t ops --only $g --seed 169 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=|refused where|rotated in its staging" /tmp/ops-$g.txt | cut -c1-200 | sed "s/^/$g: /"; done; el
  lib_arm planted && for g in attention moe; do LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only $g --seed 169 > /tmp/pl-$g.txt 2>&1
    echo "planted $g rc=$?"; grep -E "^FAIL|checks" /tmp/pl-$g.txt | cut -c1-200 | sed "s/^/planted $g: /"; done; el
  for model in tiny-bf16 tiny-fp8; do timeout 120 $t backend models/$model > /tmp/backend-$model.txt 2>&1
    echo "backend $model rc=$? $(grep -E 'checks' /tmp/backend-$model.txt | tail -1)"; grep -E "^FAIL" /tmp/backend-$model.txt | head -5; done; el
  for model in tiny-bf16 tiny-fp8; do for p in 66 160; do
    timeout 60 $m -q gate semantics models/$model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics $model $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
cp /tmp/ops-*.txt /tmp/pl-*.txt /tmp/backend-*.txt $OUT/ 2>/dev/null
for g in attention mhc moe; do grep -q "ops $g rc=0" /tmp/ops-$g.txt || { echo "ops $g failed: no A/B"; exit 1; }; done
lib_arm rna
ARMS=(new='' rope_apart='MEMRA_CUDA_INDEXER_ROPE=0' one_block='MEMRA_CUDA_ATTN_TWO_BLOCKS=0' gu_apart='MEMRA_CUDA_EXPERT_GU_ONE_CALL=0' heads16='MEMRA_CUDA_ATTN_HEADS16=1' rows_up='MEMRA_CUDA_ATTN_ROWS_DOWN=0' expf='MEMRA_CUDA_ATTN_EXP2=0' rna='bin=/tmp/rna/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
# Each arm's prefill median over the passes and its hashes (the summary lists every pass).
python3 - $OUT/ab.txt <<'PY' | tee $OUT/ab-medians.txt
import re, statistics, sys
rows, on = {}, False
for line in open(sys.argv[1]):
    if not line.startswith(" "): on = line.strip() == "prefill"; continue
    m = re.match(r"\s+(\w+?)_\d+\s+(\d+) tok/s.*hash (\w+)", line)
    if on and m: rows.setdefault(m.group(1), []).append((int(m.group(2)), m.group(3)))
for arm, v in rows.items():
    print(f"{arm:12s} prefill median {statistics.median(x for x, _ in v):8.0f} tok/s  passes {len(v)}  hashes {sorted(set(h for _, h in v))}")
PY
el
mkdir -p /tmp/x; for arm in new one_block heads16; do env $( [ $arm = one_block ] && echo MEMRA_CUDA_ATTN_TWO_BLOCKS=0; [ $arm = heads16 ] && echo MEMRA_CUDA_ATTN_HEADS16=1 ) timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline-$arm.json 2> /dev/null
  python3 bench/timeline.py /tmp/x/timeline-$arm.json --top 60 > /tmp/x/timeline-$arm.txt 2>&1
  echo "== $arm"; sed -n '/prefill/,/^$/p' /tmp/x/timeline-$arm.txt | grep -E "prefill|attention|indexer|rope" | head -12; done; el
cp /tmp/x/timeline-*.txt $OUT/; cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
