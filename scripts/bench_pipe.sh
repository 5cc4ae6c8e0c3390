#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_pipe.sh - band-pipe beside three other ways of doing its job, on the same generated
# tiles served by the same rate-limited nginx (bench/pipe/README.md).
#
#   scripts/bench_pipe.sh [--tiles N] [--rounds R] [--only LIST] [--ulimit N] [--keep]
#   make bench-pipe [BENCH_PIPE_ARGS="..."]
#
#   --tiles N    tiles in the generated dataset (default 200)
#   --rounds R   rounds; every contender runs once per round, the order rotating (default 3)
#   --only LIST  the contenders to run, a comma-separated subset of a,b,c,d (or their
#                names band-pipe, asyncio, parallel, gdalwarp); default all four
#   --ulimit N   also run band-pipe under `ulimit -n N` each round (contender "ulimit-N")
#                and report whether any EMFILE ("Too many open files") happened
#   --resampling R   every contender's resampling: nearest, bilinear (default: band-pipe's,
#                so every contender does the same work per tile), cubic, lanczos, average
#   --compress C     every contender's output codec: zstd (default: band-pipe's), deflate
#                or lzw, each with band-pipe's creation options (tiled, fastest level,
#                predictor 2), so every contender writes the same files
#   --pipe-args "ARGS"   more options for band-pipe's runs, split on spaces (e.g.
#                "--memory 256M --verify")
#   --timeout S  stop a run after S seconds (TERM, then KILL 5 s later; default 600): it is
#                recorded with exit 124
#   --server-rate R, --server-burst B   the server's request limit for everyone together
#                (default: band-pipe --serve's, the demonstration's 40/s with a burst of 10);
#                a low rate makes the remote quota, not the cores, the bound
#   --keep       keep the work directory (dataset, outputs, logs)
#
# Environment:
#   BUILD_DIR        the band build (default build/release)
#   BAND_PIPE        the band-pipe program (default $BUILD_DIR/tools/pipe/band-pipe); it
#                    also generates the dataset (--generate) and serves it (--serve)
#   BENCH_PIPE_WORK  the work directory (default $BUILD_DIR/bench/pipe-work; replaced)
#
# Each run gets a fresh output directory and is measured from outside: wall time, tiles
# written (*.tif in the output), tiles/s, MB/s (bytes of the dataset's tiles / wall time),
# CPU time (user + system, of the whole tree: /usr/bin/time), which the machine's noise
# disturbs far less than wall time, peak RSS of its largest process (/usr/bin/time -f
# %M), peak RSS and open descriptors
# summed over its process tree (bench/pipe/sampler.py, every 10 ms), and the 429s the
# server sent it (the access log's delta). Prints a table of medians with ratios against
# band-pipe and writes every run and the medians to $BUILD_DIR/bench/pipe.tsv.
# Timings on a shared machine are noisy: compare the ratios, not the seconds.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD_DIR=${BUILD_DIR:-build/release}
BAND_PIPE=${BAND_PIPE:-$BUILD_DIR/tools/pipe/band-pipe}
work=${BENCH_PIPE_WORK:-$BUILD_DIR/bench/pipe-work}
tsv=$BUILD_DIR/bench/pipe.tsv
py=/usr/bin/python3 # Debian's python, which has python3-aiohttp and python3-rasterio

tiles=200
rounds=3
only=a,b,c,d
nofile=
resampling=bilinear
codec=zstd
pipe_args=()
run_timeout=600
keep=0
serve_args=()
die() {
    echo "bench-pipe: $*" >&2
    exit 1
}
while (($# > 0)); do
    case $1 in
    --tiles) tiles=${2:?--tiles needs a count}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --ulimit) nofile=${2:?--ulimit needs a descriptor limit}; shift 2 ;;
    --resampling) resampling=${2:?--resampling needs a method}; shift 2 ;;
    --compress) codec=${2:?--compress needs a codec}; shift 2 ;;
    --pipe-args) read -r -a pipe_args <<<"${2?--pipe-args needs options}"; shift 2 ;;
    --timeout) run_timeout=${2:?--timeout needs seconds}; shift 2 ;;
    --server-rate) serve_args+=(--server-rate "${2:?--server-rate needs a rate}"); shift 2 ;;
    --server-burst) serve_args+=(--server-burst "${2:?--server-burst needs a count}"); shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[[ $tiles =~ ^[1-9][0-9]*$ ]] || die "--tiles: '$tiles' is not a positive count"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds: '$rounds' is not a positive count"
[[ -z $nofile || $nofile =~ ^[1-9][0-9]*$ ]] || die "--ulimit: '$nofile' is not a count"
[[ $run_timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout: '$run_timeout' is not a count of seconds"
case $resampling in
nearest) gdal_resampling=near ;; # gdalwarp's name for it
bilinear | cubic | lanczos | average) gdal_resampling=$resampling ;;
*) die "--resampling: '$resampling' is not nearest, bilinear, cubic, lanczos or average" ;;
esac

case $codec in
zstd | deflate | lzw) ;;
*) die "--compress: '$codec' is not zstd, deflate or lzw" ;;
esac

contenders=()
IFS=, read -r -a picked <<<"$only"
for c in "${picked[@]}"; do
    case $c in
    a | band-pipe) contenders+=(band-pipe) ;;
    b | asyncio) contenders+=(asyncio) ;;
    c | parallel) contenders+=(parallel) ;;
    d | gdalwarp) contenders+=(gdalwarp) ;;
    *) die "--only: '$c' is not one of a,b,c,d (band-pipe, asyncio, parallel, gdalwarp)" ;;
    esac
done
[[ -n $nofile ]] && contenders+=("ulimit-$nofile")
((${#contenders[@]} > 0)) || die "--only: no contender picked"

# What the runs need. band-pipe is always needed: it generates and serves the dataset.
if [[ ! -x $BAND_PIPE ]]; then
    die "$BAND_PIPE is missing: build band-pipe first (make release builds it, with" \
        "libgdal-dev, libcurl4-openssl-dev and libuv1-dev installed: make deps), or set" \
        "BAND_PIPE=/path/to/band-pipe"
fi
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is missing ($2; make deps installs it)"; }
need /usr/bin/time "package time: peak RSS"
[[ -x $py ]] || die "$py is missing (package python3: the sampler and the asyncio pipeline)"
for c in "${contenders[@]}"; do
    case $c in
    asyncio) "$py" -c 'import aiohttp, rasterio' 2>/dev/null ||
        die "$py cannot import aiohttp and rasterio (packages python3-aiohttp python3-rasterio)" ;;
    parallel) need parallel "package parallel"; need curl "package curl"
        need gdalwarp "package gdal-bin" ;;
    gdalwarp) need gdalwarp "package gdal-bin" ;;
    esac
done

cores=$(nproc)
rm -rf "$work"
mkdir -p "$work" "$(dirname "$tsv")"
work=$(cd "$work" && pwd)
data=$work/dataset

echo "bench-pipe: $BAND_PIPE --generate $data --tiles $tiles"
"$BAND_PIPE" --generate "$data" --tiles "$tiles" >"$work/generate.log" 2>&1 ||
    { cat "$work/generate.log" >&2; die "generating the dataset failed"; }
[[ -d $data/tiles && -s $data/manifest.tsv ]] ||
    die "--generate wrote no $data/tiles or $data/manifest.tsv"

# The server, in the background until the end.
rm -f "$data/urls.txt"
"$BAND_PIPE" --serve "$data" "${serve_args[@]}" >"$work/serve.out" 2>"$work/serve.err" &
server=$!
kill_tree() { # signal $2 (default TERM) to process $1 and its descendants, children first
    local c kids=()
    read -r -a kids <<<"$(cat /proc/"$1"/task/*/children 2>/dev/null | tr '\n' ' ')"
    for c in "${kids[@]}"; do kill_tree "$c" "${2:-TERM}"; done
    kill -"${2:-TERM}" "$1" 2>/dev/null || true
}
kill_below() { # signal $2 to the descendants of $1 (not $1: /usr/bin/time stays to report)
    local c kids=()
    read -r -a kids <<<"$(cat /proc/"$1"/task/*/children 2>/dev/null | tr '\n' ' ')"
    for c in "${kids[@]}"; do kill_tree "$c" "$2"; done
}
running= # the /usr/bin/time of the run in progress
cleanup() {
    if [[ -n ${running:-} ]]; then
        kill_below "$running" TERM
        sleep 1
        kill_below "$running" KILL
        running=
    fi
    if [[ -n ${server:-} ]]; then
        kill -TERM "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
        server=
    fi
    if ((keep == 0)); then rm -rf "$work"; else echo "bench-pipe: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < 300; i++)); do
    if [[ -s $data/urls.txt ]] && grep -q '^serving ' "$work/serve.out"; then break; fi
    kill -0 "$server" 2>/dev/null ||
        { cat "$work/serve.err" >&2; server=; die "band-pipe --serve exited during start-up"; }
    sleep 0.1
done
((i < 300)) || die "band-pipe --serve printed no 'serving ...' line within 30 s"
grep '^serving ' "$work/serve.out" | sed 's/^/bench-pipe: /'
access_log=$(sed -n 's/^serving .*access log: \(.*\))$/\1/p' "$work/serve.out" | head -n1)
[[ -f $access_log ]] || die "cannot find the server's access log ('$access_log')"
count_429() { awk '$1 == 429 { n++ } END { print n + 0 }' "$access_log"; }

urls=$data/urls.txt
total=$(grep -c -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$urls" || true)
in_bytes=$(find "$data/tiles" -maxdepth 1 -type f -name '*.tif' -printf '%s\n' |
    awk '{ s += $1 } END { print s + 0 }')
echo "bench-pipe: $total URLs, $(awk -v b="$in_bytes" 'BEGIN { printf "%.1f", b / 1e6 }') MB" \
    "of tiles; $rounds rounds of: ${contenders[*]}; $cores cores; output $codec"

# shellcheck disable=SC2016 # ulimit-N: the inner shell expands its own $0 and $@
set_command() { # cmd=(the command line of contender $1 writing to $2)
    local out=$2
    case $1 in
    band-pipe) cmd=("$BAND_PIPE" --quiet --compress "$codec" --resampling "$resampling"
        "${pipe_args[@]}" "$urls" "$out") ;;
    asyncio) cmd=("$py" "$top/bench/pipe/asyncio_pipeline.py" "$urls" "$out"
        --resampling "$resampling" --compress "$codec") ;;
    parallel) cmd=(bash "$top/bench/pipe/parallel_curl_gdalwarp.sh" "$urls" "$out"
        "$((cores * 2))" EPSG:3857 "$gdal_resampling" "$codec") ;;
    gdalwarp) cmd=(bash "$top/bench/pipe/gdalwarp_multi.sh" "$data/tiles" "$out" EPSG:3857
        "$gdal_resampling" "$codec") ;;
    ulimit-*) cmd=(bash -c 'ulimit -n "$0" && exec "$@"' "${1#ulimit-}" "$BAND_PIPE" --quiet
        --compress "$codec" --resampling "$resampling" "${pipe_args[@]}" "$urls" "$out") ;;
    esac
}

runs=$work/runs.tsv
printf 'contender\tround\twall_s\ttiles_done\ttiles_total\ttiles_per_s\tmb_per_s\tcpu_s\tpeak_rss_kb\tpeak_tree_rss_kb\tpeak_fds\thttp_429\texit\temfile\n' >"$runs"

run_one() { # contender, round
    local name=$1 round=$2 out=$work/out-$1 log=$work/log-$1-$2.txt
    rm -rf "$out"
    mkdir -p "$out"
    local cmd
    set_command "$name" "$out"
    local before t0 t1 rc=0
    before=$(count_429)
    t0=$(date +%s%N)
    /usr/bin/time -f '%M %U %S' -o "$work/time-$name-$round" "${cmd[@]}" >"$log" 2>&1 &
    local tpid=$!
    running=$tpid
    "$py" "$top/bench/pipe/sampler.py" "$tpid" "$work/sample-$name-$round" 10 &
    local spid=$!
    local flag=$work/timed-out-$name-$round
    (
        sleep "$run_timeout"
        : >"$flag"
        kill_below "$tpid" TERM
        sleep 5
        kill_below "$tpid" KILL
    ) &
    local wpid=$!
    wait "$tpid" || rc=$?
    t1=$(date +%s%N)
    running=
    kill_tree "$wpid"
    wait "$wpid" 2>/dev/null || true
    kill -TERM "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    local note=
    if [[ -e $flag ]]; then
        rc=124
        note="  TIMED OUT after ${run_timeout} s"
    fi
    local done_ fds tree after emfile
    done_=$(find "$out" -maxdepth 1 -name '*.tif' | wc -l)
    local rss=0 usr=0 sys=0
    read -r rss usr sys < <(tail -n1 "$work/time-$name-$round" 2>/dev/null) || true
    [[ $rss =~ ^[0-9]+$ ]] || { rss=0; usr=0; sys=0; }
    read -r fds tree _ <"$work/sample-$name-$round" || { fds=0; tree=0; }
    after=$(count_429)
    emfile=$(grep -ciE 'EMFILE|too many open files' "$log" || true)
    awk -v n="$name" -v r="$round" -v t0="$t0" -v t1="$t1" -v d="$done_" -v tot="$total" \
        -v b="$in_bytes" -v rss="$rss" -v usr="$usr" -v sys="$sys" -v tree="$tree" \
        -v fds="$fds" -v c="$((after - before))" -v rc="$rc" -v em="$emfile" 'BEGIN {
            s = (t1 - t0) / 1e9
            printf "%s\t%s\t%.3f\t%d\t%d\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%d\t%d\n",
                n, r, s, d, tot, d / s, b / 1e6 / s, usr + sys, rss, tree, fds, c, rc, em
        }' >>"$runs"
    printf '  round %d %-10s %7.2f s  %5.2f cpu s  %4d/%d tiles  exit %d  429s %d%s\n' \
        "$round" "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" \
        "$(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }')" "$done_" "$total" "$rc" \
        "$((after - before))" "$note"
    rm -rf "$out"
    sleep 1.5 # let the server's request allowance refill between runs
}

n=${#contenders[@]}
for ((r = 1; r <= rounds; r++)); do
    for ((k = 0; k < n; k++)); do
        run_one "${contenders[$(((k + r - 1) % n))]}" "$r"
    done
done

"$py" - "$runs" "$tsv" <<'EOF'
import statistics, sys

runs, tsv = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(runs)]
head, rows = rows[0], rows[1:]
num = head[2:]
order, by = [], {}
for r in rows:
    if r[0] not in by:
        order.append(r[0])
        by[r[0]] = []
    by[r[0]].append([float(x) for x in r[2:]])
med = {c: [statistics.median(col) for col in zip(*v)] for c, v in by.items()}
with open(tsv, "w") as f:
    f.write("\t".join(head) + "\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
    for c in order:
        f.write("\t".join([c, "median"] + [f"{x:g}" for x in med[c]]) + "\n")
i = {k: j for j, k in enumerate(num)}
base = med.get("band-pipe")
def ratio(c, key):
    if base is None or base[i[key]] == 0:
        return "-"
    return f"{med[c][i[key]] / base[i[key]]:.2f}x"
print()
print("medians of %d rounds" % max(len(v) for v in by.values()))
print(f"{'contender':<11}{'wall s':>8}{'cpu s':>7}{'tiles':>10}{'tiles/s':>9}{'MB/s':>8}"
      f"{'RSS MB':>8}{'tree MB':>9}{'fds':>6}{'429s':>6}{'EMFILE':>7}"
      f"{'tiles/s':>10}{'cpu s':>7}{'tree MB':>9}")
print(f"{'':<11}{'':>8}{'':>7}{'':>10}{'':>9}{'':>8}{'(max 1)':>8}{'(sum)':>9}{'(sum)':>6}"
      f"{'':>6}{'':>7}{'(each ÷ band-pipe)':>26}")
for c in order:
    m = med[c]
    print(f"{c:<11}{m[i['wall_s']]:>8.2f}{m[i['cpu_s']]:>7.2f}"
          f"{'%d/%d' % (m[i['tiles_done']], m[i['tiles_total']]):>10}"
          f"{m[i['tiles_per_s']]:>9.1f}{m[i['mb_per_s']]:>8.1f}"
          f"{m[i['peak_rss_kb']] / 1024:>8.0f}{m[i['peak_tree_rss_kb']] / 1024:>9.0f}"
          f"{m[i['peak_fds']]:>6.0f}{m[i['http_429']]:>6.0f}"
          f"{max(x[i['emfile']] for x in by[c]):>7.0f}"
          f"{ratio(c, 'tiles_per_s'):>10}{ratio(c, 'cpu_s'):>7}"
          f"{ratio(c, 'peak_tree_rss_kb'):>9}")
if base is None:
    print("(band-pipe was not run: no ratios)")
for c in order:
    if c.startswith("ulimit-"):
        em = sum(x[i["emfile"]] for x in by[c])
        print(f"{c}: {'no EMFILE in any round' if em == 0 else '%d EMFILE lines' % em} "
              f"(band-pipe under ulimit -n {c[7:]})")
print(f"\nevery run and the medians: {tsv}")
EOF
