set -uo pipefail
python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $OUT/env.txt
python3 -c "import ctypes; c=ctypes.CDLL('libcudart.so'); v=ctypes.c_int(); c.cudaDeviceGetAttribute(ctypes.byref(v), 38, 0); print('L2 bytes', v.value)" >> $OUT/env.txt 2>&1
seed=$(date +%s)
{ for g in linear norm mhc topk compressor attention moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  $t ops --only linear --seed $seed 2>&1 | grep -E "l2_prefetch|misalign|unaligned" | head -6
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | tail -1; done
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-220
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1; shift; local s=$(date +%s); env "$@" $m bench $B > $OUT/$name.json 2>>$OUT/bench.log; summ $OUT/$name.json "$name ($(( $(date +%s)-s ))s)"; }
run on MEMRA_X=1
run off MEMRA_CUDA_PREFETCH=0 MEMRA_CUDA_EVICT_FIRST=0
run lines MEMRA_CUDA_PREFETCH=lines
run no_experts MEMRA_CUDA_PREFETCH_EXPERTS=0
run no_evict MEMRA_CUDA_EVICT_FIRST=0
run on2 MEMRA_X=1
run off2 MEMRA_CUDA_PREFETCH=0 MEMRA_CUDA_EVICT_FIRST=0
