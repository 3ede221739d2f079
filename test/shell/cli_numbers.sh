#!/usr/bin/env bash
# shell.cli_numbers: every numeric option of every command, at 0, -1, 2^31, 2^62 and 2^64-1, through
# the ASan/UBSan build of the CLI (build/san/memra_asan). Never a signal, a sanitizer report or a
# hang; always exit 0, 1 or 2, and 2 with a `memra: error:` line; a value outside the option's
# declared range is exit 2 naming the option. The commands and options come from the CLI
# definition (`memra generate options`), so options added later are covered without editing this
# file; only a new positional or required option needs a fixture in the table below.
# Env (set by CTest): MEMRA_SAN_DIR, MEMRA_SRC.
set -uo pipefail

san="${MEMRA_SAN_DIR:-}"
bin="$san/memra_asan"
src="${MEMRA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
[[ -x "$bin" ]] || { echo "skip: no sanitizer build ($bin; it needs clang++)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/cli_numbers.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
model="$src/models/tiny"

# Fixtures the commands need besides the option under test.
seq 1 12 > "$work/tokens.txt"
"$bin" -q prefill "$model" --tokens "$work/tokens.txt" -o "$work/state.st" --logits "$work/logits.npy" > /dev/null \
  || { echo "FAIL: cannot make the fixture state"; exit 1; }
"$bin" -q snapshot "$work/state.st" --write-manifest "$work/state.xxh" > /dev/null || { echo "FAIL: manifest fixture"; exit 1; }
"$bin" generate options > "$work/options.json" || { echo "FAIL: memra generate options"; exit 1; }

python3 - "$bin" "$work" "$model" <<'PY'
import json, os, subprocess, sys, time

binary, work, model = sys.argv[1:4]
spec = json.load(open(os.path.join(work, "options.json")))
# A value for each positional / required option, by name (command-specific names first).
fixtures = {
    "memra gate band a": f"{work}/logits.npy", "memra gate band b": f"{work}/logits.npy",
    "model": model, "MODEL_DIR": model, "--model": model, "STATE": f"{work}/state.st", "state": f"{work}/state.st",
    "a": f"{work}/state.st", "b": f"{work}/state.st", "dump": f"{model}/dump", "--tokens": f"{work}/tokens.txt",
    "--expect": f"{work}/state.xxh",
    "--drafter": f"{model}/../drafters/tiny-dspark",
}
# Optional options a command needs to do real work with models/tiny (which has no drafter of its own).
optional = {"memra draft": ["--drafter", fixtures["--drafter"]]}
# Small values for the other numeric options of a command, so in-range runs stay short.
cheap = {"--prompt-len": "6", "--warm": "2", "--continuation": "1", "--grow": "3", "--steps": "2", "--widths": "1,3",
         "--depth": "4"}
values = ["0", "-1", str(2**31), str(2**62), str(2**64 - 1)]

failures, runs, started = [], 0, time.time()
if spec["untyped"]:
    failures.append("numeric options declared without a range (use cli/options.h): " + ", ".join(spec["untyped"]))

def in_range(option, value):
    lo = int(option["min"])
    hi = None if option["max"] == "machine" else int(option["max"])
    v = int(value)
    if option["kind"] == "size":  # bytes up to what the machine has: 2^31 fits any CI machine, 2^62 none
        return lo <= v <= 2**40
    return v >= lo and (hi is None or v <= hi)

for cmd in spec["commands"]:
    words = cmd["words"]
    if not cmd["numeric"]:
        continue
    base = words.split()[1:]
    for p in cmd["positionals"]:
        key = f"{words} {p['name']}"
        value = fixtures.get(key, fixtures.get(p["name"]))
        if value is None:
            if p["required"]:
                failures.append(f"{words}: no fixture for positional {p['name']} (add one to shell/cli_numbers.sh)")
            continue
        base.append(value)
    for r in cmd["required"]:
        if r not in fixtures:
            failures.append(f"{words}: no fixture for required option {r}")
            continue
        base += [r, fixtures[r]]
    base += optional.get(words, [])
    for option in cmd["numeric"]:
        extra = []
        for other in cmd["numeric"]:
            if other["name"] != option["name"] and other["name"] in cheap:
                small = "96" if other["name"] == "--steps" and words.endswith("gate speculative") else cheap[other["name"]]
                extra += [other["name"], small]
        for value in values:
            given = f"1,{value}" if option["kind"] == "list" else value  # a list's second item
            args = [binary] + base + extra + [f"{option['name']}={given}"]
            runs += 1
            try:
                p = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=120, cwd=work)
            except subprocess.TimeoutExpired:
                failures.append(f"{words} {option['name']} {value}: hung (120 s)")
                continue
            what = f"{words} {option['name']} {value}"
            err = p.stderr
            if p.returncode < 0:
                failures.append(f"{what}: killed by signal {-p.returncode}")
            elif "Sanitizer" in err or "runtime error:" in err or p.returncode in (86, 87):
                failures.append(f"{what}: sanitizer report:\n{err[-3000:]}")
            elif p.returncode not in (0, 1, 2):
                failures.append(f"{what}: exit {p.returncode}")
            elif p.returncode == 2 and "memra: error: " not in err:
                failures.append(f"{what}: exit 2 without a 'memra: error:' line")
            elif not in_range(option, value) and (p.returncode != 2 or option["name"] not in err):
                failures.append(f"{what}: out of range {option['min']}..{option['max']} but exit {p.returncode}: {err.strip()[:300]}")
            else:
                print(f"ok: {what} -> {p.returncode}")

print(f"{runs} runs in {time.time() - started:.0f} s")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
PY
