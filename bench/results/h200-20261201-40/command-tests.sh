set -uo pipefail
python3 -c "
import lzma,shutil
for d in ('bin','old','planted'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{d}/libmemra_cuda.so.xz'), open(f'build-gpu-pack/{d}/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack
t=$P/bin/memra_cuda_test; m=$P/bin/memra
seed=$(date +%s)
{ for g in linear norm mhc topk compressor attention moe synthetic packed; do LD_LIBRARY_PATH=$P/bin $t ops --only $g --seed $seed 2>&1 | tail -1; done
  LD_LIBRARY_PATH=$P/bin $t ops --only norm --seed $seed 2>&1 | grep -E "width 4" 
  LD_LIBRARY_PATH=$P/bin $t ops --only mhc --seed $seed 2>&1 | grep -E "D=4096"
  echo "--- planted (collapse chain j descending):"
  LD_LIBRARY_PATH=$P/planted:$P/bin $t ops --only mhc --seed $seed 2>&1 | grep -E "FAIL|checks" | head -4
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do LD_LIBRARY_PATH=$P/bin $t backend models/$x 2>&1 | tail -1; done
  LD_LIBRARY_PATH=$P/bin $m -q gate all models/tiny --backend cuda 2>&1 | tail -1; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-200
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1 lib=$2; LD_LIBRARY_PATH=$P/$lib:$P/bin $m bench $B > $OUT/$name.json 2>>$OUT/bench.log; summ $OUT/$name.json $name; }
run old1 old; run new1 bin; run planted planted; run old2 old; run new2 bin; run old3 old; run new3 bin
LD_LIBRARY_PATH=$P/bin $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_new.json 2>>$OUT/bench.log
LD_LIBRARY_PATH=$P/old:$P/bin $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_old.json 2>>$OUT/bench.log
python3 - $OUT/tl_old.json $OUT/tl_new.json <<'PY'
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
for k in sorted(o, key=lambda k:-o[k])[:24]: print(f"{k:44s} {o[k]*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
