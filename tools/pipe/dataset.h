/* SPDX-License-Identifier: MIT */
/*
 * dataset.h - the generated demonstration dataset: a grid of adjacent GeoTIFF tiles with
 * heavy-tailed sizes and a few broken ones, plus the manifest that describes them.
 *
 * Layout of a generated directory DIR:
 *   DIR/tiles/tile-NNNN.tif   the tiles (3 bands, Byte, EPSG:4326, uncompressed, stripped)
 *   DIR/manifest.tsv          "name\tkind\tbytes\twidth\theight" then one line per tile,
 *                             in tile order; name is the file name under DIR/tiles/
 *
 * Threads: dataset_generate() uses GDAL and must not run while another thread is inside
 * raster_init() or raster_shutdown(); otherwise the functions here touch only their own
 * arguments and may run on any thread.
 */
#ifndef PIPE_DATASET_H
#define PIPE_DATASET_H

#include <stddef.h>
#include <stdint.h>

/* What a manifest line says a tile is. */
enum dataset_kind {
    DATASET_SMALL = 0,     /* a valid GeoTIFF, 256..512 pixels a side */
    DATASET_LARGE = 1,     /* a valid GeoTIFF, 2560..2624 pixels a side (~100x the bytes) */
    DATASET_CORRUPT = 2,   /* random bytes under a .tif name */
    DATASET_TRUNCATED = 3, /* a valid small GeoTIFF cut to a third of its length: its header
                              reads, its pixels do not */
    DATASET_MISSING = 4,   /* listed, but no file exists (a server answers 404) */
    DATASET_KIND_COUNT = 5,
};

/* "small", "large", "corrupt", "truncated", "missing"; "?" for anything else. */
const char *dataset_kind_name(int kind);

#define DATASET_DEFAULT_TILES 48
#define DATASET_DEFAULT_SEED  1
#define DATASET_MAX_TILES     10000

struct dataset_opts {
    unsigned tiles; /* 1..DATASET_MAX_TILES (0: DATASET_DEFAULT_TILES) */
    uint64_t seed;  /* the same seed and tiles give byte-identical files */
};

/* Fills @o with the defaults (48 tiles, seed 1). */
void dataset_opts_default(struct dataset_opts *o);

/* One manifest line. */
struct dataset_entry {
    char name[32];          /* "tile-0007.tif" */
    int kind;               /* enum dataset_kind */
    uint64_t bytes;         /* the file's size (0 for missing) */
    unsigned width, height; /* pixels (0 for corrupt and missing) */
};

/*
 * Writes the dataset into @dir (created if absent, with its parent existing; existing
 * tiles and manifest of the same names are replaced). @o NULL means the defaults.
 * With @o->tiles >= 8 the set holds exactly 2 missing, 1 corrupt and 1 truncated tile and
 * tiles / 12 large ones, the rest small; with fewer tiles only small and large ones. Which
 * grid position gets which kind, and every size and pixel, follow from the seed.
 * Tile i covers 0.25 x 0.25 degrees at column i % C, row i / C of a C-column grid
 * (C = ceil(sqrt(tiles))) whose north-west corner is 5 E, 48 N.
 * Returns 0, or -1 with the reason in @err (bad options, a file that cannot be written).
 */
int dataset_generate(const char *dir, const struct dataset_opts *o, char *err, size_t errlen);

/*
 * Reads @dir/manifest.tsv. On success *@out is a malloc'd array of *@n entries in file order
 * (free with dataset_free_manifest()). Returns 0, or -1 with *@out = NULL, *@n = 0 and the
 * reason in @err ("cannot open ...", "manifest.tsv line N: ...").
 */
int dataset_read_manifest(const char *dir, struct dataset_entry **out, size_t *n, char *err,
                          size_t errlen);

/* Frees an array from dataset_read_manifest(). NULL is a no-op. */
void dataset_free_manifest(struct dataset_entry *entries);

#endif /* PIPE_DATASET_H */
