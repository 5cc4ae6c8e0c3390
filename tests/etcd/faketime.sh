#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# faketime.sh ETCD_HOLD ETCD_PROBE [LIBFAKETIME] - clients whose clocks are shifted (libfaketime) behave
# as unshifted ones: the lease lives on the server's clock.
#
# Holder A runs a year ahead (FAKETIME='+1y', both its wall and monotonic clocks),
# waiter B 45 days ahead. A is granted and its lease kept alive: for 3 TTLs its token stays
# valid at the resource (an unshifted etcd_probe), its renewals count up and it loses
# nothing. B queues behind it. A is SIGSTOPped: B is granted within TTL + 1 s (expiry by
# the server only); after SIGCONT A is told its lease ended. Every wait is bounded.
# The holders run with LD_PRELOAD of libfaketimeMT and $FAKETIME (the faketime wrapper
# would run them as its children, and the signals must reach the holders themselves).
set -u
export LC_ALL=C
HOLD=$1
PROBE=$2
FAKELIB=${3:-}
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

if [ -z "$FAKELIB" ]; then
    for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 \
        /usr/local/lib/faketime/libfaketimeMT.so.1; do
        [ -f "$f" ] && FAKELIB=$f && break
    done
fi
[ -f "$FAKELIB" ] || { echo "libfaketimeMT not found: skipped"; exit 0; }
cluster_start "$T/cluster" || fail "no cluster"
NAME=faketime-$$
TTL=2

holder_start a env LD_PRELOAD="$FAKELIB" FAKETIME='+1y' "$HOLD" -e "$ENDPOINTS" -n "$NAME" -c 1 -u 1 -t $TTL -H shifted-a
wait_for 10 has_line "$T/a.out" '^granted ' || fail "the shifted holder was not granted"
TA=$(field "$T/a.out" granted token)
LA=$(field "$T/a.out" granted lease)
at=$(field "$T/a.out" granted at)
shift_s=$(((at - $(now_ns)) / 1000000000))
echo "A granted token $TA under lease $LA; its clock is ${shift_s} s ahead"
[ "$shift_s" -gt 300 ] || fail "A's clock is not shifted (${shift_s} s): faketime did not apply"

holder_start b env LD_PRELOAD="$FAKELIB" FAKETIME='+45d' "$HOLD" -e "$ENDPOINTS" -n "$NAME" -c 1 -u 1 -t $TTL -H shifted-b
wait_for 10 has_line "$T/b.out" '^pending ' || fail "B did not queue behind A"

# 3 TTLs: the token stays valid (checked every 250 ms) and A renews its lease.
end=$(($(now_ns) + 3 * TTL * 1000000000))
checks=0
while [ "$(now_ns)" -lt "$end" ]; do
    out=$("$PROBE" -e "$ENDPOINTS" -n "$NAME" -k "$TA") || fail "A's token refused after $checks checks: $out"
    checks=$((checks + 1))
    sleep 0.25
done
holder_say a stats
wait_for 10 has_line "$T/a.out" '^stats ' || fail "A's stats did not answer"
ka=$(field "$T/a.out" stats keepalives)
lost=$(field "$T/a.out" stats lost)
echo "A's token valid at $checks checks over $((3 * TTL)) s; renewals $ka, leases lost $lost"
[ "$lost" = 0 ] || fail "the shifted holder lost its lease while healthy"
[ "$ka" -ge 4 ] || fail "the shifted holder renewed its lease $ka times in 3 TTLs"
has_line "$T/b.out" '^granted ' && fail "B was granted while A held"

kill -STOP "${HOLDER_PID[a]}"
stopped=$(now_ns)
wait_for 10 has_line "$T/b.out" '^granted ' || fail "B was not granted after A stopped"
ms=$((($(now_ns) - stopped) / 1000000))
echo "B granted $ms ms after A stopped (bound $(((TTL + 1) * 1000)) ms)"
[ "$ms" -le $(((TTL + 1) * 1000)) ] || fail "expiry took $ms ms"
[ "$ms" -ge $((TTL * 1000 / 2)) ] || fail "A's lease ended $ms ms after the stop: before the server's TTL"
kill -CONT "${HOLDER_PID[a]}"
wait_for 10 has_line "$T/a.out" "^lost lease=$LA " || fail "A was not told its lease ended"
out=$("$PROBE" -e "$ENDPOINTS" -n "$NAME" -k "$TA")
[ "$out" = BAND_ESTALE ] || fail "A's token after expiry: $out"
holder_say a quit
holder_say b quit
wait "${HOLDER_PID[a]}" || fail "A exited $?"
wait "${HOLDER_PID[b]}" || fail "B exited $?"
echo "faketime: ok"
