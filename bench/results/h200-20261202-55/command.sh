# Run 55: the one-entry indexer kernel's lane loop unrolled by 4 (64 registers again, as before
# pdl_begin): ops (all groups), backend tiny, gate all tiny, and the bench with its timeline at 2k/32k.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 60 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|indexer" | cut -c1-200; done
  for x in tiny tiny-fp8; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks|PDL" | cut -c1-200; done
  timeout 60 $m -q gate all models/tiny --backend cuda 2>&1 | tail -1; el; } > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d['ratio_to_floor'],3) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['ratio_to_floor'],2) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
{ for i in 1 2; do timeout 90 $m bench $B > $OUT/b$i.json 2>>/tmp/bench.log; summ $OUT/b$i.json run$i; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
timeout 90 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --timeline > /tmp/tl.json 2>>/tmp/bench.log
python3 - /tmp/tl.json <<'PY' > $OUT/timeline.txt
import json,sys
b=json.load(open(sys.argv[1]))
for d in b['decode']:
    t={s['site']:s['ms']*1000 for s in d['timeline']['sites']}
    print(d['context'], {k:round(v,1) for k,v in t.items() if 'indexer' in k or 'topk' in k})
for v in b['verify']:
    t={s['site']:s['ms']*1000 for s in v['timeline']['sites']}
    print('verify', v['block'], {k:round(x,1) for k,x in t.items() if 'indexer_scores' in k})
PY
cat $OUT/timeline.txt; el
