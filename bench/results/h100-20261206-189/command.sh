# Run 189: the one step run 188's whole check left unfinished (its budget ran out 187 s into it):
# racecheck of the backend suite on tiny (--race: the fewest launches that reach every kernel path,
# now with the class-hash check), as gpu-check runs it, with room to finish.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 330 bash tools/racecheck.sh $s $t backend models/tiny --race > $OUT/racecheck-backend-tiny.log 2>&1
echo "racecheck backend tiny --race rc=$?"; grep -E "^ok|^FAIL|RACECHECK SUMMARY|checks" $OUT/racecheck-backend-tiny.log | tail -30
el
