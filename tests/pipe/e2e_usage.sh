#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pipe_e2e_usage: bad command lines exit 2 with a message saying what is wrong, and start
# nothing; --help and --version exit 0, or 2 when their output cannot be written.
# shellcheck source=tests/pipe/e2e_lib.sh
source "$(dirname "$0")/e2e_lib.sh"
e2e_init "$@"
cd "$W"

# bad ARGS... -- MESSAGE: exit 2, MESSAGE on stderr, nothing on stdout, nothing created.
bad()
{
    local args=() msg
    while [[ $1 != -- ]]; do
        args+=("$1")
        shift
    done
    msg=$2
    run_pipe bad "${args[@]}"
    [[ $RC -eq 2 ]] || fail "band-pipe ${args[*]} exited $RC, expected 2
$(show bad)"
    grep -q -F -- "$msg" "$W/bad.err" ||
        fail "band-pipe ${args[*]}: stderr does not say \"$msg\":
$(show bad)"
    [[ ! -s "$W/bad.out" ]] || fail "band-pipe ${args[*]} printed on stdout:
$(show bad)"
    # shellcheck disable=SC2010
    [[ -z "$(ls -A "$W" | grep -v -E '^bad\.(out|err)$' || true)" ]] ||
        fail "band-pipe ${args[*]} created files: $(ls -A "$W")"
}

bad --cpu 0 list out -- "band-pipe: --cpu: '0' is not a count from 1 to 1024"
bad --memory 12Q list out -- "band-pipe: --memory: '12Q' is not a size (bytes, or with K, M, G)"
bad --memory 0 list out -- "band-pipe: --memory: '0' is not a size"
bad --compress jpeg list out -- "band-pipe: --compress: 'jpeg' is not zstd, deflate or lzw"
bad --resampling spline list out -- \
    "band-pipe: --resampling: 'spline' is not nearest, bilinear, cubic, lanczos or average"
bad --plot x.txt list out -- "band-pipe: --plot: 'x.txt' must end in .svg or .png"
bad --no-such-option list out -- "band-pipe: unknown option (band-pipe --help lists them)"
bad --connections many list out -- "band-pipe: --connections: 'many' is neither 'auto' nor a count"
bad list -- "band-pipe: an output directory is needed: band-pipe INPUT OUTDIR, or --out DIR"
bad list out more -- "band-pipe: too many arguments"
bad --out a list b -- "band-pipe: the output directory is given twice"
bad --generate g --serve s -- "band-pipe: --generate and --serve are separate steps"
bad "$W/no-such-list" out -- "band-pipe: $W/no-such-list: No such file or directory"

run_pipe help --help
expect_rc help 0
grep -q '^usage: band-pipe \[options\] \[INPUT \[OUTDIR\]\]$' "$W/help.out" || fail "--help prints no usage line"
for o in --connections --requests --cpu --memory --disk --descriptors --memory-by-count \
    --out --crs --compress --resampling --log --plot --verify --resume --retries --generate --serve; do
    grep -q -- "$o" "$W/help.out" || fail "--help does not list $o"
done
grep -q 'exit status: 0 every tile done or skipped, 1 some tile failed, 2 bad usage' "$W/help.out" ||
    fail "--help does not give the exit statuses"
[[ ! -s "$W/help.err" ]] || fail "--help wrote on stderr: $(cat "$W/help.err")"
run_pipe version --version
expect_rc version 0
grep -q '^band-pipe (band [0-9]' "$W/version.out" || fail "--version prints no version"

# A failed write of stdout is caught at exit: exit 2 and a message on stderr.
if [[ -w /dev/full ]]; then
    RC=0
    timeout -s KILL "$E2E_RUN_TIMEOUT" "$BIN" --help >/dev/full 2>"$W/full.err" || RC=$?
    [[ $RC -eq 2 ]] || fail "band-pipe --help >/dev/full exited $RC, expected 2"
    grep -q -F 'band-pipe: writing the standard output failed: No space left on device' \
        "$W/full.err" || fail "band-pipe --help >/dev/full: stderr says $(cat "$W/full.err")"
else
    echo "pipe_e2e_usage: no writable /dev/full: the failed-write case is not checked"
fi
cd /
e2e_pass
