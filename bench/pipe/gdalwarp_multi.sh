#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gdalwarp_multi.sh - gdalwarp over the local files, one tile after the other, each with
# GDAL's own parallelism (-multi -wo NUM_THREADS=ALL_CPUS): no network, no pipeline.
#
#   bench/pipe/gdalwarp_multi.sh TILESDIR OUTDIR [CRS] [RESAMPLING] [CODEC]
#
# Warps every TILESDIR/*.tif to OUTDIR/<name>.tif (CRS default EPSG:3857, RESAMPLING
# default bilinear and CODEC zstd as band-pipe's, with its creation options).
# Prints one line: "gdalwarp: done D failed F"; exits 0 when every tile was written.
set -uo pipefail

if (($# < 2)); then
    echo "usage: $0 TILESDIR OUTDIR [CRS] [RESAMPLING] [CODEC]" >&2
    exit 2
fi
tiles=$1
out=$2
crs=${3:-EPSG:3857}
resampling=${4:-bilinear}
codec=${5:-zstd}
# shellcheck source=bench/pipe/creation_options.sh
source "$(dirname "$0")/creation_options.sh"
creation_options "$codec" || exit 2
mkdir -p "$out"
done_=0
failed=0
shopt -s nullglob
for f in "$tiles"/*.tif; do
    name=$(basename "$f" .tif)
    if gdalwarp -q -multi -wo NUM_THREADS=ALL_CPUS -t_srs "$crs" -r "$resampling" "${co[@]}" \
        "$f" "$out/$name.tif" >/dev/null 2>&1; then
        done_=$((done_ + 1))
    else
        failed=$((failed + 1))
        rm -f "$out/$name.tif"
    fi
done
echo "gdalwarp: done $done_ failed $failed"
((failed == 0))
