# The oracle venv a shell test needs (tools/oracle/setup-venv.sh makes it). Source it after $src is
# set: it sets venv and py, or FAILs the test with the command that makes the venv (a missing
# oracle is never a silent skip). MEMRA_VENV points at another venv.
venv="${MEMRA_VENV:-$HOME/.cache/memra/venv}"
py="$venv/bin/python"
if [[ ! -x "$py" ]]; then
  echo "FAIL: no oracle venv at $venv; run $src/tools/oracle/setup-venv.sh (or set MEMRA_VENV)"
  exit 1
fi
