#!/usr/bin/env bash
# shell.parity_refused: parity is manifest-first and cannot pass vacuously (docs/parity.md). A dump
# whose manifest claims another index_topk, hc_mult or compress_rates, or lacks a required field,
# or whose array shape disagrees with the config's product, is REFUSED (exit 1) naming the field,
# before any value is compared; so is a dump without a stage's arrays (unless --stages narrows the
# comparison explicitly) or without producer.compute_dtype. A model paired with another model's
# dump is REFUSED with a hint that does not tell the user to regenerate that (fine) dump. Flips:
# a near-tie is IN-BAND and cuts the value comparison, an exact tie is OUT-OF-BAND, a flip so
# early that a stage compares less than half its rows is INCONCLUSIVE (exit 1); every stage shows
# the rows it compared. The unmodified dump passes (exit 0).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
model="$src/models/tiny"
source "$src/test/shell/lib/oracle.sh"
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
expect 1 "hint: this dump was made for another geometry" -- "$bin" -q parity "$model" "$work/topk"
# Another model's (fine) dump: the hint says so and offers a dump of this model, never the other
# dump's own regeneration command.
expect 1 "REFUSED geometry field" -- "$bin" -q parity "$model" "$src/models/tiny-bf16/dump"
expect 1 "hint: this dump was made for another geometry: compare it with the model it was made from, or make a dump of $model" \
  -- "$bin" -q parity "$model" "$src/models/tiny-bf16/dump"
if "$bin" -q parity "$model" "$src/models/tiny-bf16/dump" 2>&1 | grep -q -- "--out models/tiny-bf16/dump"; then
  echo "FAIL: the hint tells the user to regenerate the committed models/tiny-bf16/dump"; fail=1
else echo "ok: the hint does not regenerate models/tiny-bf16/dump"; fi
# Missing arrays and the compute dtype: REFUSED naming them; --stages narrows explicitly.
mutate nohidden "del m['arrays']['hidden.2']"
expect 1 "REFUSED dump lacks 1 array of stage hidden (hidden.2); to compare only the stages it has, name them with --stages" \
  -- "$bin" -q parity "$model" "$work/nohidden"
expect 0 "ALL PASS" -- "$bin" -q parity "$model" "$work/nohidden" --stages logits
expect 0 'stages narrowed by --stages to: \["logits"\]' -- "$bin" -q parity "$model" "$work/nohidden" --stages logits
expect 0 "ALL PASS" -- "$bin" -q parity "$model" "$work/nohidden" --stages router,indexer,logits,logits_incremental
expect 1 "REFUSED dump lacks 1 array of stage hidden" -- "$bin" -q parity "$model" "$work/nohidden" --stages hidden,logits
expect 2 "unknown-stage" -- "$bin" -q parity "$model" "$work/nohidden" --stages unknown-stage
mutate nodtype "del m['producer']['compute_dtype']"
expect 1 "REFUSED dump manifest lacks producer.compute_dtype: the tolerance depends on it" -- "$bin" -q parity "$model" "$work/nodtype"
expect 1 "REFUSED dump manifest lacks producer.compute_dtype" -- "$bin" -q parity "$model" "$work/nodtype" --stages logits
mutate baddtype "m['producer']['compute_dtype'] = 'int8'"
expect 1 "REFUSED dump manifest's producer.compute_dtype 'int8' is not one parity has a tolerance for" -- "$bin" -q parity "$model" "$work/baddtype"
mutate noinc "del m['incremental_prefix']"
expect 1 "REFUSED dump has no incremental logits" -- "$bin" -q parity "$model" "$work/noinc"
expect 0 "ALL PASS" -- "$bin" -q parity "$model" "$work/noinc" --stages hidden,router,indexer,logits
# Bytes that do not match the manifest's hash are REFUSED; a value past the tolerance with a
# consistent manifest is a FAIL (exit 1) naming the stage.
perturb() {  # perturb DIR REHASH(0/1)
  rm -rf "$1"; cp -r "$model/dump" "$1"
  "$py" - "$1" "$2" <<'PY'
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
expect 1 "logits  FAIL  rows 160/160  max_abs 0.05.* at 1000" -- "$bin" -q parity "$model" "$work/perturbed"
# A decision the dump made differently from the engine: IN-BAND when the dump's own margin there is
# a near-tie (values are then compared only before that position), OUT-OF-BAND (FAIL) otherwise.
flip() {  # flip DIR MARGIN [POSITION]
  rm -rf "$1"; cp -r "$model/dump" "$1"
  "$py" - "$1" "$2" "${3:-150}" <<'PY'
import json, struct, sys, xxhash
d, margin, t = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
m = json.load(open(f"{d}/manifest.json"))
raw = bytearray(open(f"{d}/arrays.safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8 + n]); base = 8 + n
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
# A near-tie at position 150: IN-BAND, values compared on positions 0..149, every stage above its floor.
flip "$work/inband" 1e-7
expect 0 "in-band decision flip at position 150" -- "$bin" -q parity "$model" "$work/inband"
expect 0 "router.1.experts  PASS  rows 151/160  flips 1 (0 out of band)  .pos 150 margin 1e-07 (engine [0-9.e-]*) band [0-9.e-]* IN-BAND" \
  -- "$bin" -q parity "$model" "$work/inband"
expect 0 "logits_incremental  PASS  rows 84/94 " -- "$bin" -q parity "$model" "$work/inband"
flip "$work/outband" 0.25
expect 1 "router.1.experts  FAIL .*OUT-OF-BAND" -- "$bin" -q parity "$model" "$work/outband"
expect 1 "FAIL (first failing stage in causal order: router.1.experts)" -- "$bin" -q parity "$model" "$work/outband"
# An exact tie in the reference (margin 0) decided differently: the tie rule differs, OUT-OF-BAND;
# the report shows the engine's own margin, which is no near-tie.
flip "$work/tie" 0
expect 1 "router.1.experts  FAIL  rows 160/160  flips 1 (1 out of band)  .pos 150 margin 0 (engine [0-9.e-]*) band [0-9.e-]* OUT-OF-BAND" \
  -- "$bin" -q parity "$model" "$work/tie"
# A near-tie at position 0: nothing before it to compare; INCONCLUSIVE, exit 1, never PASS.
flip "$work/early" 1e-7 0
expect 1 "INCONCLUSIVE: a stage compared fewer rows than its floor" -- "$bin" -q parity "$model" "$work/early"
expect 1 "logits  INCONCLUSIVE  rows 0/160 (floor 80)" -- "$bin" -q parity "$model" "$work/early"
expect 1 '^\[parity\] REFUSED .*evidence="INCONCLUSIVE ' -- "$bin" -q gate parity "$model" "$work/early"
# Reports of every verdict validate against the schema.
for case in early:INCONCLUSIVE tie:FAIL nodtype:REFUSED inband:PASS; do
  "$bin" -q parity "$model" "$work/${case%%:*}" --json > "$work/r.json"
  if grep -q "\"result\": \"${case#*:}\"" "$work/r.json" && "$py" "$src/tools/validate_report.py" "$work/r.json" > /dev/null; then
    echo "ok: ${case#*:} report validates"
  else
    echo "FAIL: the ${case#*:} report of ${case%%:*} is not a valid ${case#*:} report"; fail=1
  fi
done
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed"
exit $fail
