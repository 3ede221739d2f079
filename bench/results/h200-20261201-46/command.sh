# Run 46: session 22's decode-path kernels (cluster attention, one-row MoE, hc_post + combine) on the GPU.
set -uo pipefail
python3 -c "
import lzma,shutil
for f in ('bin/libmemra_cuda.so','bin/memra','bin/memra_cuda_test','planted/libmemra_cuda.so'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{f}.xz'), open(f'build-gpu-pack/{f}','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin
export NCCL_NVLS_ENABLE=0
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null); CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ uname -r; nvidia-smi -L; echo "ncu=$NCU cs=$CS"; $m --version | head -1
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|cluster|hc_post_moe|fused == per" | cut -c1-200; done; el
  echo "--- planted library (cluster chain swapped, combine slots descending, one-row MoE without its wait):"
  for g in mhc attention moe; do LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | head -8; done; el
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -3; done; el
  for x in tiny tiny-fp8; do timeout 90 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done; el
} > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1 lib=$2; shift 2; env "$@" MEMRA_CUDA_LIB=$P/$lib/libmemra_cuda.so timeout 60 $m bench $B > /tmp/$name.json 2>>$OUT/bench.log; summ /tmp/$name.json $name; }
{ for i in 1 2 3; do run new$i bin X=1; run off$i bin MEMRA_CUDA_ATTN_CLUSTER=0 MEMRA_CUDA_MOE_ONE_ROW=0; done
  run nocluster bin MEMRA_CUDA_ATTN_CLUSTER=0; run noonerow bin MEMRA_CUDA_MOE_ONE_ROW=0; run cluster8 bin MEMRA_CUDA_ATTN_CLUSTER=8; run planted planted X=1; el
} > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
for v in new off; do e=X=1; [[ $v == off ]] && e="MEMRA_CUDA_ATTN_CLUSTER=0 MEMRA_CUDA_MOE_ONE_ROW=0"
  env $e timeout 60 $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > /tmp/tl_$v.json 2>>$OUT/bench.log; done
tar czf $OUT/json.tar.gz -C /tmp tl_new.json tl_off.json new1.json off1.json
python3 bench/timeline.py /tmp/tl_new.json --top 40 > $OUT/timeline.txt 2>&1; python3 bench/timeline.py /tmp/tl_off.json --top 40 >> $OUT/timeline.txt 2>&1
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats"
timeout 150 $NCU --clock-control none -k regex:"moe_one_row|attention_cluster|hc_post_moe" --launch-skip 6 --launch-count 6 $S $m bench --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --steps 4 --reps 1 > /tmp/ncu.txt 2>&1
grep -E "moe_one_row|attention_cluster|hc_post_moe|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Grid Size|Dynamic Shared|No Eligible|==PROF==|==ERROR==" /tmp/ncu.txt | cut -c1-150 > $OUT/ncu.txt; el >> $OUT/ncu.txt
{ timeout 120 $CS --tool memcheck $t ops --only attention --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks|FAIL" | tail -3
  timeout 90 $CS --tool memcheck $t ops --only moe --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks|FAIL" | tail -3
  timeout 90 $CS --tool racecheck $t ops --only attention --seed $seed 2>&1 | grep -E "ERROR SUMMARY|hazard|checks|FAIL" | tail -3; el; } > $OUT/sanitizer.txt 2>&1
cat $OUT/timeline.txt | grep -E "###|experts|attention|hc_post|combine" | head -30; cat $OUT/ncu.txt | head -60; cat $OUT/sanitizer.txt
