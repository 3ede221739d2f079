#!/usr/bin/env bash
# Regenerates the libFuzzer seed corpora under fuzz/corpus/ from the repository's fixtures (models/):
# configs, small safetensors (logits, states), .npy arrays, token lists, the tiny dump's manifest,
# model and state hash manifests, tokenizer.json and text, the FP8/FP4 fixture's safetensors header. Seeds are small on purpose (libFuzzer's default max_len follows
# the largest seed). Needs a built memra (BUILD_DIR, default build).
#   tools/fuzz/make-seeds.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${BUILD_DIR:-$root/build}/memra"
out="$root/fuzz/corpus"
[[ -x "$bin" ]] || { echo "make-seeds: build memra first ($bin)" >&2; exit 2; }
tiny="$root/models/tiny"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"/{config,safetensors,state,npy,token_list,dump_manifest,hash_manifest,tokenizer,quant}

# config.json: both fixtures as written, and the upstream spelling of tiny.
cp "$tiny/config.json" "$out/config/tiny.json"
cp "$root/models/tiny-bf16/config.json" "$out/config/tiny-bf16.json"
python3 - "$tiny/config.json" "$out/config/tiny-upstream.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for a, b in [("hidden_size", "dim"), ("num_hidden_layers", "n_layers"), ("num_attention_heads", "n_heads"),
             ("sliding_window", "window_size"), ("num_experts_per_tok", "n_activated_experts"),
             ("moe_intermediate_size", "moe_inter_dim"), ("scoring_func", "score_func"),
             ("routed_scaling_factor", "route_scale"), ("rms_norm_eps", "norm_eps")]:
    c[b] = c.pop(a)
comp = c["rope_parameters"]["compress"]
for k in ("layer_types", "compress_rates", "mlp_layer_types", "partial_rotary_factor", "rope_parameters"):
    c.pop(k)
c["compress_ratios"] = [0, 4, 16, 4, 0]
c["num_hash_layers"] = 1
c["rope_scaling"] = {"type": "yarn", "factor": comp["factor"], "beta_fast": comp["beta_fast"], "beta_slow": comp["beta_slow"],
                     "original_max_position_embeddings": comp["original_max_position_embeddings"]}
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY

# Token lists and states from short prefills.
printf '1 2 3\n' > "$out/token_list/three.txt"
seq 3 7 200 | awk '{print $1 % 512}' | tr '\n' ',' > "$out/token_list/comma.txt"
python3 - "$out/token_list/ids.npy" "$out/npy/ids-i8.npy" <<'PY'
import struct, sys
def npy(descr, fmt, values):
    head = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + struct.pack("<%d%s" % (len(values), fmt), *values)
open(sys.argv[1], "wb").write(npy("<i4", "i", [5, 7, 11, 13]))
open(sys.argv[2], "wb").write(npy("<i8", "q", [1, 2, 3]))
PY
cp "$out/token_list/ids.npy" "$out/npy/ids-i4.npy"
seq 1 5 > "$work/t5.txt"
seq 1 20 > "$work/t20.txt"
"$bin" -q prefill "$tiny" --tokens "$work/t5.txt" -o "$out/state/pos5.bin" --logits "$work/l5.npy" > /dev/null
"$bin" -q prefill "$tiny" --tokens "$work/t20.txt" -o "$out/state/pos20.bin" > /dev/null
"$bin" -q prefill "$tiny" --tokens "$out/token_list/three.txt" --logits "$out/safetensors/logits3.safetensors" > /dev/null
"$bin" -q prefill "$tiny" --tokens "$out/token_list/three.txt" --logits "$out/npy/logits3.npy" > /dev/null
head -c 32 /dev/zero > "$work/key"
"$bin" -q prefill "$tiny" --tokens "$work/t5.txt" -o "$out/state/pos5-keyed.bin" --key "$work/key" > /dev/null
cp "$out/state/pos5.bin" "$out/safetensors/state5.safetensors"
# fuzz_state reads its first byte as the mode: 0 = the bytes are a state file, 1 = rewrite them.
for f in "$out"/state/*.bin; do { printf '\x00'; cat "$f"; } > "$f.seed"; { printf '\x0b'; cat "$f"; } > "$f.rewrite.seed"; rm "$f"; done

cp "$tiny/dump/manifest.json" "$out/dump_manifest/tiny.json"
"$bin" -q load "$tiny" --write-manifest "$out/hash_manifest/tiny-model.xxh" > /dev/null
"$bin" -q snapshot "$out/safetensors/state5.safetensors" --write-manifest "$out/hash_manifest/state5.xxh" > /dev/null
# fuzz_tokenizer reads its first byte as the mode: even = a tokenizer.json follows, odd = text for tiny's.
{ printf '\x00'; cat "$tiny/tokenizer.json"; } > "$out/tokenizer/tiny-json.seed"
{ printf '\x01'; printf 'Hello, world! 123 4567\n\tcafé 你好 <｜begin▁of▁sentence｜> x'; } > "$out/tokenizer/text.seed"
{ printf '\x03'; head -c 48 "$tiny/config.json"; } > "$out/tokenizer/ascii.seed"
# fuzz_quant: the safetensors header (JSON only) of the FP8/FP4 fixture; the target adds the payload.
python3 - "$root/models/tiny-fp4/model.safetensors" "$out/quant/tiny-fp4-header.json" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read(1 << 20)
n = struct.unpack("<Q", b[:8])[0]
open(sys.argv[2], "wb").write(b[8:8 + n])
PY

echo "make-seeds: wrote $(find "$out" -type f | wc -l) seeds, $(du -sk "$out" | cut -f1) KiB, under $out" >&2
