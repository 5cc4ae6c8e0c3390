#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_sigint_twice: a second SIGINT abandons the tiles in flight: exit 130 within a
# few seconds, the abandoned tiles named, the done tiles' outputs complete, no other
# output and no temporary left.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

LOG=$W/run.jsonl
OUT=$W/out
# One decoder and one writer: tiles queue up behind them, so some are in flight when the
# second signal comes.
start_bg run "$URLS" "$OUT" --log "$LOG" --cpu 1 --disk 1
wait_log_count "$LOG" tile_done 1 60
# Interrupt once a large tile (100x the small ones) has started its processing: it is
# still in flight when the second signal comes, however fast the small tiles are.
large=$(awk -F'\t' '$2 == "large" { sub(/\.tif$/, "", $1); print $1 }' "$MANIFEST" | paste -sd'|')
[[ -n "$large" ]] || fail "the generated set has no large tile"
for ((i = 0; i < 6000; i++)); do
    grep -E '"event":"stage_start","tile":"('"$large"')"' "$LOG" | grep -qv '"stage":"fetch"' && break
    kill -0 "$BG_PID" 2>/dev/null || fail "band-pipe ended before a large tile started processing"
    sleep 0.01
done
kill -INT "$BG_PID"
sleep 0.05
kill -INT "$BG_PID" 2>/dev/null || fail "band-pipe ended within 0.05 s of the first SIGINT"
wait_bg 30
expect_rc run 130
note "ended $BG_SECS s after the second SIGINT"
[[ $BG_SECS -le 8 ]] || fail "band-pipe took $BG_SECS s to end after the second SIGINT"

grep -q '^band-pipe: abandoning the tiles in flight$' "$W/run.err" ||
    fail "no 'abandoning' message on stderr:
$(show run)"
line=$(grep '^interrupted twice (in-flight tiles abandoned): [0-9]* abandoned, [0-9]* pending$' "$W/run.out") ||
    fail "the summary does not report two interruptions:
$(show run)"
nab=$(sed -E 's/.*: ([0-9]+) abandoned.*/\1/' <<<"$line")
note "$line"
[[ $nab -ge 1 ]] || fail "the second SIGINT abandoned no tile (one decoder, tiles queued behind it)"

log_valid "$LOG"
done1=$(log_names "$LOG" tile_done)
[[ -n "$done1" ]] || fail "no tile done"
abandoned=$(log_names "$LOG" tile_abandoned)
[[ $(wc -w <<<"$abandoned") -eq $nab ]] ||
    fail "the summary says $nab abandoned, the log has $(wc -w <<<"$abandoned") tile_abandoned"
npend=$(sed -E 's/.* ([0-9]+) pending$/\1/' <<<"$line")
ndone=$(wc -w <<<"$done1")
nfailed=$(log_names "$LOG" tile_failed | wc -l)
[[ $((ndone + nfailed + nab + npend)) -eq $E2E_TILES ]] ||
    fail "done $ndone + failed $nfailed + abandoned $nab + pending $npend is not $E2E_TILES"
for n in $abandoned; do
    grep -q "^  abandoned: $n$" "$W/run.out" || fail "the summary does not name the abandoned $n"
done
[[ $(jq -s '[.[] | select(.event == "tile_started")] | length' "$LOG") -eq \
    $(jq -s '[.[] | select(.event | IN("tile_done", "tile_failed", "tile_stopped", "tile_abandoned"))] | length' "$LOG") ]] ||
    fail "some tile started but has no end event"

# shellcheck disable=SC2086
expect_outputs "$OUT" $done1
# shellcheck disable=SC2086
expect_only_outputs "$OUT" $done1

e2e_pass
