#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_local: local inputs without a server: a directory of rasters, a file of
# file:// URLs, and paths on standard input ('-'). The good tiles' outputs are valid, the
# broken ones fail corrupt, and a local path that does not exist fails not_found; and
# --compress deflate and lzw write those codecs; a large tile borrows an idle cpu slot; and
# with the cpu slot busy, nothing waits for memory that is not short; and --resampling
# nearest gives gdalwarp -r near's pixels.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
e2e_generate
TILES=$W/data/tiles
good=$(kind_names small large)

# 1. The tiles directory (the missing tiles are simply not there).
run_pipe dir "$TILES" "$W/out-dir" --log "$W/dir.jsonl" --cpu 2
expect_rc dir 1
# shellcheck disable=SC2012
[[ $(grep -c '"event":"tile_started"' "$W/dir.jsonl") -eq $(ls "$TILES" | wc -l) ]] ||
    fail "the directory run did not start one tile per file of $TILES"
[[ "$(log_names "$W/dir.jsonl" tile_done)" == "$(sort <<<"$good")" ]] ||
    fail "the directory run did not do exactly the good tiles:
$(show dir)"
for n in $(kind_names corrupt truncated); do
    jq -e -s --arg n "$n" 'any(.[]; .tile == $n and .event == "tile_failed" and .reason == "corrupt")' \
        "$W/dir.jsonl" >/dev/null || fail "$n did not fail corrupt in the directory run"
done
# shellcheck disable=SC2086
expect_outputs "$W/out-dir" $good
# shellcheck disable=SC2086
expect_only_outputs "$W/out-dir" $good

# 2. A file of file:// URLs, the missing tiles' included.
tail -n +2 "$MANIFEST" | cut -f1 | sed "s|^|file://$TILES/|" >"$W/list.txt"
echo "# a comment, then a blank line" >>"$W/list.txt"
echo >>"$W/list.txt"
run_pipe list "$W/list.txt" "$W/out-list" --log "$W/list.jsonl" --cpu 2
expect_rc list 1
[[ "$(log_names "$W/list.jsonl" tile_done)" == "$(sort <<<"$good")" ]] ||
    fail "the file:// run did not do exactly the good tiles:
$(show list)"
for n in $(kind_names missing); do
    jq -e -s --arg n "$n" --arg p "$TILES/$n.tif" '[.[] | select(.tile == $n and .event == "tile_failed")] |
        length == 1 and .[0].reason == "not_found" and (.[0].detail | startswith($p))' \
        "$W/list.jsonl" >/dev/null ||
        fail "the missing $n did not fail not_found with its path in the detail:
$(jq -c --arg n "$n" 'select(.tile == $n and (.event | startswith("tile_")))' "$W/list.jsonl")"
done
nmissing=$(kind_names missing | wc -l)
grep -q "^  failed by reason: not_found $nmissing, corrupt 2$" "$W/list.out" ||
    fail "the file:// run's failures are not not_found $nmissing, corrupt 2:
$(show list)"
# shellcheck disable=SC2086
expect_outputs "$W/out-list" $good
# shellcheck disable=SC2086
expect_only_outputs "$W/out-list" $good

# 3. Plain paths on standard input: three small tiles, all good, so exit 0.
some=$(kind_names small | head -n 3)
for n in $some; do echo "$TILES/$n.tif"; done >"$W/stdin.txt"
run_pipe stdin - "$W/out-stdin" --cpu 2 <"$W/stdin.txt"
expect_rc stdin 0
grep -q "^band-pipe: 3 tiles in .* s: 3 done, 0 skipped, 0 failed$" "$W/stdin.out" ||
    fail "the stdin run did not do its 3 tiles:
$(show stdin)"
# shellcheck disable=SC2086
expect_outputs "$W/out-stdin" $some
# shellcheck disable=SC2086
expect_only_outputs "$W/out-stdin" $some

# 4. The same with each other codec: the outputs are in it, and the start says so.
for codec in deflate lzw; do
    want=${codec^^}
    run_pipe "stdin-$codec" - "$W/out-$codec" --cpu 2 --compress "$codec" <"$W/stdin.txt"
    expect_rc "stdin-$codec" 0
    grep -q "compressed with $want\$" "$W/stdin-$codec.out" ||
        fail "the --compress $codec run does not say it writes $want:
$(show "stdin-$codec")"
    # shellcheck disable=SC2086
    CODEC=$want expect_outputs "$W/out-$codec" $some
done

# 5. A large tile alone with two cpu slots borrows the idle one for its warp, exactly
#    once; with one slot there is nothing to borrow. The output is the same either way.
big=$(kind_names large | head -n 1)
echo "$TILES/$big.tif" >"$W/big.txt"
run_pipe big2 "$W/big.txt" "$W/out-big2" --cpu 2
expect_rc big2 0
grep -q "^cpu: large warps borrowed 1 idle slots, one warp thread each$" "$W/big2.out" ||
    fail "the large tile with --cpu 2 did not borrow the idle slot:
$(show big2)"
run_pipe big1 "$W/big.txt" "$W/out-big1" --cpu 1
expect_rc big1 0
! grep -q "borrowed" "$W/big1.out" || fail "the large tile with --cpu 1 borrowed a slot:
$(show big1)"
expect_outputs "$W/out-big2" "$big"
expect_outputs "$W/out-big1" "$big"
[[ $(gdalinfo -checksum "$W/out-big1/$big.tif" | grep Checksum) == \
    $(gdalinfo -checksum "$W/out-big2/$big.tif" | grep Checksum) ]] ||
    fail "the warp on two threads gave other pixels than on one"

# 6. With the one cpu slot always busy and far more memory than the run uses, no tile ever
#    waits for memory: a tile waiting for the slot does not stand in the memory budget's
#    queue, where every body reservation behind it would wait too.
run_pipe onecpu "$TILES" "$W/out-onecpu" --log "$W/onecpu.jsonl" --cpu 1
expect_rc onecpu 1
[[ "$(log_names "$W/onecpu.jsonl" tile_done)" == "$(sort <<<"$good")" ]] ||
    fail "the --cpu 1 run did not do exactly the good tiles:
$(show onecpu)"
waited=$(jq -r 'select(.waited_ms.memory > 0) | "\(.tile) \(.event) \(.stage): \(.waited_ms.memory) ms"' \
    "$W/onecpu.jsonl")
[[ -z "$waited" ]] || fail "tiles waited for memory that was never short:
$waited
$(show onecpu)"

# 7. --resampling nearest: the start says so, and the pixels are gdalwarp -r near's on the
#    grid band-pipe chose; the default (bilinear) run's are not.
run_pipe near - "$W/out-near" --cpu 2 --resampling nearest <"$W/stdin.txt"
expect_rc near 0
grep -q "reprojected to EPSG:3857 (nearest), compressed" "$W/near.out" ||
    fail "the --resampling nearest run does not say so:
$(show near)"
grep -q "reprojected to EPSG:3857 (bilinear), compressed" "$W/stdin.out" ||
    fail "the default run does not say it resamples bilinear:
$(show stdin)"
# shellcheck disable=SC2086
expect_outputs "$W/out-near" $some
checksums() { gdalinfo -checksum "$1" | grep -o 'Checksum=[0-9]*' | tr '\n' ' '; }
for n in $some; do
    read -r -a te < <(gdalinfo -json "$W/out-near/$n.tif" |
        jq -r '[.cornerCoordinates.lowerLeft[0], .cornerCoordinates.lowerLeft[1],
                .cornerCoordinates.upperRight[0], .cornerCoordinates.upperRight[1],
                .size[0], .size[1]] | map(tostring) | join(" ")')
    gdalwarp -q -r near -t_srs EPSG:3857 -te "${te[@]:0:4}" -ts "${te[4]}" "${te[5]}" \
        "$TILES/$n.tif" "$W/ref-$n.tif" || fail "gdalwarp failed on $n"
    [[ $(checksums "$W/out-near/$n.tif") == $(checksums "$W/ref-$n.tif") ]] ||
        fail "$n: --resampling nearest differs from gdalwarp -r near"
    [[ $(checksums "$W/out-stdin/$n.tif") != $(checksums "$W/ref-$n.tif") ]] ||
        fail "$n: the bilinear output equals gdalwarp -r near's: the check cannot fail"
done

e2e_pass
