# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# creation_options.sh - sourced by the shell contenders: band-pipe's GeoTIFF creation
# options for a codec (tiled, the codec's fastest level, the horizontal predictor), so
# every contender writes the same files.
#
#   creation_options CODEC   sets the array co to gdalwarp's -co arguments; CODEC is zstd,
#                            deflate or lzw; returns 1 (with a message) for anything else
# shellcheck disable=SC2034 # co is the caller's
creation_options()
{
    case $1 in
    zstd) co=(-co TILED=YES -co COMPRESS=ZSTD -co ZSTD_LEVEL=1 -co PREDICTOR=2) ;;
    deflate) co=(-co TILED=YES -co COMPRESS=DEFLATE -co ZLEVEL=1 -co PREDICTOR=2) ;;
    lzw) co=(-co TILED=YES -co COMPRESS=LZW -co PREDICTOR=2) ;;
    *)
        echo "'$1' is not zstd, deflate or lzw" >&2
        return 1
        ;;
    esac
}
