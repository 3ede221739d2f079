# Run 91: hc_pre with the sublayer's norm in its own block (HC_NORM), and the grid-barrier ceiling
# beside the launch step. Tests: ops (every group), the planted library (hc_pre's norm without its
# weight) on ops mhc, backend tiny / tiny-bf16. Bench A/B in one binary, three passes: def, hcn0
# (MEMRA_CUDA_HC_NORM=0: session 29's separate norm launches), with the timeline; the ceilings.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 170 $t ops --seed 91 2>&1 | grep -E "FAIL|checks|hc_pre \+ norm" | cut -c1-200
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only mhc --seed 91 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -6
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --timeline"
bash bench/ab_arms.sh --passes 3 --timeout 90 --sites 'hc_pre|norm_rope \((attn|ffn)' $m /tmp/ab "$BA" \
  def='' hcn0='MEMRA_CUDA_HC_NORM=0' > $OUT/ab.txt 2>&1
python3 -c 'import json,sys; [print(f, json.load(open(f))["ceilings"]) for f in sys.argv[1:]]' /tmp/ab/def1.json /tmp/ab/def2.json /tmp/ab/def3.json >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
