#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh - acquire+release on a private 3-member etcd cluster: libband-etcd beside the bare
# cost of two requests through the same HTTP/JSON path (a put and a delete), beside the
# same put sent as a transaction without a compare, beside the library's own fast-path
# transaction and delete sent bare, and beside etcd's lock service.
# Prints a table of medians over rounds, with the ratios to the bare put and transaction.
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

ways=(bare tput txn band lock)
nways=${#ways[@]}
for ((r = 1; r <= rounds; r++)); do
    for c in $clients; do
        n=$((pairs / c))
        [ "$n" -ge 10 ] || n=10
        for ((k = 0; k < nways; k++)); do
            way=${ways[$(((r + k) % nways))]}
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
echo "tput: the same put as a transaction without a compare + delete; txn: band's own"
echo "fast-path transaction + delete, sent bare; lock: /v3/lock/lock + /v3/lock/unlock"
echo "through the gateway)"
# Every ratio is taken within a round (its ways at one client count run seconds apart)
# and the median taken over the rounds, so a change in the machine's load between rounds
# falls on both sides of each ratio.
awk -F'\t' '
    NR == 1 { next }
    { k = $2 SUBSEP $3; n[k]++; tp[k, n[k]] = $6; md[k, n[k]] = $7; p99[k, n[k]] = $8; rq[k, n[k]] = $9
      rtp[$1, $2, $3] = $6; rmd[$1, $2, $3] = $7; if ($1 > nr) nr = $1
      if (!($3 in seen)) { seen[$3] = 1; cl[++nc] = $3 } }
    function med(a, k, cnt,    i, j, t, v) {
        for (i = 1; i <= cnt; i++) v[i] = a[k, i] + 0
        for (i = 2; i <= cnt; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
    }
    # the median over rounds of base pairs/s over way pairs/s (or, lat, way latency over base)
    function ratio(way, base, c, lat,    r, cnt, v) {
        cnt = 0
        for (r = 1; r <= nr; r++) {
            if (!((r, way, c) in rtp) || !((r, base, c) in rtp)) continue
            v[1, ++cnt] = lat ? rmd[r, way, c] / rmd[r, base, c] : rtp[r, base, c] / rtp[r, way, c]
        }
        return cnt ? med(v, 1, cnt) : 0
    }
    END {
        printf "%-8s %-5s %10s %11s %11s %9s %8s %8s %8s\n", "clients", "way", "pairs/s", "median us", "p99 us", "req/pair", "cost", "vs txn", "latency"
        for (i = 1; i <= nc; i++) {
            c = cl[i]
            split("bare tput txn band lock", w, " ")
            for (j = 1; j <= 5; j++) {
                k = w[j] SUBSEP c
                if (!n[k]) continue
                t = med(tp, k, n[k]); m = med(md, k, n[k]); p = med(p99, k, n[k]); q = med(rq, k, n[k])
                printf "%-8s %-5s %10.1f %11.1f %11.1f %9.2f %7.2fx %7.2fx %7.2fx\n", c, w[j], t, m, p, q,
                    ratio(w[j], "bare", c, 0), ratio(w[j], "txn", c, 0), ratio(w[j], "bare", c, 1)
            }
        }
    }' "$tsv"
echo
echo "req/pair: HTTP requests sent per pair (band: its client's counter, lease renewals"
echo "included); cost: bare pairs/s over the way's; vs txn: txn pairs/s over the way's"
echo "(one compare-and-put transaction per grant and one delete per release is the least a"
echo "safe grant can be: the target is band within 1.20x of it); latency: the median pair"
echo "over bare's. Every ratio is the median over rounds of the ratio within a round."
echo "Every run: $tsv"
