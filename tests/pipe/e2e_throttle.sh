#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_throttle: the request budget and the server's rate limit. A server that states
# its pace on every answer (RateLimit-Policy) is kept to from its first answer on, so only
# requests sent before that answer can be throttled; one that states it
# only with its 429s is kept to from the first 429 on, and no request sent after that
# first Retry-After is throttled; one that sends only Retry-After is estimated, and the run
# still ends with every good tile done.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
good=$(kind_names small large | sort)

# requests_line NAME: the summary's "requests:" line; origin NAME: the requests budget's
# origin in the summary's table.
requests_line() { grep -m1 '^requests: ' "$W/$1.out"; }
origin() { awk '/^budget +limit/ { on = 1; next } on && $1 == "requests" { sub(/^requests +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, ""); print; exit }' "$W/$1.out"; }

note "a server that states its pace on every answer"
e2e_serve --server-rate 20 --server-burst 2 --server-policy all
run_pipe all "$URLS" "$W/out-all" --log "$W/all.jsonl"
expect_rc all 1
[[ "$(log_names "$W/all.jsonl" tile_done)" == "$good" ]] || fail "not every good tile was done"
req=$(requests_line all)
n=$(sed -E 's/^requests: [0-9]+ started, ([0-9]+) throttled.*/\1/' <<<"$req")
# Only the first wave, sent before the first answer stated the pace, can be throttled.
conn=$(budget_limit all connections)
[[ $n -le $conn ]] || fail "more 429s ($n) than the first wave of $conn requests: $req"
[[ $n -eq 0 || "$req" == *", 0 of them after the first Retry-After"* ]] ||
    fail "a request sent after the first Retry-After was throttled: $req"
[[ "$(origin all)" == "the server's pace: RateLimit-Policy 20;w=1, less 10%" ]] ||
    fail "the request budget does not come from the stated pace: '$(origin all)'"
e2e_stop_server

note "a server that states its pace only with its 429s"
e2e_serve --server-rate 20 --server-burst 2 --server-policy throttled
run_pipe thr "$URLS" "$W/out-thr" --log "$W/thr.jsonl"
expect_rc thr 1
[[ "$(log_names "$W/thr.jsonl" tile_done)" == "$good" ]] || fail "not every good tile was done"
req=$(requests_line thr)
n=$(sed -E 's/^requests: [0-9]+ started, ([0-9]+) throttled.*/\1/' <<<"$req")
[[ $n -ge 1 ]] || fail "16 connections at once against a burst of 2 drew no 429: $req"
[[ "$req" == *", 0 of them after the first Retry-After"* ]] ||
    fail "a request sent after the first Retry-After was throttled: $req"
[[ "$(origin thr)" == "the server's pace: RateLimit-Policy 20;w=1, less 10%" ]] ||
    fail "the request budget does not come from the 429's policy: '$(origin thr)'"
e2e_stop_server

note "a server that sends only Retry-After"
e2e_serve --server-rate 20 --server-burst 2 --server-policy none
run_pipe none "$URLS" "$W/out-none" --log "$W/none.jsonl"
expect_rc none 1
[[ "$(log_names "$W/none.jsonl" tile_done)" == "$good" ]] || fail "not every good tile was done"
[[ "$(origin none)" == "throttled, no stated pace: from "* ]] ||
    fail "the request budget is not an estimate: '$(origin none)'"
e2e_pass
