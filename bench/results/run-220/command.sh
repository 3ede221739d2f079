# Run 220 (an H200 only: needs_h200, because transformers' batch 32 does not fit an 80 GB card;
# carried: 40194dd's pack, with the logits through pinned staging and the phases in every line):
# run 218's branch again (withdrawn into run 219, which an H100 ran): the v4 bench of the final code
# with transformers on the issue's card (the last H200 table is run 205's, before sessions 56-62's
# changes), then the graph marks of decode at 2k, batch 8 and verify 6 / 16 (the last H200 marks are
# run 94's).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
[[ $gpu == *H200* ]] || { echo "not an H200: nothing run"; exit 0; }
v4_bench 40
marks_bench
