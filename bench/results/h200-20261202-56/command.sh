# Run 56: the review mend (the one-row MoE's occupancy through device_caps' resident_blocks, plain
# one-row linears without the unused kernel instance): every ops group, backend on four fixtures,
# gate all, and the bench's logits hashes at 2k/32k (must equal run 49's).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
seed=$(date +%s)
{ $m --version | head -1
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 60 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-200; done
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks|PDL" | cut -c1-200; done
  for x in tiny tiny-fp8; do timeout 60 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  timeout 90 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 2 > /tmp/b.json 2>/tmp/b.log
  python3 -c "import json; b=json.load(open('/tmp/b.json')); print('decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], [d['graph_programmatic_edges'] for d in b['decode']], b.get('failures'))"
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
