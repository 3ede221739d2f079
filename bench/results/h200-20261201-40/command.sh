set -uo pipefail
python3 -c "
import lzma,shutil
for d in ('bin','old','planted'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{d}/libmemra_cuda.so.xz'), open(f'build-gpu-pack/{d}/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack
m=$P/bin/memra
export LD_LIBRARY_PATH=$P/bin
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1 lib=$2; MEMRA_CUDA_LIB=$P/$lib/libmemra_cuda.so $m bench $B > $OUT/$name.json 2>>$OUT/bench.log; summ $OUT/$name.json $name; }
run old1 old; run new1 bin; run planted planted; run old2 old; run new2 bin; run old3 old; run new3 bin
for v in old bin; do MEMRA_CUDA_LIB=$P/$v/libmemra_cuda.so $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_$v.json 2>>$OUT/bench.log; done
python3 - $OUT/tl_old.json $OUT/tl_bin.json <<'PY'
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
for k in sorted(o, key=lambda k:-o[k])[:40]:
  if 'hc_' in k or 'norm' in k or 'experts' in k or 'attention' in k: print(f"{k:44s} {o[k]*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
