#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_shm.sh - run band_bench's shared-budget section (m) in several processes and print
# the median over the processes of each row's median and of its ratio to band_shm.
#
#   scripts/bench_shm.sh [RUNS]        (default 3 processes)
#
# Environment:
#   BUILD_DIR   the Release build holding bench/band_bench (default build/release)
#   REPS        rounds inside each process (band_bench --reps; default 5)
#   OUT         where the per-process TSV files go (default $BUILD_DIR/bench/shm-runs)
#
# Each process is one `band_bench --only m --reps $REPS --tsv $OUT/run-<i>.tsv`; its
# figures are medians of its rounds (bench/README.md). Cross-process hand-offs depend on
# whether the other process is on a CPU at that moment, so on a shared machine whole
# processes differ: the median over processes is steadier than one process's rounds. The
# load average is printed before every process. Exits non-zero when a process fails.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
runs=${1:-3}
BUILD_DIR=${BUILD_DIR:-build/release}
REPS=${REPS:-5}
OUT=${OUT:-$BUILD_DIR/bench/shm-runs}
bench=$BUILD_DIR/bench/band_bench

if [[ ! -x "$bench" ]]; then
    echo "bench-shm: $bench is missing: build it first, e.g." >&2
    echo "  cmake -S . -B $BUILD_DIR -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD_DIR --target band_bench" >&2
    exit 1
fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [RUNS]" >&2
    exit 2
fi
mkdir -p "$OUT"
rm -f "$OUT"/run-*.tsv

for ((i = 1; i <= runs; i++)); do
    echo "bench-shm: process $i/$runs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bench" --only m --reps "$REPS" --tsv "$OUT/run-$i.tsv" | sed -n '/^(m)/,/^targets/p'
done

echo
echo "bench-shm: median over $runs processes ($REPS rounds each) of each row's median"
echo "  and of band_shm time / row time:"
awk -F'\t' '
    FNR == 1 { next }
    $1 == "row" && $2 == "m" {
        key = $3 "\t" $4 "\t" $7
        if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
        n[key]++
        med[key, n[key]] = $8
        x[key, n[key]] = $11
    }
    function median(arr, key, cnt,    i, j, t, v) {
        for (i = 1; i <= cnt; i++) v[i] = arr[key, i] + 0
        for (i = 2; i <= cnt; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
    }
    END {
        for (k = 1; k <= nk; k++) {
            split(order[k], f, "\t")
            if (f[1] != last) { printf "  %s\n", f[1]; last = f[1] }
            printf "    %-50s %10.2f %-8s %6.2fx\n", f[2], median(med, order[k], n[order[k]]),
                   f[3], median(x, order[k], n[order[k]])
        }
    }' "$OUT"/run-*.tsv
echo
echo "bench-shm: targets per process:"
for ((i = 1; i <= runs; i++)); do
    awk -F'\t' -v i="$i" '$1 == "target" && $2 == "m" {
        printf "  %d: %s: %s %s (need %s) %s\n", i, $3, $8, $7, $11, $5 }' "$OUT/run-$i.tsv"
done
