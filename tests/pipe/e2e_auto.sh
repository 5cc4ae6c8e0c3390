#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_auto: --connections auto (an adaptive limit found online) does every good tile,
# and the budget table says so.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

LOG=$W/run.jsonl
run_pipe run "$URLS" "$W/out" --connections auto --log "$LOG" --verify --cpu 2
expect_rc run 1 # the bad tiles
line=$(budget_line run connections)
[[ $(budget_limit run connections) == auto ]] || fail "the budget table does not say auto: $line"
[[ "$line" == *"auto: adaptive limit from "* ]] || fail "the connections origin does not explain auto: $line"
note "$line"
good=$(kind_names small large)
[[ "$(log_names "$LOG" tile_done)" == "$(sort <<<"$good")" ]] ||
    fail "not every good tile is done:
$(show run)"
for n in $(kind_names missing); do
    jq -e -s --arg n "$n" 'any(.[]; .tile == $n and .event == "tile_failed" and .reason == "http" and
        .detail == "HTTP 404")' "$LOG" >/dev/null || fail "the missing $n did not fail with HTTP 404"
done
# shellcheck disable=SC2086
expect_outputs "$W/out" $good
# shellcheck disable=SC2086
expect_only_outputs "$W/out" $good
grep -q '^verify: open descriptors stayed within' "$W/run.out" || fail "--verify did not pass:
$(show run)"
grep -q '^connections  .*auto: adaptive limit' "$W/run.out" ||
    fail "the summary's connections row does not say auto"
e2e_pass
