#!/usr/bin/env bash
# shell.state_cli: hashed state files end to end through the CLI on models/tiny: prefill -o,
# snapshot (list, --verify, --json, manifests, --diff), restore into a larger capacity continuing
# bit-identically to an uninterrupted run, chunk-width-identical files, and every refusal with its
# exit code (corrupt, truncated, other model, malformed manifest; capacity below the position and a
# --logits name without .npy/.safetensors are usage errors, exit 2).
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail

bin="${MEMRA_BIN:-memra}"
src="${MEMRA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
model="$src/models/tiny"
other="$src/models/tiny-bf16"
[[ -f "$model/config.json" && -f "$other/config.json" ]] || { echo "skip: models/tiny or models/tiny-bf16 missing"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/state_cli.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_rc() {  # expect_rc WANT DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" > "$work/out" 2> "$work/err"; local rc=$?
  if [[ $rc -eq $want ]]; then echo "ok: $what (rc $rc)"; else fail "$what: rc $rc, expected $want"; cat "$work/out" "$work/err"; fi
}

seq 3 7 1000 | head -116 | awk '{print $1 % 512}' > "$work/all.txt"
head -66 "$work/all.txt" > "$work/a.txt"
tail -50 "$work/all.txt" > "$work/b.txt"

expect_rc 0 "prefill 66 -o A" -- "$bin" prefill "$model" --tokens "$work/a.txt" -o "$work/A.safetensors"
expect_rc 0 "snapshot lists A" -- "$bin" snapshot "$work/A.safetensors"
grep -q "memra.state 1.0" "$work/out" && grep -q "layers.1.csa.cmp" "$work/out" && grep -q "position     66" "$work/out" \
  || fail "listing lacks format, class or position"
expect_rc 0 "snapshot --json" -- "$bin" snapshot "$work/A.safetensors" --json
grep -q '"format": "memra.state"' "$work/out" || fail "--json lacks the format"
expect_rc 0 "snapshot --verify" -- "$bin" snapshot --verify "$work/A.safetensors"

# Manifests: write, check, a changed hash (exit 1), a malformed one (exit 2).
expect_rc 0 "write manifest" -- "$bin" snapshot "$work/A.safetensors" --write-manifest "$work/A.xxh"
[[ $(tail -1 "$work/A.xxh") == xxh3-128*state ]] || fail "manifest does not end with the state line"
expect_rc 0 "check own manifest" -- "$bin" snapshot "$work/A.safetensors" --check "$work/A.xxh"
awk 'NR == 1 { $2 = "00000000000000000000000000000000" } { print $1 "  " $2 "  " $3 }' "$work/A.xxh" > "$work/bad.xxh"
expect_rc 1 "check changed manifest" -- "$bin" snapshot "$work/A.safetensors" --check "$work/bad.xxh"
grep -q MISMATCH "$work/out" || fail "changed manifest not reported as MISMATCH"
echo "xxh3-128 zz layers.0.window" > "$work/malformed.xxh"
expect_rc 2 "check malformed manifest" -- "$bin" snapshot "$work/A.safetensors" --check "$work/malformed.xxh"

# Corruption: a payload flip names the class; truncation and a header flip are refused.
cp "$work/A.safetensors" "$work/C.safetensors"
size=$(stat -c %s "$work/C.safetensors")
printf '\x55' | dd of="$work/C.safetensors" bs=1 seek=$((size - 3)) conv=notrunc status=none
expect_rc 1 "verify payload flip" -- "$bin" snapshot --verify "$work/C.safetensors"
grep -q "class last_logits hash mismatch" "$work/err" || fail "payload flip does not name last_logits"
expect_rc 1 "restore corrupt state" -- "$bin" restore "$work/C.safetensors" --model "$model"
head -c $((size - 1)) "$work/A.safetensors" > "$work/T.safetensors"
expect_rc 1 "list truncated state" -- "$bin" snapshot "$work/T.safetensors"
cp "$work/A.safetensors" "$work/H.safetensors"
printf '7' | dd of="$work/H.safetensors" bs=1 seek=$(( $(grep -abo '"position":"66"' "$work/A.safetensors" | cut -d: -f1) + 13 )) conv=notrunc status=none
expect_rc 1 "list state with edited position" -- "$bin" snapshot "$work/H.safetensors"
grep -q "metadata hash mismatch" "$work/err" || fail "edited metadata not reported as a metadata hash mismatch"

# Restore: refusals.
expect_rc 1 "restore into another model" -- "$bin" restore "$work/A.safetensors" --model "$other"
grep -q "belongs to model" "$work/err" || fail "other model refusal does not say so"
expect_rc 2 "restore below the position (a usage error)" -- "$bin" restore "$work/A.safetensors" --model "$model" --capacity 10
grep -q "memra: error: --capacity 10 cannot hold position 66" "$work/err" || fail "capacity below the position not named"
grep -q "memra: hint: use --capacity 66 or more" "$work/err" || fail "capacity hint missing"
expect_rc 2 "prefill --logits with an unknown extension" -- "$bin" prefill "$model" --tokens "$work/b.txt" --logits "$work/logits.txt"
grep -q "must end in .npy or .safetensors" "$work/err" || fail "--logits a.txt not refused with a clear message"
[[ ! -e "$work/logits.txt" ]] || fail "--logits a.txt was written"
expect_rc 2 "restore --logits with an unknown extension" -- "$bin" restore "$work/A.safetensors" --model "$model" --steps 1 --logits "$work/logits.txt"
[[ ! -e "$work/logits.txt" ]] || fail "restore --logits a.txt was written"

# Round trip: restore +97 capacity, 50 forced tokens == one uninterrupted run (logits and state bytes).
expect_rc 0 "restore +97, force 50" -- "$bin" restore "$work/A.safetensors" --model "$model" --capacity 163 \
  --tokens "$work/b.txt" --logits "$work/cont.npy" -o "$work/R.safetensors"
expect_rc 0 "uninterrupted 116" -- "$bin" prefill "$model" --tokens "$work/all.txt" --capacity 163 \
  --logits "$work/full.npy" -o "$work/U.safetensors"
cmp -s "$work/R.safetensors" "$work/U.safetensors" && echo "ok: restored and uninterrupted state files are the same bytes" \
  || fail "restored state file differs from the uninterrupted one"
n=$((50 * 512 * 4))
cmp -s <(tail -c $n "$work/cont.npy") <(tail -c $n "$work/full.npy") && echo "ok: 50 continued logits rows bit-identical" \
  || fail "continued logits differ from the uninterrupted run"
expect_rc 0 "diff restored vs uninterrupted" -- "$bin" snapshot "$work/R.safetensors" --diff "$work/U.safetensors"
expect_rc 0 "restore at exactly the needed capacity" -- "$bin" restore "$work/A.safetensors" --model "$model" \
  --capacity 116 --tokens "$work/b.txt" --steps 0
expect_rc 0 "restore and decode greedily" -- "$bin" restore "$work/A.safetensors" --model "$model" --steps 4
[[ $(tail -1 "$work/out" | wc -w) -eq 4 ]] || fail "--steps 4 did not print 4 token ids"

# Chunk widths give the same bytes; other tokens differ with the first differing class named.
expect_rc 0 "prefill chunk 1" -- "$bin" prefill "$model" --tokens "$work/a.txt" --chunk 1 -o "$work/A1.safetensors"
expect_rc 0 "prefill chunk 7" -- "$bin" prefill "$model" --tokens "$work/a.txt" --chunk 7 -o "$work/A7.safetensors"
cmp -s "$work/A1.safetensors" "$work/A.safetensors" && cmp -s "$work/A7.safetensors" "$work/A.safetensors" \
  && echo "ok: chunk widths 1, 7, 66 give identical files" || fail "chunk widths give different state files"
sed '60s/.*/1/' "$work/a.txt" > "$work/a2.txt"
expect_rc 0 "prefill other tokens" -- "$bin" prefill "$model" --tokens "$work/a2.txt" -o "$work/A2.safetensors"
expect_rc 1 "diff other tokens" -- "$bin" snapshot "$work/A.safetensors" --diff "$work/A2.safetensors"
grep -q "^differs  layers.0.window: first at element" "$work/out" || fail "diff does not name layers.0.window first"

# stdout / stdin.
"$bin" prefill "$model" --tokens "$work/a.txt" -o - 2>/dev/null | "$bin" snapshot - --verify > "$work/out" 2>&1 \
  && echo "ok: prefill -o - | snapshot - --verify" || { fail "pipe through stdout/stdin"; cat "$work/out"; }

# Plain safetensors readers open it.
py="${MEMRA_PYTHON:-/root/.cache/memra/venv/bin/python}"
if [[ -x "$py" ]] && "$py" -c "import safetensors, numpy" 2>/dev/null; then
  "$py" - "$work/A.safetensors" <<'PY' && echo "ok: python safetensors reads it" || fail "python safetensors cannot read the state"
import sys
from safetensors import safe_open
with safe_open(sys.argv[1], "np") as f:
    md = f.metadata()
    assert md["format"] == "memra.state" and md["position"] == "66", md
    assert f.get_tensor("layers.0.window").shape == (24, 64)
PY
else
  echo "note: no python with safetensors+numpy; the python reader check did not run"
fi

[[ $fails -eq 0 ]] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
