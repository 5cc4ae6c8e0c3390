#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_too_large: with --memory 32M each large tile (a body of about 19 MiB) is more
# than the budget lets one tile hold: it fails with reason too_large and a detail naming
# the budget, while the small tiles are done and --verify sees the budget kept.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

LOG=$W/run.jsonl
run_pipe run "$URLS" "$W/out" --log "$LOG" --verify --memory 32M --cpu 2
expect_rc run 1
for n in $(kind_names large); do
    jq -e -s --arg n "$n" '[.[] | select(.tile == $n and .event == "tile_failed")] |
        length == 1 and .[0].reason == "too_large" and
        (.[0].detail | test("of the 32.0 MiB memory budget"))' "$LOG" >/dev/null ||
        fail "the large $n did not fail too_large with a detail naming the 32.0 MiB budget:
$(jq -c --arg n "$n" 'select(.tile == $n and (.event | startswith("tile_")))' "$LOG")"
    grep -q "^  failed: $n  too_large  .*32.0 MiB memory budget" "$W/run.out" ||
        fail "the summary does not list $n as too_large"
done
small=$(kind_names small)
[[ "$(log_names "$LOG" tile_done)" == "$(sort <<<"$small")" ]] ||
    fail "the done tiles are not exactly the small ones:
$(show run)"
# shellcheck disable=SC2086
expect_outputs "$W/out" $small
# shellcheck disable=SC2086
expect_only_outputs "$W/out" $small
nlarge=$(kind_names large | wc -l)
nbad=$(kind_names corrupt truncated missing | wc -l)
grep -q "^  failed by reason: http 2, too_large $nlarge, corrupt $((nbad - 2))$" "$W/run.out" ||
    fail "the failures by reason are not http 2, too_large $nlarge, corrupt $((nbad - 2)):
$(show run)"
grep -q '^verify: open descriptors stayed within [0-9]* and budgeted bytes within the memory budget$' "$W/run.out" ||
    fail "--verify did not pass:
$(show run)"
budget=$((32 * 1024 * 1024))
res=$(summary_memory run reserved)
alloc=$(summary_memory run allocated)
note "peak reserved $res, peak allocated $alloc of $budget"
[[ $res -le $budget && $alloc -le $budget ]] || fail "peak reserved $res or allocated $alloc above $budget"
maxres=$(jq -s '[.[].reserved] | max' "$LOG")
[[ $maxres -le $budget ]] || fail "a tile reserved $maxres bytes, more than the budget"
e2e_pass
