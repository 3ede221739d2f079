#!/usr/bin/env bash
# shell.bench_ncu_grid: bench/ncu_grid.py groups `ncu --csv --page raw` rows by kernel, grid and block
# with median durations (ns, us or ms as ncu wrote them) and the other metrics' medians; a file
# without an ncu table, an unknown unit or a missing file is a one-line error with exit 2. (The
# profiles come from a GPU; this checks the reader on made-up tables.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
ng="$src/bench/ncu_grid.py"
need python3
cat > "$work/raw.csv" <<'CSV'
==PROF== Connected to process 1
"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum","smsp__inst_executed.sum"
"","","","","nsecond","inst"
"0","void memra::cuda::(anonymous namespace)::route_kernel(memra::cuda::RouteArgs)","(1, 1, 1)","(256, 1, 1)","10,320","20,656"
"1","void memra::cuda::(anonymous namespace)::route_kernel(memra::cuda::RouteArgs)","(1, 1, 1)","(256, 1, 1)","10,400","20,660"
"2","void memra::cuda::(anonymous namespace)::route_kernel(memra::cuda::RouteArgs)","(1, 1, 1)","(256, 1, 1)","9,000","20,000"
"3","void memra::cuda::(anonymous namespace)::linear_one_row_kernel<memra::cuda::PlainRow<__nv_bfloat16>>(memra::cuda::LinearArgs)","(4096, 1, 1)","(256, 1, 1)","20,060","7,667,712"
CSV
expect 0 'route_kernel                          (1, 1, 1)  (256, 1, 1)     3     10.32' -- python3 "$ng" "$work/raw.csv"
expect 0 'linear_one_row_kernel              (4096, 1, 1)  (256, 1, 1)     1     20.06                7667712.0' -- python3 "$ng" "$work/raw.csv"
sed 's/"nsecond"/"msecond"/' "$work/raw.csv" > "$work/ms.csv"
expect 0 'route_kernel                          (1, 1, 1)  (256, 1, 1)     3 10320000.00' -- python3 "$ng" "$work/ms.csv"
sed 's/"nsecond"/"furlong"/' "$work/raw.csv" > "$work/bad-unit.csv"
expect 2 "ncu_grid.py: error: unknown duration unit 'furlong'" -- python3 "$ng" "$work/bad-unit.csv"
echo "not a table" > "$work/empty.csv"
expect 2 'ncu_grid.py: error: ' -- python3 "$ng" "$work/empty.csv"
expect 2 'no ncu raw table' -- python3 "$ng" "$work/empty.csv"
expect 2 'ncu_grid.py: error: ' -- python3 "$ng" "$work/missing.csv"
exit $fail
