#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shm_tool.sh BAND_SHM SHM_HOLD - band-shm end to end.
#
# Every segment and file this script makes under /dev/shm is named band-test-<pid>-*,
# and the EXIT trap kills the helper processes and removes those names however it ends.
# Its list commands name that pattern, so they never open another program's segments
# (an open takes a handle record there for a moment).
# JSON is checked with jq when installed (fields and values), else only for validity
# with python3 -m json.tool. Bounded: every wait polls at most 5 s.
set -u
export LC_ALL=C

BAND_SHM=$1
SHM_HOLD=$2
# The layout version the library writes, from its header, so the expected output follows
# a change of layout.
V=$(sed -n 's/^#define BAND_SHM_VERSION \([0-9][0-9]*\)$/\1/p' \
    "$(dirname "$0")/../../include/band/shm.h")
[ -n "$V" ] && [ "$V" -lt 255 ] || { echo "FAIL: no BAND_SHM_VERSION in include/band/shm.h" >&2; exit 1; }
P="band-test-$$"
SEG="/$P-seg"
T=$(mktemp -d)
PIDS=()
FAILS=0

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    rm -f /dev/shm/"$P"-*
    rm -rf "$T"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    echo "--- stdout:" >&2
    cat "$T/out" >&2
    echo "--- stderr:" >&2
    cat "$T/err" >&2
    FAILS=$((FAILS + 1))
    exit 1
}

# run EXPECTED_STATUS ARGS... - band-shm ARGS, stdout in $T/out, stderr in $T/err.
run() {
    local want=$1
    shift
    "$BAND_SHM" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "band-shm $* exited $rc, expected $want"
}

# has FILE REGEX - the file has a line matching the extended regex.
has() {
    grep -Eq -- "$2" "$1" || fail "$1 lacks /$2/"
}

lacks() {
    ! grep -Eq -- "$2" "$1" || fail "$1 has /$2/"
}

HAVE_JQ=0
command -v jq >/dev/null 2>&1 && HAVE_JQ=1
if [ "$HAVE_JQ" -eq 0 ]; then
    echo "jq not found: JSON output is checked for validity only"
fi

# valid FILE - the file is one JSON document.
valid() {
    if [ "$HAVE_JQ" -eq 1 ]; then
        jq -e . "$1" >/dev/null || fail "$1 is not valid JSON"
    else
        python3 -m json.tool "$1" >/dev/null || fail "$1 is not valid JSON"
    fi
}

# jeq FILE FILTER EXPECTED - jq -r FILTER on FILE gives exactly EXPECTED (skipped without jq).
jeq() {
    [ "$HAVE_JQ" -eq 1 ] || return 0
    local got
    got=$(jq -r "$2" "$1") || fail "jq '$2' failed on $1"
    [ "$got" = "$3" ] || fail "jq '$2' on $1 gave '$got', expected '$3'"
}

# start_helper FILE ARGS... - shm_hold ARGS in the background, its stdout in FILE; sets HPID.
start_helper() {
    local file=$1
    shift
    "$SHM_HOLD" "$@" >"$file" 2>"$file.err" &
    HPID=$!
    PIDS+=("$HPID")
}

# wait_line FILE TEXT - wait up to 5 s for TEXT in FILE.
wait_line() {
    local i
    for ((i = 0; i < 100; i++)); do
        grep -qx -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    cat "$1.err" >&2
    fail "no '$2' from the helper within 5 s"
}

# show_until FILTER EXPECTED - poll show --json until the filter gives EXPECTED (5 s).
show_until() {
    local i got
    for ((i = 0; i < 100; i++)); do
        "$BAND_SHM" show "$SEG" --json >"$T/out" 2>"$T/err"
        got=$(jq -r "$1" "$T/out" 2>/dev/null)
        [ "$got" = "$2" ] && return 0
        sleep 0.05
    done
    fail "show: '$1' gave '$got', expected '$2' within 5 s"
}

kill_helper() {
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# --- usage: status 2 and a message --------------------------------------------------------
run 0 --help
has "$T/out" '^usage: band-shm COMMAND'
run 0 show --help
has "$T/out" '^usage: band-shm COMMAND'
run 2
has "$T/err" 'a command is needed'
run 2 frobnicate
has "$T/err" "unknown command 'frobnicate'"
run 2 create "$SEG"
has "$T/err" 'at least one --bound'
run 2 create "$SEG" --bound connections
has "$T/err" 'expected BOUND=CAP'
run 2 create "$SEG" --bound connections=4K
has "$T/err" 'the capacity is a number'
run 2 create "$SEG" --bound memory=1X,bytes
run 2 create "$SEG" --bound memory=1M,kilos
has "$T/err" 'the kind is bytes or units'
run 2 create "$SEG" --bound a=1 --mode 0999
has "$T/err" 'octal mode'
run 2 create "$SEG" --bound a=1 --mode 4755
run 2 create "$SEG" --bound a=1 --max-handles 5000
run 2 create "$SEG" --bound a=1 --bound b=1 --bound c=1 --bound d=1 --bound e=1 \
    --bound f=1 --bound g=1 --bound h=1 --bound i=1
has "$T/err" 'at most 8 bounds'
run 2 create "/$P/x" --bound a=1
has "$T/err" 'bad segment name'
run 2 show
has "$T/err" 'show: expected NAME'
run 2 show "$SEG" extra
run 2 list --bogus
has "$T/err" 'unknown option'
run 2 grow "$SEG" connections
run 2 grow "$SEG" connections -1
[ ! -e "/dev/shm/$P-seg" ] || fail "a usage error created the segment"

# --- create ------------------------------------------------------------------------------
run 0 create "$SEG" --bound connections=4 --bound memory=1M,bytes --mode 0640 \
    --max-handles 16 --max-waiters 32
[ -z "$(cat "$T/out")" ] || fail "create printed something"
[ "$(stat -c %a "/dev/shm/$P-seg")" = 640 ] || fail "mode is $(stat -c %a "/dev/shm/$P-seg")"
run 1 create "$SEG" --bound a=1
has "$T/err" "^band-shm: create $SEG: .*\\(BAND_EEXIST\\)$"
# What only the library refuses fails with its error, and leaves nothing behind.
run 1 create "/$P-dup" --bound a=1 --bound a=2
has "$T/err" "^band-shm: create /$P-dup: invalid argument \\(BAND_EINVAL\\)\$"
[ ! -e "/dev/shm/$P-dup" ] || fail "a refused create left /dev/shm/$P-dup"
# The leading slash is optional.
run 0 create "$P-plain" --bound 'q"uote\back=7'

# --- list --------------------------------------------------------------------------------
run 0 list "$P-*"
has "$T/out" '^NAME +VERSION +SIZE +HANDLES +WAITERS +BOUNDS'
has "$T/out" "^$SEG +$V +[0-9]+ +0 +0 +connections=4/4 memory=1048576/1048576B\$"
has "$T/out" "^/$P-plain +$V "
run 0 list --json "/$P-*"
cp "$T/out" "$T/list.json"
valid "$T/list.json"
J=".segments[] | select(.name == \"$SEG\")"
jeq "$T/list.json" "$J | .version" "$V"
jeq "$T/list.json" "$J | .handles" 0
jeq "$T/list.json" "$J | .waiting" 0
jeq "$T/list.json" "$J | .closed" false
jeq "$T/list.json" "$J | .bounds | length" 2
jeq "$T/list.json" "$J | .bounds[0] | [.name, .kind, .capacity, .available] | join(\" \")" \
    "connections units 4 4"
jeq "$T/list.json" "$J | .bounds[1] | [.name, .kind, .capacity, .available] | join(\" \")" \
    "memory bytes 1048576 1048576"
jeq "$T/list.json" ".segments[] | select(.name == \"/$P-plain\") | .bounds[0].name" \
    'q"uote\back'

# Patterns pick the segments (without one, list shows and opens every band segment of
# the host; this test never opens another program's).
run 0 list "$P-pl*"
has "$T/out" "^/$P-plain "
lacks "$T/out" "^$SEG "
run 0 list "/$P-nothing-*"
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "list of no match printed more than its header"

# --- show, idle --------------------------------------------------------------------------
run 0 show "$SEG"
has "$T/out" "^$SEG: version $V, [0-9]+ bytes, open\$"
has "$T/out" '^  handles 0 \(max 16\), waiting 0 \(max 32\)'
has "$T/out" '^connections +units +4 +4 +0 +0 +0 +0$'
has "$T/out" '^memory +bytes +1048576 +1048576 +0 +0 +0 +0$'
has "$T/out" '^holders: 0$'
has "$T/out" '^waiters \(first in line first\): 0$'
run 0 show "$SEG" --json
valid "$T/out"
jeq "$T/out" '.max_handles' 16
jeq "$T/out" '.max_waiters' 32
jeq "$T/out" '.holders | length' 0
jeq "$T/out" '.waiters | length' 0
jeq "$T/out" '.bounds[1].counters.reclaimed' 0

# --- a holder that is SIGKILLed: show lists it dead, reclaim returns its units ------------
start_helper "$T/h1" "$SEG" connections=3 memory=524288
H1=$HPID
wait_line "$T/h1" held
run 0 show "$SEG" --json
valid "$T/out"
jeq "$T/out" '.handles' 1
jeq "$T/out" '.holders | length' 1
jeq "$T/out" '.holders[0].pid' "$H1"
jeq "$T/out" '.holders[0].alive' true
jeq "$T/out" '.holders[0].held.connections' 3
jeq "$T/out" '.holders[0].held.memory' 524288
jeq "$T/out" '.bounds[0].available' 1
jeq "$T/out" '.bounds[0].in_use' 3
jeq "$T/out" '.bounds[1].available' 524288
run 0 show "$SEG"
has "$T/out" "^  PID +ALIVE +connections +memory\$"
has "$T/out" "^  $H1 +yes +3 +524288\$"

kill_helper "$H1"
# band-shm looks without recovering anything, so the dead holder is still listed, with
# its units, until reclaim.
run 0 show "$SEG" --json
valid "$T/out"
jeq "$T/out" '.holders | length' 1
jeq "$T/out" '.holders[0].pid' "$H1"
jeq "$T/out" '.holders[0].alive' false
jeq "$T/out" '.holders[0].held.connections' 3
jeq "$T/out" '.bounds[0].available' 1
run 0 show "$SEG"
has "$T/out" "^  $H1 +dead +3 +524288\$"
run 0 reclaim "$SEG"
has "$T/out" "^$SEG: 1 dead handle recovered \\(1 since creation\\)\$"
run 0 show "$SEG" --json
jeq "$T/out" '.holders | length' 0
jeq "$T/out" '.dead_handles' 1
jeq "$T/out" '[.bounds[] | .available == .capacity and .in_use == 0] | all' true
jeq "$T/out" '.bounds[0].counters.reclaimed' 3
jeq "$T/out" '.bounds[1].counters.reclaimed' 524288
run 0 reclaim "$SEG"
has "$T/out" "^$SEG: 0 dead handles recovered \\(1 since creation\\)\$"

# --- a queued request, in FIFO order behind the head; a holder's death lets it in ---------
start_helper "$T/h2" "$SEG" connections=3
H2=$HPID
wait_line "$T/h2" held
start_helper "$T/w1" --wait "$SEG" connections=2 memory=1024
W1=$HPID
wait_line "$T/w1" waiting
if [ "$HAVE_JQ" -eq 1 ]; then
    show_until '.waiting' 1
    start_helper "$T/w2" --wait "$SEG" connections=1
    W2=$HPID
    wait_line "$T/w2" waiting
    show_until '.waiting' 2
    jeq "$T/out" '.waiters[0].pid' "$W1"
    jeq "$T/out" '.waiters[0].want.connections' 2
    jeq "$T/out" '.waiters[0].want.memory' 1024
    jeq "$T/out" '.waiters[0].async' false
    jeq "$T/out" '.waiters[1].pid' "$W2"
    jeq "$T/out" '.waiters[0].seq < .waiters[1].seq' true
    jeq "$T/out" '.bounds[0].waiters' 2
    jeq "$T/out" '.bounds[0].waiting_units' 3
    # One connection is free, but the head wants two: the second waits behind it.
    jeq "$T/out" '.bounds[0].available' 1
    run 0 show "$SEG"
    has "$T/out" '^waiters \(first in line first\): 2$'
    has "$T/out" "^  [0-9]+ +$W1 +[0-9.]+s +blocking +2 +1024\$"
    # The head dies while it waits: it leaves the queue, the next one gets the free
    # connection, and the one behind keeps its place.
    start_helper "$T/w3" --wait "$SEG" connections=1
    W3=$HPID
    wait_line "$T/w3" waiting
    show_until '.waiting' 3
    jeq "$T/out" '[.waiters[].pid] | map(tostring) | join(" ")' "$W1 $W2 $W3"
    kill_helper "$W1"
    wait_line "$T/w2" granted
    show_until '.waiting' 1
    jeq "$T/out" '.waiters[0].pid' "$W3"
    jeq "$T/out" '.dead_waiters' 1
    jeq "$T/out" '.bounds[0].available' 0
    # The holder dies: a waiter's liveness check recovers it and the last one is granted.
    kill_helper "$H2"
    wait_line "$T/w3" granted
    show_until '.waiting' 0
    jeq "$T/out" '.bounds[0].available' 2
    jeq "$T/out" '.bounds[0].counters.grants' 2
    jeq "$T/out" '.dead_handles' 3
    kill_helper "$W2"
    kill_helper "$W3"
else
    kill_helper "$H2"
    wait_line "$T/w1" granted
    kill_helper "$W1"
fi
run 0 reclaim "$SEG"
run 0 show "$SEG" --json
jeq "$T/out" '[.bounds[] | .available == .capacity] | all' true

# --- an asynchronous request is listed as one, and its wake comes when the holder dies ---
if [ "$HAVE_JQ" -eq 1 ]; then
    run 0 create "/$P-async" --bound slots=1
    start_helper "$T/h5" "/$P-async" slots=1
    H5=$HPID
    wait_line "$T/h5" held
    start_helper "$T/w5" --async "/$P-async" slots=1
    W5=$HPID
    wait_line "$T/w5" waiting
    run 0 show "/$P-async" --json
    jeq "$T/out" '.waiters | length' 1
    jeq "$T/out" '.waiters[0] | [.pid, .async, .want.slots] | map(tostring) | join(" ")' \
        "$W5 true 1"
    run 0 show "/$P-async"
    has "$T/out" "^  [0-9]+ +$W5 +[0-9.]+s +async +1\$"
    kill_helper "$H5"
    wait_line "$T/w5" granted
    kill_helper "$W5"
    run 0 remove "/$P-async"
fi

# --- grow and reduce ---------------------------------------------------------------------
run 0 grow "$SEG" connections 2
has "$T/out" "^$SEG connections: capacity 6, available 6, debt 0\$"
run 0 reduce "$SEG" memory 512K
has "$T/out" "^$SEG memory: capacity 524288, available 524288, debt 0\$"
run 1 reduce "$SEG" connections 7
has "$T/err" "^band-shm: reduce $SEG connections: .*\\(BAND_EINVAL\\)\$"
run 1 grow "$SEG" nosuch 1
has "$T/err" '\(BAND_ENOENT\)$'

# --- a reduction below what is held leaves a debt, which the dead holder's units repay --
run 0 create "/$P-debt" --bound slots=4
start_helper "$T/h3" "/$P-debt" slots=3
H3=$HPID
wait_line "$T/h3" held
run 0 reduce "/$P-debt" slots 2
has "$T/out" "^/$P-debt slots: capacity 2, available 0, debt 1\$"
kill_helper "$H3"
run 0 reclaim "/$P-debt"
has "$T/out" "^/$P-debt: 1 dead handle recovered \\(1 since creation\\)\$"
run 0 show "/$P-debt" --json
jeq "$T/out" '.bounds[0] | [.capacity, .available, .debt, .in_use] | join(" ")' "2 2 0 0"
jeq "$T/out" '.bounds[0].counters.reclaimed' 3
run 0 remove "/$P-debt"

# --- every handle record taken: band-shm, which takes none, still shows and reclaims ----
run 0 create "/$P-full" --bound slots=1 --max-handles 1
start_helper "$T/h4" "/$P-full" slots=1
H4=$HPID
wait_line "$T/h4" held
run 0 show "/$P-full" --json
jeq "$T/out" '.handles' 1
jeq "$T/out" '.holders[0].pid' "$H4"
run 0 list "$P-*"
has "$T/out" "^/$P-full +$V "
kill_helper "$H4"
run 0 show "/$P-full" --json
jeq "$T/out" '.holders[0].alive' false
jeq "$T/out" '.bounds[0].available' 0
run 0 reclaim "/$P-full"
has "$T/out" "^/$P-full: 1 dead handle recovered \\(1 since creation\\)\$"
run 0 show "/$P-full" --json
jeq "$T/out" '.bounds[0].available' 1
jeq "$T/out" '.dead_handles' 1
run 0 remove "/$P-full"

# --- error paths: a missing segment, a foreign file, a damaged segment --------------------
run 1 show "/$P-missing"
has "$T/err" "^band-shm: show /$P-missing: no such object \\(BAND_ENOENT\\)\$"
run 1 reclaim "/$P-missing"
has "$T/err" '\(BAND_ENOENT\)$'
run 1 remove "/$P-missing"
has "$T/err" '\(BAND_ENOENT\)$'

printf 'not a band segment, only some bytes\n' >"/dev/shm/$P-junk"
run 1 show "/$P-junk"
has "$T/err" "^band-shm: show /$P-junk: .*\\(BAND_EBADSEG\\)\$"
run 1 remove "/$P-junk"
has "$T/err" '\(BAND_EBADSEG\)$'
[ -e "/dev/shm/$P-junk" ] || fail "remove removed a file that is no segment"

# A copy of the segment cut short is a damaged segment, listed with its error; its name
# holds a byte that is not UTF-8, which the JSON must still carry validly.
BADNAME=$(printf '%s-damaged-\377' "$P")
head -c 64 "/dev/shm/$P-seg" >"/dev/shm/$BADNAME"
run 0 list "$P-*"
lacks "$T/out" "^/$P-junk "
has "$T/out" "^/$P-damaged-.* +- +- +- +- +error: BAND_EBADSEG "
has "$T/out" "^$SEG +$V "
run 0 list --json "/$P-*"
valid "$T/out"
jeq "$T/out" "[.segments[] | select(.name == \"/$P-junk\")] | length" 0
jeq "$T/out" "[.segments[] | select(.name | startswith(\"/$P-damaged-\"))][0].error.code" \
    BAND_EBADSEG
jeq "$T/out" "[.segments[] | select(.name | startswith(\"/$P-damaged-\"))][0].name" \
    "/$P-damaged-ÿ"
run 0 remove "/$BADNAME"

# A segment of another layout version: the version is the 32-bit word after the 8-byte
# magic (the one part of the layout every version keeps), little-endian: its low byte
# set to the next version. Listed with its error.
cp "/dev/shm/$P-seg" "/dev/shm/$P-v9"
printf "\\$(printf '%03o' $((V + 1)))" | dd of="/dev/shm/$P-v9" bs=1 seek=8 conv=notrunc status=none
run 1 show "/$P-v9"
has "$T/err" '\(BAND_EVERSION\)$'
run 0 list "$P-*"
has "$T/out" "^/$P-v9 +- +- +- +- +error: BAND_EVERSION "
run 0 remove "/$P-v9"
[ ! -e "/dev/shm/$BADNAME" ] || fail "the damaged segment was not removed"

# --- remove ------------------------------------------------------------------------------
run 0 remove "$SEG"
[ ! -e "/dev/shm/$P-seg" ] || fail "remove left /dev/shm/$P-seg"
run 1 show "$SEG"
has "$T/err" '\(BAND_ENOENT\)$'
run 0 remove "$P-plain"

echo "shm_tool: all checks passed"
