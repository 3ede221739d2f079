set -uo pipefail
python3 -c "
import lzma,shutil
for d in ('bin','planted'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{d}/libmemra_cuda.so.xz'), open(f'build-gpu-pack/{d}/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack
t=$P/bin/memra_cuda_test; m=$P/bin/memra
export LD_LIBRARY_PATH=$P/bin
seed=$(date +%s)
{ for g in linear norm mhc topk compressor attention moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  $t ops --only attention --seed $seed 2>&1 | grep -E "70-row|invariance"
  echo "--- planted (split output chain j descending):"
  LD_LIBRARY_PATH=$P/planted:$P/bin $t ops --only attention --seed $seed 2>&1 | grep -E "FAIL|checks" | head -6
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | tail -1; done
  for x in tiny tiny-bf16; do $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  compute-sanitizer --tool memcheck $t ops --only attention --quick 2>&1 | tail -1
  compute-sanitizer --tool racecheck $t ops --only attention --quick 2>&1 | tail -2; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-220
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1; shift; env "$@" $m bench $B > $OUT/$name.json 2>>$OUT/bench.log; summ $OUT/$name.json $name; }
run off1 MEMRA_CUDA_ATTN_SPLIT=0; run split1 X=1; run off2 MEMRA_CUDA_ATTN_SPLIT=0; run split2 X=1; run off3 MEMRA_CUDA_ATTN_SPLIT=0; run split3 X=1
MEMRA_CUDA_LIB=$P/planted/libmemra_cuda.so $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 > $OUT/planted.json 2>>$OUT/bench.log; summ $OUT/planted.json planted
for v in 0 1; do MEMRA_CUDA_ATTN_SPLIT=$v $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_$v.json 2>>$OUT/bench.log; done
python3 - $OUT/tl_0.json $OUT/tl_1.json <<'PY'
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
for k in sorted(set(o)|set(n), key=lambda k:-o.get(k,0)):
  if 'attention' in k and 'hc_' not in k: print(f"decode {k:34s} {o.get(k,0)*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
rm -f $OUT/tl_*.json
