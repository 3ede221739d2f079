# Shared by the shell tests that source it: expect RC PATTERN -- command... runs the command and
# checks its exit status and that its output (stdout + stderr) matches PATTERN; sets fail=1 otherwise.
expect() {  # expect RC PATTERN -- command...
  local want_rc=$1 pattern=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [[ $rc -ne $want_rc ]] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: '$*' gave rc=$rc (want $want_rc) and output:"; echo "$out" | head -8; fail=1
  else
    echo "ok: rc=$rc $(grep -m1 -- "$pattern" <<<"$out")"
  fi
}
