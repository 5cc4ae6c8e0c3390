# SPDX-License-Identifier: MIT
# tests/etcd/lib.sh - sourced by the etcd fault tests and bench/etcd/run.sh: a private
# 3-member etcd cluster on 127.0.0.1 (through adapters/etcd/tests/etcd_cluster.sh, the
# harness; $BAND_ETCD_CLUSTER_SH overrides its path) and small helpers around it.
#
#   cluster_start DIR        start members 1..3 (data under DIR, free ports), wait until
#                            healthy; sets ENDPOINTS (comma-separated client URLs) and
#                            MEMBER_URL[1..3]. The harness's watchdog stops the cluster if
#                            this shell dies without its EXIT trap.
#   cluster_stop             kill the processes registered with track, stop the cluster
#   cluster_leader           prints the number (1..3) of the member that leads now
#   member_kill N            SIGKILL member N;  member_start N: start it again (same data,
#                            waits until it is healthy)
#   track PID                have cluster_stop kill PID too
#   wait_for SECONDS CMD...  run CMD every 50 ms until it succeeds or SECONDS pass (status 1)
#   now_ns                   CLOCK_REALTIME in nanoseconds
#   free_ports N             N free TCP ports on 127.0.0.1
#
# The scripts call cluster_stop from their EXIT trap, so a failing test leaves nothing
# running.

CLUSTER_SH=${BAND_ETCD_CLUSTER_SH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/adapters/etcd/tests/etcd_cluster.sh}
export ETCD=${ETCD_BIN:-${ETCD:-etcd}}
export ETCDCTL=${ETCDCTL_BIN:-${ETCDCTL:-etcdctl}}
export ETCDCTL_API=3
MEMBER_URL=()
TRACKED=()
CLUSTER_DIR=

now_ns() {
    date +%s%N
}

wait_for() {
    local secs=$1
    shift
    local end=$(($(now_ns) + secs * 1000000000))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(now_ns)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

track() {
    TRACKED+=("$1")
}

# free_ports N - N distinct free TCP ports on 127.0.0.1 (bound once, then released).
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# start_once DIR - one try of the harness's start: 0 when the cluster is up, 1 when a
# member died while starting (a port it drew was taken in the meantime: the harness draws
# ports that nothing listens on, but an outgoing connection may hold one) or 20 s passed.
start_once() {
    local dir=$1 starter n pid
    bash "$CLUSTER_SH" start "$dir" $$ >/dev/null 2>"$dir.err" &
    starter=$!
    local end=$(($(now_ns) + 20000000000))
    while kill -0 "$starter" 2>/dev/null; do
        if [ "$(now_ns)" -gt "$end" ] || grep -qs "address already in use" "$dir"/m*.log; then
            kill -TERM "$starter" 2>/dev/null
            wait "$starter" 2>/dev/null
            bash "$CLUSTER_SH" stop "$dir" >/dev/null 2>&1
            return 1
        fi
        sleep 0.1
    done
    wait "$starter"
}

cluster_start() {
    local attempt
    for attempt in 1 2 3; do
        CLUSTER_DIR=$1.$attempt
        [ -f "$CLUSTER_SH" ] || { echo "no cluster harness at $CLUSTER_SH" >&2; return 1; }
        mkdir -p "$(dirname "$CLUSTER_DIR")"
        if start_once "$CLUSTER_DIR"; then
            ENDPOINTS=$(cat "$CLUSTER_DIR/endpoints")
            local n
            for n in 1 2 3; do
                MEMBER_URL[$n]=$(cat "$CLUSTER_DIR/m$n.url")
            done
            return 0
        fi
        echo "etcd cluster: start $attempt failed (a member could not start); trying again" >&2
    done
    CLUSTER_DIR=
    return 1
}

cluster_stop() {
    local pid
    for pid in "${TRACKED[@]}"; do
        kill -CONT "$pid" 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    TRACKED=()
    [ -n "$CLUSTER_DIR" ] && [ -d "$CLUSTER_DIR" ] && bash "$CLUSTER_SH" stop "$CLUSTER_DIR"
}

cluster_healthy() {
    "$ETCDCTL" --endpoints="$ENDPOINTS" --command-timeout=1s endpoint health >/dev/null 2>&1
}

cluster_leader() {
    bash "$CLUSTER_SH" leader "$CLUSTER_DIR"
}

member_kill() {
    bash "$CLUSTER_SH" kill "$CLUSTER_DIR" "$1"
}

member_start() {
    bash "$CLUSTER_SH" restart "$CLUSTER_DIR" "$1"
}

# holder_start TAG CMD... - run CMD (an etcd_hold) with its stdin on a FIFO and its
# stdout in $T/TAG.out; HOLDER_PID[TAG] is its PID; holder_say TAG LINE writes to it.
declare -A HOLDER_PID HOLDER_FD
holder_start() {
    local tag=$1
    shift
    mkfifo "$T/$tag.in"
    "$@" <"$T/$tag.in" >"$T/$tag.out" 2>"$T/$tag.err" &
    HOLDER_PID[$tag]=$!
    track "$!"
    local fd
    exec {fd}>"$T/$tag.in"
    HOLDER_FD[$tag]=$fd
}

holder_say() {
    echo "$2" >&"${HOLDER_FD[$1]}"
}

# has_line FILE REGEX - FILE has a line matching the extended regex.
has_line() {
    grep -Eq -- "$2" "$1"
}

# field FILE PREFIX KEY - the value of KEY=... on FILE's last line starting with PREFIX.
field() {
    grep -E "^$2" "$1" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"
}

# wait_queue_empty NAME - wait until budget NAME has no request keys left, at most 10 s.
# Every worker revokes its lease on exit; a request left under a lease that a client gave
# up on (a renewal that came late, as during an election) goes when the server expires
# that lease. Waiting for it lets the history hold every deletion; a key that outlives
# it is a leak, which the check reports.
wait_queue_empty()
{
    local name=$1 i keys left=unknown
    for ((i = 0; i < 100; i++)); do
        if keys=$("$ETCDCTL" --endpoints="$ENDPOINTS" --command-timeout=1s get --prefix \
            --keys-only "/band/$name/q/" 2>/dev/null); then
            left=$(printf '%s\n' "$keys" | grep -c . || true)
            [ "$left" = 0 ] && break
        fi
        sleep 0.1
    done
    echo "queue keys left after the workers: $left (after $((i / 10)).$((i % 10)) s)"
}
