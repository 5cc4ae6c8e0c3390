#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kill_holder.sh ETCD_HOLD [ROUNDS] - a SIGKILLed holder's units come back within its
# lease's TTL + 1 s.
#
# Each round (default 3): holder A takes both units of a budget under a 2 s lease, B
# queues for them, A is SIGKILLed; B's grant must come at most TTL + 1 s after the kill
# (measured from just before the kill to B's grant, both CLOCK_REALTIME on this host).
# The server expires the lease between TTL * 2/3 and TTL after the kill (A renewed it
# every TTL/3), so the bound leaves the server's expiry sweep about a second.
set -u
export LC_ALL=C
HOLD=$1
ROUNDS=${2:-3}
T=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'cluster_stop; rm -rf "$T"' EXIT

fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.out "$T"/*.err; do
        [ -s "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

cluster_start "$T/cluster" || fail "no cluster"
TTL=2
BOUND_MS=$(((TTL + 1) * 1000))
worst=0
for ((r = 1; r <= ROUNDS; r++)); do
    NAME=kill-$$-$r
    holder_start a$r "$HOLD" -e "$ENDPOINTS" -n "$NAME" -c 2 -u 2 -t $TTL
    wait_for 10 has_line "$T/a$r.out" '^granted ' || fail "round $r: A was not granted"
    holder_start b$r "$HOLD" -e "$ENDPOINTS" -n "$NAME" -c 2 -u 2 -t $TTL
    wait_for 10 has_line "$T/b$r.out" '^pending ' || fail "round $r: B did not queue"
    killed=$(now_ns)
    kill -KILL "${HOLDER_PID[a$r]}"
    wait_for 10 has_line "$T/b$r.out" '^granted ' || fail "round $r: B was not granted"
    at=$(field "$T/b$r.out" granted at)
    ms=$(((at - killed) / 1000000))
    echo "round $r: units back $ms ms after the SIGKILL (bound $BOUND_MS ms)"
    [ "$ms" -le "$BOUND_MS" ] || fail "round $r: $ms ms > TTL + 1 s = $BOUND_MS ms"
    [ "$ms" -ge 0 ] || fail "round $r: granted before the kill"
    [ "$ms" -gt "$worst" ] && worst=$ms
    holder_say b$r quit
    wait "${HOLDER_PID[b$r]}" || fail "round $r: B exited $?"
done
echo "kill_holder: ok, worst $worst ms over $ROUNDS rounds (bound $BOUND_MS ms)"
