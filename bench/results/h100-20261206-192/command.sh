# Run 192: the card first. On an H200 (issue 13's card) the streamed one-row linear (0c82609's
# library, arm `stream`, carried as build-gpu-pack/stream) against the final code (arm `new`): run
# 191's loss was on an H100, whose linears already run at its copy rate. On either card, the graph
# marks of the final code's decode at 2k / 32k, batch 8 and verify 6 / 16: what the main chain
# spends site by site. Arms interleaved, two passes.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
BA="bench --json --contexts 2048,32768 --batches 8 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
ARMS=(new='')
if [[ "$gpu" == *H200* ]]; then lib_arm stream && ARMS+=(stream='bin=/tmp/stream/bin'); fi
bash bench/ab_arms.sh --passes 2 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | head -40
tar -czf $OUT/ab-json.tgz -C /tmp ab
python3 bench/graph_marks.py /tmp/ab/new1.json --lines decode,verify,batch --top 40 > $OUT/marks-new.txt 2>&1
grep -E "^(decode|verify|batch)" $OUT/marks-new.txt | head -12
el
