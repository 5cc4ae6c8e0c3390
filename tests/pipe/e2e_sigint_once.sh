#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_sigint_once: one SIGINT stops admitting tiles and lets those in flight finish:
# exit 130, the summary lists what completed and what is pending, every tile the log
# calls done has a complete output and no other tile has one. --resume on the same
# output then skips exactly those and writes the rest.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
e2e_serve

LOG=$W/run1.jsonl
OUT=$W/out
# Slowed to 8 requests a second, so the run is still going when the signal comes.
start_bg run1 "$URLS" "$OUT" --log "$LOG" --requests 8 --cpu 2
wait_log_count "$LOG" tile_done 2 60
kill -INT "$BG_PID"
wait_bg 60
expect_rc run1 130

grep -q '^band-pipe: interrupted: no new tile starts' "$W/run1.err" ||
    fail "no 'interrupted' message on stderr:
$(show run1)"
grep -q '^interrupted (stopped admitting, finished the tiles in flight): 0 abandoned, [1-9][0-9]* pending$' "$W/run1.out" ||
    fail "the summary does not report one interruption with pending tiles:
$(show run1)"
grep -q '^  completed ([0-9]*, input positions from 0): ' "$W/run1.out" ||
    fail "the summary does not list the completed tiles"
grep -q '^  pending ([0-9]*, input positions from 0): ' "$W/run1.out" ||
    fail "the summary does not list the pending tiles"

log_valid "$LOG"
done1=$(log_names "$LOG" tile_done)
ndone1=$(wc -w <<<"$done1")
[[ $ndone1 -ge 2 ]] || fail "fewer than 2 tiles done in the log"
completed=$(sed -nE 's/^  completed \(([0-9]+),.*/\1/p' "$W/run1.out")
[[ "$completed" == "$ndone1" ]] || fail "the summary lists $completed completed, the log $ndone1 tile_done"
[[ "$(summary_positions run1 completed)" == "$done1" ]] ||
    fail "the summary's completed positions are not the log's done tiles:
$(diff <(echo "$done1") <(summary_positions run1 completed) || true)"
[[ $(summary_positions run1 pending | wc -l) -eq $(sed -nE 's/^  pending \(([0-9]+),.*/\1/p' "$W/run1.out") ]] ||
    fail "the summary's pending positions do not add up to its pending count"
[[ -z "$(comm -12 <(summary_positions run1 pending) <(log_names "$LOG" tile_done; log_names "$LOG" tile_failed))" ]] ||
    fail "the summary lists as pending a tile the log says done or failed"
pending=$(sed -nE 's/^  pending \(([0-9]+),.*/\1/p' "$W/run1.out")
nfailed1=$(log_names "$LOG" tile_failed | wc -l)
[[ $((ndone1 + nfailed1 + pending)) -eq $E2E_TILES ]] ||
    fail "done $ndone1 + failed $nfailed1 + pending $pending is not $E2E_TILES"
[[ $(log_names "$LOG" tile_abandoned | wc -l) -eq 0 ]] || fail "one SIGINT abandoned tiles"
# Every tile that started ended (done, failed, or stopped before its request).
[[ $(jq -s '[.[] | select(.event == "tile_started")] | length' "$LOG") -eq \
    $(jq -s '[.[] | select(.event | IN("tile_done", "tile_failed", "tile_stopped"))] | length' "$LOG") ]] ||
    fail "some tile started but has no end event"

# The tiles in flight finished: every tile that reached the decoders ended done or failed.
jq -e -s '[.[] | select(.event == "stage_start" and .stage == "decode") | .tile] as $dec |
    [.[] | select(.event == "tile_stopped") | .tile] as $stopped |
    ($dec - ($dec - $stopped)) == []' "$LOG" >/dev/null ||
    fail "a tile stopped after it reached the decoders (in flight, it should have finished)"

# Outputs: exactly the done tiles, each complete, no temporary.
# shellcheck disable=SC2086
expect_outputs "$OUT" $done1
# shellcheck disable=SC2086
expect_only_outputs "$OUT" $done1
note "first run: $ndone1 done, $nfailed1 failed, $pending pending"

# Before resuming, what a killed run leaves: a temporary of a process that is gone (to be
# removed), one of a process still running (kept: it may be writing), and a damaged output
# of a tile not done (not complete: written again, not skipped).
dead=$(sh -c 'echo $$')
live=$$
broken=$(comm -23 <(kind_names small | sort) <(echo "$done1") | head -n 1)
echo "half a file" >"$OUT/.$broken.tif.tmp.$dead.3"
echo "another writer" >"$OUT/.$broken.tif.tmp.$live.4"
echo "not a tiff" >"$OUT/$broken.tif"

# --resume: the done tiles are skipped, the rest run; the bad tiles fail again.
run_pipe run2 "$URLS" "$OUT" --log "$W/run2.jsonl" --resume --cpu 2
grep -q '^removed 1 temporary files left by an earlier run that was killed$' "$W/run2.out" ||
    fail "--resume did not remove the dead process's temporary:
$(show run2)"
[[ ! -e "$OUT/.$broken.tif.tmp.$dead.3" ]] || fail "the dead process's temporary is still there"
[[ -e "$OUT/.$broken.tif.tmp.$live.4" ]] || fail "a running process's temporary was removed"
rm -f "$OUT/.$broken.tif.tmp.$live.4"
grep -q "\"event\":\"tile_done\",\"tile\":\"$broken\"" "$W/run2.jsonl" ||
    fail "the damaged output $broken.tif was not written again"
expect_rc run2 1
good=$(kind_names small large)
ngood=$(wc -w <<<"$good")
nbad=$(kind_names corrupt truncated missing | wc -l)
grep -q "^band-pipe: $E2E_TILES tiles in .* s: $((ngood - ndone1)) done, $ndone1 skipped, $nbad failed$" "$W/run2.out" ||
    fail "the resumed run does not say $((ngood - ndone1)) done, $ndone1 skipped, $nbad failed:
$(show run2)"
[[ "$(log_names "$W/run2.jsonl" tile_skipped)" == "$done1" ]] ||
    fail "the resumed run's tile_skipped are not the first run's done tiles"
[[ -z "$(comm -12 <(log_names "$W/run2.jsonl" tile_started) <(echo "$done1"))" ]] ||
    fail "the resumed run started tiles that were already done"
# shellcheck disable=SC2086
expect_outputs "$OUT" $good
# shellcheck disable=SC2086
expect_only_outputs "$OUT" $good

e2e_pass
