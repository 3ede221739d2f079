#!/usr/bin/env bash
# Trains the tiny DSpark and DFlash drafters against the bundled trunk (models/tiny) in one bounded
# run: self-distillation on the trunk's greedy continuations, PyTorch on the CPU, both families in
# parallel with half of the threads each (tools/oracle/train_drafter.py; the recipe is below and in
# bench/NOTES.md "Trained drafter pair").
#
#   tools/oracle/train-pair.sh OUT_DIR
#
# TRUNK=DIR trains against another trunk folder (default models/tiny; models/tiny-trained is the
# bundled trunk fine-tuned on a learnable language by tools/oracle/train_trunk.py).
#
# Writes OUT_DIR/{tiny-dspark-trained,tiny-dflash-trained}/ (config.json, model.safetensors,
# oracle.json with the oracle's tau, the held-out accuracy per row and this command; drop-in for
# models/drafters/) and OUT_DIR/logs/*.log; the random inits and the generated data live in a
# temporary folder. Each drafter folder is written as soon as its training ends and rewritten with
# the oracle's tau after the evaluation, so a run stopped during the evaluation keeps the weights.
# Env: PYTHON    interpreter with torch 2.11, transformers 5.17, safetensors and z-lab's dflash.model
#                (default: the oracle venv of tools/oracle/setup-venv.sh). A tree without dflash can
#                take it from build/pydeps (tools/oracle/stage-pydeps.sh copies it there).
#      MINUTES   wall-clock budget up to the end of training, data included (default 6.5); the
#                evaluation follows (about EVAL_PROMPTS x EVAL_NEW tokens of the oracle's loop)
#      THREADS   torch threads in all (default: nproc); each family gets half
#      RANKS     data-parallel processes per family (default 4 when a family has >= 4 threads, else 1)
#      SEQUENCES / LENGTH / HOLDOUT / EVAL_PROMPTS / EVAL_NEW   data, held-out and evaluation sizes
#      LR / GAMMA / BATCH   learning rate, row-weight decay and sequences per rank and step (defaults below)
# Exit 0 when both drafters were trained and evaluated, 1 otherwise (the logs say why).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: tools/oracle/train-pair.sh OUT_DIR" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/train-pair.XXXXXX")"  # inits and the data (GBs): not in OUT_DIR
trap 'rm -rf "$work"' EXIT
py="${PYTHON:-$("$root/tools/oracle/setup-venv.sh")}"
minutes="${MINUTES:-6.5}"
threads="${THREADS:-$(nproc)}"
half=$(( threads / 2 > 0 ? threads / 2 : 1 ))
ranks="${RANKS:-$(( half >= 4 ? 4 : 1 ))}"
sequences="${SEQUENCES:-6144}"
length="${LENGTH:-144}"
eval_prompts="${EVAL_PROMPTS:-16}"
eval_new="${EVAL_NEW:-128}"
lr="${LR:-3e-3}"
gamma="${GAMMA:-4}"
trunk="${TRUNK:-models/tiny}"
batch="${BATCH:-8}"
holdout="${HOLDOUT:-64}"
[[ -d "$root/build/pydeps" ]] && export PYTHONPATH="$root/build/pydeps${PYTHONPATH:+:$PYTHONPATH}"
export CUDA_VISIBLE_DEVICES=  # PyTorch on the CPU, even on a machine with GPUs
cd "$root"
mkdir -p "$out/logs"
t0=$(date +%s)
log() { echo "train-pair: $(( $(date +%s) - t0 ))s: $*" >&2; }

"$py" -c 'import torch, transformers, safetensors, dflash.model as d
print("python", __import__("sys").version.split()[0], "torch", torch.__version__, "transformers",
      transformers.__version__, "dflash", d.__file__)' >&2 \
  || { echo "train-pair: error: $py lacks torch/transformers/safetensors/dflash.model" >&2
       echo "train-pair: hint: PYTHON=path/to/python, or run tools/oracle/stage-pydeps.sh first for dflash" >&2; exit 1; }
log "trunk $trunk, $threads threads ($half per family), budget $minutes min, $sequences sequences of $length, git $(git rev-parse --short=12 HEAD 2>/dev/null || echo '?')"

# The inits (geometry and seed: see bench/NOTES.md).
"$py" tools/oracle/make_drafter.py --family dspark --trunk "$trunk" --out "$work/init-dspark" --seed 1 \
  > /dev/null 2> "$out/logs/init-dspark.log" &
i1=$!
"$py" tools/oracle/make_drafter.py --family dflash --trunk "$trunk" --out "$work/init-dflash" --seed 12 \
  --sliding '' --rank 64 --confidence 0 --inter 256 > /dev/null 2> "$out/logs/init-dflash.log" &
i2=$!
wait $i1 && wait $i2 || { log "error: make_drafter failed: $(tail -n 2 "$out"/logs/init-*.log)"; exit 1; }
log "inits made"

# The data once, with every thread: prompts + the trunk's greedy continuations.
common=(--trunk "$trunk" --sequences "$sequences" --length "$length" --seed 7 --data-cache "$work/data.pt")
# Both families tap the inputs of trunk layers 1, 2, 3: the taps and logits are computed here once too.
"$py" tools/oracle/train_drafter.py "$work/init-dspark" --out "$work/unused" "${common[@]}" --data-workers "$threads" \
  --data-only 2> "$out/logs/data.log" > /dev/null || { log "error: the data failed: $(tail -n 3 "$out/logs/data.log")"; exit 1; }
log "data made"

# Both families in parallel, each data-parallel over RANKS processes of THREADS/2/RANKS threads;
# each stops training at the budget (counted from the script's start).
left=$("$py" -c "print(round(max(0.5, $minutes - ($(date +%s) - $t0) / 60), 2))")
per_rank=$(( half / ranks > 0 ? half / ranks : 1 ))
train=(--steps 100000 --anchors 16 --batch "$batch" --lr "$lr" --gamma "$gamma" --kl 1 --holdout "$holdout" --eval-prompts "$eval_prompts" --eval-new "$eval_new"
       --threads "$per_rank" --max-minutes "$left")
export MASTER_ADDR=127.0.0.1 GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}"
launch() {  # family port: RANKS processes; rank 0 logs, evaluates and saves
  local fam=$1 port=$2 r pids=()
  for ((r = ranks - 1; r >= 0; r--)); do
    WORLD_SIZE=$ranks RANK=$r MASTER_PORT=$port "$py" tools/oracle/train_drafter.py "$work/init-$fam" \
      --out "$out/tiny-$fam-trained" "${common[@]}" "${train[@]}" > /dev/null 2>> "$out/logs/$fam.log" &
    pids+=($!)
  done
  local rc=0
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  return $rc
}
log "training: $ranks ranks x $per_rank threads per family, $left min left"
launch dspark 29561 &
p1=$!
launch dflash 29562 &
p2=$!
rc=0
wait $p1 || { rc=1; log "dspark failed: $(tail -n 3 "$out/logs/dspark.log")"; }
wait $p2 || { rc=1; log "dflash failed: $(tail -n 3 "$out/logs/dflash.log")"; }
# The record says how the pair was made (train_drafter.py's own line names temporary paths).
for f in dspark dflash; do
  j="$out/tiny-$f-trained/oracle.json"
  [[ -f "$j" ]] || continue
  "$py" - "$j" "TRUNK=$trunk THREADS=$threads RANKS=$ranks MINUTES=$minutes SEQUENCES=$sequences LENGTH=$length HOLDOUT=$holdout LR=$lr GAMMA=$gamma BATCH=$batch EVAL_PROMPTS=$eval_prompts EVAL_NEW=$eval_new" <<'PY' || rc=1
import json, os, platform, sys
path, env = sys.argv[1:]
j = json.load(open(path))
j["regenerate"] = f"PYTHON=python3 {env} tools/oracle/train-pair.sh OUT_DIR"
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
j["machine"] = f"{os.cpu_count()} cores, {model}"
with open(path + ".tmp", "w") as f:
    json.dump(j, f, indent=1)
    f.write("\n")
os.replace(path + ".tmp", path)
PY
done
for f in dspark dflash; do
  grep -h "held-out accuracy\|tau\|reached" "$out/logs/$f.log" | sed "s/^/train-pair: $f: /" >&2 || true
done
log "done (exit $rc)"
exit $rc
