# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2012,SC2010
# tests/pipe/e2e_lib.sh - shared parts of band-pipe's end-to-end tests (tests/pipe/e2e_*.sh).
#
# A test script sources this file and calls e2e_init with its arguments:
#   e2e_<name>.sh BAND_PIPE WORKDIR
# BAND_PIPE is the program under test, WORKDIR the test's own directory (emptied first,
# removed when the test passes, kept for a look when it fails). The tests need bash, jq,
# gdalinfo (gdal-bin) and nginx (band-pipe --serve starts it).

set -euo pipefail

E2E_TILES=24 # 2 large, 2 missing, 1 corrupt and 1 truncated tile at every seed
E2E_SEED=7
E2E_RUN_TIMEOUT=120 # seconds: a hung run fails the test instead of its ctest TIMEOUT

E2E_SERVE_PID=
E2E_PASSED=0

fail()
{
    echo "FAIL: $*" >&2
    exit 1
}

note()
{
    echo "-- $*"
}

e2e_cleanup()
{
    local rc=$?
    e2e_stop_server
    if [[ $rc -eq 0 && $E2E_PASSED -eq 1 ]]; then
        rm -rf "$W"
    else
        echo "(the test's files are kept in $W)" >&2
    fi
}

# e2e_init BAND_PIPE WORKDIR
e2e_init()
{
    [[ $# -eq 2 ]] || {
        echo "usage: $0 BAND_PIPE WORKDIR" >&2
        exit 2
    }
    [[ -x "$1" ]] || fail "$1 is not an executable"
    BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    mkdir -p "$2"
    W=$(cd "$2" && pwd)
    for tool in jq gdalinfo timeout; do
        command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/deps.sh installs it)"
    done
    rm -rf "$W"
    mkdir -p "$W"
    trap e2e_cleanup EXIT
    export TMPDIR="$W" # band-pipe's own temporaries too
}

# The test passed: its directory goes when the script exits.
e2e_pass()
{
    if [[ -n "$E2E_SERVE_PID" ]]; then # the server too ends cleanly (a sanitizer report fails it)
        kill -TERM "$E2E_SERVE_PID" 2>/dev/null || true
        local rc=0
        wait "$E2E_SERVE_PID" || rc=$?
        E2E_SERVE_PID=
        [[ $rc -eq 0 ]] || fail "band-pipe --serve exited $rc on SIGTERM: $(cat "$W/serve.err")"
    fi
    E2E_PASSED=1
    echo "PASS: $(basename "$0" .sh)"
}

# ---- the dataset ----------------------------------------------------------------------

# e2e_generate: writes $W/data (tiles/, manifest.tsv) and checks the kinds it holds.
e2e_generate()
{
    "$BIN" --generate "$W/data" --tiles "$E2E_TILES" --seed "$E2E_SEED" >"$W/generate.out" ||
        fail "band-pipe --generate exited $?: $(cat "$W/generate.out")"
    MANIFEST=$W/data/manifest.tsv
    [[ -f "$MANIFEST" ]] || fail "--generate wrote no manifest.tsv"
    local k
    for k in small large corrupt truncated missing; do
        [[ -n "$(kind_names "$k")" ]] || fail "the dataset (--seed $E2E_SEED) has no $k tile"
    done
    [[ $(tail -n +2 "$MANIFEST" | wc -l) -eq $E2E_TILES ]] ||
        fail "manifest.tsv does not list $E2E_TILES tiles"
}

# kind_names KIND...: the output names (no .tif) of the manifest's tiles of those kinds.
kind_names()
{
    local kinds=" $* "
    tail -n +2 "$MANIFEST" | while IFS=$'\t' read -r name kind _; do
        [[ "$kinds" == *" $kind "* ]] && echo "${name%.tif}"
    done
    return 0
}

# ---- the server -----------------------------------------------------------------------

# e2e_serve [SERVER OPTIONS]: band-pipe --serve on $W/data in the background; sets URLS once urls.txt is
# there and the server said where it listens.
e2e_serve()
{
    rm -f "$W/data/urls.txt"
    "$BIN" --serve "$W/data" "$@" >"$W/serve.out" 2>"$W/serve.err" &
    E2E_SERVE_PID=$!
    URLS=$W/data/urls.txt
    local i
    for ((i = 0; i < 300; i++)); do
        if [[ -s "$URLS" ]] && grep -q '^serving http://' "$W/serve.out"; then
            break
        fi
        kill -0 "$E2E_SERVE_PID" 2>/dev/null ||
            fail "band-pipe --serve exited early: $(cat "$W/serve.out" "$W/serve.err")"
        sleep 0.1
    done
    [[ -s "$URLS" ]] || fail "band-pipe --serve wrote no urls.txt within 30 s"
    [[ $(wc -l <"$URLS") -eq $E2E_TILES ]] || fail "urls.txt does not list $E2E_TILES URLs"
}

e2e_stop_server()
{
    [[ -n "$E2E_SERVE_PID" ]] || return 0
    kill -TERM "$E2E_SERVE_PID" 2>/dev/null || true
    local rc=0
    wait "$E2E_SERVE_PID" || rc=$?
    E2E_SERVE_PID=
    [[ $rc -eq 0 ]] || echo "note: band-pipe --serve exited $rc: $(cat "$W/serve.err")" >&2
}

# ---- runs -----------------------------------------------------------------------------

# run_pipe NAME ARGS...: band-pipe ARGS with stdout in $W/NAME.out, stderr in $W/NAME.err;
# sets RC to its exit status. A run that outlives E2E_RUN_TIMEOUT fails the test.
run_pipe()
{
    local name=$1
    shift
    RC=0
    timeout -s KILL "$E2E_RUN_TIMEOUT" "$BIN" "$@" >"$W/$name.out" 2>"$W/$name.err" || RC=$?
    [[ $RC -ne 137 ]] || fail "band-pipe $* did not end within $E2E_RUN_TIMEOUT s"
}

# show NAME: the run's output, for a failure message.
show()
{
    echo "--- stdout:"
    cat "$W/$1.out"
    echo "--- stderr:"
    cat "$W/$1.err"
}

# expect_rc NAME WANT: the run NAME (its RC just set) exited WANT.
expect_rc()
{
    [[ $RC -eq $2 ]] || fail "run $1 exited $RC, expected $2
$(show "$1")"
}

# budget_limit NAME BUDGET: the value of BUDGET in the budget table printed at start.
budget_limit()
{
    awk -v b="$2" '/^budgets \(/ { on = 1; next } on && $1 == b { print $2; exit }' "$W/$1.out"
}

# budget_line NAME BUDGET: that line of the budget table, whole.
budget_line()
{
    awk -v b="$2" '/^budgets \(/ { on = 1; next } on && $1 == b { print; exit }' "$W/$1.out"
}

# ---- outputs --------------------------------------------------------------------------

# output_ok FILE [CODEC]: FILE is a complete GeoTIFF in EPSG:3857, compressed with CODEC
# (GDAL's name; default ZSTD, band-pipe's default). Prints why not on stdout and returns 1
# otherwise.
output_ok()
{
    local f=$1 want=${2:-ZSTD} info
    [[ -f "$f" ]] || {
        echo "$f does not exist"
        return 1
    }
    info=$(gdalinfo -json "$f" 2>&1) || {
        echo "gdalinfo cannot read $f: $info"
        return 1
    }
    local epsg wkt comp
    epsg=$(jq -r '.stac["proj:epsg"] // empty' <<<"$info")
    wkt=$(jq -r '.coordinateSystem.wkt // empty' <<<"$info")
    comp=$(jq -r '.metadata.IMAGE_STRUCTURE.COMPRESSION // empty' <<<"$info")
    if [[ "$epsg" != 3857 && "$wkt" != *'ID["EPSG",3857]]' && "$wkt" != *Pseudo-Mercator* ]]; then
        echo "$f is not in EPSG:3857 (proj:epsg '$epsg')"
        return 1
    fi
    [[ "$comp" == "$want" ]] || {
        echo "$f is not $want-compressed (COMPRESSION '$comp')"
        return 1
    }
    # Every pixel readable: a half-written file fails here.
    gdalinfo -checksum "$f" >/dev/null 2>"$W/checksum.err" || {
        echo "$f cannot be read whole: $(cat "$W/checksum.err")"
        return 1
    }
    if grep -qi 'error' "$W/checksum.err"; then
        echo "$f reads with errors: $(cat "$W/checksum.err")"
        return 1
    fi
    return 0
}

# expect_outputs DIR NAME...: each NAME has a complete output DIR/NAME.tif, compressed
# with $CODEC (default ZSTD).
expect_outputs()
{
    local dir=$1 n why
    shift
    for n in "$@"; do
        why=$(output_ok "$dir/$n.tif" "${CODEC:-ZSTD}") || fail "$why"
    done
}

# expect_only_outputs DIR NAME...: DIR holds exactly NAME.tif for the NAMEs given, and
# nothing else (no temporary, no other tile).
expect_only_outputs()
{
    local dir=$1
    shift
    local want got
    want=$(for n in "$@"; do echo "$n.tif"; done | sort)
    got=$(ls -A "$dir" | sort)
    [[ "$got" == "$want" ]] || fail "$dir holds other files than the expected outputs:
$(diff <(echo "$want") <(echo "$got") || true)"
}

# expect_no_temporaries DIR: every entry of DIR is tile-NNNN.tif.
expect_no_temporaries()
{
    local bad
    bad=$(ls -A "$1" | grep -v -E '^tile-[0-9]{4}\.tif$' || true)
    [[ -z "$bad" ]] || fail "$1 holds files other than outputs (temporaries?): $bad"
}

# ---- the log --------------------------------------------------------------------------

# log_names LOG EVENT: the tiles with that event, sorted.
log_names()
{
    jq -r --arg e "$2" 'select(.event == $e) | .tile' "$1" | sort
}

# log_valid LOG: every line is a JSON object with the fields every event has.
log_valid()
{
    jq -e -s 'all(.[]; (.ts | type) == "string" and (.t | type) == "number" and
                       (.event | type) == "string" and (.tile | type) == "string" and
                       (.source | type) == "string" and (.waited_ms | type) == "object")' \
        "$1" >/dev/null || fail "$1 has lines that are not events with ts, t, event, tile, source, waited_ms"
}

# log_max_concurrent LOG WHAT: the most tiles at once in WHAT, "tile" (from tile_started to
# the tile's end event) or a stage name (from its stage_start to its stage_end). The log
# is written in order by one thread, so its lines are in time order.
log_max_concurrent()
{
    jq -s -r --arg what "$2" '
        def opens: if $what == "tile" then .event == "tile_started"
                   else .event == "stage_start" and .stage == $what end;
        def closes: if $what == "tile"
                    then (.event | IN("tile_done", "tile_failed", "tile_abandoned", "tile_stopped"))
                    else .event == "stage_end" and .stage == $what end;
        reduce .[] as $e ({n: 0, max: 0, open: {}};
            if ($e | opens) then .open[$e.tile] = true | .n += 1 | .max = ([.max, .n] | max)
            elif ($e | closes) and (.open[$e.tile] // false)
            then .open[$e.tile] = false | .n -= 1
            else . end)
        | .max' "$1"
}

# ---- runs in the background (for signals) ---------------------------------------------

# start_bg NAME ARGS...: band-pipe ARGS in the background (stdout $W/NAME.out, stderr
# $W/NAME.err); sets BG_PID. Not under timeout(1), so signals go to band-pipe itself.
start_bg()
{
    local name=$1
    shift
    "$BIN" "$@" >"$W/$name.out" 2>"$W/$name.err" &
    BG_PID=$!
}

# wait_bg SECONDS: waits for BG_PID to end; sets RC to its exit status and BG_SECS to how
# long the wait took. If it is still running after SECONDS, it is killed and the test fails.
wait_bg()
{
    local limit=$1 start=$SECONDS i
    for ((i = 0; i < limit * 20; i++)); do
        kill -0 "$BG_PID" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$BG_PID" 2>/dev/null; then
        kill -KILL "$BG_PID" 2>/dev/null || true
        wait "$BG_PID" || true
        fail "band-pipe (pid $BG_PID) did not end within $limit s"
    fi
    RC=0
    wait "$BG_PID" || RC=$?
    BG_SECS=$((SECONDS - start))
}

# wait_log_count LOG EVENT N SECONDS: waits until LOG holds N lines of EVENT while BG_PID
# runs; fails when it ends first or the time runs out.
wait_log_count()
{
    local log=$1 event=$2 n=$3 limit=$4 i
    for ((i = 0; i < limit * 20; i++)); do
        if [[ -f "$log" ]] && [[ $(grep -c "\"event\":\"$event\"" "$log" || true) -ge $n ]]; then
            return 0
        fi
        kill -0 "$BG_PID" 2>/dev/null || fail "band-pipe ended before the log had $n $event"
        sleep 0.05
    done
    fail "the log had no $n $event within $limit s"
}

# human_bytes TEXT: bytes from band-pipe's short sizes ("7.4M", "62M", "0B"; K/M/G = 1024^n).
human_bytes()
{
    awk -v s="$1" 'BEGIN {
        u = substr(s, length(s)); v = substr(s, 1, length(s) - 1) + 0
        m = u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1
        printf "%.0f\n", v * m }'
}

# summary_memory NAME FIELD: from the summary's "memory: peak reserved R of the B budget,
# peak allocated A" line, FIELD reserved|budget|allocated in bytes.
summary_memory()
{
    local line
    line=$(grep '^memory: peak reserved ' "$W/$1.out") || fail "run $1 printed no memory line"
    local r b a
    r=$(sed -E 's/^memory: peak reserved ([^ ]+) of the ([^ ]+) budget, peak allocated ([^ ]+).*/\1/' <<<"$line")
    b=$(sed -E 's/^memory: peak reserved ([^ ]+) of the ([^ ]+) budget, peak allocated ([^ ]+).*/\2/' <<<"$line")
    a=$(sed -E 's/^memory: peak reserved ([^ ]+) of the ([^ ]+) budget, peak allocated ([^ ]+).*/\3/' <<<"$line")
    case $2 in
    reserved) human_bytes "$r" ;;
    budget) human_bytes "$b" ;;
    allocated) human_bytes "$a" ;;
    esac
}

# summary_positions NAME LABEL: the tile names of the summary's "  LABEL (N, input
# positions from 0): a-b, c" line, sorted (the inputs are the dataset's, in order, so
# position i is tile-000i).
summary_positions()
{
    sed -nE "s/^  $2 \\([0-9]+, input positions from 0\\): (.*)$/\\1/p" "$W/$1.out" | tr ',' '\n' |
        while read -r r; do
            [[ -n "$r" ]] || continue
            local a=${r%-*} b=${r#*-} i
            for ((i = a; i <= b; i++)); do printf 'tile-%04d\n' "$i"; done
        done | sort
}
