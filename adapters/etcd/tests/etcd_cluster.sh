#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# etcd_cluster.sh - a private 3-member etcd cluster on 127.0.0.1, for tests.
#
# Usage:
#   etcd_cluster.sh start DIR [OWNER_PID]
#       Start members m1 m2 m3 on free ports with their data in DIR (created), wait until
#       every member is healthy, and print the client endpoints (comma-separated). Writes
#         DIR/endpoints   the client URLs, comma-separated, one line
#         DIR/pids        "N PID" per member, N = 1..3
#         DIR/mN.url      member N's client URL;  DIR/mN.log its log
#       With OWNER_PID, a watchdog stops the cluster when that process ends (a test that
#       crashes leaves nothing running).
#   etcd_cluster.sh stop DIR          Stop every member (SIGKILL after 5 s) and delete DIR.
#   etcd_cluster.sh kill DIR N        SIGKILL member N (its data stays, for restart).
#   etcd_cluster.sh stopsig DIR N SIG Send SIG (STOP, CONT, ...) to member N.
#   etcd_cluster.sh restart DIR N     Start member N again on its ports and data
#                                     (after kill); waits until it is healthy.
#   etcd_cluster.sh leader DIR        Print the number N of the current leader.
#   etcd_cluster.sh kill-leader DIR   SIGKILL the leader and print its number.
#   etcd_cluster.sh run CMD [ARG...]  Start a cluster in a temporary directory, run CMD with
#                                     BAND_ETCD_ENDPOINTS and BAND_ETCD_CLUSTER_DIR set, stop
#                                     the cluster (always) and exit with CMD's status.
# Members use --heartbeat-interval 50 --election-timeout 500, so a new leader is elected
# within about a second of the old one dying. Needs etcd and etcdctl (3.4 or later) and
# ss (iproute2) or bash's /dev/tcp to find free ports.
set -euo pipefail

ETCD=${ETCD:-etcd}
ETCDCTL=${ETCDCTL:-etcdctl}
export ETCDCTL_API=3

die()
{
    echo "etcd_cluster: $*" >&2
    exit 2
}

port_busy()
{
    if command -v ss >/dev/null 2>&1; then
        ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
        return 1
    fi
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_ports N - N distinct ports that nothing listens on
free_ports()
{
    local n=$1 got=() p
    while ((${#got[@]} < n)); do
        # Below the kernel's ephemeral range (32768 and up by default), so an outgoing
        # connection cannot take the port between this check and the member's bind.
        p=$((20000 + RANDOM % 12000))
        [[ " ${got[*]} " == *" $p "* ]] && continue
        port_busy "$p" && continue
        got+=("$p")
    done
    echo "${got[@]}"
}

start_member()
{
    local dir=$1 n=$2 state=$3 cport pport
    read -r cport pport <"$dir/m$n.ports"
    setsid "$ETCD" --name "m$n" --data-dir "$dir/m$n.data" \
        --listen-client-urls "http://127.0.0.1:$cport" \
        --advertise-client-urls "http://127.0.0.1:$cport" \
        --listen-peer-urls "http://127.0.0.1:$pport" \
        --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
        --initial-cluster "$(cat "$dir/initial-cluster")" \
        --initial-cluster-state "$state" --initial-cluster-token band-test \
        --heartbeat-interval 50 --election-timeout 500 --log-level error \
        >>"$dir/m$n.log" 2>&1 </dev/null &
    local pid=$!
    { grep -v "^$n " "$dir/pids" 2>/dev/null || true; echo "$n $pid"; } >"$dir/pids.new"
    mv "$dir/pids.new" "$dir/pids"
}

member_pid()
{
    awk -v n="$2" '$1 == n { print $2 }' "$1/pids"
}

wait_healthy()
{
    local dir=$1 eps=$2 i
    local n pid
    for ((i = 0; i < 200; i++)); do
        if "$ETCDCTL" --endpoints="$eps" --command-timeout=1s endpoint health >/dev/null 2>&1; then
            return 0
        fi
        # A member that exited (a port taken after all) never becomes healthy: say so now.
        while read -r n pid; do
            if ! kill -0 "$pid" 2>/dev/null; then
                echo "etcd_cluster: member m$n exited while starting; logs:" >&2
                tail -n 20 "$dir"/m*.log >&2 || true
                return 1
            fi
        done <"$dir/pids"
        sleep 0.1
    done
    echo "etcd_cluster: not healthy in 20 s; logs:" >&2
    tail -n 20 "$dir"/m*.log >&2 || true
    return 1
}

# One try at starting the members on fresh ports: 0 when the cluster is healthy.
start_once()
{
    local dir=$1 ports n ic="" eps=""
    read -r -a ports <<<"$(free_ports 6)"
    for n in 1 2 3; do
        echo "${ports[$((2 * n - 2))]} ${ports[$((2 * n - 1))]}" >"$dir/m$n.ports"
        ic+="${ic:+,}m$n=http://127.0.0.1:${ports[$((2 * n - 1))]}"
        echo "http://127.0.0.1:${ports[$((2 * n - 2))]}" >"$dir/m$n.url"
        eps+="${eps:+,}http://127.0.0.1:${ports[$((2 * n - 2))]}"
    done
    echo "$ic" >"$dir/initial-cluster"
    echo "$eps" >"$dir/endpoints"
    : >"$dir/pids"
    for n in 1 2 3; do
        start_member "$dir" "$n" new
    done
    wait_healthy "$dir" "$eps"
}

cmd_start()
{
    local dir=$1 owner=${2:-} attempt
    command -v "$ETCD" >/dev/null || die "no $ETCD on the PATH"
    command -v "$ETCDCTL" >/dev/null || die "no $ETCDCTL on the PATH"
    mkdir -p "$dir"
    # A port found free can still be taken before a member binds it: start again on
    # other ports, at most three times.
    for attempt in 1 2 3; do
        start_once "$dir" && break
        cmd_stop "$dir" # removes DIR, with the data of the failed members
        mkdir -p "$dir"
        if ((attempt == 3)); then
            echo "etcd_cluster: no healthy cluster after 3 starts" >&2
            exit 1
        fi
        echo "etcd_cluster: start $attempt failed; again on other ports" >&2
    done
    if [[ -n "$owner" ]]; then
        # The watchdog: stop everything once the owner is gone.
        (
            trap '' HUP INT
            while kill -0 "$owner" 2>/dev/null && [[ -d "$dir" ]]; do sleep 0.5; done
            [[ -d "$dir" ]] && "$0" stop "$dir" >/dev/null 2>&1
        ) </dev/null >/dev/null 2>&1 &
        echo $! >"$dir/watchdog"
    fi
    cat "$dir/endpoints"
}

cmd_stop()
{
    local dir=$1 n pid i
    [[ -f "$dir/pids" ]] || return 0
    while read -r n pid; do
        kill -CONT "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
    done <"$dir/pids"
    for ((i = 0; i < 50; i++)); do
        local alive=0
        while read -r n pid; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done <"$dir/pids"
        ((alive)) || break
        sleep 0.1
    done
    while read -r n pid; do
        kill -KILL "$pid" 2>/dev/null || true
    done <"$dir/pids"
    rm -rf "$dir"
}

cmd_leader()
{
    local dir=$1 n url out mid lid
    for n in 1 2 3; do
        url=$(cat "$dir/m$n.url")
        out=$("$ETCDCTL" --endpoints="$url" --command-timeout=1s endpoint status -w fields 2>/dev/null) ||
            continue
        mid=$(sed -n 's/^"MemberID" : //p' <<<"$out")
        lid=$(sed -n 's/^"Leader" : //p' <<<"$out")
        if [[ -n "$mid" && "$mid" == "$lid" ]]; then
            echo "$n"
            return 0
        fi
    done
    return 1
}

case ${1:-} in
start)
    [[ $# -ge 2 ]] || die "usage: $0 start DIR [OWNER_PID]"
    cmd_start "$2" "${3:-}"
    ;;
stop)
    [[ $# -eq 2 ]] || die "usage: $0 stop DIR"
    cmd_stop "$2"
    ;;
kill)
    [[ $# -eq 3 ]] || die "usage: $0 kill DIR N"
    kill -KILL "$(member_pid "$2" "$3")"
    ;;
stopsig)
    [[ $# -eq 4 ]] || die "usage: $0 stopsig DIR N SIG"
    kill "-$4" "$(member_pid "$2" "$3")"
    ;;
restart)
    [[ $# -eq 3 ]] || die "usage: $0 restart DIR N"
    start_member "$2" "$3" existing
    wait_healthy "$2" "$(cat "$2/m$3.url")"
    ;;
leader)
    [[ $# -eq 2 ]] || die "usage: $0 leader DIR"
    cmd_leader "$2"
    ;;
kill-leader)
    [[ $# -eq 2 ]] || die "usage: $0 kill-leader DIR"
    n=$(cmd_leader "$2") || die "no leader"
    kill -KILL "$(member_pid "$2" "$n")"
    echo "$n"
    ;;
run)
    shift
    [[ $# -ge 1 ]] || die "usage: $0 run CMD [ARG...]"
    dir=$(mktemp -d "${TMPDIR:-/tmp}/band-etcd.XXXXXX")
    trap 'cmd_stop "$dir/c"; rmdir "$dir" 2>/dev/null || true' EXIT
    trap 'exit 130' INT TERM
    BAND_ETCD_ENDPOINTS=$(cmd_start "$dir/c" $$)
    export BAND_ETCD_ENDPOINTS BAND_ETCD_CLUSTER_DIR="$dir/c"
    rc=0
    "$@" || rc=$?
    exit $rc
    ;;
*)
    die "usage: $0 start|stop|kill|stopsig|restart|leader|kill-leader|run ... (see the file's top)"
    ;;
esac
