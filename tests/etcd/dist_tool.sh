#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dist_tool.sh BAND_DIST ETCD_HOLD - band-dist end to end against a private cluster.
#
# Holder A holds 3 of a budget of 5; B waits for 4 and C for 1 behind it (C would fit,
# but never passes B). show (text and --json) must give exactly those fields; set-capacity
# lowers the capacity below what is held (a debt) and raises it so that B is granted;
# revoke removes A's lease, A is told, and C is granted. Then the error paths: a missing
# budget, a revoked lease, bad usage, an unreachable cluster. Every wait is bounded.
set -u
export LC_ALL=C
DIST=$1
HOLD=$2
T=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'cluster_stop; rm -rf "$T"' EXIT

fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/out "$T"/err "$T"/*.out "$T"/*.err; do
        [ -s "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# run STATUS ARGS... - band-dist ARGS, stdout in $T/out, stderr in $T/err.
run() {
    local want=$1
    shift
    "$DIST" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "band-dist $* exited $rc, expected $want"
}

# line N EXPECTED - line N of $T/out, its runs of blanks squeezed, is EXPECTED.
line() {
    local got
    got=$(sed -n "${1}p" "$T/out" | tr -s ' ')
    [ "$got" = "$2" ] || fail "line $1 of the output is '$got', expected '$2'"
}

jeq() {
    local got
    got=$(jq -r "$1" "$T/out") || fail "jq '$1' failed"
    [ "$got" = "$2" ] || fail "jq '$1' gave '$got', expected '$2'"
}

cluster_start "$T/cluster" || fail "no cluster"
E=$ENDPOINTS
NAME=dist-$$

holder_start a "$HOLD" -e "$E" -n "$NAME" -c 5 -u 3 -H holder-a
wait_for 10 has_line "$T/a.out" '^granted ' || fail "A was not granted"
holder_start b "$HOLD" -e "$E" -n "$NAME" -c 5 -u 4 -H holder-b
wait_for 10 has_line "$T/b.out" '^pending ' || fail "B did not queue"
holder_start c "$HOLD" -e "$E" -n "$NAME" -c 5 -u 1 -H holder-c
wait_for 10 has_line "$T/c.out" '^pending ' || fail "C did not queue"
IA=$(field "$T/a.out" granted id)
TA=$(field "$T/a.out" granted token)
LA=$(field "$T/a.out" granted lease)
LB=$(field "$T/b.out" pending lease)
LC=$(field "$T/c.out" pending lease)

run 0 --endpoints "$E" show "$NAME"
has_line "$T/out" "^$NAME: capacity 5, held 3, debt 0, queued 5 \\(revision [0-9]+\\)$" ||
    fail "the header line"
line 2 ""
line 3 "holders: 1"
line 4 " ID HOLDER UNITS LEASE TOKEN"
line 5 " $IA holder-a 3 $LA $TA"
line 6 ""
line 7 "waiters (first in line first): 2"
line 8 " POS ID HOLDER UNITS LEASE CREATED"
has_line "$T/out" "^  0  +$LB-[0-9a-f]+  +holder-b  +4  +$LB  +[0-9]+$" || fail "B is not first in line"
has_line "$T/out" "^  1  +$LC-[0-9a-f]+  +holder-c  +1  +$LC  +[0-9]+$" || fail "C is not second in line"
[ "$(wc -l <"$T/out")" -eq 10 ] || fail "show printed $(wc -l <"$T/out") lines, expected 10"
cb=$(sed -n 9p "$T/out" | awk '{ print $6 }')
cc=$(sed -n 10p "$T/out" | awk '{ print $6 }')
[ "$cb" -lt "$cc" ] && [ "$TA" -lt "$cb" ] || fail "queue order: token $TA, created $cb, $cc"

# The default endpoints come from $BAND_ETCD_ENDPOINTS.
BAND_ETCD_ENDPOINTS=$E "$DIST" show "$NAME" --json >"$T/out" 2>"$T/err" || fail "show --json"
jq -e . "$T/out" >/dev/null || fail "show --json is not JSON"
jeq .name "$NAME"
jeq .capacity 5
jeq .held 3
jeq .debt 0
jeq .queued 5
jeq '.holders | length' 1
jeq '.holders[0].id' "$IA"
jeq '.holders[0].holder' holder-a
jeq '.holders[0].units' 3
jeq '.holders[0].lease' "$LA"
jeq '.holders[0].token' "$TA"
jeq '[.waiters[].holder] | join(",")' holder-b,holder-c
jeq '[.waiters[].units] | join(",")' 4,1
jeq '[.waiters[].lease] | join(",")' "$LB,$LC"
jeq '.waiters[0].token' null

# Lowering below what is held: a debt, nobody granted.
run 0 --endpoints "$E" set-capacity "$NAME" 2
line 1 "$NAME: capacity 2, held 3, debt 1, queued 5"
# Raising to 7: B (3 + 4) is granted, C (3 + 4 + 1 = 8) still waits.
run 0 --endpoints="$E" set-capacity "$NAME" 7
wait_for 10 has_line "$T/b.out" '^granted ' || fail "B was not granted at capacity 7"
TB=$(field "$T/b.out" granted token)
run 0 --endpoints "$E" show "$NAME" --json
jeq .capacity 7
jeq .held 7
jeq .queued 1
jeq '[.holders[].holder] | join(",")' holder-a,holder-b
jeq '[.holders[].token] | join(",")' "$TA,$TB"
jeq '[.waiters[].holder] | join(",")' holder-c
has_line "$T/c.out" '^granted ' && fail "C passed B or was granted above the capacity"

# Revoking A's lease: A is told, its 3 units go to C.
run 0 --endpoints "$E" revoke "$LA"
line 1 "lease $LA revoked"
wait_for 10 has_line "$T/a.out" "^lost lease=$LA " || fail "A was not told its lease was revoked"
wait_for 10 has_line "$T/c.out" '^granted ' || fail "C was not granted after the revoke"
run 0 --endpoints "$E" show "$NAME"
line 1 "$NAME: capacity 7, held 5, debt 0, queued 0 (revision $(sed -n 1p "$T/out" | sed 's/.*revision \([0-9]*\))$/\1/'))"
line 3 "holders: 2"
has_line "$T/out" "^waiters \\(first in line first\\): 0$" || fail "waiters left"
has_line "$T/out" " holder-b +4 " || fail "B not listed"
has_line "$T/out" " holder-c +1 " || fail "C not listed"
! has_line "$T/out" "holder-a" || fail "A still listed"

# Errors.
run 1 --endpoints "$E" revoke "$LA"
has_line "$T/err" "^band-dist: revoke $LA: .*\\(BAND_ENOENT\\)$" || fail "revoke of a revoked lease"
run 1 --endpoints "$E" show nosuch-$$
has_line "$T/err" "^band-dist: show nosuch-$$: .*\\(BAND_ENOENT\\)$" || fail "show of a missing budget"
run 1 --endpoints "$E" set-capacity nosuch-$$ 3
run 2 --endpoints "$E" show
has_line "$T/err" "^band-dist: show: expected NAME$" || fail "usage message"
run 2 --endpoints "$E" show 'bad/name'
run 2 --endpoints "$E" set-capacity "$NAME" 0
run 2 --endpoints "$E" set-capacity "$NAME" 12x
run 2 --endpoints "$E" revoke zz
run 2 --endpoints "$E" revoke 0
run 2 --endpoints "$E" frobnicate
run 2 --endpoints
run 2 --bogus show "$NAME"
run 0 --help
has_line "$T/out" "^usage: band-dist" || fail "--help"
read -r -a spare <<<"$(free_ports 1)"
run 3 --endpoints "http://127.0.0.1:${spare[0]}" show "$NAME"
has_line "$T/err" "\\(BAND_EUNAVAIL\\)$" || fail "an unreachable cluster"

for h in b c; do holder_say $h quit; done
holder_say a quit
for h in a b c; do wait "${HOLDER_PID[$h]}" || fail "holder $h exited $?"; done
echo "dist_tool: ok"
