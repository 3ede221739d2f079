# Run 104 (branch probe-stage-all): why run 103's staged attention was slower. Phase probes of the
# attention with every key slice staged (def) and with the two-chunk ring (sa0), and the ring with the
# attention's preferred carveout at the maximum shared memory (carve: does a carveout change between
# kernels cost what staging lost?). Graph marks + probes per arm, two passes of each.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
$m --version | head -1
for pass in 1 2; do for arm in def sa0 carve; do
  case $arm in def) e=MEMRA_AB=def;; sa0) e=MEMRA_CUDA_ATTN_STAGE_ALL=0;; carve) e="MEMRA_CUDA_ATTN_STAGE_ALL=0 MEMRA_PROBE_CARVEOUT=1";; esac
  env $e timeout 100 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 2 --graph-marks > $OUT/marks-$arm$pass.json 2> $OUT/marks-$arm$pass.err
  echo "== $arm$pass rc=$? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([round(x["ms_per_layer_token"],4) for x in d["decode"]])' $OUT/marks-$arm$pass.json 2>&1)"
  python3 bench/phase_probe.py $OUT/marks-$arm$pass.json | grep -E "^decode|attention" | head -6
done; done > $OUT/probes.txt 2>&1; cat $OUT/probes.txt | cut -c1-220
