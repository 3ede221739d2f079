# Run 172's two follow-up calls on the same warm machine: command-short.sh's marginal passes had
# asked `--batches 8 32 --verify 6 16` (the options take comma lists: rc 2, "arguments were not
# expected: 16 32"), so the marginal layer again, three passes (3, 4, 5), CH then CHCH each.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh > /dev/null 2>&1
for p in 3 4 5; do for L in CH CHCH; do
  timeout 50 $m bench --layers $L --json --contexts 2048 --batches 8,32 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 3 > $OUT/marginal-$L-$p.json 2> /dev/null
  echo "$L $p rc=$?"; done
  python3 bench/marginal.py $OUT/marginal-CH-$p.json $OUT/marginal-CHCH-$p.json; done
