# Run 148: the review mend (7c31e59: convert_rows and swiglu_convert through one bf16/f16 dispatch)
# under ops moe and attention on the final build, then one prefill A/B-free bench line.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
for g in moe attention; do timeout 120 $t ops --only $g --seed 148 2>&1 | grep -E "^FAIL|checks|swiglu_convert|row moves" | cut -c1-160 | sed "s/^/$g: /"; done; el
timeout 60 $m bench --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5 2>&1 | grep -E "prefill|decode batch 1" | head -4; el
