set -uo pipefail
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ $t ops --only attention --seed $seed 2>&1 | grep -E "cuda-fast|checks"
  echo "--- planted (pass 2 stages the next key):"
  python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('build-gpu-pack/planted/libmemra_cuda.so.xz'), open('build-gpu-pack/planted/libmemra_cuda.so','wb'))"
  LD_LIBRARY_PATH=build-gpu-pack/planted:build-gpu-pack/bin $t ops --only attention --seed $seed 2>&1 | grep -E "FAIL|checks" | head -6
  for g in linear norm mhc topk compressor moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | grep -E "fast|checks" | head -6; done
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1
  $m -q gate all models/tiny-bf16 --backend cuda 2>&1 | tail -1
  $m -q gate semantics models/tiny-bf16 --backend cuda 2>&1 | tail -2; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d.get('context_fill_seconds_cuda_fast',0),3) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], 'prefill', round(b['prefill']['tokens_per_s']), b['prefill'].get('linears_share_of_bf16_rate'), b.get('failures'))" $1 $2; }
$m bench $B --timeline > $OUT/timeline.json 2>$OUT/bench.log; summ $OUT/timeline.json "timeline"
python3 bench/timeline.py $OUT/timeline.json --top 12 > $OUT/timeline.md; sed -n '/prefill/,/^$/p' $OUT/timeline.md | head -18
