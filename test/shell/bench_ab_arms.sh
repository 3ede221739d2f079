#!/usr/bin/env bash
# shell.bench_ab_arms: bench/ab_arms.sh runs `memra bench` once per arm and pass, passes interleaved,
# each arm under its own settings (VAR=value words; bin=DIR for another build), and prints
# ab_summary.py's lines; a malformed arm or option, or a memra that is not there, is a one-line error
# with exit 2. (The real runs need a GPU; this drives the script with a stand-in memra.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
arms="$src/bench/ab_arms.sh"
need python3
mkdir -p "$work/a" "$work/b"
for d in a b; do  # a stand-in memra: its tokens/s comes from FAKE_TOKS (arm a) or is 7000 (build b)
  cat > "$work/$d/memra" <<SH
#!/usr/bin/env bash
echo "\$(date +%s%N) \$FAKE_ARM" >> "$work/order"
toks=\${FAKE_TOKS:-$([[ $d == a ]] && echo 6000 || echo 7000)}
echo '{"batch": [{"batch": 32, "tokens_per_s": '\$toks', "ratio_to_floor": 1.5, "last_sequence_bits_equal_alone": true}], "args": "'"\$*"'"}'
SH
  chmod +x "$work/$d/memra"
done
expect 0 '  new_1          6000 tok/s 1.500x alone-bits True' -- bash "$arms" "$work/a/memra" "$work/out" 'bench --json' new='FAKE_ARM=new' fast='FAKE_ARM=fast FAKE_TOKS=6500' other="FAKE_ARM=other bin=$work/b"
expect 0 '  fast_2         6500 tok/s 1.500x alone-bits True' -- bash "$arms" "$work/a/memra" "$work/out" 'bench --json' new='FAKE_ARM=new' fast='FAKE_ARM=fast FAKE_TOKS=6500' other="FAKE_ARM=other bin=$work/b"
expect 0 '  other_1        7000 tok/s' -- bash "$arms" "$work/a/memra" "$work/out" 'bench --json' new='FAKE_ARM=new' fast='FAKE_ARM=fast FAKE_TOKS=6500' other="FAKE_ARM=other bin=$work/b"
grep -q '"args": "bench --json"' "$work/out/new1.json" || { echo "FAIL: the bench arguments did not reach memra"; fail=1; }
rm -f "$work/order"
bash "$arms" --passes 2 "$work/a/memra" "$work/out" 'bench' x='FAKE_ARM=x' y='FAKE_ARM=y' > /dev/null
[[ "$(awk '{print $2}' "$work/order" | tr '\n' ' ')" == "x y x y " ]] || { echo "FAIL: passes not interleaved: $(cat "$work/order")"; fail=1; }
expect 2 "ab_arms.sh: error: 'new' is not ARM=SETTINGS" -- bash "$arms" "$work/a/memra" "$work/out" 'bench' new
expect 2 "ab_arms.sh: error: arm new: 'PDL' is not VAR=value" -- bash "$arms" "$work/a/memra" "$work/out" 'bench' new='PDL'
expect 2 'ab_arms.sh: error: --passes takes a positive count' -- bash "$arms" --passes 0 "$work/a/memra" "$work/out" 'bench' new=''
expect 2 'is not an executable memra' -- bash "$arms" "$work/missing" "$work/out" 'bench' new=''
expect 2 'ab_arms.sh: error: usage' -- bash "$arms" "$work/a/memra" "$work/out"
exit $fail
