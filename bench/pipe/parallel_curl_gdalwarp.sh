#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# parallel_curl_gdalwarp.sh - the shell pipeline: GNU parallel running, per tile,
#   curl -sf URL -o TMP && gdalwarp -q -t_srs CRS -r R -co ... TMP OUTDIR/<name>.tif
#
#   bench/pipe/parallel_curl_gdalwarp.sh URLS OUTDIR [JOBS] [CRS] [RESAMPLING] [CODEC]
#
# JOBS defaults to twice the cores, CRS to EPSG:3857, RESAMPLING to bilinear (gdalwarp -r;
# band-pipe's), CODEC to zstd with band-pipe's creation options. Each job holds one connection and
# one gdalwarp at a time; nothing bounds memory or descriptors but JOBS. curl -f fails a
# tile on any HTTP error, 429 included (no retry). Prints one line: "parallel: done D
# failed F"; exits 0 when every tile was written, 1 otherwise.
set -uo pipefail

if (($# < 2)); then
    echo "usage: $0 URLS OUTDIR [JOBS] [CRS] [RESAMPLING] [CODEC]" >&2
    exit 2
fi
urls=$1
out=$2
jobs=${3:-$(($(nproc) * 2))}
crs=${4:-EPSG:3857}
resampling=${5:-bilinear}
codec=${6:-zstd}
# shellcheck source=bench/pipe/creation_options.sh
source "$(dirname "$0")/creation_options.sh"
creation_options "$codec" || exit 2
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/band-bench-parallel-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# {#} is the job's sequence number (a unique temporary name), {/.} the URL's last path
# element without its extension. A gdalwarp that fails may leave a partial output: it is
# removed, so the outputs are the tiles that succeeded.
grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$urls" |
    parallel --will-cite -j "$jobs" \
        "curl -sf {} -o $tmp/{#}.tif && gdalwarp -q -t_srs $crs -r $resampling ${co[*]} $tmp/{#}.tif $out/{/.}.tif; rc=\$?; rm -f $tmp/{#}.tif; if [ \$rc -ne 0 ]; then rm -f $out/{/.}.tif; fi; exit \$rc" \
        >/dev/null 2>&1
rc=$?
if ((rc > 101)); then # parallel's own error; up to 101 it counts failed jobs
    echo "parallel: failed to run (exit $rc)" >&2
    exit 2
fi
total=$(grep -c -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$urls" || true)
done_=$(find "$out" -maxdepth 1 -name '*.tif' | wc -l)
echo "parallel: done $done_ failed $((total - done_))"
((done_ == total))
