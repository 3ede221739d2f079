set -uo pipefail
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ for g in linear norm mhc topk compressor attention moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -2; done
  $t ops --only mhc --seed $seed 2>&1 | grep -E "norm_x" | head -3; $t ops --only linear --seed $seed 2>&1 | grep -E "256x2048|2600"
  echo "--- planted (hc_pre norm_x: the sum of squares by ss + s*s):"
  python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('build-gpu-pack/planted/libmemra_cuda.so.xz'), open('build-gpu-pack/planted/libmemra_cuda.so','wb'))"
  LD_LIBRARY_PATH=build-gpu-pack/planted:build-gpu-pack/bin $t ops --only mhc --seed $seed 2>&1 | grep -E "FAIL|checks" | head -8
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | tail -2; done
  $m -q gate speculative models/tiny-trained --drafter models/drafters/tiny-trained-dspark --tokens models/prompt.txt --backend cuda 2>&1 | tail -1
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1
  $m -q gate all models/tiny-bf16 --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], 'prefill', round(b['prefill']['tokens_per_s']), b.get('failures'))" $1 $2; }
$m bench $B > $OUT/on.json 2>$OUT/bench.log; summ $OUT/on.json "new        "
MEMRA_CUDA_NORM_IN_HC=0 $m bench $B > $OUT/norm-off.json 2>>$OUT/bench.log; summ $OUT/norm-off.json "norm sep   "
MEMRA_CUDA_LINEAR_TILED=0 $m bench $B > $OUT/tiled-off.json 2>>$OUT/bench.log; summ $OUT/tiled-off.json "tiled off  "
$m bench $B --timeline > $OUT/timeline.json 2>>$OUT/bench.log; summ $OUT/timeline.json "timeline   "
python3 bench/timeline.py $OUT/timeline.json --top 40 > $OUT/timeline.md; grep -E "^###|router|wq_a|hc_pre" $OUT/timeline.md
