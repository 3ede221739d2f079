#!/usr/bin/env bash
# shell.pipelines: the CI recipes of docs/pipelines.md, as the issue states them: state files on
# stdout into snapshot, prefill → restore → diff against an uninterrupted run, gates over two runs
# with different chunk widths, kept hash manifests, the band rule on logits files; plus the
# negative of each (exit 1 with evidence).
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
M="$src/models/tiny"
w="$(mktemp -d)"; trap 'rm -rf "$w"' EXIT
cd "$w"
fail=0; pass=0
check() {  # check WANT_RC PATTERN -- cmd (a shell string)
  local want=$1 pat=$2; shift 3
  local out rc; out=$(bash -c "$*" 2>&1); rc=$?
  if [[ $rc -ne $want ]] || ! grep -Eq -- "$pat" <<<"$out"; then
    echo "FAIL: [$*] rc=$rc want=$want pattern=/$pat/"; echo "$out" | head -8; fail=$((fail+1))
  else pass=$((pass+1)); echo "ok: $* -> rc=$rc"; fi
}
cp "$src/models/prompt.txt" t.txt             # the 70 prompt tokens docs/pipelines.md uses
seq 3 3 210 | tr '\n' ' ' > u.txt            # other tokens, same length

# 1. prefill writes the state to stdout, snapshot reads it from stdin.
check 0 '"name": "layers.1.csa.cmp"' -- "'$bin' -q prefill '$M' --tokens t.txt -o - | '$bin' snapshot - --json"
# 2. prefill → restore +8 greedy steps → equal to one uninterrupted run.
check 0 "" -- "'$bin' -q prefill '$M' --tokens t.txt -o a.mst"
check 0 "" -- "'$bin' -q prefill '$M' --tokens t.txt --generate 8 -o expected.mst"
check 0 "" -- "'$bin' -q restore a.mst --model '$M' --steps 8 -o b.mst"
check 0 "" -- "'$bin' snapshot b.mst --diff expected.mst"
check 1 "layers\." -- "'$bin' -q prefill '$M' --tokens u.txt -o other.mst && '$bin' snapshot a.mst --diff other.mst"
# 3. two runs with different chunk widths: same bytes, and the equal gate passes on states and logits.
check 0 "" -- "'$bin' -q prefill '$M' --tokens t.txt --chunk 1 -o c1.mst --logits l1.npy"
check 0 "" -- "'$bin' -q prefill '$M' --tokens t.txt --chunk 64 -o c64.mst --logits l64.npy"
check 0 "" -- "cmp c1.mst c64.mst"
check 0 '^\[equal\] PASS kind=state' -- "'$bin' gate equal c1.mst c64.mst"
check 0 '^\[equal\] PASS kind=logits' -- "'$bin' gate equal l1.npy l64.npy"
check 1 '^\[equal\] FAIL .*evidence=' -- "'$bin' gate equal c1.mst other.mst"
# 4. expected hashes kept in a text file.
check 0 "" -- "'$bin' snapshot a.mst --write-manifest a.hashes"
check 0 '^\[hash\] PASS' -- "'$bin' gate hash a.mst --expect a.hashes"
check 1 '^\[hash\] FAIL .*MISMATCH' -- "'$bin' gate hash other.mst --expect a.hashes"
# 5. the band rule on logits files: identical passes, a perturbation past the band fails.
check 0 '^\[band\] PASS' -- "'$bin' gate band l1.npy l64.npy --model '$M'"
python3 - <<'PY'
import struct
raw = bytearray(open("l1.npy", "rb").read())
hlen = struct.unpack_from("<H", raw, 8)[0]; off = 10 + hlen
v = struct.unpack_from("<f", raw, off + 4 * 777)[0]
struct.pack_into("<f", raw, off + 4 * 777, v + 1e-3)
open("l1p.npy", "wb").write(raw)
PY
check 1 '^\[band\] FAIL .*exceeds the band' -- "'$bin' gate band l1.npy l1p.npy --model '$M'"
check 0 '^\[band\] PASS' -- "'$bin' gate band l1.npy l1p.npy --depth 2176 --precision-a bf16 --precision-b bf16"
# 6. a corrupted state file is refused by every reader (exit 1), never half-read.
python3 -c "
raw = bytearray(open('a.mst','rb').read()); raw[-5] ^= 0x10; open('bad.mst','wb').write(raw)"
check 1 "" -- "'$bin' snapshot bad.mst --verify"
check 1 "" -- "'$bin' gate equal a.mst bad.mst"
check 1 "" -- "'$bin' restore bad.mst --model '$M' --steps 1"
# 7. gate JSON is one document; gate all writes an HTML page.
check 0 '"result": "PASS"' -- "'$bin' -q gate chunk '$M' --json"
check 0 "PASS gates=4" -- "'$bin' -q gate all '$M' --report page.html && test -s page.html"
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
