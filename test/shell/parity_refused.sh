#!/usr/bin/env bash
# shell.parity_refused: parity is manifest-first. A dump whose manifest claims another index_topk,
# hc_mult or compress_rates, or lacks a required field, or whose array shape disagrees with the
# config's product, is REFUSED (exit 1) naming the field, before any value is compared; the
# unmodified dump passes (exit 0).
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
model="$src/models/tiny"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
expect() {  # expect RC PATTERN -- command...
  local want_rc=$1 pattern=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [[ $rc -ne $want_rc ]] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: '$*' gave rc=$rc (want $want_rc) and output:"; echo "$out" | head -5; fail=1
  else
    echo "ok: rc=$rc $(grep -m1 -- "$pattern" <<<"$out")"
  fi
}
mutate() {  # mutate NAME PYTHON-EXPR-ON-m
  rm -rf "$work/$1"; cp -r "$model/dump" "$work/$1"
  python3 -c "import json,sys; p='$work/$1/manifest.json'; m=json.load(open(p)); $2; json.dump(m, open(p,'w'))"
}
expect 0 "ALL PASS" -- "$bin" -q parity "$model" "$model/dump"
mutate topk "m['geometry']['index_topk'] += 1"
expect 1 "REFUSED.*index_topk" -- "$bin" -q parity "$model" "$work/topk"
mutate hc "m['geometry']['hc_mult'] = 2"
expect 1 "REFUSED.*hc_mult" -- "$bin" -q parity "$model" "$work/hc"
mutate rates "m['geometry']['compress_rates']['heavily_compressed_attention'] = 128"
expect 1 "REFUSED.*compress_rates.heavily_compressed_attention" -- "$bin" -q parity "$model" "$work/rates"
mutate missing "del m['geometry']['sliding_window']"
expect 1 "REFUSED.*lacks required geometry field 'sliding_window'" -- "$bin" -q parity "$model" "$work/missing"
mutate yarn "m['geometry']['rope_parameters']['compress']['factor'] = 4.0"
expect 1 "REFUSED.*rope_parameters.compress.factor" -- "$bin" -q parity "$model" "$work/yarn"
mutate optional "del m['geometry']['norm_topk_prob']"
expect 0 "absent (optional): norm_topk_prob" -- "$bin" -q parity "$model" "$work/optional"
mutate shape "m['arrays']['logits']['shape'] = [80, 1024]"
expect 1 "REFUSED.*logits.*config predicts \[160, 512\]" -- "$bin" -q parity "$model" "$work/shape"
expect 1 "regenerate: " -- "$bin" -q parity "$model" "$work/topk"
# Bytes that do not match the manifest's hash are REFUSED; a value past the tolerance with a
# consistent manifest is a FAIL (exit 1) naming the stage.
perturb() {  # perturb DIR REHASH(0/1)
  rm -rf "$1"; cp -r "$model/dump" "$1"
  "${MEMRA_VENV:-$HOME/.cache/memra/venv}/bin/python" - "$1" "$2" <<'PY'
import json, struct, sys, xxhash
d, rehash = sys.argv[1], sys.argv[2] == "1"
m = json.load(open(f"{d}/manifest.json"))
raw = bytearray(open(f"{d}/arrays.safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8 + n])
b, e = h["logits"]["data_offsets"]; off = 8 + n + b
v = struct.unpack_from("<f", raw, off + 4 * 1000)[0]; struct.pack_into("<f", raw, off + 4 * 1000, v + 0.05)
open(f"{d}/arrays.safetensors", "wb").write(raw)
if rehash:
    m["arrays"]["logits"]["xxh3"] = xxhash.xxh3_128_hexdigest(bytes(raw[8 + n + b:8 + n + e]))
    json.dump(m, open(f"{d}/manifest.json", "w"))
PY
}
perturb "$work/tampered" 0
expect 1 "REFUSED array 'logits': bytes do not match" -- "$bin" -q parity "$model" "$work/tampered"
perturb "$work/perturbed" 1
expect 1 "logits  FAIL  max_abs 0.05.* at 1000" -- "$bin" -q parity "$model" "$work/perturbed"
# A decision the dump made differently from the engine: IN-BAND when the dump's own margin there is
# a near-tie (values are then compared only before that position), OUT-OF-BAND (FAIL) otherwise.
flip() {  # flip DIR MARGIN
  rm -rf "$1"; cp -r "$model/dump" "$1"
  "${MEMRA_VENV:-$HOME/.cache/memra/venv}/bin/python" - "$1" "$2" <<'PY'
import json, struct, sys, xxhash
d, margin = sys.argv[1], float(sys.argv[2])
m = json.load(open(f"{d}/manifest.json"))
raw = bytearray(open(f"{d}/arrays.safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8 + n]); base = 8 + n
t = 100  # position
b, _ = h["router.1.experts"]["data_offsets"]; k = h["router.1.experts"]["shape"][1]
ids = list(struct.unpack_from(f"<{k}i", raw, base + b + 4 * k * t))
E = 8; ids[0] = next(e for e in range(E) if e not in ids); ids.sort()
struct.pack_into(f"<{k}i", raw, base + b + 4 * k * t, *ids)
b2, _ = h["router.1.margin"]["data_offsets"]
struct.pack_into("<f", raw, base + b2 + 4 * t, margin)
open(f"{d}/arrays.safetensors", "wb").write(raw)
for name in ("router.1.experts", "router.1.margin"):
    s, e = h[name]["data_offsets"]
    m["arrays"][name]["xxh3"] = xxhash.xxh3_128_hexdigest(bytes(raw[base + s:base + e]))
json.dump(m, open(f"{d}/manifest.json", "w"))
PY
}
flip "$work/inband" 1e-7
expect 0 "in-band decision flip at position 100" -- "$bin" -q parity "$model" "$work/inband"
expect 0 "router.1.experts  PASS  rows 160  flips 1 (0 out of band)  .pos 100 margin 1e-07 IN-BAND" -- "$bin" -q parity "$model" "$work/inband"
flip "$work/outband" 0.25
expect 1 "router.1.experts  FAIL .*OUT-OF-BAND" -- "$bin" -q parity "$model" "$work/outband"
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed"
exit $fail
