#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_basic: a whole run on served URLs with --log, --verify and --plot. Every good
# tile is written (EPSG:3857, DEFLATE), every bad one fails for its own reason, no stage
# ever holds more tiles than its budget, and nothing but the outputs is left.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

CPU=2 DISK=2 DESC=12 MEM=256M MEM_BYTES=$((256 * 1024 * 1024))
run_pipe run "$URLS" "$W/out" --log "$W/run.jsonl" --verify --plot "$W/out.svg" \
    --cpu $CPU --disk $DISK --descriptors $DESC --memory $MEM
expect_rc run 1 # the corrupt, truncated and missing tiles fail

# The budgets as given, in the table printed at start.
[[ $(budget_limit run cpu) == "$CPU" ]] || fail "the budget table's cpu is not $CPU: $(budget_line run cpu)"
[[ $(budget_limit run disk) == "$DISK" ]] || fail "the budget table's disk is not $DISK"
[[ $(budget_limit run descriptors) == "$DESC" ]] || fail "the budget table's descriptors is not $DESC"
[[ "$(budget_line run memory)" == *"256.0 MiB"* ]] || fail "the budget table's memory is not 256.0 MiB"

good=$(kind_names small large)
bad=$(kind_names corrupt truncated missing)
ngood=$(wc -w <<<"$good")
nbad=$(wc -w <<<"$bad")
grep -q "^band-pipe: $E2E_TILES tiles in .* s: $ngood done, 0 skipped, $nbad failed$" "$W/run.out" ||
    fail "the summary does not say $ngood done, $nbad failed:
$(show run)"

# The outputs: exactly the good tiles, each complete, nothing else.
# shellcheck disable=SC2086
expect_outputs "$W/out" $good
# shellcheck disable=SC2086
expect_only_outputs "$W/out" $good

# The log: one end per tile, each bad tile failed for its reason.
LOG=$W/run.jsonl
log_valid "$LOG"
[[ "$(log_names "$LOG" tile_started)" == "$(kind_names small large corrupt truncated missing | sort)" ]] ||
    fail "tile_started is not logged once for every tile"
[[ "$(log_names "$LOG" tile_done)" == "$(sort <<<"$good")" ]] ||
    fail "tile_done is not logged for exactly the good tiles:
$(diff <(sort <<<"$good") <(log_names "$LOG" tile_done) || true)"
for n in $(kind_names corrupt truncated); do
    jq -e -s --arg n "$n" '[.[] | select(.tile == $n and .event == "tile_failed")] |
        length == 1 and .[0].reason == "corrupt" and .[0].result == "failed" and
        (.[0].detail | length) > 0' "$LOG" >/dev/null ||
        fail "$n ($(awk -v n="$n.tif" '$1 == n { print $2 }' "$MANIFEST")) has no tile_failed with reason corrupt and a detail:
$(jq -c --arg n "$n" 'select(.tile == $n and (.event | startswith("tile_")))' "$LOG")"
done
for n in $(kind_names missing); do
    jq -e -s --arg n "$n" '[.[] | select(.tile == $n and .event == "tile_failed")] |
        length == 1 and .[0].reason == "http" and .[0].detail == "HTTP 404"' "$LOG" >/dev/null ||
        fail "the missing $n has no tile_failed with reason http and detail \"HTTP 404\":
$(jq -c --arg n "$n" 'select(.tile == $n and (.event | startswith("tile_")))' "$LOG")"
done
[[ $(jq -s '[.[] | select(.event | IN("tile_abandoned", "tile_stopped", "tile_skipped"))] | length' "$LOG") -eq 0 ]] ||
    fail "the log has abandoned, stopped or skipped tiles in an uninterrupted run"

# Each write's logged bytes are its output's size.
for n in $good; do
    logged=$(jq -s --arg n "$n" '[.[] | select(.tile == $n and .event == "stage_end" and .stage == "write")] |
        if length == 1 then .[0].bytes else -1 end' "$LOG")
    [[ "$logged" -eq "$(stat -c %s "$W/out/$n.tif")" ]] ||
        fail "$n: the write's stage_end logs $logged bytes, the output has $(stat -c %s "$W/out/$n.tif")"
done

# Throttled requests: none after the first Retry-After (the run keeps the server's pace).
req=$(grep '^requests: ' "$W/run.out") || fail "the summary has no requests line"
throttled=$(sed -E 's/^requests: [0-9]+ started, ([0-9]+) throttled.*/\1/' <<<"$req")
if [[ $throttled -gt 0 ]]; then
    [[ "$req" == *", 0 of them after the first Retry-After"* ]] ||
        fail "requests were throttled after the first Retry-After: $req"
fi
note "$req"

# The budgets held, from the log alone.
tiles=$(log_max_concurrent "$LOG" tile)
decode=$(log_max_concurrent "$LOG" decode)
write=$(log_max_concurrent "$LOG" write)
note "at most $tiles tiles in flight (descriptors $DESC), $decode decoding (cpu $CPU), $write writing (disk $DISK)"
[[ $tiles -ge 1 && $tiles -le $DESC ]] || fail "$tiles tiles in flight at once, the descriptors budget is $DESC"
[[ $decode -ge 1 && $decode -le $CPU ]] || fail "$decode decode stages at once, the cpu budget is $CPU"
[[ $write -ge 1 && $write -le $DISK ]] || fail "$write write stages at once, the disk budget is $DISK"
maxres=$(jq -s '[.[].reserved] | max' "$LOG")
[[ $maxres -gt 0 && $maxres -le $MEM_BYTES ]] ||
    fail "a tile's reserved bytes reached $maxres, the memory budget is $MEM_BYTES"

# --verify's verdict, and the plot in both formats.
grep -q '^verify: open descriptors stayed within [0-9]* and budgeted bytes within the memory budget$' "$W/run.out" ||
    fail "no verify OK line:
$(show run)"
[[ -s "$W/out.svg" ]] || fail "--plot wrote no out.svg"
[[ -s "$W/out.png" ]] || fail "--plot wrote no out.png"
grep -q '<svg' "$W/out.svg" || fail "out.svg is not an SVG"
[[ "$(head -c 8 "$W/out.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] ||
    fail "out.png is not a PNG"

# The reference text's own check on the log: starts per second.
hist=$(jq -r 'select(.event=="tile_started") | .ts' "$LOG" | cut -c1-19 | uniq -c)
[[ -n "$hist" ]] || fail "the start histogram (jq | cut | uniq -c) printed nothing"
[[ $(awk '{ s += $1 } END { print s }' <<<"$hist") -eq $E2E_TILES ]] ||
    fail "the start histogram does not count $E2E_TILES starts: $hist"
grep -q -E '^ *[0-9]+ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$' <<<"$hist" ||
    fail "the start histogram's lines are not 'count timestamp': $hist"

e2e_pass
