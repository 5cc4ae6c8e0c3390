#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# metrics_scrape.sh - end to end: serve /metrics over every primitive kind on 127.0.0.1
# (a free port), scrape it with curl, and check the text with `promtool check metrics`.
#
#   metrics_scrape.sh PATH/TO/metrics_serve
#
# Fails on any promtool output (promtool prints lint problems even when it exits 0), on a
# family of some primitive kind missing, on a wrong status or Content-Type, if concurrent
# scrapes do not all succeed while a slow client holds a connection open, or if the server
# does not exit 0 after SIGTERM (it closes every handle and frees everything first).
set -euo pipefail

SERVE=${1:?usage: metrics_scrape.sh PATH/TO/metrics_serve}
for tool in curl promtool; do
    command -v "$tool" > /dev/null || {
        echo "metrics_scrape: $tool is not installed (scripts/deps.sh installs it)" >&2
        exit 1
    }
done

tmp=$(mktemp -d)
pid=
cleanup()
{
    if [[ -n "$pid" ]] && kill -0 "$pid" 2> /dev/null; then
        kill -KILL "$pid" 2> /dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail()
{
    echo "metrics_scrape: $*" >&2
    exit 1
}

"$SERVE" 127.0.0.1 > "$tmp/port" 2> "$tmp/serve.err" &
pid=$!
for _ in $(seq 1 200); do
    [[ -s "$tmp/port" ]] && break
    kill -0 "$pid" 2> /dev/null || fail "the server exited early: $(cat "$tmp/serve.err")"
    sleep 0.05
done
port=$(head -n1 "$tmp/port")
[[ "$port" =~ ^[0-9]+$ ]] || fail "no port from the server"
url="http://127.0.0.1:$port"

# One scrape: status, Content-Type, and promtool with no complaint at all.
code=$(curl -sS --max-time 20 -D "$tmp/headers" -o "$tmp/body" -w '%{http_code}' "$url/metrics")
[[ "$code" == 200 ]] || fail "GET /metrics answered $code"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$tmp/headers" ||
    fail "wrong Content-Type: $(grep -i '^Content-Type' "$tmp/headers")"
set +e
promtool check metrics < "$tmp/body" > "$tmp/lint" 2>&1
lint_rc=$?
set -e
if [[ $lint_rc -ne 0 || -s "$tmp/lint" ]]; then
    cat "$tmp/lint" >&2
    fail "promtool check metrics complained (exit $lint_rc)"
fi
for kind in sem budget chan rate front_door fair fair_class fair_key admit cap_tree limit \
    exec oneshot watch broadcast group latch; do
    grep -q "^band_${kind}_[a-z_]*{" "$tmp/body" || fail "no band_${kind}_* series"
done
grep -q '^app_request_seconds_count{name="api"} ' "$tmp/body" || fail "no free-standing histogram"
grep -qF 'band_sem_capacity{name="db \"pool\"\n"} 8' "$tmp/body" || fail "sem labels not escaped"
grep -qF 'band_cap_tree_in_use{name="team\\a",parent="cluster"} 5' "$tmp/body" ||
    fail "cap tree node or its parent label missing"

# Anything else is 404; HEAD /metrics has headers only.
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$url/nope")
[[ "$code" == 404 ]] || fail "GET /nope answered $code"
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -X POST "$url/metrics")
[[ "$code" == 404 ]] || fail "POST /metrics answered $code"
code=$(curl -sS --max-time 20 -o "$tmp/head" -w '%{http_code}' -I "$url/metrics")
[[ "$code" == 200 ]] || fail "HEAD /metrics answered $code"
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$url/metrics?x=1")
[[ "$code" == 200 ]] || fail "GET /metrics?x=1 answered $code"

# A request head over 8 KiB is answered 431, even with the rest still coming.
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "$url/metrics")
[[ "$code" == 431 ]] || fail "an oversized request head answered $code"

# 64 connections at once are served; the 65th is answered 503.
for fd in $(seq 10 73); do
    eval "exec $fd<> /dev/tcp/127.0.0.1/$port"
done
# (accepted in order: the 64 are ahead of it in the listen queue)
code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$url/metrics")
[[ "$code" == 503 ]] || fail "the 65th connection answered $code"
for fd in $(seq 10 73); do
    eval "exec $fd<&-"
done
# The server sees them close as its loop runs: retry for up to 10 s.
for _ in $(seq 1 100); do
    code=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$url/metrics")
    [[ "$code" == 503 ]] || break
    sleep 0.1
done
[[ "$code" == 200 ]] || fail "after the 64 closed, a scrape answered $code"

# A slow client holds a connection with half a request while eight scrapes run at once.
exec 3<> "/dev/tcp/127.0.0.1/$port"
printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n' >&3
pids=()
for i in $(seq 1 8); do
    curl -sS --max-time 20 -o "$tmp/body.$i" -w '%{http_code}' "$url/metrics" > "$tmp/code.$i" &
    pids+=($!)
done
for p in "${pids[@]}"; do
    wait "$p" || fail "a concurrent scrape failed"
done
for i in $(seq 1 8); do
    [[ "$(cat "$tmp/code.$i")" == 200 ]] || fail "concurrent scrape $i answered $(cat "$tmp/code.$i")"
    promtool check metrics < "$tmp/body.$i" > "$tmp/lint.$i" 2>&1 || true
    [[ ! -s "$tmp/lint.$i" ]] || fail "concurrent scrape $i: $(cat "$tmp/lint.$i")"
done
# The slow client finishes its request and gets its answer.
printf '\r\n' >&3
slow=$(head -n1 <&3 | tr -d '\r')
exec 3<&-
[[ "$slow" == "HTTP/1.1 200 OK" ]] || fail "the slow client got: $slow"

# A client left half-way through when the server stops: the close still ends cleanly.
exec 4<> "/dev/tcp/127.0.0.1/$port"
printf 'GET /met' >&4
sleep 0.2
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
pid=
exec 4<&-
[[ $rc -eq 0 ]] || fail "the server exited $rc after SIGTERM: $(cat "$tmp/serve.err")"
echo "metrics_scrape: ok ($(grep -c '^# TYPE' "$tmp/body") families)"
