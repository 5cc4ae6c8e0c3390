/* SPDX-License-Identifier: MIT */
/*
 * raster.h - GDAL from memory: read a raster's header, decode its pixels, reproject them and
 * write a compressed GeoTIFF under its final name atomically.
 *
 * Threads: raster_init() runs once before any other thread uses this module and
 * raster_shutdown() once after they all stopped. Every other function may run on several
 * threads at once as long as each thread works on its own objects (its own buffers and its
 * own struct raster); one struct raster must not be used by two threads at the same time.
 * GDAL's messages are caught per call on the calling thread and returned through the
 * caller's @err buffer (@errlen bytes, always NUL-terminated when @errlen > 0; @err may be
 * NULL when @errlen is 0); nothing is ever printed.
 *
 * CRS strings (@dst_crs) are anything GDAL's OSRSetFromUserInput() accepts ("EPSG:3857",
 * a WKT, a PROJ string).
 *
 * Memory: a struct raster holds exactly the pixel bytes its functions report. Beyond
 * those, GDAL's block cache (raster_init()'s @cache_bytes, shared by all threads) holds
 * blocks read from sources and written files, and each raster_warp() call uses up to
 * RASTER_WARP_MEMORY bytes of working buffers; a body being decoded stays the caller's.
 */
#ifndef PIPE_RASTER_H
#define PIPE_RASTER_H

#include <stddef.h>
#include <stdint.h>

/* The working memory one raster_warp() call may use for its buffers. */
#define RASTER_WARP_MEMORY ((uint64_t)16 * 1024 * 1024)

/*
 * Once, before any thread calls another raster_* function (they rely on it): registers
 * GDAL's drivers, chooses the ones sources may be opened with, sets
 * its block cache to @cache_bytes (0: 16 MiB), keeps GDAL's default error handler quiet and
 * makes GDAL single-threaded inside each call (GDAL_NUM_THREADS=1, no directory listing on
 * open, no sidecar .aux.xml files). Returns 0, or -1 with the reason in @err (no GDAL
 * driver for GeoTIFF or MEM).
 */
int raster_init(uint64_t cache_bytes, char *err, size_t errlen);

/* Once, after every other raster_* call returned and every struct raster was freed. */
void raster_shutdown(void);

/* What raster_probe() learns from a header. */
struct raster_info {
    unsigned width, height, bands;  /* of the source raster */
    unsigned type_bytes;            /* bytes per sample of band 1 */
    uint64_t decoded_bytes;         /* pixel bytes raster_decode() will hold: width x height x
                                       the sum over the bands of each band's sample size
                                       (width x height x bands x type_bytes when all bands
                                       share one type) */
    unsigned out_width, out_height; /* the suggested size of the reprojected raster */
    uint64_t warped_bytes;          /* pixel bytes raster_warp() will hold for it */
    char src_crs[64];               /* the source CRS, short ("EPSG:4326") when it has an
                                       authority code, else its name (truncated) */
};

/*
 * Reads only the header of the raster held in @buf (@len bytes, not copied: GDAL reads it
 * in place through a private /vsimem/ name, and nothing refers to @buf once this returns)
 * and fills @out, the reprojected size included, without decoding a pixel.
 *
 * Returns 0, or -1 with @err starting with one of:
 *   "not a raster GDAL can read: ..."  garbage, unknown format, a broken header, or a
 *                                      format whose file names other files or URLs to
 *                                      read (VRT, WMS, ...), which a source may not use
 *   "raster has no bands" / "raster too large: ..." (sizes overflow 64 bits)
 *   "no georeferencing"                no geotransform or no CRS
 *   "unknown CRS ..."                  @dst_crs is not a CRS
 *   "cannot reproject from X to Y: ..."
 * A file whose header is intact but whose pixel data is cut short may pass; raster_decode()
 * then fails on it.
 */
int raster_probe(const void *buf, size_t len, const char *dst_crs, struct raster_info *out,
                 char *err, size_t errlen);

/* A decoded raster: a GDAL in-memory dataset whose pixels live in one buffer it owns. */
struct raster;

/*
 * Decodes every pixel of the raster in @buf (@len bytes, read in place as for
 * raster_probe(); the caller may free @buf once this returns) into a new struct raster that
 * keeps its geotransform, CRS, nodata values and colour interpretations. On success *@out
 * owns it (free with raster_free()) and *@bytes = the pixel bytes it holds, exactly the
 * probe's decoded_bytes. Returns 0, or -1 with *@out = NULL, *@bytes = 0 and the reason in
 * @err: the probe's header reasons, "corrupt raster data: ..." for truncated or damaged
 * pixel data, "out of memory (N bytes)".
 */
int raster_decode(const void *buf, size_t len, struct raster **out, uint64_t *bytes, char *err,
                  size_t errlen);

/*
 * How a warp samples the source. Bilinear is the default: smooth imagery reprojected with
 * nearest shows stair steps at every row the projection shifts. Nearest keeps every value
 * as it was, which classified and categorical rasters need, and costs the least; cubic,
 * lanczos and average read wider neighbourhoods at more CPU time. The same kernels as
 * gdalwarp's -r.
 */
enum raster_resampling {
    RASTER_NEAREST,
    RASTER_BILINEAR,
    RASTER_CUBIC,
    RASTER_LANCZOS,
    RASTER_AVERAGE
};

/* "nearest", "bilinear", ...; NULL for a value not in the enum. */
const char *raster_resampling_name(enum raster_resampling r);

/* One of those names (any case; "near" too, gdalwarp's) into *@out: 0, or -1. */
int raster_resampling_parse(const char *s, enum raster_resampling *out);

/*
 * Reprojects @src into a new struct raster in @dst_crs, at the size GDAL suggests (the one
 * raster_probe() reports), bilinear, on @threads threads (1 or more; 0 is taken as 1;
 * the pixels are the same for any count), in RASTER_WARP_MEMORY; areas
 * outside the source are 0 (or the source band's nodata value, which the output keeps).
 * On success *@out owns the new raster and *@bytes = its pixel bytes (the probe's
 * warped_bytes). Returns 0, or -1 with *@out = NULL, *@bytes = 0 and the reason in @err
 * ("unknown CRS ...", "cannot reproject from X to Y: ...", "out of memory (N bytes)").
 * @src is only read.
 */
int raster_warp(const struct raster *src, const char *dst_crs, enum raster_resampling how,
                unsigned threads, struct raster **out, uint64_t *bytes, char *err, size_t errlen);

/*
 * The output's compression. ZSTD (level 1) is the default: on the warped rasters it packs
 * tighter than DEFLATE at less than half its CPU time, and every GDAL since 2.3 reads it.
 * DEFLATE (level 1) is for readers without ZSTD, LZW for the oldest. All three use the
 * horizontal-differencing predictor, which shrinks smooth imagery for little CPU.
 */
enum raster_codec { RASTER_ZSTD, RASTER_DEFLATE, RASTER_LZW };

/* The codec's GDAL name: "ZSTD", "DEFLATE" or "LZW"; NULL for a value not in the enum. */
const char *raster_codec_name(enum raster_codec c);

/* "zstd", "deflate" or "lzw" (any case) into *@out. Returns 0, or -1 for anything else. */
int raster_codec_parse(const char *s, enum raster_codec *out);

/* 1 when this GDAL's GTiff driver writes @c (after raster_init()), 0 when not. */
int raster_codec_supported(enum raster_codec c);

/*
 * Writes @r as a tiled (256 x 256) GeoTIFF compressed with @codec to a temporary file in the
 * directory of @final_path (".<base>.tmp.<pid>.<n>"), fsyncs it, renames it to @final_path
 * (replacing any file there) and fsyncs the directory. On success *@file_bytes = the size
 * of the file (may be NULL). Returns 0, or -1 with the temporary file removed, @final_path
 * untouched, and the reason in @err: "disk full (No space left on device)" when the file
 * system ran out of space, else "cannot write PATH: ..." (permission, missing directory,
 * GDAL's message, "unknown compression" for a @codec not in the enum).
 */
int raster_write(const struct raster *r, const char *final_path, enum raster_codec codec,
                 uint64_t *file_bytes, char *err, size_t errlen);

/*
 * Removes from @dir the temporary files raster_write() left behind when its process died
 * before renaming them (".<base>.tmp.<pid>.<n>" whose <pid> no longer runs); files of a
 * process still running are kept. *@removed (may be NULL) = how many were removed.
 * Returns 0, or -1 with the reason in @err (the directory cannot be read, a file cannot be
 * removed; those before it are removed already).
 */
int raster_remove_stale_temps(const char *dir, unsigned *removed, char *err, size_t errlen);

/*
 * For --resume: 1 when @path exists, opens as a GeoTIFF, its last row of every band reads
 * without error (a file cut short fails here) and its CRS is the same as @dst_crs
 * (OSRIsSame); 0 otherwise (including when @dst_crs is not a CRS). Never reports why.
 */
int raster_output_complete(const char *path, const char *dst_crs);

/*
 * A stricter check for tests and --verify: @path is a GeoTIFF in @dst_crs, compressed with
 * @codec (its IMAGE_STRUCTURE COMPRESSION), and every pixel of every band reads.
 * Returns 0, or -1 with the first problem found in @err.
 */
int raster_check_file(const char *path, const char *dst_crs, enum raster_codec codec, char *err,
                      size_t errlen);

/* Frees @r and its pixels. NULL is a no-op. */
void raster_free(struct raster *r);

/* The size of @r (never NULL): pixels wide and high, bands, and pixel bytes held. */
unsigned raster_width(const struct raster *r);
unsigned raster_height(const struct raster *r);
unsigned raster_bands(const struct raster *r);
uint64_t raster_bytes(const struct raster *r);

#endif /* PIPE_RASTER_H */
