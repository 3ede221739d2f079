# Run 47: the one-row MoE with h staged in shared memory (two w2 rows per warp); A/B against the grouped launches.
set -uo pipefail
python3 -c "
import lzma,shutil
for f in ('bin/libmemra_cuda.so','bin/memra','bin/memra_cuda_test','planted/libmemra_cuda.so'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{f}.xz'), open(f'build-gpu-pack/{f}','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null); CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in moe packed attention mhc; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|fused == per" | cut -c1-200; done; el
  echo "--- planted library (one-row MoE down tiles without their wait):"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only moe --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | head -8; el
  for x in tiny tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -3; done; el
} > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1 lib=$2; shift 2; env "$@" MEMRA_CUDA_LIB=$P/$lib/libmemra_cuda.so timeout 60 $m bench $B > /tmp/$name.json 2>>$OUT/bench.log; summ /tmp/$name.json $name; }
{ for i in 1 2 3; do run onerow$i bin X=1; run grouped$i bin MEMRA_CUDA_MOE_ONE_ROW=0; done
  for i in 1 2; do run c8_onerow$i bin MEMRA_CUDA_ATTN_CLUSTER=8; run c8_grouped$i bin MEMRA_CUDA_ATTN_CLUSTER=8 MEMRA_CUDA_MOE_ONE_ROW=0; done
  run off bin MEMRA_CUDA_ATTN_CLUSTER=0 MEMRA_CUDA_MOE_ONE_ROW=0; el
} > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
for v in onerow grouped; do e=X=1; [[ $v == grouped ]] && e="MEMRA_CUDA_MOE_ONE_ROW=0"
  env $e timeout 60 $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > /tmp/tl_$v.json 2>>$OUT/bench.log; done
tar czf $OUT/json.tar.gz -C /tmp tl_onerow.json tl_grouped.json onerow1.json grouped1.json
python3 - /tmp/tl_grouped.json /tmp/tl_onerow.json <<'PY' > $OUT/timeline.txt
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
for k in sorted(set(o)|set(n), key=lambda k:-max(o.get(k,0),n.get(k,0)))[:24]: print(f"{k:44s} {o.get(k,0)*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
cat $OUT/timeline.txt
S="--section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis"
timeout 100 $NCU --clock-control none -k regex:"moe_one_row" --launch-skip 2 --launch-count 2 $S $m bench --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --steps 4 --reps 1 > /tmp/ncu.txt 2>&1
grep -E "moe_|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Warp Cycles Per Issued|Grid Size|==PROF==|==ERROR==" /tmp/ncu.txt | cut -c1-150 > $OUT/ncu.txt; el >> $OUT/ncu.txt; cat $OUT/ncu.txt
{ timeout 90 $CS --tool memcheck $t ops --only moe --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks|FAIL" | tail -3; el; } > $OUT/sanitizer.txt 2>&1; cat $OUT/sanitizer.txt
