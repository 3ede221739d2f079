set -uo pipefail
python3 -c "
import lzma,shutil
for d in ('bin','planted'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{d}/libmemra_cuda.so.xz'), open(f'build-gpu-pack/{d}/libmemra_cuda.so','wb'))"
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ $t ops --only moe --seed $seed 2>&1 | grep -E "row moves|batched|checks"
  echo "--- planted (vector row copy drops its last vector; conversion swaps two values):"
  LD_LIBRARY_PATH=build-gpu-pack/planted:build-gpu-pack/bin $t ops --only moe --seed $seed 2>&1 | grep -E "FAIL|checks" | head -6
  for g in linear packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | tail -1; done
  $m -q gate all models/tiny-bf16 --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-200
$m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --timeline > $OUT/timeline.json 2>$OUT/bench.log
python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print('prefill', round(b['prefill']['tokens_per_s']), b.get('failures'))" $OUT/timeline.json
$m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 > $OUT/plain.json 2>>$OUT/bench.log
python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print('prefill (no timeline)', round(b['prefill']['tokens_per_s']))" $OUT/plain.json
python3 bench/timeline.py $OUT/timeline.json --top 40 > $OUT/timeline.md; sed -n '/prefill/,/^$/p' $OUT/timeline.md | grep -E "###|rows"
