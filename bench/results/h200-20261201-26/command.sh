set -uo pipefail
export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
t=build-gpu-pack/bin/memra_cuda_test; m=build-gpu-pack/bin/memra
seed=$(date +%s)
{ for g in linear norm mhc topk compressor attention moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -2; done
  for x in tiny tiny-bf16 tiny-fp8; do $t backend models/$x 2>&1 | tail -2; done
  for pair in tiny:tiny-dspark-trained tiny-trained:tiny-trained-dspark tiny-trained:tiny-trained-dflash; do
    $m -q gate speculative models/${pair%%:*} --drafter models/drafters/${pair#*:} --tokens models/prompt.txt --backend cuda 2>&1 | tail -1; done
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt
python3 -c "import random; r=random.Random(1000); print(' '.join(str(r.randrange(2,512)) for _ in range(16)))" > /tmp/p0.txt
for b in 4 8 16; do for d in tiny-trained-dspark tiny-trained-dflash; do
  $m -q draft models/tiny-trained --drafter models/drafters/$d --tokens /tmp/p0.txt --steps 96 --block-size $b --runs 3 --ignore-eos --backend cuda --json > /tmp/r.json 2>>$OUT/draft.log
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('$d block $b', 'identical', j['identical_to_greedy'], 'tau %.2f spec %.0f plain %.0f x%.2f' % (j['tau'], j['speculative_tokens_per_s'], j['greedy_tokens_per_s'], j['speculative_tokens_per_s']/j['greedy_tokens_per_s']))"
done; done | tee $OUT/spec.txt
$m bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --timeline > $OUT/bench.json 2>$OUT/bench.log
python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print('decode', [d['ms_per_layer_token'] for d in b['decode']], 'batch', [x['tokens_per_s'] for x in b['batch']], 'verify', [v['ms'] for v in b['verify']], 'prefill', b['prefill']['tokens_per_s'], b.get('failures'))" $OUT/bench.json
python3 bench/timeline.py $OUT/bench.json --top 14 > $OUT/timeline.md; grep -E "^###|attention" $OUT/timeline.md
