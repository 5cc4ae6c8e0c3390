/* SPDX-License-Identifier: MIT */
/*
 * raster_test.c - band-pipe's GDAL side against a generated dataset: probe, decode, warp
 * and write, the broken tiles, --resume's completeness check, failed writes leaving
 * nothing behind, and several threads decoding and warping at once.
 *
 * Usage: raster_test DIR   (DIR is emptied and filled; exit 0 when every check holds)
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdal.h>
#include <gdal_alg.h>
#include <gdalwarper.h>
#include <ogr_srs_api.h>

#include "dataset.h"
#include "raster.h"

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define STARTS(s, prefix) (strncmp((s), (prefix), strlen(prefix)) == 0)

static char root[4096];

__attribute__((format(printf, 1, 2))) static const char *at(const char *fmt, ...)
{
    static char buf[8][4400];
    static unsigned next;
    char *b = buf[next++ % 8];
    char rel[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(b, sizeof buf[0], "%.4000s/%.255s", root, rel);
    return b;
}

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc(n > 0 ? (size_t)n : 1);
    if (b != NULL && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    void *x = slurp(a, &la), *y = slurp(b, &lb);
    int same = x != NULL && y != NULL && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Entries of @dir other than "." and "..". */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)f;
    if (type == FTW_DP || type == FTW_D)
        chmod(p, 0755);
    return remove(p) != 0 && errno != ENOENT ? -1 : 0;
}

static void rm_tree(const char *p)
{
    chmod(p, 0755);
    nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const struct dataset_entry *find_kind(const struct dataset_entry *e, size_t n, int kind,
                                             unsigned skip)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].kind == kind && skip-- == 0)
            return &e[i];
    return NULL;
}

static const char *tile_path(const struct dataset_entry *e)
{
    return at("data/tiles/%s", e->name);
}

/* Decodes, warps to EPSG:3857 and writes @in to @out; 0 or -1. */
static int round_trip(const char *in, const char *out, char *err, size_t errlen)
{
    size_t len;
    void *buf = slurp(in, &len);
    if (buf == NULL)
        return -1;
    struct raster *src = NULL, *dst = NULL;
    uint64_t b1, b2, fb;
    int rc = raster_decode(buf, len, &src, &b1, err, errlen);
    free(buf);
    if (rc == 0)
        rc = raster_warp(src, "EPSG:3857", RASTER_BILINEAR, 1, &dst, &b2, err, errlen);
    raster_free(src);
    if (rc == 0)
        rc = raster_write(dst, out, RASTER_ZSTD, &fb, err, errlen);
    raster_free(dst);
    return rc;
}

static void test_dataset(struct dataset_entry **ents, size_t *n)
{
    char err[512];
    struct dataset_opts o = {12, 7};
    CHECK(dataset_generate(at("%s", "data"), &o, err, sizeof err) == 0);
    CHECK(dataset_read_manifest(at("%s", "data"), ents, n, err, sizeof err) == 0);
    CHECK(*n == 12);
    unsigned kinds[DATASET_KIND_COUNT] = {0};
    for (size_t i = 0; i < *n; i++) {
        const struct dataset_entry *e = &(*ents)[i];
        kinds[e->kind]++;
        struct stat st;
        if (e->kind == DATASET_MISSING) {
            CHECK(stat(tile_path(e), &st) != 0 && errno == ENOENT);
            CHECK(e->bytes == 0);
        } else {
            CHECK(stat(tile_path(e), &st) == 0 && (uint64_t)st.st_size == e->bytes);
        }
        if (e->kind == DATASET_SMALL)
            CHECK(e->width >= 256 && e->width <= 512 && e->height >= 256 && e->height <= 512);
        if (e->kind == DATASET_LARGE)
            CHECK(e->width >= 2560 && e->height >= 2560);
    }
    CHECK(kinds[DATASET_SMALL] == 7 && kinds[DATASET_LARGE] == 1 && kinds[DATASET_CORRUPT] == 1 &&
          kinds[DATASET_TRUNCATED] == 1 && kinds[DATASET_MISSING] == 2);
    /* Deterministic: the same seed gives the same files, another seed different ones. */
    CHECK(dataset_generate(at("%s", "again"), &o, err, sizeof err) == 0);
    CHECK(same_file(at("%s", "data/manifest.tsv"), at("%s", "again/manifest.tsv")));
    const struct dataset_entry *s0 = find_kind(*ents, *n, DATASET_SMALL, 0);
    CHECK(s0 != NULL && same_file(tile_path(s0), at("again/tiles/%s", s0->name)));
    o.seed = 8;
    CHECK(dataset_generate(at("%s", "other"), &o, err, sizeof err) == 0);
    CHECK(!same_file(at("%s", "data/manifest.tsv"), at("%s", "other/manifest.tsv")));
    /* A broken manifest is refused with its line number. */
    FILE *f = fopen(at("%s", "other/manifest.tsv"), "a");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs("tile-x.tif\tsmall\t12\n", f);
        fclose(f);
    }
    struct dataset_entry *bad = NULL;
    size_t nbad = 99;
    CHECK(dataset_read_manifest(at("%s", "other"), &bad, &nbad, err, sizeof err) == -1);
    CHECK(bad == NULL && nbad == 0 && STARTS(err, "manifest.tsv line 14:"));
}

static void test_probe(const struct dataset_entry *e, size_t n)
{
    char err[512];
    for (int kind = DATASET_SMALL; kind <= DATASET_LARGE; kind++) {
        const struct dataset_entry *t = find_kind(e, n, kind, 0);
        size_t len;
        void *buf = slurp(tile_path(t), &len);
        CHECK(buf != NULL);
        struct raster_info ri;
        CHECK(raster_probe(buf, len, "EPSG:3857", &ri, err, sizeof err) == 0);
        CHECK(ri.width == t->width && ri.height == t->height && ri.bands == 3);
        CHECK(ri.type_bytes == 1);
        CHECK(ri.decoded_bytes == (uint64_t)t->width * t->height * 3);
        CHECK(strcmp(ri.src_crs, "EPSG:4326") == 0);
        CHECK(ri.out_width > 0 && ri.out_height > 0);
        CHECK(ri.warped_bytes == (uint64_t)ri.out_width * ri.out_height * 3);
        /* 0.25 degrees at 48 N is taller than wide in Web Mercator metres; the suggested
         * output keeps about the source's pixel count. */
        CHECK(ri.out_width * 2 > ri.width && ri.out_width < ri.width * 2);
        if (kind == DATASET_LARGE) {
            struct raster *r = NULL;
            uint64_t bytes = 0;
            CHECK(raster_decode(buf, len, &r, &bytes, err, sizeof err) == 0);
            CHECK(bytes == ri.decoded_bytes && r != NULL && raster_bytes(r) == bytes);
            raster_free(r);
        }
        /* Bad target CRS */
        CHECK(raster_probe(buf, len, "EPSG:99999999", &ri, err, sizeof err) == -1);
        CHECK(STARTS(err, "unknown CRS"));
        free(buf);
    }
    /* Garbage: neither probes nor decodes. */
    const struct dataset_entry *g = find_kind(e, n, DATASET_CORRUPT, 0);
    size_t len;
    void *buf = slurp(tile_path(g), &len);
    struct raster_info ri;
    CHECK(raster_probe(buf, len, "EPSG:3857", &ri, err, sizeof err) == -1);
    CHECK(STARTS(err, "not a raster GDAL can read: "));
    struct raster *r = (struct raster *)1;
    uint64_t bytes = 1;
    CHECK(raster_decode(buf, len, &r, &bytes, err, sizeof err) == -1);
    CHECK(r == NULL && bytes == 0 && STARTS(err, "not a raster GDAL can read: "));
    free(buf);
    CHECK(raster_probe("", 0, "EPSG:3857", &ri, err, sizeof err) == -1);
    CHECK(STARTS(err, "not a raster GDAL can read: "));
    /* Truncated: the header reads (its size is right), the pixels do not. */
    const struct dataset_entry *t = find_kind(e, n, DATASET_TRUNCATED, 0);
    buf = slurp(tile_path(t), &len);
    CHECK(raster_probe(buf, len, "EPSG:3857", &ri, err, sizeof err) == 0);
    CHECK(ri.width == t->width && ri.decoded_bytes == (uint64_t)t->width * t->height * 3);
    r = (struct raster *)1;
    CHECK(raster_decode(buf, len, &r, &bytes, err, sizeof err) == -1);
    CHECK(r == NULL && bytes == 0 && STARTS(err, "corrupt raster data: "));
    free(buf);
    /* Any cut of a valid tile fails to decode, and never crashes the probe. */
    buf = slurp(tile_path(find_kind(e, n, DATASET_SMALL, 0)), &len);
    size_t cuts[] = {1, 4, 8, 16, 100, 1000, len / 3, len / 2, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        void *part = malloc(cuts[i]);
        memcpy(part, buf, cuts[i]);
        int prc = raster_probe(part, cuts[i], "EPSG:3857", &ri, err, sizeof err);
        CHECK(prc == 0 || STARTS(err, "not a raster GDAL can read: "));
        r = (struct raster *)1;
        CHECK(raster_decode(part, cuts[i], &r, &bytes, err, sizeof err) == -1 && r == NULL);
        CHECK(STARTS(err, "not a raster GDAL can read: ") || STARTS(err, "corrupt raster data: "));
        free(part);
    }
    free(buf);
    /* A VRT pointing at a local file: formats that read other files are refused. */
    const struct dataset_entry *s0 = find_kind(e, n, DATASET_SMALL, 0);
    char vrt[8192];
    int vlen = snprintf(vrt, sizeof vrt,
                        "<VRTDataset rasterXSize=\"8\" rasterYSize=\"8\">"
                        "<SRS>EPSG:4326</SRS><GeoTransform>5, 0.01, 0, 48, 0, -0.01</GeoTransform>"
                        "<VRTRasterBand dataType=\"Byte\" band=\"1\"><SimpleSource>"
                        "<SourceFilename relativeToVRT=\"0\">%s</SourceFilename>"
                        "<SourceBand>1</SourceBand></SimpleSource></VRTRasterBand></VRTDataset>",
                        tile_path(s0));
    CHECK(vlen > 0 && (size_t)vlen < sizeof vrt);
    CHECK(raster_probe(vrt, (size_t)vlen, "EPSG:3857", &ri, err, sizeof err) == -1);
    CHECK(STARTS(err, "not a raster GDAL can read: "));
    CHECK(raster_decode(vrt, (size_t)vlen, &r, &bytes, err, sizeof err) == -1);
    CHECK(r == NULL && STARTS(err, "not a raster GDAL can read: "));
    /* A GeoTIFF without georeferencing. */
    GDALDatasetH ds =
        GDALCreate(GDALGetDriverByName("GTiff"), at("%s", "plain.tif"), 8, 8, 1, GDT_Byte, NULL);
    CHECK(ds != NULL);
    GDALClose(ds);
    buf = slurp(at("%s", "plain.tif"), &len);
    CHECK(raster_probe(buf, len, "EPSG:3857", &ri, err, sizeof err) == -1);
    CHECK(STARTS(err, "no georeferencing"));
    free(buf);
}

static int has_crs(GDALDatasetH ds, int epsg)
{
    OGRSpatialReferenceH want = OSRNewSpatialReference(NULL);
    OSRImportFromEPSG(want, epsg);
    OSRSetAxisMappingStrategy(want, OAMS_TRADITIONAL_GIS_ORDER);
    OGRSpatialReferenceH have = GDALGetSpatialRef(ds);
    int same = have != NULL && OSRIsSame(have, want);
    OSRDestroySpatialReference(want);
    return same;
}

static void test_round_trip(const struct dataset_entry *e, size_t n)
{
    char err[512];
    const struct dataset_entry *t = find_kind(e, n, DATASET_SMALL, 1);
    size_t len;
    void *buf = slurp(tile_path(t), &len);
    struct raster_info ri;
    CHECK(raster_probe(buf, len, "EPSG:3857", &ri, err, sizeof err) == 0);
    struct raster *src = NULL, *dst = NULL;
    uint64_t b1 = 0, b2 = 0, fb = 0;
    CHECK(raster_decode(buf, len, &src, &b1, err, sizeof err) == 0);
    memset(buf, 0xEE, len); /* the raster no longer needs the body */
    free(buf);
    CHECK(b1 == ri.decoded_bytes);
    CHECK(raster_warp(src, "EPSG:3857", RASTER_BILINEAR, 1, &dst, &b2, err, sizeof err) == 0);
    CHECK(b2 == ri.warped_bytes && raster_width(dst) == ri.out_width &&
          raster_height(dst) == ri.out_height && raster_bands(dst) == 3);
    raster_free(src);
    mkdir(at("%s", "out"), 0755);
    char out[4400]; /* kept: at()'s buffers are reused */
    snprintf(out, sizeof out, "%s", at("%s", "out/a.tif"));
    CHECK(raster_write(dst, out, RASTER_ZSTD, &fb, err, sizeof err) == 0);
    struct stat st;
    CHECK(stat(out, &st) == 0 && fb > 0 && (uint64_t)st.st_size == fb);
    CHECK(fb < b2);                             /* ZSTD did something */
    CHECK(count_entries(at("%s", "out")) == 1); /* no temporary file left */
    /* Written again over an existing file, in each codec: replaced, and the check knows
     * which codec it holds. */
    static const enum raster_codec codecs[] = {RASTER_DEFLATE, RASTER_LZW, RASTER_ZSTD};
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
        enum raster_codec other = codecs[(i + 1) % 3];
        CHECK(raster_write(dst, out, codecs[i], &fb, err, sizeof err) == 0);
        CHECK(stat(out, &st) == 0 && (uint64_t)st.st_size == fb && fb < b2);
        CHECK(count_entries(at("%s", "out")) == 1);
        CHECK(raster_check_file(out, "EPSG:3857", codecs[i], err, sizeof err) == 0);
        CHECK(raster_check_file(out, "EPSG:3857", other, err, sizeof err) == -1);
        CHECK(strstr(err, raster_codec_name(codecs[i])) != NULL &&
              strstr(err, raster_codec_name(other)) != NULL);
        CHECK(raster_output_complete(out, "EPSG:3857") == 1); /* any codec resumes */
    }
    /* A codec outside the enum: refused, nothing written, the old file kept. */
    CHECK(raster_write(dst, at("%s", "out/b.tif"), (enum raster_codec)7, &fb, err, sizeof err) ==
          -1);
    CHECK(strstr(err, "unknown compression") != NULL && fb == 0);
    CHECK(count_entries(at("%s", "out")) == 1);
    CHECK(raster_check_file(out, "EPSG:3857", (enum raster_codec)7, err, sizeof err) == -1);

    GDALDatasetH ds = GDALOpenEx(out, GDAL_OF_RASTER, NULL, NULL, NULL);
    CHECK(ds != NULL);
    if (ds != NULL) {
        CHECK(has_crs(ds, 3857));
        CHECK(!has_crs(ds, 4326));
        const char *c = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
        CHECK(c != NULL && strcmp(c, "ZSTD") == 0);
        CHECK(GDALGetRasterXSize(ds) == (int)ri.out_width && GDALGetRasterCount(ds) == 3);
        int bx = 0, by = 0;
        GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
        CHECK(bx == 256 && by == 256);
        GDALClose(ds);
    }
    CHECK(raster_check_file(out, "EPSG:3857", RASTER_ZSTD, err, sizeof err) == 0);
    CHECK(raster_check_file(out, "EPSG:4326", RASTER_ZSTD, err, sizeof err) == -1);
    CHECK(raster_check_file(tile_path(t), "EPSG:4326", RASTER_ZSTD, err, sizeof err) == -1);
    CHECK(strstr(err, "compression is none, not ZSTD") != NULL); /* the input is uncompressed */

    /* A warp on several threads gives the same pixels as on one. */
    {
        struct raster *src2 = NULL, *dst3 = NULL;
        size_t len2;
        void *buf2 = slurp(tile_path(t), &len2);
        uint64_t d2 = 0, w3 = 0;
        CHECK(buf2 != NULL && raster_decode(buf2, len2, &src2, &d2, err, sizeof err) == 0);
        free(buf2);
        CHECK(src2 != NULL &&
              raster_warp(src2, "EPSG:3857", RASTER_BILINEAR, 3, &dst3, &w3, err, sizeof err) == 0);
        CHECK(w3 == b2);
        raster_free(src2);
        char out3[4400];
        snprintf(out3, sizeof out3, "%s", at("%s", "out3.tif"));
        CHECK(dst3 != NULL && raster_write(dst3, out3, RASTER_ZSTD, &fb, err, sizeof err) == 0);
        raster_free(dst3);
        GDALDatasetH a = GDALOpenEx(out, GDAL_OF_RASTER, NULL, NULL, NULL);
        GDALDatasetH b = GDALOpenEx(out3, GDAL_OF_RASTER, NULL, NULL, NULL);
        CHECK(a != NULL && b != NULL);
        if (a != NULL && b != NULL) {
            int w = GDALGetRasterXSize(a), h = GDALGetRasterYSize(a);
            CHECK(w == GDALGetRasterXSize(b) && h == GDALGetRasterYSize(b));
            for (int band = 1; band <= 3; band++)
                CHECK(GDALChecksumImage(GDALGetRasterBand(a, band), 0, 0, w, h) ==
                      GDALChecksumImage(GDALGetRasterBand(b, band), 0, 0, w, h));
        }
        if (a != NULL)
            GDALClose(a);
        if (b != NULL)
            GDALClose(b);
        unlink(out3);
    }

    /* --resume's check */
    CHECK(raster_output_complete(out, "EPSG:3857") == 1);
    CHECK(raster_output_complete(out, "EPSG:4326") == 0);
    CHECK(raster_output_complete(out, "not a crs") == 0);
    CHECK(raster_output_complete(at("%s", "out/none.tif"), "EPSG:3857") == 0);
    size_t olen;
    void *whole = slurp(out, &olen);
    const char *cut = at("%s", "cut.tif");
    FILE *f = fopen(cut, "wb");
    CHECK(f != NULL && whole != NULL);
    if (f != NULL) {
        fwrite(whole, 1, olen - olen / 4, f);
        fclose(f);
    }
    free(whole);
    CHECK(raster_output_complete(cut, "EPSG:3857") == 0);
    CHECK(raster_output_complete(tile_path(find_kind(e, n, DATASET_TRUNCATED, 0)), "EPSG:4326") ==
          0);
    CHECK(raster_output_complete(tile_path(t), "EPSG:4326") == 1); /* a complete input */

    /* Temporaries of a dead process are removed, those of a live one and others kept. */
    char live[64];
    snprintf(live, sizeof live, "out/.a.tif.tmp.%ld.7", (long)getpid());
    const char *keep[] = {at("%s", live), at("%s", "out/.a.tif.tmp.x.7"),
                          at("%s", "out/a.tif.tmp.999999999.7")};
    char stale_out[4400];
    snprintf(stale_out, sizeof stale_out, "%s", at("out/.a.tif.tmp.%d.7", 999999999));
    int made = 1;
    for (size_t i = 0; i < 3; i++) {
        FILE *k = fopen(keep[i], "w");
        made &= k != NULL;
        if (k != NULL)
            fclose(k);
    }
    FILE *sf = fopen(stale_out, "w");
    CHECK(made && sf != NULL);
    if (sf != NULL)
        fclose(sf);
    unsigned removed = 99;
    CHECK(raster_remove_stale_temps(at("%s", "out"), &removed, err, sizeof err) == 0);
    CHECK(removed == 1 && access(stale_out, F_OK) != 0);
    for (size_t i = 0; i < 3; i++)
        CHECK(access(keep[i], F_OK) == 0 && unlink(keep[i]) == 0);
    CHECK(count_entries(at("%s", "out")) == 1);
    CHECK(raster_remove_stale_temps(at("%s", "nodir"), &removed, err, sizeof err) == -1);
    CHECK(removed == 0 && STARTS(err, "cannot read directory "));

    /* Into a missing directory. */
    CHECK(raster_write(dst, at("%s", "nodir/a.tif"), RASTER_ZSTD, &fb, err, sizeof err) == -1);
    CHECK(STARTS(err, "cannot write ") && strstr(err, "No such file or directory") != NULL);

    /* Into a read-only directory (as an unprivileged user when run as root). */
    const char *ro = at("%s", "ro");
    CHECK(mkdir(ro, 0755) == 0 && chmod(root, 0755) == 0 && chmod(ro, 0555) == 0);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        int rc = raster_write(dst, at("%s", "ro/a.tif"), RASTER_ZSTD, &fb, err, sizeof err);
        if (write(pipefd[1], err, strlen(err) + 1) < 0)
            _exit(4);
        _exit(rc == -1 ? 0 : 1);
    }
    close(pipefd[1]);
    char msg[512] = "";
    ssize_t got = read(pipefd[0], msg, sizeof msg - 1);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        printf("raster_test: cannot become an unprivileged user, read-only write not "
               "exercised\n");
    } else {
        CHECK(got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(STARTS(msg, "cannot write ") && strstr(msg, "Permission denied") != NULL);
    }
    CHECK(count_entries(ro) == 0);

    /* On a full file system: a 64 KiB tmpfs in private namespaces, where they exist. */
    const char *full = at("%s", "full");
    CHECK(mkdir(full, 0755) == 0);
    CHECK(pipe(pipefd) == 0);
    pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            _exit(10);
        char map[64];
        int fd = open("/proc/self/setgroups", O_WRONLY);
        if (fd >= 0) {
            if (write(fd, "deny", 4) < 0)
                _exit(10);
            close(fd);
        }
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        fd = open("/proc/self/uid_map", O_WRONLY);
        if (fd < 0 || write(fd, map, strlen(map)) < 0)
            _exit(10);
        close(fd);
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        fd = open("/proc/self/gid_map", O_WRONLY);
        if (fd < 0 || write(fd, map, strlen(map)) < 0)
            _exit(10);
        close(fd);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("tmpfs", full, "tmpfs", 0, "size=64k") != 0)
            _exit(10);
        int rc = raster_write(dst, at("%s", "full/a.tif"), RASTER_ZSTD, &fb, err, sizeof err);
        if (write(pipefd[1], err, strlen(err) + 1) < 0)
            _exit(4);
        _exit(rc == -1 && count_entries(full) == 0 ? 0 : 1);
    }
    close(pipefd[1]);
    memset(msg, 0, sizeof msg);
    got = read(pipefd[0], msg, sizeof msg - 1);
    close(pipefd[0]);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
        printf("raster_test: no private tmpfs here, disk-full write not exercised\n");
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(strcmp(msg, "disk full (No space left on device)") == 0);
        if (strcmp(msg, "disk full (No space left on device)") != 0)
            fprintf(stderr, "raster_test: disk-full write said: %s\n", msg);
    }
    raster_free(dst);
    raster_free(NULL);
}

/* ---- threads ----------------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS  3

struct job {
    const char *in;
    const char *garbage;
    char out[4400];
    char ref[4400];
    int ok;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    char err[512];
    j->ok = 1;
    for (int round = 0; round < ROUNDS; round++) {
        if (round_trip(j->in, j->out, err, sizeof err) != 0 || !same_file(j->out, j->ref))
            j->ok = 0;
        size_t len;
        void *g = slurp(j->garbage, &len);
        struct raster_info ri;
        if (g == NULL || raster_probe(g, len, "EPSG:3857", &ri, err, sizeof err) != -1 ||
            !STARTS(err, "not a raster GDAL can read: "))
            j->ok = 0;
        free(g);
    }
    return NULL;
}

/* The --compress names, and that this GDAL writes every codec band-pipe offers. */
static void test_codecs(void)
{
    enum raster_codec c = RASTER_LZW;
    CHECK(raster_codec_parse("zstd", &c) == 0 && c == RASTER_ZSTD);
    CHECK(raster_codec_parse("Deflate", &c) == 0 && c == RASTER_DEFLATE);
    CHECK(raster_codec_parse("LZW", &c) == 0 && c == RASTER_LZW);
    c = RASTER_DEFLATE;
    CHECK(raster_codec_parse("jpeg", &c) == -1 && c == RASTER_DEFLATE);
    CHECK(raster_codec_parse("", &c) == -1 && raster_codec_parse(NULL, &c) == -1);
    CHECK(strcmp(raster_codec_name(RASTER_ZSTD), "ZSTD") == 0);
    CHECK(strcmp(raster_codec_name(RASTER_DEFLATE), "DEFLATE") == 0);
    CHECK(strcmp(raster_codec_name(RASTER_LZW), "LZW") == 0);
    CHECK(raster_codec_name((enum raster_codec)3) == NULL);
    CHECK(raster_codec_supported(RASTER_ZSTD) == 1);
    CHECK(raster_codec_supported(RASTER_DEFLATE) == 1);
    CHECK(raster_codec_supported(RASTER_LZW) == 1);
    CHECK(raster_codec_supported((enum raster_codec)3) == 0);
}

/* Every pixel of @path's bands equals the warp GDAL itself makes of @src onto the same
 * grid with @alg (GDALReprojectImage: the approximate transformer within 1/8 pixel). */
static int same_as_gdal(const char *src, const char *path, GDALResampleAlg alg)
{
    GDALDatasetH in = GDALOpen(src, GA_ReadOnly), got = GDALOpen(path, GA_ReadOnly);
    if (in == NULL || got == NULL) {
        if (in != NULL)
            GDALClose(in);
        if (got != NULL)
            GDALClose(got);
        return 0;
    }
    int w = GDALGetRasterXSize(got), h = GDALGetRasterYSize(got), nb = GDALGetRasterCount(got);
    GDALDatasetH ref = GDALCreate(GDALGetDriverByName("MEM"), "", w, h, nb, GDT_Byte, NULL);
    double gt[6];
    GDALGetGeoTransform(got, gt);
    GDALSetGeoTransform(ref, gt);
    GDALSetSpatialRef(ref, GDALGetSpatialRef(got));
    int same = GDALReprojectImage(in, NULL, ref, NULL, alg, 0, 0.125, NULL, NULL, NULL) == CE_None;
    size_t px = (size_t)w * (size_t)h;
    unsigned char *a = malloc(px), *b = malloc(px);
    for (int k = 1; same && k <= nb; k++) {
        same = a != NULL && b != NULL &&
               GDALRasterIO(GDALGetRasterBand(got, k), GF_Read, 0, 0, w, h, a, w, h, GDT_Byte, 0,
                            0) == CE_None &&
               GDALRasterIO(GDALGetRasterBand(ref, k), GF_Read, 0, 0, w, h, b, w, h, GDT_Byte, 0,
                            0) == CE_None &&
               memcmp(a, b, px) == 0;
    }
    free(a);
    free(b);
    GDALClose(ref);
    GDALClose(got);
    GDALClose(in);
    return same;
}

/* --resampling's names, and each method reaching GDAL's warp. */
static void test_resampling(const struct dataset_entry *e, size_t n)
{
    enum raster_resampling r = RASTER_CUBIC;
    CHECK(raster_resampling_parse("nearest", &r) == 0 && r == RASTER_NEAREST);
    CHECK(raster_resampling_parse("NEAR", &r) == 0 && r == RASTER_NEAREST);
    CHECK(raster_resampling_parse("Bilinear", &r) == 0 && r == RASTER_BILINEAR);
    CHECK(raster_resampling_parse("lanczos", &r) == 0 && r == RASTER_LANCZOS);
    r = RASTER_AVERAGE;
    CHECK(raster_resampling_parse("spline", &r) == -1 && r == RASTER_AVERAGE);
    CHECK(raster_resampling_parse(NULL, &r) == -1 && raster_resampling_parse("", &r) == -1);
    CHECK(strcmp(raster_resampling_name(RASTER_NEAREST), "nearest") == 0);
    CHECK(strcmp(raster_resampling_name(RASTER_AVERAGE), "average") == 0);
    CHECK(raster_resampling_name((enum raster_resampling)5) == NULL);

    static const struct {
        enum raster_resampling ours;
        GDALResampleAlg gdal;
        const char *file;
    } cases[] = {{RASTER_NEAREST, GRA_NearestNeighbour, "near.tif"},
                 {RASTER_BILINEAR, GRA_Bilinear, "bilinear.tif"},
                 {RASTER_CUBIC, GRA_Cubic, "cubic.tif"}};
    char err[512];
    const struct dataset_entry *t = find_kind(e, n, DATASET_SMALL, 2);
    char in[4400];
    snprintf(in, sizeof in, "%s", tile_path(t));
    size_t len;
    void *buf = slurp(in, &len);
    struct raster *src = NULL;
    uint64_t b = 0;
    CHECK(buf != NULL && raster_decode(buf, len, &src, &b, err, sizeof err) == 0);
    free(buf);
    mkdir(at("%s", "resampling"), 0755);
    for (size_t i = 0; src != NULL && i < sizeof cases / sizeof cases[0]; i++) {
        struct raster *dst = NULL;
        uint64_t wb = 0, fb = 0;
        char out[4400];
        snprintf(out, sizeof out, "%s", at("resampling/%s", cases[i].file));
        CHECK(raster_warp(src, "EPSG:3857", cases[i].ours, 1, &dst, &wb, err, sizeof err) == 0);
        CHECK(dst != NULL && raster_write(dst, out, RASTER_ZSTD, &fb, err, sizeof err) == 0);
        raster_free(dst);
        CHECK(same_as_gdal(in, out, cases[i].gdal));
        /* A different method gives different pixels: the check above can fail. */
        if (i > 0)
            CHECK(!same_as_gdal(in, out, cases[0].gdal));
    }
    struct raster *none = (struct raster *)src;
    uint64_t nb = 7;
    CHECK(src == NULL || (raster_warp(src, "EPSG:3857", (enum raster_resampling)9, 1, &none, &nb,
                                      err, sizeof err) == -1 &&
                          none == NULL && nb == 0 && strstr(err, "not a method") != NULL));
    raster_free(src);
}

static void test_threads(const struct dataset_entry *e, size_t n)
{
    char err[512];
    struct job jobs[THREADS];
    mkdir(at("%s", "seq"), 0755);
    mkdir(at("%s", "par"), 0755);
    for (unsigned i = 0; i < THREADS; i++) {
        const struct dataset_entry *t = find_kind(e, n, DATASET_SMALL, i);
        jobs[i].in = t != NULL ? strdup(tile_path(t)) : NULL;
        jobs[i].garbage = find_kind(e, n, DATASET_CORRUPT, 0) != NULL
                              ? strdup(tile_path(find_kind(e, n, DATASET_CORRUPT, 0)))
                              : NULL;
        snprintf(jobs[i].ref, sizeof jobs[i].ref, "%s", at("seq/%s", t->name));
        snprintf(jobs[i].out, sizeof jobs[i].out, "%s", at("par/%s", t->name));
        CHECK(round_trip(jobs[i].in, jobs[i].ref, err, sizeof err) == 0);
    }
    pthread_t th[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, worker, &jobs[i]) == 0);
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].ok == 1);
        CHECK(raster_check_file(jobs[i].out, "EPSG:3857", RASTER_ZSTD, err, sizeof err) == 0);
        free((void *)jobs[i].in);
        free((void *)jobs[i].garbage);
    }
    CHECK(count_entries(at("%s", "par")) == THREADS);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: raster_test DIR\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    rm_tree(root);
    if (mkdir(root, 0755) != 0) {
        fprintf(stderr, "raster_test: cannot create %s: %s\n", root, strerror(errno));
        return 1;
    }
    char err[512];
    if (raster_init(64u << 20, err, sizeof err) != 0) {
        fprintf(stderr, "raster_test: %s\n", err);
        return 1;
    }
    struct dataset_entry *ents = NULL;
    size_t n = 0;
    test_codecs();
    test_dataset(&ents, &n);
    if (failures == 0) {
        test_probe(ents, n);
        test_round_trip(ents, n);
        test_resampling(ents, n);
        test_threads(ents, n);
    }
    dataset_free_manifest(ents);
    raster_shutdown();
    if (failures != 0) {
        fprintf(stderr, "raster_test: %d checks failed\n", failures);
        return 1;
    }
    printf("raster_test: all checks passed\n");
    return 0;
}
