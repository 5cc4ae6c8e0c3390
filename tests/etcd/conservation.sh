#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# conservation.sh ETCD_WORKER ETCD_CHECK - random operations from several processes on one
# budget never grant more than its capacity.
#
# PROCS processes (default 4) run OPS random operations each (default 2500: 10^4 in all;
# etcd_worker: acquire of random weights, try, async with cancel, release, capacity
# changes between 8 and 16), each bounded by SECONDS (default 75: on a loaded
# machine the processes may stop short of OPS; at least a fifth of them must run), logging every grant and
# release. etcd_check then replays the cluster's history of the budget in revision order
# and matches the logs to it (tests/etcd/etcd_check.c has the checks).
#
# A longer run: CONSERVATION_PROCS=8 CONSERVATION_OPS=25000 CONSERVATION_SECONDS=900 \
#     bash tests/etcd/conservation.sh build/h/tests/etcd_worker build/h/tests/etcd_check
set -u
export LC_ALL=C
WORKER=$1
CHECK=$2
PROCS=${CONSERVATION_PROCS:-4}
OPS=${CONSERVATION_OPS:-2500}
SECONDS_MAX=${CONSERVATION_SECONDS:-75}
T=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'cluster_stop; rm -rf "$T"' EXIT

fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.err; do
        [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

cluster_start "$T/cluster" || fail "no cluster"
NAME=conservation-$$
start=$(now_ns)
pids=()
for ((p = 1; p <= PROCS; p++)); do
    "$WORKER" -e "$ENDPOINTS" -n "$NAME" -s "$p" -o "$OPS" -T "$SECONDS_MAX" -c 12 -C 8:16 -m 6 \
        -l "$T/w$p.log" >"$T/w$p.out" 2>"$T/w$p.err" &
    pids+=("$!")
    track "$!"
done
for ((p = 1; p <= PROCS; p++)); do
    wait "${pids[$((p - 1))]}" || fail "worker $p exited $?"
    cat "$T/w$p.out"
done
echo "workers done in $((($(now_ns) - start) / 1000000)) ms"
total=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "ops") s += $(i + 1) } END { print s + 0 }' "$T"/w*.out)
echo "operations: $total of $((PROCS * OPS))"
[ "$total" -ge $((PROCS * OPS / 5)) ] || fail "only $total operations in $SECONDS_MAX s"
wait_queue_empty "$NAME"
"$CHECK" -e "${MEMBER_URL[1]}" -n "$NAME" "$T"/w*.log || fail "the check failed"
echo "conservation: ok"
