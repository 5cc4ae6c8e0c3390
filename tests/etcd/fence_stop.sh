#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fence_stop.sh ETCD_HOLD ETCD_PROBE - a holder stopped past its lease is fenced off.
#
# Holder A takes the only unit of a budget (lease TTL 2 s) and its token is checked by the
# resource (etcd_probe, a client of its own): valid. A is SIGSTOPped; holder B queues and
# is granted once the server expired A's lease, with a larger token; the resource now
# refuses A's token (BAND_ESTALE) and accepts B's. After SIGCONT, A is told through
# on_lost, its release answers BAND_ESTALE and its own check too. Every wait is bounded.
set -u
export LC_ALL=C
HOLD=$1
PROBE=$2
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
NAME=fence-$$
TTL=2

holder_start a "$HOLD" -e "$ENDPOINTS" -n "$NAME" -c 1 -u 1 -t $TTL -H holder-a
wait_for 10 has_line "$T/a.out" '^granted ' || fail "A was not granted"
TA=$(field "$T/a.out" granted token)
LA=$(field "$T/a.out" granted lease)
out=$("$PROBE" -e "$ENDPOINTS" -n "$NAME" -k "$TA") || fail "A's token $TA refused while held: $out"
[ "$out" = BAND_OK ] || fail "probe printed $out"

kill -STOP "${HOLDER_PID[a]}"
stopped=$(now_ns)
holder_start b "$HOLD" -e "$ENDPOINTS" -n "$NAME" -c 1 -u 1 -t $TTL -H holder-b
wait_for 10 has_line "$T/b.out" '^granted ' || fail "B was not granted after A stopped"
TB=$(field "$T/b.out" granted token)
waited=$((($(now_ns) - stopped) / 1000000))
echo "A stopped with token $TA (lease $LA); B granted token $TB after ${waited} ms"
[ "$TB" -gt "$TA" ] || fail "B's token $TB is not above A's $TA"

out=$("$PROBE" -e "$ENDPOINTS" -n "$NAME" -k "$TA")
[ $? -eq 1 ] && [ "$out" = BAND_ESTALE ] || fail "A's stale token $TA: $out, expected BAND_ESTALE"
out=$("$PROBE" -e "$ENDPOINTS" -n "$NAME" -k "$TB") || fail "B's token $TB refused: $out"

kill -CONT "${HOLDER_PID[a]}"
wait_for 10 has_line "$T/a.out" "^lost lease=$LA " || fail "A was not told its lease $LA ended"
holder_say a release
wait_for 10 has_line "$T/a.out" '^released ' || fail "A's release did not answer"
has_line "$T/a.out" '^released BAND_ESTALE$' || fail "A's release did not answer BAND_ESTALE"
holder_say a check
wait_for 10 has_line "$T/a.out" '^check ' || fail "A's check did not answer"
has_line "$T/a.out" '^check BAND_ESTALE$' || fail "A's own check did not answer BAND_ESTALE"
holder_say b check
wait_for 10 has_line "$T/b.out" '^check ' || fail "B's check did not answer"
has_line "$T/b.out" '^check BAND_OK$' || fail "B's check did not answer BAND_OK"
holder_say a quit
holder_say b quit
wait "${HOLDER_PID[a]}" || fail "A exited $?"
wait "${HOLDER_PID[b]}" || fail "B exited $?"
echo "fence_stop: ok"
