# Run 84: route's rank count over float4 reads in four sums, hc_pre's first collapse batch loaded
# beside the gather (the tree of commit after 4b0de00). Tests: ops (every group), backend tiny /
# tiny-bf16 / tiny-fp8, memcheck + racecheck of ops mhc and moe. A/B of two binaries in one call:
# r83 = run 83's pack (carried as build-gpu-pack-83), new = this tree, two passes; ncu of route and
# hc_pre in both.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
for f in build-gpu-pack-83/*/*.xz; do [[ -f "${f%.xz}" ]] || { python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' "$f" "${f%.xz}"; chmod +x "${f%.xz}"; }; done
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
Q=$PWD/build-gpu-pack-83
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 150 $t ops --seed 84 2>&1 | grep -E "FAIL|checks" | cut -c1-220
  for x in tiny tiny-bf16 tiny-fp8; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  for g in mhc moe; do
    timeout 120 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed 84 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2 | sed "s/^/memcheck $g: /"
    timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed 84 2>&1 | grep -E "RACECHECK SUMMARY|checks" | tail -2 | sed "s/^/racecheck $g: /"
  done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in r83 new; do
    case $arm in r83) B=$Q/bin;; new) B=$P/bin;; esac
    LD_LIBRARY_PATH=$B:$P/bin timeout 80 $B/memra $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 100 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py r83_1=/tmp/ab/r831.json new1=/tmp/ab/new1.json r83_2=/tmp/ab/r832.json new2=/tmp/ab/new2.json >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
for arm in r83 new; do
  case $arm in r83) B=$Q/bin;; new) B=$P/bin;; esac
  LD_LIBRARY_PATH=$B:$P/bin timeout 100 $NCU --clock-control none -k 'regex:(route_kernel|hc_pre_kernel|hc_mix)' --launch-count 200 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum --csv --page raw $B/memra -q $NB > /tmp/ncu$arm.csv 2>/tmp/ncu$arm.err
  echo "ncu $arm rc=$?"
  python3 - /tmp/ncu$arm.csv <<'PY'
import csv, sys, statistics, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if 'Kernel Name' in r)
h = rows[hdr]; data = rows[hdr + 2:]
unit = rows[hdr + 1][h.index('gpu__time_duration.sum')]
scale = {'nsecond': 1e-3, 'ns': 1e-3, 'usecond': 1.0, 'us': 1.0, 'msecond': 1e3}.get(unit, 1e-3)
col = lambda r, k: r[h.index(k)]
g = collections.defaultdict(list)
for r in data:
    try:
        name = col(r, 'Kernel Name').replace('(anonymous namespace)', '').split('(')[0].split('<')[0].split('::')[-1]
        num = lambda k: float(col(r, k).replace(',', ''))
        g[(name, col(r, 'Grid Size'))].append((num('gpu__time_duration.sum'), num('smsp__inst_executed.sum')))
    except Exception:
        pass
for k, v in sorted(g.items()):
    print(f"  {k[0][:24]:24s} {k[1]:>14s} n {len(v):3d} {statistics.median([x[0] for x in v])*scale:8.2f} us {statistics.median([x[1] for x in v]):10.0f} instr")
PY
done > $OUT/ncu.txt 2>&1; cat $OUT/ncu.txt; el
