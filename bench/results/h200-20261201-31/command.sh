set -uo pipefail
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ $t ops --only attention --seed $seed 2>&1 | grep -E "indexer|checks"
  $t ops --only mhc --seed $seed 2>&1 | grep -E "hc_pre n=4|checks"
  echo "--- planted (indexer: entries of a warp swapped in pairs; hc_mix: rows swapped in pairs):"
  python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('build-gpu-pack/planted/libmemra_cuda.so.xz'), open('build-gpu-pack/planted/libmemra_cuda.so','wb'))"
  LD_LIBRARY_PATH=build-gpu-pack/planted:build-gpu-pack/bin $t ops --only attention --seed $seed 2>&1 | grep -E "FAIL|checks" | head -4
  LD_LIBRARY_PATH=build-gpu-pack/planted:build-gpu-pack/bin $t ops --only mhc --seed $seed 2>&1 | grep -E "FAIL|checks" | head -4
  for g in linear norm topk compressor moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  for x in tiny tiny-bf16 tiny-fp8; do $t backend models/$x 2>&1 | tail -1; done
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt
$m bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --timeline > $OUT/timeline.json 2>$OUT/bench.log
python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print('decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], 'prefill', round(b['prefill']['tokens_per_s']), b.get('failures'))" $OUT/timeline.json
python3 bench/timeline.py $OUT/timeline.json --top 40 > $OUT/timeline.md; grep -E "^###|indexer_scores|hc_pre" $OUT/timeline.md | head -40
