set -uo pipefail
python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ for g in moe packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  for x in tiny tiny-bf16 tiny-fp8; do $t backend models/$x 2>&1 | tail -1; done
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-200
B="--json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
$m bench $B > $OUT/on.json 2>$OUT/bench.log; summ $OUT/on.json shared-x
MEMRA_CUDA_MOE_SHARED_X=0 $m bench $B > $OUT/off.json 2>>$OUT/bench.log; summ $OUT/off.json off
$m bench $B > $OUT/on2.json 2>>$OUT/bench.log; summ $OUT/on2.json shared-x
