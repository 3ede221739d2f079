# Run 48: topk + indexer EPW A/B (old = 6fda6b5^'s topk.cu/indexer.cu), then the whole gpu-check on 60aac52.
set -uo pipefail
python3 -c "
import lzma,shutil
for f in ('bin/libmemra_cuda.so','bin/memra','bin/memra_cuda_test','planted/libmemra_cuda.so','old/libmemra_cuda.so'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{f}.xz'), open(f'build-gpu-pack/{f}','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in topk attention; do LD_LIBRARY_PATH=$P/bin timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|topk|indexer" | cut -c1-200; done
  echo "--- planted (one count per bin and warp):"; LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only topk --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-200; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
export LD_LIBRARY_PATH=$P/bin
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { MEMRA_CUDA_LIB=$P/$2/libmemra_cuda.so timeout 60 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log; summ /tmp/$1.json $1; }
{ for i in 1 2 3; do run new$i bin; run old$i old; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
for v in bin old; do MEMRA_CUDA_LIB=$P/$v/libmemra_cuda.so timeout 60 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --timeline > /tmp/tl_$v.json 2>>/tmp/bench.log; done
python3 - /tmp/tl_old.json /tmp/tl_bin.json <<'PY' > $OUT/timeline.txt
import json,sys
for c in (0,1):
  o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][c]['timeline']['sites']} for f in sys.argv[1:3]]
  print('context', json.load(open(sys.argv[1]))['decode'][c]['context'], 'old -> new')
  for k in sorted(set(o)|set(n), key=lambda k:-max(o.get(k,0),n.get(k,0)))[:14]: print(f"{k:44s} {o.get(k,0)*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
cat $OUT/timeline.txt
mkdir -p /tmp/gc; OUT=/tmp/gc GPU_CHECK_BUDGET_S=440 bash tools/gpu-check.sh > /tmp/gc/stdout.txt 2>&1
cp /tmp/gc/summary.txt /tmp/gc/bench.tar.gz $OUT/ 2>/dev/null; tar czf $OUT/logs.tar.gz -C /tmp/gc . ; el
cat /tmp/gc/summary.txt
