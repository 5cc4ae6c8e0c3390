#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_nofile: under `ulimit -n 64` the descriptors budget is sized from
# RLIMIT_NOFILE 64, and the run never meets "Too many open files": every good tile is
# done and --verify sees the open descriptors stay within the budget.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

LOG=$W/run.jsonl
ulimit -n 64
run_pipe run "$URLS" "$W/out" --log "$LOG" --verify
expect_rc run 1 # the bad tiles
line=$(budget_line run descriptors)
note "$line"
[[ "$line" == *"RLIMIT_NOFILE 64,"* ]] || fail "the descriptors budget is not sized from RLIMIT_NOFILE 64: $line"
desc=$(budget_limit run descriptors)
[[ $desc -ge 1 && $desc -lt 32 ]] || fail "the descriptors budget $desc does not fit in 64 descriptors"
if grep -i -E 'too many open files|EMFILE' "$W/run.out" "$W/run.err" "$LOG"; then
    fail "band-pipe ran out of descriptors"
fi
good=$(kind_names small large)
[[ "$(log_names "$LOG" tile_done)" == "$(sort <<<"$good")" ]] ||
    fail "not every good tile is done:
$(show run)"
# shellcheck disable=SC2086
expect_outputs "$W/out" $good
# shellcheck disable=SC2086
expect_only_outputs "$W/out" $good
grep -q '^verify: open descriptors stayed within [0-9]* and budgeted bytes within the memory budget$' "$W/run.out" ||
    fail "--verify did not pass:
$(show run)"
tiles=$(log_max_concurrent "$LOG" tile)
[[ $tiles -le $desc ]] || fail "$tiles tiles in flight at once, the descriptors budget is $desc"
note "at most $tiles tiles in flight"
# Too few descriptors for even one tile besides what the program keeps: a set-up error.
ulimit -n 32
run_pipe few "$URLS" "$W/out-few"
expect_rc few 2
grep -q '^band-pipe: RLIMIT_NOFILE is 32, and [0-9]* descriptors are needed outside the tiles: raise it (ulimit -n)$' "$W/few.err" ||
    fail "ulimit -n 32 did not give the RLIMIT_NOFILE message:
$(show few)"
e2e_pass
