#!/usr/bin/env bash
# shell.oracle_real_geometry: parity at V4-Flash per-layer shapes (make_checkpoint.py --preset
# flash: head_dim 512, rope 64, window 128, CSA 4 with indexer heads of 128 and top-64, HCA 128,
# YaRN x16 over 65536, bf16 weights; two layers, small hidden/vocab/experts) with the config.json in
# the upstream form (compress_ratios, num_hash_layers, qk_rope_head_dim, rope_scaling) that both
# transformers and memra must resolve to the same geometry. 640 tokens: the window wraps five
# times, the HCA closes five 128-blocks, the indexer picks 64 of up to 160 entries. A new random
# seed every run (printed; replay with MEMRA_ORACLE_SEED); every stage must PASS on every row.
# Needs the oracle venv (tools/oracle/setup-venv.sh); without it the test FAILS.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC, MEMRA_BUILD. Optional: MEMRA_VENV, MEMRA_ORACLE_SEED.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
source "$src/test/shell/lib/oracle_draw.sh"
drawn=$([[ -n "${MEMRA_ORACLE_SEED:-}" ]] && echo 0 || echo 1)
seed="${MEMRA_ORACLE_SEED:-$(( $(date +%s) % 1000003 ))}"
work="$(mktemp -d "${MEMRA_BUILD:-${TMPDIR:-/tmp}}/oracle_real_geometry.XXXXXX")"
echo "seed $seed (rerun with MEMRA_ORACLE_SEED=$seed), work dir $work"
export CUDA_VISIBLE_DEVICES=
start=$(date +%s)
make_case() {
  rm -rf "$work/model" "$work/dump"
  "$py" "$src/tools/oracle/make_checkpoint.py" --preset flash --config-form upstream --seed "$seed" \
    --out "$work/model" > "$work/make.log" 2>&1 || return 1
  "$py" "$src/tools/oracle/dump_reference.py" "$work/model" --out "$work/dump" --tokens 640 --seed "$seed" >> "$work/make.log" 2>&1
}
if ! draw_oracle_case "$drawn" make_case; then
  cat "$work/make.log"; echo "FAIL: the oracle could not make the flash case for seed $seed (files kept in $work)"; exit 1
fi
oracle_s=$(( $(date +%s) - start ))
"$bin" -q parity "$work/model" "$work/dump" --json > "$work/parity.json"
rc=$?
"$bin" -q load "$work/model" --json > "$work/load.json" || { echo "FAIL: memra load"; exit 1; }
if ! "$py" - "$work" "$rc" <<'PY'
import json, sys
work, rc = sys.argv[1], int(sys.argv[2])
cfg = json.load(open(f"{work}/model/config.json"))
man = json.load(open(f"{work}/dump/manifest.json"))
r = json.load(open(f"{work}/parity.json"))
load = json.load(open(f"{work}/load.json"))
g = man["geometry"]
bad = []
def need(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond: bad.append(what)
need("compress_ratios" in cfg and "layer_types" not in cfg and "rope_scaling" in cfg, "config.json is in the upstream form")
need(load.get("source_form") == "upstream", f"memra read the upstream form (source_form {load.get('source_form')})")
need(g["head_dim"] == 512 and g["qk_rope_head_dim"] == 64 and g["sliding_window"] == 128, "head_dim 512, rope 64, window 128")
need(g["compress_rates"]["heavily_compressed_attention"] == 128 and g["index_topk"] >= 64, "HCA rate 128, index_topk >= 64")
need(g["rope_parameters"]["compress"]["rope_type"] == "yarn", "YaRN on the compressed layers")
need(man["tokens"] >= 600 and man["stats"]["indexer_subset_queries"] > 0,
     f"{man['tokens']} tokens; the indexer chose a proper subset for {man['stats']['indexer_subset_queries']} queries")
need(rc == 0 and r["result"] == "PASS", f"parity {r['result']} (rc {rc})")
stages = {s["name"]: s for s in r.get("stages", [])}
cut = r.get("compared_before_position")
need(len(stages) == 7 and all(s["rows"] >= s["min_rows"] for s in stages.values()),
     "7 stages, each above its floor" + (f" (in-band flip at {cut})" if cut is not None else ", every row compared"))
for name in ("logits", "logits_incremental"):
    s = stages.get(name, {})
    need(s.get("rel_to_max", 1) <= 1e-5 and s.get("top1_agree") == s.get("top1_total"),
         f"{name}: rel_to_max {s.get('rel_to_max')}, top1 {s.get('top1_agree')}/{s.get('top1_total')}")
sys.exit(1 if bad else 0)
PY
then
  echo "FAIL: seed $seed (files kept in $work)"; exit 1
fi
echo "oracle ${oracle_s}s, parity $(( $(date +%s) - start - oracle_s ))s"
rm -rf "$work"
echo "1 passed, 0 failed"
