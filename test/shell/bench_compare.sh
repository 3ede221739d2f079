#!/usr/bin/env bash
# shell.bench_compare: bench/compare.py joins `memra bench --json` and transformers_bench.py's JSON
# into issue 13's table; with --marginal (the same bench at more layers) what one layer more costs;
# with --tau (bench/tau.py's rounds of a trained pair at each verify block) each verify block gets
# two projected speculative-generation lines: (verify + one drafter layer ~ verify / layers) per
# round over its tokens, per layer, with the accepted rows kept (memra's loop) and with --rollback
# rerun's re-runs (k rows charged at the smallest measured step holding k), for memra and
# transformers, and memra's speed-ups over its own decode. (The runs come from a GPU; this checks the arithmetic on made-up
# files.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
cmp="$src/bench/compare.py"
need python3
cat > "$work/m.json" <<'JSON'
{"memra": "0.1.0 (test)", "device": "test GPU", "geometry": {"layers": "CH", "vocab": 4096, "seed": 1},
 "ceilings": {"copy_GBps": 4000, "bf16_TFLOPs": 780, "pinned_d2h_GBps": 55, "pinned_h2d_GBps": 55},
 "decode": [{"context": 2048, "ms_per_layer_token": 0.24, "floor_ms_per_layer": 0.15, "step_ms": 0.48, "floor_ms": 0.30,
             "ratio_to_floor": 1.6}],
 "batch": [{"batch": 8, "context": 2048, "tokens_per_s": 4800, "floor_tokens_per_s": 6700}],
 "verify": [{"block": 6, "context": 2048, "ms": 1.2, "floor_ms": 0.9, "block_over_steps": 0.42}],
 "prefill": {"tokens": 2048, "tokens_per_s": 160000, "linear_TFLOPs": 600, "linear_share_of_bf16_rate": 0.77},
 "snapshot": {"snapshot_GBps": 10, "restore_GBps": 54, "snapshot_share_of_pinned_d2h": 0.18, "restore_share_of_pinned_h2d": 0.98},
 "memory": {"weights_bytes": 26.4e9, "scratch_bytes": 2.08e8, "state_bytes_per_token": 656,
            "v4_flash_state_bytes_per_token": 13760, "v4_flash_over_note": 2.0}}
JSON
cat > "$work/t.json" <<'JSON'
{"transformers": "5.17.0", "torch": "2.11.0", "decode": [{"context": 2048, "ms_per_layer_token": 8.0}],
 "batch": [{"batch": 8, "tokens_per_s": 480}], "verify": [{"block": 6, "ms": 24.0, "block_over_one_step": 1.5}],
 "prefill": {"tokens_per_s": 40000}, "weights_bytes": 26.4e9}
JSON
# 16 rounds, 96 tokens (tau 6); re-runs: one of 1 row (a decode step) and two of 4 (verify 6)
echo '{"pair": "test", "blocks": {"6": {"tau": 6.0, "rounds": 16, "tokens": 96, "verify_rows": 96,
  "rerun_rows_histogram": [0, 1, 0, 0, 2, 0]}}}' > "$work/tau.json"
# cropped: 1.2 · (1 + 1/2) · 16 / 96 / 2 = 0.15 ms a layer and token; floor 0.9 / 6 / 2 = 0.075;
# transformers 24 · 1.5 · 16 / 96 / 2 = 3.0
expect 0 '| speculative generation, verify 6 (5 drafts, tau 6.00, projected), accepted rows kept @ 2048 | 0.15 | 0.075 | 2.00x | 3 | 20.0x | ms/layer/token |' \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau.json"
# re-runs: 0.15 + (0.48 + 2 · 1.2) / 96 / 2 = 0.165; transformers 3.0 + (8 · 2 + 2 · 24) / 192 = 3.333
expect 0 "| speculative generation, verify 6 (5 drafts, tau 6.00, projected), --rollback rerun (accepted rows re-run) @ 2048 | 0.165 | 0.075 | 2.20x | 3.333 | 20.2x |" \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau.json"
expect 0 "| speculative verify 6 vs decode (memra, projected): rows kept / --rollback rerun | 1.60x / 1.45x |" \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau.json"
# --rerun-steps: a bench at more verify sizes prices the re-runs of 4 rows at its verify 4 (0.72 ms):
# 0.15 + (0.48 + 2 · 0.72) / 192 = 0.16
echo '{"verify": [{"block": 4, "context": 2048, "ms": 0.72}, {"block": 5, "context": 2048, "ms": 0.8}]}' > "$work/sizes.json"
expect 0 "--rollback rerun (accepted rows re-run) @ 2048 | 0.16 | 0.075 | 2.13x |" \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau.json" --rerun-steps "$work/sizes.json"
expect 0 "| speculative verify 6 vs decode (memra, projected): rows kept / --rollback rerun | 1.60x / 1.50x |" \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau.json" --rerun-steps "$work/sizes.json"
# a bench that measured a round's own costs (verify[].round): memra's loop = rows kept + per round the
# mark and the journal (1.26 − 1.2 ms), per rollback (3) the keep: 0.15 + (16 · 0.11 + 3 · 0.1) / 96 / 2
# = 0.1607, and the summary's first figure becomes it: 0.24 / 0.1607 = 1.49x. The rerun loop, like
# with like: the re-runs' 0.165 + per round (16) and per rollback (3) the mark's 0.05 (its rewind
# priced as the mark), no journal: 0.165 + 19 · 0.05 / 96 / 2 = 0.1699, 0.24 / 0.1699 = 1.41x
python3 - "$work/m.json" "$work/m-round.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["verify"][0]["round"] = {"mark_ms": 0.05, "journaled_ms": 1.26, "kept_rows": 3, "keep_ms": 0.1}
json.dump(m, open(sys.argv[2], "w"))
PY
expect 0 "memra's loop (rows kept; mark, journal and keep measured) @ 2048 | 0.1607 | 0.075 | 2.14x | - | -x |" \
  -- python3 "$cmp" "$work/m-round.json" "$work/t.json" --tau "$work/tau.json"
expect 0 "memra's loop with --rollback rerun (mark measured, rewind priced as the mark) @ 2048 | 0.1699 | 0.075 | 2.27x | - | -x |" \
  -- python3 "$cmp" "$work/m-round.json" "$work/t.json" --tau "$work/tau.json"
expect 0 "| speculative verify 6 vs decode (memra, projected): rows kept / --rollback rerun | 1.49x / 1.41x |" \
  -- python3 "$cmp" "$work/m-round.json" "$work/t.json" --tau "$work/tau.json"
out=$(python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau.json")
grep -q "memra's loop" <<< "$out" && { echo "FAIL: a measured-loop line without the round's costs"; fail=1; }
expect 0 '| decode batch 1 @ 2048 | 0.24 | 0.15 | 1.60x | 8 | 33.3x | ms/layer/token |' -- python3 "$cmp" "$work/m.json" "$work/t.json"
out=$(python3 "$cmp" "$work/m.json" "$work/t.json")
grep -q speculative <<< "$out" && { echo "FAIL: a speculative line without --tau"; fail=1; }
echo '{"pair": "test", "blocks": {"16": {"tau": 9.0, "rounds": 1, "tokens": 9, "verify_rows": 16, "rerun_rows_histogram": []}}}' \
  > "$work/tau16.json"  # no block the bench timed
out=$(python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau16.json")
grep -q speculative <<< "$out" && { echo "FAIL: a speculative line for a block the bench did not time"; fail=1; }
# an older tau.json (tau per drafter block: one draft more than the verify checks) is refused
echo '{"pair": "test", "tau": {"6": 6.0}}' > "$work/tau-old.json"
expect 0 'compare.py: note: --tau .*tau-old.json has no per-verify-block rounds' \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/tau-old.json"
# one layer more: (0.90 − 0.48) / 2 = 0.21 ms against (0.58 − 0.30) / 2 = 0.14
python3 - "$work/m.json" "$work/long.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["geometry"]["layers"] = "CHCH"
d["decode"] = [{"context": 2048, "ms_per_layer_token": 0.225, "step_ms": 0.90, "floor_ms": 0.58, "ratio_to_floor": 1.55}]
json.dump(d, open(sys.argv[2], "w"))
PY
expect 0 '| one layer more (CHCH − CH): decode batch 1 @ 2048 | 0.21 | 0.14 | 1.50x | | | ms/layer |' \
  -- python3 "$cmp" "$work/m.json" "$work/t.json" --marginal "$work/long.json"
# an unreadable side input is a note on stderr; the table is still made
echo '{not json' > "$work/bad.json"
expect 0 'compare.py: note: --tau .*bad.json unreadable' -- python3 "$cmp" "$work/m.json" "$work/t.json" --tau "$work/bad.json"
expect 0 '| decode batch 1 @ 2048 | 0.24 |' -- python3 "$cmp" "$work/m.json" "$work/t.json" --marginal "$work/missing.json"
exit $fail
