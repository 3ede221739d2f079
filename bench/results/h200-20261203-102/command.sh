# Run 102 (branch probe-run101): where the attention's and hc_pre's dependents launch. Run 101's
# phase probes showed one memory round trip inside the attention taking 1-2.4 us; the kernel after it
# (wo_a) is launched at the attention's start (PDL) and its resident blocks preload weights. Arms:
# the attention's launch_dependents at start (def) / after the logits (a1) / after the softmax (a2) /
# at its end (a3); hc_pre's before the norm (h1) / at its end (h2). Graph marks + probes per arm, then
# the A/B (two passes).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
$m --version | head -1
for arm in def a1 a2 a3 h1 h2; do
  case $arm in def) e=MEMRA_AB=def;; a*) e=MEMRA_PROBE_ATTN_TRIGGER=${arm#a};; h*) e=MEMRA_PROBE_HC_TRIGGER=${arm#h};; esac
  env $e timeout 100 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 2 --graph-marks > $OUT/marks-$arm.json 2> $OUT/marks-$arm.err
  echo "== $arm rc=$?"; python3 bench/phase_probe.py $OUT/marks-$arm.json | grep -E "^decode|attention|hc_pre_attn" | head -8
done > $OUT/probes.txt 2>&1; cat $OUT/probes.txt | cut -c1-260
bash bench/ab_arms.sh --passes 2 $m /tmp/ab "--contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3" \
  def='' a1='MEMRA_PROBE_ATTN_TRIGGER=1' a2='MEMRA_PROBE_ATTN_TRIGGER=2' a3='MEMRA_PROBE_ATTN_TRIGGER=3' h1='MEMRA_PROBE_HC_TRIGGER=1' h2='MEMRA_PROBE_HC_TRIGGER=2' > $OUT/ab.txt 2>&1
tail -40 $OUT/ab.txt
