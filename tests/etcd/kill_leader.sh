#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kill_leader.sh ETCD_WORKER ETCD_CHECK - the cluster's leader is killed under load and the
# budget still never grants more than its capacity.
#
# 3 processes run random acquire/release loops (etcd_worker). Twice, after 3 s of load, the
# leader (etcdctl endpoint status, through the harness) is SIGKILLed, a new one must be
# elected, the load goes on 3 s more and the killed member is started again. Then the
# workers are told to stop (SIGTERM; each is bounded by 60 s anyway). They must come
# through (BAND_EUNAVAIL or BAND_ESTALE during the elections is allowed; nothing else), go
# on granting after the last election, and etcd_check proves conservation over the whole
# history.
set -u
export LC_ALL=C
WORKER=$1
CHECK=$2
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
NAME=kill-leader-$$
pids=()
for p in 1 2 3; do
    "$WORKER" -e "$ENDPOINTS" -n "$NAME" -s "$((100 + p))" -o 1000000 -T 60 -c 10 -C 8:12 -m 4 \
        -l "$T/w$p.log" >"$T/w$p.out" 2>"$T/w$p.err" &
    pids+=("$!")
    track "$!"
done

have_leader() { cluster_leader >/dev/null; }
kills=0
for round in 1 2; do
    sleep 3
    wait_for 10 have_leader || fail "no leader before kill $round"
    leader=$(cluster_leader)
    member_kill "$leader"
    kills=$((kills + 1))
    echo "kill $round: member $leader (the leader) killed at $(date +%T.%N)"
    wait_for 10 have_leader || fail "no new leader after kill $round"
    echo "kill $round: member $(cluster_leader) leads"
    after_kill=$(python3 -c 'import time; print(time.monotonic_ns())')
    sleep 3
    member_start "$leader" || fail "member $leader did not come back"
done
kill -TERM "${pids[@]}"
for p in 1 2 3; do
    wait "${pids[$((p - 1))]}" || fail "worker $p exited $?"
    cat "$T/w$p.out"
done
late=$(awk -v t="$after_kill" '$1 == "G" && $5 > t { n++ } END { print n + 0 }' "$T"/w*.log)
echo "grants after the last kill's election: $late"
[ "$late" -gt 0 ] || fail "nothing was granted after the last leader was killed"
wait_for 20 cluster_healthy || fail "the cluster did not heal"
wait_queue_empty "$NAME"
"$CHECK" -e "${MEMBER_URL[$(cluster_leader)]}" -n "$NAME" "$T"/w*.log || fail "the check failed"
echo "kill_leader: ok ($kills leaders killed)"
