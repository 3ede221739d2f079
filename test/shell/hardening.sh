#!/usr/bin/env bash
# shell.hardening: issue 9's reproducers through the CLI, each with its fixed behaviour: numbers that
# crashed are exit 2 with a message; memory stays bounded (yes | prefill, cat /dev/zero | snapshot);
# outputs never clobber an input, another output, a device or a FIFO; write errors are exit 2
# (/dev/full, --help > /dev/full, a file-size limit) and leave no temp file; messages escape
# control bytes; a config without a math field is refused; a keyed state needs the right key.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail

bin="${MEMRA_BIN:-memra}"
src="${MEMRA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
model="$src/models/tiny"
[[ -f "$model/config.json" ]] || { echo "skip: models/tiny missing"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/hardening.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_rc() {  # expect_rc WANT DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" > out 2> err; local rc=$?
  if [[ $rc -eq $want ]]; then echo "ok: $what (rc $rc)"; else fail "$what: rc $rc, expected $want"; head -c 2000 err; fi
}
has() { grep -q -- "$1" "${2:-err}" || fail "stderr lacks '$1': $(head -c 400 "${2:-err}")"; }

seq 1 20 > t.txt
expect_rc 0 "fixture state" -- "$bin" prefill "$model" --tokens t.txt -o S.st

# Numbers (every option at every value: shell.cli_numbers under ASan).
expect_rc 2 "restore --capacity 2^62" -- "$bin" restore S.st --model "$model" --capacity 4611686018427387904 --steps 3
has "--capacity"
expect_rc 2 "gate restore --continuation -1" -- "$bin" gate restore "$model" --continuation -1
expect_rc 2 "prefill --capacity 0 (not 'unset')" -- "$bin" prefill "$model" --tokens t.txt --capacity 0
expect_rc 2 "restore --capacity 10^8: the plan says what it needs" -- "$bin" restore S.st --model "$model" --capacity 100000000 --max-memory 1G
has "needs .* GiB"
expect_rc 2 "gate restore --grow 2^40 refused by the plan" -- "$bin" gate restore "$model" --grow 1099511627776
has "needs"

# Memory stays bounded: a virtual-memory cap turns runaway growth into a failure we would see.
( ulimit -v 4000000; yes 1 | timeout 60 "$bin" prefill "$model" --tokens - --max-memory 64M ) > out 2> err
rc=$?; [[ $rc -eq 2 ]] && grep -q "more than .* tokens" err && echo "ok: yes 1 | prefill stops at the cap" \
  || { fail "yes | prefill: rc $rc"; head -c 500 err; }
start=$(date +%s)
( ulimit -v 4000000; cat /dev/zero | timeout 20 "$bin" snapshot - --verify ) > out 2> err
rc=$?; [[ $rc -eq 1 ]] && grep -q "header of 0 bytes" err && echo "ok: cat /dev/zero | snapshot fails on its first 8 bytes" \
  || { fail "cat /dev/zero | snapshot: rc $rc"; head -c 500 err; }
(( $(date +%s) - start < 10 )) || fail "cat /dev/zero | snapshot took $(( $(date +%s) - start )) s"

# Outputs that clobbered.
cp S.st b.st
expect_rc 2 "snapshot b.st --write-manifest b.st" -- "$bin" snapshot b.st --write-manifest b.st
cmp -s S.st b.st || fail "the state was changed"
mkdir m && cp "$model"/config.json "$model"/model.safetensors m/
cp m/model.safetensors weights.before
expect_rc 2 "prefill M -o M/model.safetensors" -- "$bin" prefill m --tokens t.txt -o m/model.safetensors
cmp -s weights.before m/model.safetensors || fail "the weights were overwritten"
expect_rc 2 "load M --write-manifest M/model.safetensors" -- "$bin" load m --write-manifest m/model.safetensors
cmp -s weights.before m/model.safetensors || fail "load --write-manifest overwrote the weights"
cp "$model/tokenizer.json" m/ && cp m/tokenizer.json tokenizer.before
expect_rc 2 "prefill M -o M/tokenizer.json" -- "$bin" prefill m --tokens t.txt -o m/tokenizer.json
cmp -s tokenizer.before m/tokenizer.json || fail "the tokenizer was overwritten"
expect_rc 2 "--devices on a CPU backend" -- "$bin" prefill "$model" --tokens t.txt --devices 0
has "--devices"
expect_rc 2 "--devices 1024 (not a device index)" -- "$bin" prefill "$model" --tokens t.txt --backend cuda --devices 0,1024
has "--devices"
cp t.txt t2.txt
expect_rc 2 "-o onto its own --tokens" -- "$bin" prefill "$model" --tokens t2.txt -o t2.txt
cmp -s t.txt t2.txt || fail "the token list was overwritten"
expect_rc 2 "-o X --logits X" -- "$bin" prefill "$model" --tokens t.txt -o X --logits X
expect_rc 2 "-o - --logits -" -- "$bin" prefill "$model" --tokens t.txt -o - --logits -
expect_rc 2 "snapshot S > S (the shell emptied it)" -- bash -c "cp S.st r.st; '$bin' snapshot r.st > r.st"
mkfifo fifo
( cat fifo > from_fifo.st ) &
expect_rc 0 "-o onto a FIFO writes through it" -- "$bin" prefill "$model" --tokens t.txt -o fifo
wait
[[ -p fifo ]] || fail "the FIFO was replaced"
cmp -s S.st from_fifo.st && echo "ok: the FIFO's reader got the state" || fail "FIFO reader got other bytes"
expect_rc 0 "-o /dev/null" -- "$bin" prefill "$model" --tokens t.txt -o /dev/null
[[ -c /dev/null ]] || fail "/dev/null is no longer a character device"

# Write errors are exit 2.
expect_rc 2 "--help > /dev/full" -- bash -c "'$bin' --help > /dev/full"
expect_rc 2 "snapshot > /dev/full" -- bash -c "'$bin' snapshot S.st > /dev/full"
expect_rc 2 "-o /dev/full" -- "$bin" prefill "$model" --tokens t.txt -o /dev/full
expect_rc 2 "a file-size limit (EFBIG)" -- bash -c "ulimit -f 8; '$bin' prefill '$model' --tokens t.txt -o big.st"
has "cannot write"
[[ ! -e big.st ]] || fail "a partial big.st was left"
ls -a | grep -q memra-tmp && fail "a temp file was left: $(ls -a | grep memra-tmp)"

# Temp files that kill -9 leaves are removed by the next write into the folder: file_io_test
# ("a dead writer's are removed") plants one with a reaped PID; here, a run that fails leaves none.
expect_rc 2 "a write that fails midway" -- bash -c "ulimit -f 16; '$bin' prefill '$model' --tokens t.txt -o big2.st"
ls -a | grep -q memra-tmp && fail "a failed write left a temp file"

# Messages escape control bytes.
printf '1 \033[31m 2' > esc.txt
expect_rc 2 "ESC in a token list" -- "$bin" prefill "$model" --tokens esc.txt
grep -q $'\033' err && fail "raw ESC in the message"
has 'x1b'
printf '1 \377 2' > ff.txt
expect_rc 2 "0xFF in a token list" -- "$bin" prefill "$model" --tokens ff.txt
has 'xff'
[[ $(wc -l < err) -eq 2 ]] || fail "the message is not one error and one hint line"

# Config fields that change the math.
mkdir noidx && cp "$model/model.safetensors" noidx/
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); del c['index_topk']; json.dump(c, open(sys.argv[2],'w'))" \
  "$model/config.json" noidx/config.json
expect_rc 2 "config without index_topk" -- "$bin" load noidx
has "index_topk is missing"

# Keyed tags.
head -c 32 /dev/urandom > k1
head -c 32 /dev/urandom > k2
expect_rc 0 "prefill --key" -- "$bin" prefill "$model" --tokens t.txt -o K.st --key k1
expect_rc 0 "snapshot --key (right key)" -- "$bin" snapshot K.st --verify --key k1
expect_rc 1 "snapshot --key (other key)" -- "$bin" snapshot K.st --verify --key k2
has "keyed tag mismatch"
expect_rc 1 "restore --key of an untagged state" -- "$bin" restore S.st --model "$model" --key k1
has "no keyed tag"
expect_rc 2 "-o onto the key file" -- "$bin" prefill "$model" --tokens t.txt -o k1 --key k1

echo "$fails failures"
[[ $fails -eq 0 ]]
