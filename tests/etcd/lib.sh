# SPDX-License-Identifier: MIT
# tests/etcd/lib.sh - sourced by the etcd fault tests and bench/etcd/run.sh: a private
# 3-member etcd cluster on 127.0.0.1 and small helpers around it.
#
#   cluster_start DIR        start 3 members (data under DIR, free ports), wait until the
#                            cluster has a leader; sets ENDPOINTS (comma-separated client
#                            URLs) and MEMBER_URL[0..2]
#   cluster_stop             kill every member and the processes registered with track
#   cluster_leader           prints the index (0..2) of the member that leads now
#   member_kill I            SIGKILL member I;  member_start I: start it again (same data)
#   track PID                have cluster_stop kill PID too
#   wait_for SECONDS CMD...  run CMD every 50 ms until it succeeds or SECONDS pass (status 1)
#   now_ns                   CLOCK_REALTIME in nanoseconds
#
# Every process it starts is killed by cluster_stop, which the scripts call from their
# EXIT trap, so a failing test leaves nothing running.

ETCD_BIN=${ETCD_BIN:-etcd}
ETCDCTL_BIN=${ETCDCTL_BIN:-etcdctl}
export ETCDCTL_API=3
MEMBER_PID=()
MEMBER_URL=()
MEMBER_PEER=()
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

# free_ports N - N distinct free TCP ports on 127.0.0.1.
free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

member_start() {
    local i=$1
    "$ETCD_BIN" --name "m$i" --data-dir "$CLUSTER_DIR/m$i" \
        --listen-client-urls "${MEMBER_URL[$i]}" --advertise-client-urls "${MEMBER_URL[$i]}" \
        --listen-peer-urls "${MEMBER_PEER[$i]}" --initial-advertise-peer-urls "${MEMBER_PEER[$i]}" \
        --initial-cluster "$CLUSTER_SPEC" --initial-cluster-state new \
        --initial-cluster-token "band-test-$$" \
        >>"$CLUSTER_DIR/m$i.log" 2>&1 &
    MEMBER_PID[$i]=$!
}

member_kill() {
    local i=$1
    if [ -n "${MEMBER_PID[$i]:-}" ]; then
        kill -KILL "${MEMBER_PID[$i]}" 2>/dev/null
        wait "${MEMBER_PID[$i]}" 2>/dev/null
        MEMBER_PID[$i]=
    fi
}

cluster_healthy() {
    "$ETCDCTL_BIN" --endpoints="$ENDPOINTS" --command-timeout=1s endpoint health >/dev/null 2>&1
}

cluster_start() {
    CLUSTER_DIR=$1
    mkdir -p "$CLUSTER_DIR"
    local ports
    read -r -a ports <<<"$(free_ports 6)"
    CLUSTER_SPEC=
    local i
    for i in 0 1 2; do
        MEMBER_URL[$i]="http://127.0.0.1:${ports[$((2 * i))]}"
        MEMBER_PEER[$i]="http://127.0.0.1:${ports[$((2 * i + 1))]}"
        CLUSTER_SPEC+="${CLUSTER_SPEC:+,}m$i=${MEMBER_PEER[$i]}"
    done
    ENDPOINTS="${MEMBER_URL[0]},${MEMBER_URL[1]},${MEMBER_URL[2]}"
    for i in 0 1 2; do
        member_start "$i"
    done
    wait_for 20 cluster_healthy || {
        echo "etcd cluster did not become healthy in 20 s" >&2
        tail -n 20 "$CLUSTER_DIR"/m*.log >&2
        return 1
    }
}

cluster_stop() {
    local pid i
    for pid in "${TRACKED[@]}"; do
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    TRACKED=()
    for i in 0 1 2; do
        member_kill "$i"
    done
}

cluster_leader() {
    local i
    for i in 0 1 2; do
        [ -n "${MEMBER_PID[$i]:-}" ] || continue
        if "$ETCDCTL_BIN" --endpoints="${MEMBER_URL[$i]}" --command-timeout=1s \
            endpoint status -w json 2>/dev/null |
            python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["Status"]; sys.exit(0 if s["header"]["member_id"]==s["leader"] else 1)'; then
            echo "$i"
            return 0
        fi
    done
    return 1
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
