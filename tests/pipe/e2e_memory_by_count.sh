#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_memory_by_count: bounding memory by a count of typical tiles overshoots on a
# set whose tiles differ in size: with --memory 32M --memory-by-count (one slot, sized
# from a small tile) the large tiles' buffers exceed the 32M, --verify exits 3 and the
# summary reports the overshoot. The byte budget on the same set and the same --memory
# keeps what is allocated within 32M.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

budget=$((32 * 1024 * 1024))
run_pipe count "$URLS" "$W/out-count" --memory 32M --memory-by-count --verify --cpu 2
expect_rc count 3
grep -q "^verify: FAILED: at [0-9.]* s: [0-9]* budgeted bytes > $budget$" "$W/count.out" ||
    fail "no verify FAILED line naming the $budget byte budget:
$(show count)"
over=$(sed -nE 's/^verify: FAILED: at [0-9.]* s: ([0-9]+) budgeted bytes.*/\1/p' "$W/count.out")
[[ $over -gt $budget ]] || fail "the verify line's $over bytes are not above $budget"
[[ "$(summary_memory count budget)" -eq $budget ]] ||
    fail "the count run's memory line does not name the 32M byte budget:
$(grep '^memory:' "$W/count.out")"
alloc=$(summary_memory count allocated)
[[ $alloc -gt $budget ]] || fail "the count run's peak allocated $alloc is not above $budget"
ratio=$(sed -nE 's/^  --memory-by-count \(([0-9]+) slots?\): allocated reached ([0-9.]+)x the byte budget$/\2/p' "$W/count.out")
[[ -n "$ratio" ]] || fail "the summary does not report the overshoot against the byte budget:
$(show count)"
awk -v r="$ratio" -v a="$alloc" -v b="$budget" 'BEGIN { e = a / b; exit !(r > 1 && r > e * 0.95 && r < e * 1.05) }' ||
    fail "the overshoot ${ratio}x is not peak allocated $alloc / $budget"
note "by count: peak allocated $alloc (${ratio}x the byte budget), $(grep '^verify:' "$W/count.out")"
# All the same tiles done: the count bound does not refuse the large ones, it lets them in.
good=$(kind_names small large | wc -l)
grep -q "^band-pipe: $E2E_TILES tiles in .* s: $good done, " "$W/count.out" ||
    fail "the count run did not do every good tile:
$(show count)"

run_pipe bytes "$URLS" "$W/out-bytes" --memory 32M --verify --cpu 2
expect_rc bytes 1 # the bad tiles and the large ones, refused; never 3
grep -q '^verify: open descriptors stayed within [0-9]* and budgeted bytes within the memory budget$' "$W/bytes.out" ||
    fail "--verify failed on the byte budget:
$(show bytes)"
balloc=$(summary_memory bytes allocated)
[[ $balloc -le $budget ]] || fail "the byte budget's peak allocated $balloc is above $budget"
note "by bytes: peak allocated $balloc"
e2e_pass
