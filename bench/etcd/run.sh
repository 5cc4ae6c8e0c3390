#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh - acquire+release on a private 3-member etcd cluster: libband-etcd beside the bare
# cost of two requests through the same HTTP/JSON path (a put and a delete), beside the
# library's own fast-path transaction and delete sent bare, and beside etcd's lock service.
# Prints a table of medians over rounds and the ratios to the bare cost.
#
#   bench/etcd/run.sh [--rounds R] [--clients "1 8 64"] [--pairs N]
#   make bench (its etcd section), or make bench-etcd
#
#   --rounds R     rounds; each runs every way at every client count, the order of the
#                  ways rotating (default 5)
#   --clients L    the client counts (threads), quoted, space-separated (default "1 8 64")
#   --pairs N      acquire+release pairs per run, shared among the clients, at least 10
#                  per client (default 400)
#
# Environment: BUILD_DIR (default build/release), BENCH_ETCD (default
# $BUILD_DIR/bench/etcd/bench_etcd), ETCD_BIN, ETCDCTL_BIN. bench_etcd.c says what each
# way does. Without etcd, or without bench_etcd (libband-etcd not built), it says so
# and exits 0, so `make bench` works on a machine without etcd. The cluster is stopped
# and its data removed however the script ends. Every run goes to $BUILD_DIR/bench/etcd.tsv.
set -u
export LC_ALL=C
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-build/release}
BENCH_ETCD=${BENCH_ETCD:-$BUILD_DIR/bench/etcd/bench_etcd}
rounds=5
clients="1 8 64"
pairs=400
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds R] [--clients \"1 8 64\"] [--pairs N]" >&2; exit 2 ;;
    esac
done
if ! command -v "${ETCD_BIN:-etcd}" >/dev/null 2>&1 || ! command -v "${ETCDCTL_BIN:-etcdctl}" >/dev/null 2>&1; then
    echo "bench-etcd: etcd or etcdctl is not installed (Debian: etcd-server etcd-client): skipped"
    exit 0
fi
if [ ! -x "$BENCH_ETCD" ]; then
    echo "bench-etcd: $BENCH_ETCD was not built (it needs libband-etcd: libcurl and jansson): skipped"
    exit 0
fi

T=$(mktemp -d)
. "$top/tests/etcd/lib.sh"
trap 'cluster_stop; rm -rf "$T"' EXIT
cluster_start "$T/cluster" || exit 1
echo "bench-etcd: cluster $ENDPOINTS; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
tsv=$BUILD_DIR/bench/etcd.tsv
mkdir -p "$(dirname "$tsv")"
echo -e "round\tway\tclients\tpairs\tseconds\tpairs_per_s\tmedian_us\tp99_us\trequests_per_pair" >"$tsv"

ways=(bare txn band lock)
for ((r = 1; r <= rounds; r++)); do
    for c in $clients; do
        n=$((pairs / c))
        [ "$n" -ge 10 ] || n=10
        for ((k = 0; k < 4; k++)); do
            way=${ways[$(((r + k) % 4))]}
            line=$("$BENCH_ETCD" -e "$ENDPOINTS" -m "$way" -c "$c" -n "$n") || {
                echo "bench-etcd: $way with $c clients failed" >&2
                exit 1
            }
            echo "$line" | awk -v r="$r" '{ printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r, $1, $2, $3, $4, $5, $6, $7, $8 }' >>"$tsv"
        done
    done
    echo "bench-etcd: round $r/$rounds done"
done

echo
echo "acquire+release pairs, median of $rounds rounds (band: one band_etcd client per thread,"
echo "its own budget, uncontended; bare: put + delete of a key through the JSON gateway;"
echo "txn: band's own fast-path transaction + delete, sent bare; lock: /v3/lock/lock +"
echo "/v3/lock/unlock through the gateway); cost = time per pair / bare's"
awk -F'\t' '
    NR == 1 { next }
    { k = $2 SUBSEP $3; n[k]++; tp[k, n[k]] = $6; md[k, n[k]] = $7; p99[k, n[k]] = $8; rq[k, n[k]] = $9
      if (!($3 in seen)) { seen[$3] = 1; cl[++nc] = $3 } }
    function med(a, k, cnt,    i, j, t, v) {
        for (i = 1; i <= cnt; i++) v[i] = a[k, i] + 0
        for (i = 2; i <= cnt; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
    }
    END {
        printf "%-8s %-5s %10s %11s %11s %9s %8s %8s\n", "clients", "way", "pairs/s", "median us", "p99 us", "req/pair", "cost", "latency"
        for (i = 1; i <= nc; i++) {
            c = cl[i]; b = "bare" SUBSEP c
            bt = med(tp, b, n[b]); bm = med(md, b, n[b])
            split("bare txn band lock", w, " ")
            for (j = 1; j <= 4; j++) {
                k = w[j] SUBSEP c
                if (!n[k]) continue
                t = med(tp, k, n[k]); m = med(md, k, n[k]); p = med(p99, k, n[k]); q = med(rq, k, n[k])
                printf "%-8s %-5s %10.1f %11.1f %11.1f %9.2f %7.2fx %7.2fx\n", c, w[j], t, m, p, q, bt / t, m / bm
            }
        }
    }' "$tsv"
echo
echo "req/pair: HTTP requests sent per pair (band: its client's counter, lease renewals"
echo "included); cost: bare pairs/s over the way's (1.00x is the physical limit); latency:"
echo "the median pair over bare's. Every run: $tsv"
