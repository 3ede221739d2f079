set -uo pipefail
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ $t ops --only attention --seed $seed 2>&1 | grep -E "cuda-fast|checks"
  for x in tiny tiny-bf16 tiny-fp4; do $t backend models/$x 2>&1 | grep -E "fast vs cpu|checks" | head -2; done
  $m -q gate all models/tiny-bf16 --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-220
$m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --timeline > $OUT/timeline.json 2>$OUT/bench.log
python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print('prefill', round(b['prefill']['tokens_per_s']), b.get('failures'))" $OUT/timeline.json
python3 bench/timeline.py $OUT/timeline.json --top 6 > $OUT/timeline.md; sed -n '/prefill/,/^$/p' $OUT/timeline.md | head -10
