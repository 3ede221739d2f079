# draw_oracle_case DRAWN MAKE: runs the function MAKE, which builds the oracle case for $seed. When it
# returns 3 (dump_reference.py's NEAR_TIE_EXIT: transformers' own float32 one-shot and incremental
# forwards part at a near-tie decision for this seed, and agree in float64, so the case cannot judge
# memra) and the seed was drawn (DRAWN=1), it says so and draws the next one (seed + 1), at most
# three times; a seed the user gave (DRAWN=0) is kept. Returns MAKE's last status; $seed is the one
# the case was made from.
draw_oracle_case() {
  local drawn=$1 make=$2 tries=0 rc
  while :; do
    "$make"
    rc=$?
    if [[ $rc -ne 3 || $drawn -ne 1 || $tries -ge 3 ]]; then return $rc; fi
    echo "seed $seed: transformers' float32 forwards part at a near tie (float64 agrees): not a case to judge memra by; drawing seed $((seed + 1))"
    seed=$((seed + 1))
    tries=$((tries + 1))
  done
}
