/* SPDX-License-Identifier: MIT */
/*
 * dataset.c - writes the demonstration dataset (seeded GeoTIFF tiles, some large, some
 * broken, some missing) and reads its manifest back.
 *
 * Pixels are a smooth function of longitude and latitude (so neighbouring tiles join up)
 * plus 4 bits of seeded noise per sample: compression shrinks them, but not to nothing.
 * Inputs are written uncompressed, which keeps generation fast.
 */
#define _GNU_SOURCE

#include "dataset.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>

#include "errtext.h"

#define TILE_DEG      0.25
#define GRID_WEST     5.0
#define GRID_NORTH    48.0
#define SMALL_MIN     256u
#define SMALL_MAX     512u
#define LARGE_MIN     2560u
#define LARGE_SPAN    65u
#define CHUNK_ROWS    64u
#define MANIFEST_HEAD "name\tkind\tbytes\twidth\theight"
#define GARBAGE_MIN   16384u
#define GARBAGE_SPAN  49152u

static const char *const kind_names[DATASET_KIND_COUNT] = {"small", "large", "corrupt", "truncated",
                                                           "missing"};

const char *dataset_kind_name(int kind)
{
    return kind >= 0 && kind < DATASET_KIND_COUNT ? kind_names[kind] : "?";
}

void dataset_opts_default(struct dataset_opts *o)
{
    o->tiles = DATASET_DEFAULT_TILES;
    o->seed = DATASET_DEFAULT_SEED;
}

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt,
                                                          ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* splitmix64: small, fast, and good enough for test pixels. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
    return (unsigned)(rng_next(s) % n);
}

/* GDAL's first failure message during generation (this thread only). */
struct gen_cap {
    char msg[256];
};

static void CPL_STDCALL gen_handler(CPLErr cls, CPLErrorNum num, const char *msg)
{
    struct gen_cap *cap = CPLGetErrorHandlerUserData();
    (void)num;
    if (cap != NULL && msg != NULL && (cls == CE_Failure || cls == CE_Fatal) && cap->msg[0] == '\0')
        snprintf(cap->msg, sizeof cap->msg, "%s", msg);
}

/* One tile's plan. */
struct plan {
    int kind;
    unsigned width, height;
    unsigned row, col;
    uint64_t seed;
};

/* Writes a 3-band Byte GeoTIFF for @p at @path. */
static int write_tiff(const char *path, const struct plan *p, const char *wkt, unsigned char *buf,
                      struct gen_cap *cap, char *err, size_t errlen)
{
    char **co = NULL;
    co = CSLSetNameValue(co, "INTERLEAVE", "PIXEL");
    co = CSLSetNameValue(co, "COMPRESS", "NONE");
    co = CSLSetNameValue(co, "BLOCKYSIZE", "16");
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, (int)p->width, (int)p->height,
                                 3, GDT_Byte, co);
    CSLDestroy(co);
    if (ds == NULL) {
        set_err(err, errlen, "cannot create %s: %s", path, cap->msg);
        return -1;
    }
    double west = GRID_WEST + p->col * TILE_DEG;
    double north = GRID_NORTH - p->row * TILE_DEG;
    double dx = TILE_DEG / p->width, dy = TILE_DEG / p->height;
    double gt[6] = {west, dx, 0.0, north, 0.0, -dy};
    GDALSetGeoTransform(ds, gt);
    GDALSetProjection(ds, wkt);
    GDALSetRasterColorInterpretation(GDALGetRasterBand(ds, 1), GCI_RedBand);
    GDALSetRasterColorInterpretation(GDALGetRasterBand(ds, 2), GCI_GreenBand);
    GDALSetRasterColorInterpretation(GDALGetRasterBand(ds, 3), GCI_BlueBand);

    /* Smooth parts: per column and per row tables, 0..100 each. */
    unsigned w = p->width, h = p->height;
    unsigned char *colt = malloc((size_t)w * 3);
    unsigned char *rowt = malloc((size_t)h * 3);
    if (colt == NULL || rowt == NULL) {
        free(colt);
        free(rowt);
        GDALClose(ds);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned b = 0; b < 3; b++) {
        double f = 2.0 * M_PI * (0.7 + 0.45 * b);
        for (unsigned x = 0; x < w; x++) {
            double lon = west + (x + 0.5) * dx;
            colt[x * 3 + b] = (unsigned char)lround(50.0 + 50.0 * sin(lon * f + b));
        }
        for (unsigned y = 0; y < h; y++) {
            double lat = north - (y + 0.5) * dy;
            rowt[y * 3 + b] = (unsigned char)lround(50.0 + 50.0 * cos(lat * f * 1.3 + 2.0 * b));
        }
    }
    uint64_t s = p->seed;
    int rc = 0;
    for (unsigned y0 = 0; y0 < h && rc == 0; y0 += CHUNK_ROWS) {
        unsigned rows = h - y0 < CHUNK_ROWS ? h - y0 : CHUNK_ROWS;
        for (unsigned y = 0; y < rows; y++) {
            unsigned char *line = buf + (size_t)y * w * 3;
            const unsigned char *rt = rowt + (size_t)(y0 + y) * 3;
            uint64_t bits = 0;
            unsigned left = 0;
            for (unsigned i = 0; i < w * 3; i++) {
                if (left == 0) {
                    bits = rng_next(&s);
                    left = 16;
                }
                line[i] = (unsigned char)(colt[i] + rt[i % 3] + (unsigned)(bits & 15u));
                bits >>= 4;
                left--;
            }
        }
        if (GDALDatasetRasterIO(ds, GF_Write, 0, (int)y0, (int)w, (int)rows, buf, (int)w, (int)rows,
                                GDT_Byte, 3, NULL, 3, (int)w * 3, 1) != CE_None) {
            set_err(err, errlen, "cannot write %s: %s", path, cap->msg);
            rc = -1;
        }
    }
    free(colt);
    free(rowt);
    GDALClose(ds);
    if (rc == 0 && cap->msg[0] != '\0') {
        set_err(err, errlen, "cannot write %s: %s", path, cap->msg);
        rc = -1;
    }
    return rc;
}

static int write_garbage(const char *path, uint64_t seed, char *err, size_t errlen)
{
    uint64_t s = seed;
    size_t n = GARBAGE_MIN + rng_below(&s, GARBAGE_SPAN);
    unsigned char *b = malloc(n);
    if (b == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)rng_next(&s);
    static const unsigned char junk[4] = {'J', 'U', 'N', 'K'}; /* no format's magic */
    memcpy(b, junk, sizeof(junk));
    FILE *f = fopen(path, "wb");
    int rc = -1;
    if (f == NULL) {
        set_err(err, errlen, "cannot create %s: %s", path, errtext(errno));
    } else if (fwrite(b, 1, n, f) != n) {
        set_err(err, errlen, "cannot write %s: %s", path, errtext(errno));
        fclose(f);
    } else if (fclose(f) != 0) {
        set_err(err, errlen, "cannot write %s: %s", path, errtext(errno));
    } else {
        rc = 0;
    }
    free(b);
    return rc;
}

static int make_dir(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        set_err(err, errlen, "cannot create directory %s: %s", path, errtext(errno));
        return -1;
    }
    return 0;
}

int dataset_generate(const char *dir, const struct dataset_opts *o, char *err, size_t errlen)
{
    struct dataset_opts opts;
    if (o == NULL)
        dataset_opts_default(&opts);
    else
        opts = *o;
    if (opts.tiles == 0)
        opts.tiles = DATASET_DEFAULT_TILES;
    if (dir == NULL || dir[0] == '\0' || opts.tiles > DATASET_MAX_TILES) {
        set_err(err, errlen, "dataset: need a directory and 1..%u tiles", DATASET_MAX_TILES);
        return -1;
    }
    unsigned n = opts.tiles;
    size_t dlen = strlen(dir);
    size_t plen = dlen + 64;
    char *path = malloc(plen);
    char *tmp = malloc(plen);
    struct plan *plans = calloc(n, sizeof *plans);
    unsigned *order = malloc(sizeof *order * n);
    unsigned char *buf = malloc((size_t)(LARGE_MIN + LARGE_SPAN) * 3 * CHUNK_ROWS);
    struct dataset_entry *ents = calloc(n, sizeof *ents);
    char *wkt = NULL;
    FILE *mf = NULL;
    int rc = -1;
    struct gen_cap cap = {{0}};
    CPLPushErrorHandlerEx(gen_handler, &cap);
    if (path == NULL || tmp == NULL || plans == NULL || order == NULL || buf == NULL ||
        ents == NULL) {
        set_err(err, errlen, "out of memory");
        goto done;
    }
    snprintf(path, plen, "%s/tiles", dir);
    if (make_dir(dir, err, errlen) != 0 || make_dir(path, err, errlen) != 0)
        goto done;

    GDALAllRegister();
    if (GDALGetDriverByName("GTiff") == NULL) {
        set_err(err, errlen, "GDAL has no GTiff driver");
        goto done;
    }
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    if (srs == NULL || OSRImportFromEPSG(srs, 4326) != OGRERR_NONE ||
        OSRExportToWkt(srs, &wkt) != OGRERR_NONE) {
        if (srs != NULL)
            OSRDestroySpatialReference(srs);
        set_err(err, errlen, "cannot build EPSG:4326: %s", cap.msg);
        goto done;
    }
    OSRDestroySpatialReference(srs);

    /* The plan: kinds by a seeded shuffle of positions, sizes and seeds per tile. */
    uint64_t s = opts.seed ^ 0x62616E642D706970ull; /* "band-pip" */
    unsigned cols = 1;
    while (cols * cols < n)
        cols++;
    for (unsigned i = 0; i < n; i++) {
        order[i] = i;
        plans[i].kind = DATASET_SMALL;
        plans[i].row = i / cols;
        plans[i].col = i % cols;
    }
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = rng_below(&s, i + 1);
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    unsigned k = 0;
    if (n >= 8) {
        plans[order[k++]].kind = DATASET_MISSING;
        plans[order[k++]].kind = DATASET_MISSING;
        plans[order[k++]].kind = DATASET_CORRUPT;
        plans[order[k++]].kind = DATASET_TRUNCATED;
    }
    for (unsigned l = 0; l < n / 12; l++)
        plans[order[k++]].kind = DATASET_LARGE;
    for (unsigned i = 0; i < n; i++) {
        struct plan *p = &plans[i];
        if (p->kind == DATASET_LARGE) {
            p->width = LARGE_MIN + rng_below(&s, LARGE_SPAN);
            p->height = LARGE_MIN + rng_below(&s, LARGE_SPAN);
        } else {
            p->width = SMALL_MIN + rng_below(&s, SMALL_MAX - SMALL_MIN + 1);
            p->height = SMALL_MIN + rng_below(&s, SMALL_MAX - SMALL_MIN + 1);
        }
        p->seed = rng_next(&s);
    }

    for (unsigned i = 0; i < n; i++) {
        struct plan *p = &plans[i];
        struct dataset_entry *e = &ents[i];
        snprintf(e->name, sizeof e->name, "tile-%04u.tif", i);
        e->kind = p->kind;
        snprintf(path, plen, "%s/tiles/%s", dir, e->name);
        switch (p->kind) {
        case DATASET_MISSING:
            if (unlink(path) != 0 && errno != ENOENT) {
                set_err(err, errlen, "cannot remove %s: %s", path, errtext(errno));
                goto done;
            }
            continue;
        case DATASET_CORRUPT:
            if (write_garbage(path, p->seed, err, errlen) != 0)
                goto done;
            break;
        default:
            if (write_tiff(path, p, wkt, buf, &cap, err, errlen) != 0)
                goto done;
            e->width = p->width;
            e->height = p->height;
            break;
        }
        struct stat st;
        if (stat(path, &st) != 0) {
            set_err(err, errlen, "cannot stat %s: %s", path, errtext(errno));
            goto done;
        }
        if (p->kind == DATASET_TRUNCATED) {
            off_t cut = st.st_size / 3;
            if (truncate(path, cut) != 0) {
                set_err(err, errlen, "cannot truncate %s: %s", path, errtext(errno));
                goto done;
            }
            st.st_size = cut;
        }
        e->bytes = (uint64_t)st.st_size;
    }

    snprintf(tmp, plen, "%s/.manifest.tsv.tmp", dir);
    snprintf(path, plen, "%s/manifest.tsv", dir);
    mf = fopen(tmp, "w");
    if (mf == NULL) {
        set_err(err, errlen, "cannot create %s: %s", tmp, errtext(errno));
        goto done;
    }
    fprintf(mf, "%s\n", MANIFEST_HEAD);
    for (unsigned i = 0; i < n; i++)
        fprintf(mf, "%s\t%s\t%llu\t%u\t%u\n", ents[i].name, dataset_kind_name(ents[i].kind),
                (unsigned long long)ents[i].bytes, ents[i].width, ents[i].height);
    int bad = ferror(mf);
    if (fclose(mf) != 0 || bad) {
        mf = NULL;
        set_err(err, errlen, "cannot write %s: %s", tmp, errtext(errno));
        unlink(tmp);
        goto done;
    }
    mf = NULL;
    if (rename(tmp, path) != 0) {
        set_err(err, errlen, "cannot rename %s: %s", tmp, errtext(errno));
        unlink(tmp);
        goto done;
    }
    rc = 0;
done:
    CPLPopErrorHandler();
    CPLFree(wkt);
    free(path);
    free(tmp);
    free(plans);
    free(order);
    free(buf);
    free(ents);
    return rc;
}

/* ---- manifest ---------------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || x > max)
        return -1;
    *v = x;
    return 0;
}

int dataset_read_manifest(const char *dir, struct dataset_entry **out, size_t *n, char *err,
                          size_t errlen)
{
    if (out == NULL || n == NULL || dir == NULL) {
        set_err(err, errlen, "dataset_read_manifest: bad arguments");
        return -1;
    }
    *out = NULL;
    *n = 0;
    size_t plen = strlen(dir) + 16;
    char *path = malloc(plen);
    if (path == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    snprintf(path, plen, "%s/manifest.tsv", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        set_err(err, errlen, "cannot open %s: %s", path, errtext(errno));
        free(path);
        return -1;
    }
    free(path);
    struct dataset_entry *v = NULL;
    size_t len = 0, cap = 0, lineno = 0;
    char *line = NULL;
    size_t linecap = 0;
    ssize_t got;
    int rc = -1;
    while ((got = getline(&line, &linecap, f)) >= 0) {
        lineno++;
        if (got > 0 && line[got - 1] == '\n')
            line[--got] = '\0';
        if (lineno == 1) {
            if (strcmp(line, MANIFEST_HEAD) != 0) {
                set_err(err, errlen, "manifest.tsv line 1: header is not \"%s\"",
                        "name\\tkind\\tbytes\\twidth\\theight");
                goto done;
            }
            continue;
        }
        char *field[5];
        int nf = 0;
        char *p = line;
        while (nf < 5) {
            field[nf++] = p;
            char *tab = strchr(p, '\t');
            if (tab == NULL)
                break;
            *tab = '\0';
            p = tab + 1;
        }
        if (nf != 5 || strchr(field[4], '\t') != NULL) {
            set_err(err, errlen, "manifest.tsv line %zu: not 5 tab-separated fields", lineno);
            goto done;
        }
        struct dataset_entry e;
        memset(&e, 0, sizeof e);
        size_t nl = strlen(field[0]);
        if (nl == 0 || nl >= sizeof e.name || strchr(field[0], '/') != NULL) {
            set_err(err, errlen, "manifest.tsv line %zu: bad name", lineno);
            goto done;
        }
        memcpy(e.name, field[0], nl + 1);
        e.kind = -1;
        for (int k = 0; k < DATASET_KIND_COUNT; k++)
            if (strcmp(field[1], kind_names[k]) == 0)
                e.kind = k;
        uint64_t w, h;
        if (e.kind < 0 || parse_u64(field[2], UINT64_MAX, &e.bytes) != 0 ||
            parse_u64(field[3], 1u << 30, &w) != 0 || parse_u64(field[4], 1u << 30, &h) != 0) {
            set_err(err, errlen, "manifest.tsv line %zu: bad kind or number", lineno);
            goto done;
        }
        e.width = (unsigned)w;
        e.height = (unsigned)h;
        if (len == cap) {
            size_t nc = cap != 0 ? cap * 2 : 64;
            struct dataset_entry *nv = realloc(v, nc * sizeof *nv);
            if (nv == NULL) {
                set_err(err, errlen, "out of memory");
                goto done;
            }
            v = nv;
            cap = nc;
        }
        v[len++] = e;
    }
    if (ferror(f)) {
        set_err(err, errlen, "cannot read manifest.tsv: %s", errtext(errno));
        goto done;
    }
    if (lineno == 0) {
        set_err(err, errlen, "manifest.tsv line 1: empty file");
        goto done;
    }
    *out = v;
    *n = len;
    v = NULL;
    rc = 0;
done:
    free(line);
    free(v);
    fclose(f);
    return rc;
}

void dataset_free_manifest(struct dataset_entry *entries)
{
    free(entries);
}
