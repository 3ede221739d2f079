# Run 54: the indexer's decode rows past 4096 entries with 2 entries per warp (MEMRA_CUDA_INDEXER_EPW=2,
# twice the warps; ncu run 53: the 4-entry kernel at 24% achieved occupancy, 0.31 issued per
# scheduler) against 4, in one library; the same bits (logits hash).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; timeout 60 $t ops --only attention --seed $seed 2>&1 | grep -E "FAIL|checks|indexer"; el; } > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d['ratio_to_floor'],3) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], b.get('failures'))" $1 $2; }
run() { env $2 timeout 90 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log; summ /tmp/$1.json $1; }
{ for i in 1 2 3; do run epw2_$i MEMRA_CUDA_INDEXER_EPW=2; run epw4_$i MEMRA_CUDA_INDEXER_EPW=4; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
for v in 4 2; do MEMRA_CUDA_INDEXER_EPW=$v timeout 90 $m bench --json --contexts 32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --timeline > /tmp/tl$v.json 2>>/tmp/bench.log; done
python3 - /tmp/tl4.json /tmp/tl2.json <<'PY' > $OUT/timeline.txt
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
print('decode b1 @ 32768, indexer 4 -> 2 entries per warp')
for k in sorted(set(o)|set(n), key=lambda k:-max(o.get(k,0),n.get(k,0)))[:8]: print(f"{k:44s} {o.get(k,0)*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
cat $OUT/timeline.txt; el
