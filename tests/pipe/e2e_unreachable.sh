#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_unreachable: a host that refuses connections is retried a bounded number of times
# with backoff, then fails with reason unreachable; an HTTP error answer fails with reason
# http without its body being decoded; the good tiles of the same list are done.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

# A port of 127.0.0.1 nobody listens on: bind one, note it, close it.
dead_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
base=$(head -n 1 "$URLS" | sed -E 's|^(http://[^/]+)/.*|\1|')
good=$(kind_names small | head -n 3)
list=$W/list.txt
for n in $good; do
    echo "$base/$n.tif"
done >"$list"
echo "http://127.0.0.1:$dead_port/nowhere.tif" >>"$list"
echo "$base/no-such-tile.tif" >>"$list"

LOG=$W/run.jsonl
start=$(date +%s.%N)
run_pipe run "$list" "$W/out" --log "$LOG" --retries 2
end=$(date +%s.%N)
expect_rc run 1
jq -e -s '[.[] | select(.tile == "nowhere" and .event == "tile_failed")] | length == 1 and
    .[0].reason == "unreachable" and (.[0].detail | test("after 3 attempts"))' "$LOG" >/dev/null ||
    fail "the dead host did not fail unreachable after 3 attempts:
$(jq -c 'select(.tile == "nowhere" and (.event | startswith("tile_")))' "$LOG")"
# 2 retries: 200 ms, then 400 ms of backoff before the last attempt.
awk -v s="$start" -v e="$end" 'BEGIN { exit !(e - s >= 0.6) }' ||
    fail "the retries took no backoff (the run lasted $(awk -v s="$start" -v e="$end" 'BEGIN { print e - s }') s)"
jq -e -s '[.[] | select(.tile == "no-such-tile" and .event == "tile_failed")] | length == 1 and
    .[0].reason == "http" and .[0].detail == "HTTP 404"' "$LOG" >/dev/null ||
    fail "the missing tile did not fail http with HTTP 404"
jq -e -s '[.[] | select(.tile == "no-such-tile" and .event == "stage_start" and .stage == "decode")] |
    length == 0' "$LOG" >/dev/null || fail "an error body reached the decoder"
# shellcheck disable=SC2086
expect_outputs "$W/out" $good
# shellcheck disable=SC2086
expect_only_outputs "$W/out" $good
grep -q '^  failed by reason: http 1, unreachable 1$' "$W/run.out" ||
    fail "the failures by reason are not http 1, unreachable 1:
$(show run)"
e2e_pass
