#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh - libband-redis's benchmark against a private redis-server (bench/redis/README.md).
#
#   bench/redis/run.sh [band_redis_bench options, e.g. --only d --rounds 9]
#
# Starts redis-server on 127.0.0.1 on a free port (no persistence, its output in
# $OUT/redis-server.log), runs band_redis_bench against it, which prints a table of
# medians and ratios, and always stops the server (also on failure or interrupt).
#
# Environment:
#   BUILD_DIR     the build holding adapters/redis/band_redis_bench (default build/release)
#   OUT           where redis.tsv and the server's log go (default $BUILD_DIR/bench)
#   REDIS_SERVER  the server binary (default: redis-server on the PATH)
#
# Exits 0 after the run; 0 with a message when redis-server or the benchmark is missing
# (nothing to measure); the benchmark's status when it fails.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
BUILD_DIR=${BUILD_DIR:-build/release}
OUT=${OUT:-$BUILD_DIR/bench}
bench=$BUILD_DIR/adapters/redis/band_redis_bench
server=${REDIS_SERVER:-$(command -v redis-server || true)}

if [[ -z "$server" || ! -x "$server" ]]; then
    echo "bench-redis: redis-server is not installed (Debian: redis-server): skipped"
    exit 0
fi
if [[ ! -x "$bench" ]]; then
    echo "bench-redis: $bench was not built (needs hiredis, Debian: libhiredis-dev, and" \
        "BAND_BUILD_BENCH): skipped"
    exit 0
fi
mkdir -p "$OUT"
log=$OUT/redis-server.log

pid=
stop_server()
{
    if [[ -n "$pid" ]]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=
    fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# A port nothing listens on: the kernel's pick for a socket bound to port 0.
free_port()
{
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
        echo $((20000 + RANDOM % 30000))
}

# Another process may take the port between the pick and the bind: try a few.
port=
for _ in 1 2 3 4 5; do
    p=$(free_port)
    "$server" --port "$p" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
        --loglevel warning >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        if ! kill -0 "$pid" 2>/dev/null; then
            break
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            port=$p
            break
        fi
        sleep 0.05
    done
    [[ -n "$port" ]] && break
    stop_server
done
if [[ -z "$port" ]]; then
    echo "bench-redis: redis-server did not start (log: $log)" >&2
    exit 1
fi

echo "bench-redis: $("$server" --version | sed 's/ sha=.*//'), hiredis" \
    "$(pkg-config --modversion hiredis 2>/dev/null || echo '?'), on 127.0.0.1:$port;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
"$bench" --port "$port" --tsv "$OUT/redis.tsv" "$@"
echo "bench-redis: figures in $OUT/redis.tsv"
