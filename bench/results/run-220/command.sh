# Run 220 (an H200 only: needs_h200, because transformers' batch 32 does not fit an 80 GB card;
# carried: the pack of session 64's final code, with the logits moved out by the head's logits_out
# inside the graph, run 222): the v4 bench of the final code with transformers on the issue's card
# (the last H200 table is run 205's, before sessions 56-64's changes), then the graph marks of
# decode at 2k, batch 8 and verify 6 / 16 (the last H200 marks are run 94's), then run 222's A/B of
# logits_out against the copies on this card, then run 223 (logits_out at larger vocabularies) in
# what is left (keep bench/results/run-223 beside this folder in the call).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
[[ $gpu == *H200* ]] || { echo "not an H200: nothing run"; exit 0; }
v4_bench 40
marks_bench
if [[ $(left) -gt 60 ]]; then
  AB_ARGS="bench --json --contexts 2048 --batches 8 --verify 6,16 --steps 8 --snapshot-gib 0.05 --prefill 64 --reps 5" \
    ab_linear 3 base='' copies='MEMRA_CUDA_LOGITS_OUT=0'
fi
if [[ $(left) -gt 150 && -f bench/results/run-223/command.sh ]]; then
  LIMIT=$(( $(left) - 10 )) bash bench/results/run-223/command.sh
fi
