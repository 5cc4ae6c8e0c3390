/* SPDX-License-Identifier: MIT */
/*
 * raster.c - GDAL from memory: probe a header, decode into an in-memory dataset, reproject,
 * and write a compressed GeoTIFF through a temporary name renamed into place.
 *
 * Every call catches GDAL's messages with an error handler pushed on the calling thread's
 * own handler stack, so several threads can run calls at once. Buffers are opened in place
 * under unique /vsimem/ names. The only shared mutable state is an atomic counter that
 * makes those names (and temporary file names) unique.
 */
#define _GNU_SOURCE

#include "raster.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#include <gdal.h>
#include <gdal_alg.h>
#include <gdalwarper.h>
#include <ogr_srs_api.h>

#include "errtext.h"

#define RASTER_DEFAULT_CACHE ((uint64_t)16 * 1024 * 1024)
#define RASTER_MAX_BANDS     4096

struct raster {
    GDALDatasetH ds; /* a MEM dataset whose bands point into pixels */
    unsigned char *pixels;
    uint64_t bytes;
    unsigned width, height, bands;
};

static atomic_ullong raster_counter;

/* The drivers sources may be opened with, set once by raster_init(): every raster driver
 * except those whose files name other files, URLs or databases to read from (a VRT in a
 * fetched body could otherwise copy any local file into an output). */
static const char **raster_drivers;

static const char *const raster_denied[] = {"VRT",
                                            "DERIVED",
                                            "MEM",
                                            "RPFTOC",
                                            "ECRGTOC",
                                            "WCS",
                                            "WMS",
                                            "WMTS",
                                            "KMLSUPEROVERLAY",
                                            "PLMOSAIC",
                                            "PLSCENES",
                                            "EEDAI",
                                            "DAAS",
                                            "OGCAPI",
                                            "STACTA",
                                            "STACIT",
                                            "PostGISRaster",
                                            "NGW",
                                            "HTTP",
                                            "ESRIC",
                                            "GTI",
                                            "GDALG",
                                            NULL};

/* ---- messages ---------------------------------------------------------------------- */

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

/* What GDAL said during one call on this thread. */
struct errcap {
    int failed;    /* a CE_Failure or CE_Fatal was raised */
    int err_no;    /* errno when the first failure was raised */
    char msg[256]; /* the first failure's message, else the last warning's */
};

static void CPL_STDCALL errcap_handler(CPLErr cls, CPLErrorNum num, const char *msg)
{
    int saved = errno;
    struct errcap *cap = CPLGetErrorHandlerUserData();
    (void)num;
    if (cap == NULL || msg == NULL)
        return;
    if (cls == CE_Failure || cls == CE_Fatal) {
        if (!cap->failed) {
            cap->failed = 1;
            cap->err_no = saved;
            snprintf(cap->msg, sizeof cap->msg, "%s", msg);
        }
    } else if (cls == CE_Warning && !cap->failed) {
        snprintf(cap->msg, sizeof cap->msg, "%s", msg);
    }
    errno = saved;
}

static void errcap_push(struct errcap *cap)
{
    memset(cap, 0, sizeof *cap);
    CPLErrorReset();
    CPLPushErrorHandlerEx(errcap_handler, cap);
}

static void errcap_pop(void)
{
    CPLPopErrorHandler();
}

static const char *errcap_msg(const struct errcap *cap, const char *fallback)
{
    return cap->msg[0] != '\0' ? cap->msg : fallback;
}

/* ---- set-up ------------------------------------------------------------------------ */

int raster_init(uint64_t cache_bytes, char *err, size_t errlen)
{
    GDALAllRegister();
    CPLSetErrorHandler(CPLQuietErrorHandler);
    GDALSetCacheMax64((GIntBig)(cache_bytes != 0 ? cache_bytes : RASTER_DEFAULT_CACHE));
    CPLSetConfigOption("GDAL_NUM_THREADS", "1");
    CPLSetConfigOption("GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR");
    CPLSetConfigOption("GDAL_PAM_ENABLED", "NO");
    CPLSetConfigOption("CPL_DEBUG", "OFF");
    if (GDALGetDriverByName("GTiff") == NULL || GDALGetDriverByName("MEM") == NULL) {
        set_err(err, errlen, "GDAL has no GTiff or MEM driver");
        return -1;
    }
    int count = GDALGetDriverCount();
    free(raster_drivers);
    raster_drivers = calloc((size_t)count + 1, sizeof *raster_drivers);
    if (raster_drivers == NULL) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (int i = 0; i < count; i++) {
        GDALDriverH d = GDALGetDriver(i);
        const char *name = GDALGetDriverShortName(d);
        if (name == NULL || GDALGetMetadataItem(d, GDAL_DCAP_RASTER, NULL) == NULL)
            continue;
        int denied = 0;
        for (size_t k = 0; raster_denied[k] != NULL; k++)
            if (strcmp(name, raster_denied[k]) == 0)
                denied = 1;
        if (!denied)
            raster_drivers[n++] = name;
    }
    raster_drivers[n] = NULL;
    return 0;
}

void raster_shutdown(void)
{
    free(raster_drivers);
    raster_drivers = NULL;
    GDALDestroyDriverManager();
}

/* ---- helpers ----------------------------------------------------------------------- */

/* A CRS from user input, with the axis order datasets use (x = easting/longitude). */
static OGRSpatialReferenceH crs_parse(const char *text, char **wkt)
{
    if (text == NULL || text[0] == '\0')
        return NULL;
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    if (srs == NULL)
        return NULL;
    if (OSRSetFromUserInput(srs, text) != OGRERR_NONE) {
        OSRDestroySpatialReference(srs);
        return NULL;
    }
    OSRSetAxisMappingStrategy(srs, OAMS_TRADITIONAL_GIS_ORDER);
    if (wkt != NULL) {
        *wkt = NULL;
        if (OSRExportToWkt(srs, wkt) != OGRERR_NONE || *wkt == NULL) {
            CPLFree(*wkt);
            *wkt = NULL;
            OSRDestroySpatialReference(srs);
            return NULL;
        }
    }
    return srs;
}

/* "EPSG:4326" when @srs has an authority code, else its name. */
static void crs_short(OGRSpatialReferenceH srs, char *out, size_t outlen)
{
    if (srs == NULL) {
        snprintf(out, outlen, "no CRS");
        return;
    }
    const char *auth = OSRGetAuthorityName(srs, NULL);
    const char *code = OSRGetAuthorityCode(srs, NULL);
    if (auth != NULL && code != NULL) {
        snprintf(out, outlen, "%s:%s", auth, code);
        return;
    }
    const char *name = OSRGetName(srs);
    snprintf(out, outlen, "%s", name != NULL ? name : "unnamed CRS");
}

/* Opens @buf in place under a fresh /vsimem/ name (written to @name). */
static GDALDatasetH mem_open(const void *buf, size_t len, char *name, size_t namelen)
{
    unsigned long long n = atomic_fetch_add(&raster_counter, 1);
    snprintf(name, namelen, "/vsimem/band_pipe_in/%ld_%llu", (long)getpid(), n);
    /* Opened read-only: GDAL never writes through the pointer. */
    VSILFILE *fp = VSIFileFromMemBuffer(name, (GByte *)(uintptr_t)buf, (vsi_l_offset)len, FALSE);
    if (fp == NULL)
        return NULL;
    VSIFCloseL(fp);
    GDALDatasetH ds = GDALOpenEx(name, GDAL_OF_RASTER | GDAL_OF_READONLY,
                                 (const char *const *)raster_drivers, NULL, NULL);
    if (ds == NULL)
        VSIUnlink(name);
    return ds;
}

static void mem_close(GDALDatasetH ds, const char *name)
{
    if (ds != NULL)
        GDALClose(ds);
    VSIUnlink(name);
}

/* The header of an opened source. */
struct header {
    unsigned width, height, bands;
    unsigned type_bytes; /* band 1 */
    uint64_t pixel_bytes;
    char crs[64];
};

/* Pixel bytes of a @w x @h raster with the bands of @ds, or 0 on overflow. */
static uint64_t pixel_bytes(GDALDatasetH ds, unsigned w, unsigned h, unsigned bands)
{
    uint64_t per_pixel = 0;
    for (unsigned b = 1; b <= bands; b++) {
        GDALRasterBandH band = GDALGetRasterBand(ds, (int)b);
        int ts = band != NULL ? GDALGetDataTypeSizeBytes(GDALGetRasterDataType(band)) : 0;
        if (ts <= 0)
            return 0;
        per_pixel += (uint64_t)ts;
    }
    uint64_t area = (uint64_t)w * (uint64_t)h;
    if (area == 0 || per_pixel > UINT64_MAX / area)
        return 0;
    return area * per_pixel;
}

static int read_header(GDALDatasetH ds, struct header *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    int w = GDALGetRasterXSize(ds), ht = GDALGetRasterYSize(ds), n = GDALGetRasterCount(ds);
    if (n <= 0) {
        set_err(err, errlen, "raster has no bands");
        return -1;
    }
    if (w <= 0 || ht <= 0 || n > RASTER_MAX_BANDS) {
        set_err(err, errlen, "not a raster GDAL can read: %d x %d pixels, %d bands", w, ht, n);
        return -1;
    }
    h->width = (unsigned)w;
    h->height = (unsigned)ht;
    h->bands = (unsigned)n;
    h->type_bytes =
        (unsigned)GDALGetDataTypeSizeBytes(GDALGetRasterDataType(GDALGetRasterBand(ds, 1)));
    h->pixel_bytes = pixel_bytes(ds, h->width, h->height, h->bands);
    if (h->pixel_bytes == 0 || h->pixel_bytes > (uint64_t)SIZE_MAX) {
        set_err(err, errlen, "raster too large: %u x %u pixels, %u bands", h->width, h->height,
                h->bands);
        return -1;
    }
    double gt[6];
    OGRSpatialReferenceH srs = GDALGetSpatialRef(ds);
    if (GDALGetGeoTransform(ds, gt) != CE_None || srs == NULL) {
        set_err(err, errlen, "no georeferencing (no geotransform or no CRS)");
        return -1;
    }
    crs_short(srs, h->crs, sizeof h->crs);
    return 0;
}

/* The output size GDAL suggests for reprojecting @ds to @dst_wkt. */
static int suggest(GDALDatasetH ds, const char *src_name, const char *dst_crs, const char *dst_wkt,
                   struct errcap *cap, int *ow, int *oh, double gt[6], char *err, size_t errlen)
{
    char **opts = CSLSetNameValue(NULL, "DST_SRS", dst_wkt);
    void *tr = GDALCreateGenImgProjTransformer2(ds, NULL, opts);
    CSLDestroy(opts);
    if (tr == NULL) {
        set_err(err, errlen, "cannot reproject from %s to %s: %s", src_name, dst_crs,
                errcap_msg(cap, "no transformation"));
        return -1;
    }
    double ext[4];
    *ow = 0;
    *oh = 0;
    CPLErr e = GDALSuggestedWarpOutput2(ds, GDALGenImgProjTransform, tr, gt, ow, oh, ext, 0);
    GDALDestroyGenImgProjTransformer(tr);
    if (e != CE_None || *ow <= 0 || *oh <= 0) {
        set_err(err, errlen, "cannot reproject from %s to %s: %s", src_name, dst_crs,
                errcap_msg(cap, "no output extent"));
        return -1;
    }
    return 0;
}

/* Creates an empty struct raster of @w x @h with the band types of @like (a dataset). */
static struct raster *raster_new(GDALDatasetH like, unsigned w, unsigned h, char *err,
                                 size_t errlen)
{
    unsigned bands = (unsigned)GDALGetRasterCount(like);
    uint64_t bytes = pixel_bytes(like, w, h, bands);
    if (bytes == 0 || bytes > (uint64_t)SIZE_MAX) {
        set_err(err, errlen, "raster too large: %u x %u pixels, %u bands", w, h, bands);
        return NULL;
    }
    struct raster *r = calloc(1, sizeof *r);
    if (r == NULL) {
        set_err(err, errlen, "out of memory (%zu bytes)", sizeof *r);
        return NULL;
    }
    r->pixels = malloc((size_t)bytes);
    if (r->pixels == NULL) {
        set_err(err, errlen, "out of memory (%llu bytes)", (unsigned long long)bytes);
        free(r);
        return NULL;
    }
    r->bytes = bytes;
    r->width = w;
    r->height = h;
    r->bands = bands;
    r->ds = GDALCreate(GDALGetDriverByName("MEM"), "", (int)w, (int)h, 0, GDT_Byte, NULL);
    if (r->ds == NULL) {
        set_err(err, errlen, "cannot create an in-memory raster of %u x %u", w, h);
        raster_free(r);
        return NULL;
    }
    uint64_t off = 0;
    for (unsigned b = 1; b <= bands; b++) {
        GDALRasterBandH src = GDALGetRasterBand(like, (int)b);
        GDALDataType type = GDALGetRasterDataType(src);
        char ptr[64];
        snprintf(ptr, sizeof ptr, "DATAPOINTER=%p", (void *)(r->pixels + off));
        char *opts[] = {ptr, NULL};
        if (GDALAddBand(r->ds, type, opts) != CE_None) {
            set_err(err, errlen, "cannot add band %u to an in-memory raster", b);
            raster_free(r);
            return NULL;
        }
        GDALRasterBandH dst = GDALGetRasterBand(r->ds, (int)b);
        GDALSetRasterColorInterpretation(dst, GDALGetRasterColorInterpretation(src));
        int has = 0;
        double nd = GDALGetRasterNoDataValue(src, &has);
        if (has)
            GDALSetRasterNoDataValue(dst, nd);
        off += (uint64_t)w * h * (uint64_t)GDALGetDataTypeSizeBytes(type);
    }
    return r;
}

/* ---- probe and decode -------------------------------------------------------------- */

static int open_checked(const void *buf, size_t len, char *name, size_t namelen, struct errcap *cap,
                        GDALDatasetH *ds, char *err, size_t errlen)
{
    if (buf == NULL || len == 0) {
        set_err(err, errlen, "not a raster GDAL can read: empty input");
        return -1;
    }
    *ds = mem_open(buf, len, name, namelen);
    if (*ds == NULL) {
        set_err(err, errlen, "not a raster GDAL can read: %s",
                errcap_msg(cap, "unrecognised format"));
        return -1;
    }
    return 0;
}

int raster_probe(const void *buf, size_t len, const char *dst_crs, struct raster_info *out,
                 char *err, size_t errlen)
{
    if (out == NULL) {
        set_err(err, errlen, "raster_probe: no output");
        return -1;
    }
    memset(out, 0, sizeof *out);
    struct errcap cap;
    errcap_push(&cap);
    char name[96];
    GDALDatasetH ds = NULL;
    char *wkt = NULL;
    OGRSpatialReferenceH dst = NULL;
    int rc = -1;
    struct header h;
    if (open_checked(buf, len, name, sizeof name, &cap, &ds, err, errlen) != 0)
        goto done_noclose;
    if (read_header(ds, &h, err, errlen) != 0)
        goto done;
    dst = crs_parse(dst_crs, &wkt);
    if (dst == NULL) {
        set_err(err, errlen, "unknown CRS \"%s\"", dst_crs != NULL ? dst_crs : "");
        goto done;
    }
    int ow, oh;
    double gt[6];
    if (suggest(ds, h.crs, dst_crs, wkt, &cap, &ow, &oh, gt, err, errlen) != 0)
        goto done;
    uint64_t wb = pixel_bytes(ds, (unsigned)ow, (unsigned)oh, h.bands);
    if (wb == 0) {
        set_err(err, errlen, "raster too large after reprojection: %d x %d pixels", ow, oh);
        goto done;
    }
    out->width = h.width;
    out->height = h.height;
    out->bands = h.bands;
    out->type_bytes = h.type_bytes;
    out->decoded_bytes = h.pixel_bytes;
    out->out_width = (unsigned)ow;
    out->out_height = (unsigned)oh;
    out->warped_bytes = wb;
    snprintf(out->src_crs, sizeof out->src_crs, "%s", h.crs);
    rc = 0;
done:
    mem_close(ds, name);
done_noclose:
    CPLFree(wkt);
    if (dst != NULL)
        OSRDestroySpatialReference(dst);
    errcap_pop();
    return rc;
}

/* Copies every pixel of @src into @r (same size and band types). */
static int copy_pixels(GDALDatasetH src, struct raster *r, struct errcap *cap, char *err,
                       size_t errlen)
{
    GDALDataType t1 = GDALGetRasterDataType(GDALGetRasterBand(src, 1));
    int same = 1;
    for (unsigned b = 2; b <= r->bands; b++)
        if (GDALGetRasterDataType(GDALGetRasterBand(src, (int)b)) != t1)
            same = 0;
    CPLErr e = CE_None;
    if (same) {
        GSpacing ts = GDALGetDataTypeSizeBytes(t1);
        GSpacing line = ts * (GSpacing)r->width;
        GSpacing plane = line * (GSpacing)r->height;
        e = GDALDatasetRasterIOEx(src, GF_Read, 0, 0, (int)r->width, (int)r->height, r->pixels,
                                  (int)r->width, (int)r->height, t1, (int)r->bands, NULL, ts, line,
                                  plane, NULL);
    } else {
        uint64_t off = 0;
        for (unsigned b = 1; b <= r->bands && e == CE_None; b++) {
            GDALRasterBandH band = GDALGetRasterBand(src, (int)b);
            GDALDataType t = GDALGetRasterDataType(band);
            e = GDALRasterIO(band, GF_Read, 0, 0, (int)r->width, (int)r->height, r->pixels + off,
                             (int)r->width, (int)r->height, t, 0, 0);
            off += (uint64_t)r->width * r->height * (uint64_t)GDALGetDataTypeSizeBytes(t);
        }
    }
    if (e != CE_None || cap->failed) {
        set_err(err, errlen, "corrupt raster data: %s", errcap_msg(cap, "read failed"));
        return -1;
    }
    return 0;
}

int raster_decode(const void *buf, size_t len, struct raster **out, uint64_t *bytes, char *err,
                  size_t errlen)
{
    if (out == NULL || bytes == NULL) {
        set_err(err, errlen, "raster_decode: no output");
        return -1;
    }
    *out = NULL;
    *bytes = 0;
    struct errcap cap;
    errcap_push(&cap);
    char name[96];
    GDALDatasetH ds = NULL;
    struct raster *r = NULL;
    int rc = -1;
    struct header h;
    if (open_checked(buf, len, name, sizeof name, &cap, &ds, err, errlen) != 0) {
        errcap_pop();
        return -1;
    }
    if (read_header(ds, &h, err, errlen) != 0)
        goto done;
    r = raster_new(ds, h.width, h.height, err, errlen);
    if (r == NULL)
        goto done;
    double gt[6];
    GDALGetGeoTransform(ds, gt);
    GDALSetGeoTransform(r->ds, gt);
    GDALSetSpatialRef(r->ds, GDALGetSpatialRef(ds));
    if (copy_pixels(ds, r, &cap, err, errlen) != 0)
        goto done;
    *out = r;
    *bytes = r->bytes;
    r = NULL;
    rc = 0;
done:
    raster_free(r);
    mem_close(ds, name);
    errcap_pop();
    return rc;
}

/* ---- warp -------------------------------------------------------------------------- */

int raster_warp(const struct raster *src, const char *dst_crs, enum raster_resampling how,
                unsigned threads, struct raster **out, uint64_t *bytes, char *err, size_t errlen)
{
    if (src == NULL || out == NULL || bytes == NULL) {
        set_err(err, errlen, "raster_warp: no input or output");
        return -1;
    }
    *out = NULL;
    *bytes = 0;
    if (raster_resampling_name(how) == NULL) {
        set_err(err, errlen, "raster_warp: resampling %d is not a method", (int)how);
        return -1;
    }
    struct errcap cap;
    errcap_push(&cap);
    int rc = -1;
    char *wkt = NULL;
    struct raster *r = NULL;
    void *tr = NULL, *approx = NULL;
    GDALWarpOptions *wo = NULL;
    GDALWarpOperationH op = NULL;
    GDALDatasetH sds = src->ds;
    char src_name[64];
    crs_short(GDALGetSpatialRef(sds), src_name, sizeof src_name);
    OGRSpatialReferenceH dst = crs_parse(dst_crs, &wkt);
    if (dst == NULL) {
        set_err(err, errlen, "unknown CRS \"%s\"", dst_crs != NULL ? dst_crs : "");
        goto done;
    }
    int ow, oh;
    double gt[6];
    if (suggest(sds, src_name, dst_crs, wkt, &cap, &ow, &oh, gt, err, errlen) != 0)
        goto done;
    r = raster_new(sds, (unsigned)ow, (unsigned)oh, err, errlen);
    if (r == NULL)
        goto done;
    GDALSetGeoTransform(r->ds, gt);
    GDALSetSpatialRef(r->ds, dst);
    tr = GDALCreateGenImgProjTransformer2(sds, r->ds, NULL);
    if (tr == NULL) {
        set_err(err, errlen, "cannot reproject from %s to %s: %s", src_name, dst_crs,
                errcap_msg(&cap, "no transformation"));
        goto done;
    }
    wo = GDALCreateWarpOptions();
    wo->hSrcDS = sds;
    wo->hDstDS = r->ds;
    wo->nBandCount = (int)r->bands;
    wo->panSrcBands = CPLMalloc(sizeof(int) * r->bands);
    wo->panDstBands = CPLMalloc(sizeof(int) * r->bands);
    int any_nodata = 0;
    for (unsigned b = 0; b < r->bands; b++) {
        wo->panSrcBands[b] = (int)b + 1;
        wo->panDstBands[b] = (int)b + 1;
        int has = 0;
        GDALGetRasterNoDataValue(GDALGetRasterBand(sds, (int)b + 1), &has);
        any_nodata |= has;
    }
    if (any_nodata) {
        wo->padfSrcNoDataReal = CPLMalloc(sizeof(double) * r->bands);
        wo->padfDstNoDataReal = CPLMalloc(sizeof(double) * r->bands);
        for (unsigned b = 0; b < r->bands; b++) {
            int has = 0;
            double nd = GDALGetRasterNoDataValue(GDALGetRasterBand(sds, (int)b + 1), &has);
            /* A band without nodata next to one with: a value no sample takes. */
            wo->padfSrcNoDataReal[b] = has ? nd : -1e300;
            wo->padfDstNoDataReal[b] = has ? nd : 0.0;
        }
    }
    static const GDALResampleAlg algs[] = {GRA_NearestNeighbour, GRA_Bilinear, GRA_Cubic,
                                           GRA_Lanczos, GRA_Average};
    wo->eResampleAlg = algs[how]; /* checked on entry */
    wo->dfWarpMemoryLimit = (double)RASTER_WARP_MEMORY;
    /* Exact transforms at the corners and edges of each chunk, linear in between, within
     * an eighth of a pixel: gdalwarp's and rasterio's default. Transforming every pixel
     * through PROJ costs several times the rest of the warp. */
    approx = GDALCreateApproxTransformer(GDALGenImgProjTransform, tr, 0.125);
    if (approx == NULL) {
        set_err(err, errlen, "cannot reproject from %s to %s: %s", src_name, dst_crs,
                errcap_msg(&cap, "no approximate transformation"));
        goto done;
    }
    wo->pfnTransformer = GDALApproxTransform;
    wo->pTransformerArg = approx;
    wo->papszWarpOptions = CSLSetNameValue(wo->papszWarpOptions, "INIT_DEST", "NO_DATA");
    char nthreads[16];
    snprintf(nthreads, sizeof nthreads, "%u", threads > 1 ? (threads < 64 ? threads : 64) : 1);
    wo->papszWarpOptions = CSLSetNameValue(wo->papszWarpOptions, "NUM_THREADS", nthreads);
    op = GDALCreateWarpOperation(wo);
    if (op == NULL) {
        set_err(err, errlen, "cannot reproject from %s to %s: %s", src_name, dst_crs,
                errcap_msg(&cap, "warp set-up failed"));
        goto done;
    }
    if (GDALChunkAndWarpImage(op, 0, 0, ow, oh) != CE_None || cap.failed) {
        set_err(err, errlen, "cannot reproject from %s to %s: %s", src_name, dst_crs,
                errcap_msg(&cap, "warp failed"));
        goto done;
    }
    *out = r;
    *bytes = r->bytes;
    r = NULL;
    rc = 0;
done:
    if (op != NULL)
        GDALDestroyWarpOperation(op);
    if (wo != NULL)
        GDALDestroyWarpOptions(wo);
    if (approx != NULL)
        GDALDestroyApproxTransformer(approx);
    if (tr != NULL)
        GDALDestroyGenImgProjTransformer(tr);
    raster_free(r);
    CPLFree(wkt);
    if (dst != NULL)
        OSRDestroySpatialReference(dst);
    errcap_pop();
    return rc;
}

/* ---- write ------------------------------------------------------------------------- */

static int is_disk_full(int e)
{
    return e == ENOSPC || e == EDQUOT;
}

/* The file system holding @dir has (almost) no room left for an unprivileged writer. */
static int dir_full(const char *dir)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return 0;
    return (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize < (uint64_t)64 * 1024;
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* ---- resampling ---------------------------------------------------------------------- */

static const char *const resampling_names[] = {"nearest", "bilinear", "cubic", "lanczos",
                                               "average"};
#define RESAMPLING_COUNT (sizeof(resampling_names) / sizeof(resampling_names[0]))

const char *raster_resampling_name(enum raster_resampling r)
{
    return (unsigned)r < RESAMPLING_COUNT ? resampling_names[r] : NULL;
}

int raster_resampling_parse(const char *s, enum raster_resampling *out)
{
    if (s != NULL && strcasecmp(s, "near") == 0) {
        *out = RASTER_NEAREST;
        return 0;
    }
    for (unsigned i = 0; s != NULL && i < RESAMPLING_COUNT; i++)
        if (strcasecmp(s, resampling_names[i]) == 0) {
            *out = (enum raster_resampling)i;
            return 0;
        }
    return -1;
}

/* ---- compression --------------------------------------------------------------------- */

static const char *const codec_names[] = {"ZSTD", "DEFLATE", "LZW"};
#define CODEC_COUNT (sizeof(codec_names) / sizeof(codec_names[0]))

const char *raster_codec_name(enum raster_codec c)
{
    return (unsigned)c < CODEC_COUNT ? codec_names[c] : NULL;
}

int raster_codec_parse(const char *s, enum raster_codec *out)
{
    for (unsigned i = 0; s != NULL && i < CODEC_COUNT; i++)
        if (strcasecmp(s, codec_names[i]) == 0) {
            *out = (enum raster_codec)i;
            return 0;
        }
    return -1;
}

int raster_codec_supported(enum raster_codec c)
{
    const char *name = raster_codec_name(c);
    GDALDriverH gtiff = GDALGetDriverByName("GTiff");
    if (name == NULL || gtiff == NULL)
        return 0;
    /* The driver lists the codecs it was built with in its creation options. */
    const char *list = GDALGetMetadataItem(gtiff, GDAL_DMD_CREATIONOPTIONLIST, NULL);
    char value[32];
    snprintf(value, sizeof value, "<Value>%s</Value>", name);
    return list != NULL && strstr(list, value) != NULL;
}

/* The creation options of a tile: tiled, @codec at its fastest level, the predictor. */
static char **codec_options(enum raster_codec codec)
{
    char **co = NULL;
    co = CSLSetNameValue(co, "TILED", "YES");
    co = CSLSetNameValue(co, "BLOCKXSIZE", "256");
    co = CSLSetNameValue(co, "BLOCKYSIZE", "256");
    co = CSLSetNameValue(co, "COMPRESS", raster_codec_name(codec));
    if (codec == RASTER_ZSTD)
        co = CSLSetNameValue(co, "ZSTD_LEVEL", "1");
    else if (codec == RASTER_DEFLATE)
        co = CSLSetNameValue(co, "ZLEVEL", "1");
    co = CSLSetNameValue(co, "PREDICTOR", "2");
    co = CSLSetNameValue(co, "NUM_THREADS", "1");
    co = CSLSetNameValue(co, "BIGTIFF", "IF_SAFER");
    return co;
}

int raster_write(const struct raster *r, const char *final_path, enum raster_codec codec,
                 uint64_t *file_bytes, char *err, size_t errlen)
{
    if (file_bytes != NULL)
        *file_bytes = 0;
    if (r == NULL || final_path == NULL || final_path[0] == '\0') {
        set_err(err, errlen, "raster_write: no raster or path");
        return -1;
    }
    if (raster_codec_name(codec) == NULL) {
        set_err(err, errlen, "cannot write %s: unknown compression", final_path);
        return -1;
    }
    /* dir and base of final_path */
    size_t plen = strlen(final_path);
    char *dir = malloc(plen + 2);
    char *tmp = malloc(plen + 64);
    if (dir == NULL || tmp == NULL) {
        free(dir);
        free(tmp);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    const char *slash = strrchr(final_path, '/');
    const char *base = slash != NULL ? slash + 1 : final_path;
    if (slash == NULL) {
        strcpy(dir, ".");
    } else if (slash == final_path) {
        strcpy(dir, "/");
    } else {
        memcpy(dir, final_path, (size_t)(slash - final_path));
        dir[slash - final_path] = '\0';
    }
    if (base[0] == '\0') {
        set_err(err, errlen, "cannot write %s: not a file name", final_path);
        free(dir);
        free(tmp);
        return -1;
    }
    unsigned long long n = atomic_fetch_add(&raster_counter, 1);
    snprintf(tmp, plen + 64, "%.*s.%s.tmp.%ld.%llu", (int)(base - final_path), final_path, base,
             (long)getpid(), n);

    struct errcap cap;
    errcap_push(&cap);
    int rc = -1, created = 0, e = 0;
    /* Claim the name ourselves: a clean errno for permission and space problems. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = errno;
        goto fail;
    }
    created = 1;
    close(fd);

    char **co = codec_options(codec);
    GDALDatasetH out =
        GDALCreateCopy(GDALGetDriverByName("GTiff"), tmp, r->ds, FALSE, co, NULL, NULL);
    CSLDestroy(co);
    if (out == NULL) {
        e = cap.err_no;
        goto fail_gdal;
    }
    GDALClose(out); /* writes the last blocks and the directory */
    if (cap.failed) {
        e = cap.err_no;
        goto fail_gdal;
    }
    if (fsync_path(tmp, O_RDONLY) != 0) {
        e = errno;
        goto fail;
    }
    struct stat st;
    if (stat(tmp, &st) != 0) {
        e = errno;
        goto fail;
    }
    if (rename(tmp, final_path) != 0) {
        e = errno;
        goto fail;
    }
    created = 0;
    (void)fsync_path(dir, O_RDONLY | O_DIRECTORY); /* the rename itself; best effort */
    if (file_bytes != NULL)
        *file_bytes = (uint64_t)st.st_size;
    rc = 0;
    goto done;

fail_gdal:
    if (is_disk_full(e) || dir_full(dir)) {
        set_err(err, errlen, "disk full (No space left on device)");
    } else {
        set_err(err, errlen, "cannot write %s: %s", final_path,
                errcap_msg(&cap, e != 0 ? errtext(e) : "GDAL failed"));
    }
    goto done;
fail:
    if (is_disk_full(e) || (e == EIO && dir_full(dir)))
        set_err(err, errlen, "disk full (No space left on device)");
    else
        set_err(err, errlen, "cannot write %s: %s", final_path, errtext(e));
done:
    if (created)
        unlink(tmp);
    errcap_pop();
    free(dir);
    free(tmp);
    return rc;
}

/* 1 when @name is "." <base> ".tmp." <pid> "." <n> with <pid> not running. */
static int stale_temp(const char *name)
{
    if (name[0] != '.')
        return 0;
    const char *t = NULL;
    for (const char *p = strstr(name + 1, ".tmp."); p != NULL; p = strstr(p + 1, ".tmp."))
        t = p; /* the last ".tmp." */
    if (t == NULL || t == name + 1)
        return 0;
    char *end;
    errno = 0;
    long pid = strtol(t + 5, &end, 10);
    if (errno != 0 || end == t + 5 || *end != '.' || pid <= 0)
        return 0;
    const char *q = end + 1;
    if (*q == '\0')
        return 0;
    for (; *q != '\0'; q++)
        if (*q < '0' || *q > '9')
            return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int raster_remove_stale_temps(const char *dir, unsigned *removed, char *err, size_t errlen)
{
    if (removed != NULL)
        *removed = 0;
    DIR *d = dir != NULL ? opendir(dir) : NULL;
    if (d == NULL) {
        set_err(err, errlen, "cannot read directory %s: %s", dir != NULL ? dir : "(null)",
                errtext(dir != NULL ? errno : EINVAL));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe): d is ours alone
        if (!stale_temp(e->d_name))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
            set_err(err, errlen, "cannot remove %s/%s: %s", dir, e->d_name, errtext(errno));
            rc = -1;
            break;
        }
        if (removed != NULL)
            (*removed)++;
    }
    closedir(d);
    return rc;
}

/* ---- checks of written files ------------------------------------------------------- */

/* Opens @path as a GeoTIFF whose CRS is @dst_crs and reads every row (@all_rows) or the
 * last row of every band; NULL with the reason in @err when any of that fails. */
static GDALDatasetH open_output(const char *path, const char *dst_crs, int all_rows,
                                struct errcap *cap, char *err, size_t errlen)
{
    struct stat st;
    if (path == NULL || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: no such file", path != NULL ? path : "(null)");
        return NULL;
    }
    const char *const gtiff[] = {"GTiff", NULL};
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, gtiff, NULL, NULL);
    if (ds == NULL) {
        set_err(err, errlen, "%s: not a GeoTIFF: %s", path, errcap_msg(cap, "cannot open"));
        return NULL;
    }
    OGRSpatialReferenceH want = crs_parse(dst_crs, NULL);
    OGRSpatialReferenceH have = GDALGetSpatialRef(ds);
    int same = want != NULL && have != NULL && OSRIsSame(have, want);
    if (want != NULL)
        OSRDestroySpatialReference(want);
    if (!same) {
        set_err(err, errlen, "%s: CRS is not %s", path, dst_crs != NULL ? dst_crs : "(null)");
        GDALClose(ds);
        return NULL;
    }
    int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds), nb = GDALGetRasterCount(ds);
    if (w <= 0 || h <= 0 || nb <= 0) {
        set_err(err, errlen, "%s: empty raster", path);
        GDALClose(ds);
        return NULL;
    }
    double *row = malloc(sizeof(double) * (size_t)w);
    if (row == NULL) {
        set_err(err, errlen, "out of memory");
        GDALClose(ds);
        return NULL;
    }
    int bad = 0;
    for (int b = 1; b <= nb && !bad; b++) {
        GDALRasterBandH band = GDALGetRasterBand(ds, b);
        for (int y = all_rows ? 0 : h - 1; y < h && !bad; y++)
            if (GDALRasterIO(band, GF_Read, 0, y, w, 1, row, w, 1, GDT_Float64, 0, 0) != CE_None ||
                cap->failed)
                bad = 1;
    }
    free(row);
    if (bad) {
        set_err(err, errlen, "%s: pixels do not read: %s", path, errcap_msg(cap, "read failed"));
        GDALClose(ds);
        return NULL;
    }
    return ds;
}

int raster_output_complete(const char *path, const char *dst_crs)
{
    struct errcap cap;
    errcap_push(&cap);
    char err[8];
    GDALDatasetH ds = open_output(path, dst_crs, 0, &cap, err, sizeof err);
    if (ds != NULL)
        GDALClose(ds);
    errcap_pop();
    return ds != NULL;
}

int raster_check_file(const char *path, const char *dst_crs, enum raster_codec codec, char *err,
                      size_t errlen)
{
    const char *want = raster_codec_name(codec);
    if (want == NULL) {
        set_err(err, errlen, "%s: unknown compression asked for", path != NULL ? path : "(null)");
        return -1;
    }
    struct errcap cap;
    errcap_push(&cap);
    int rc = -1;
    GDALDatasetH ds = open_output(path, dst_crs, 1, &cap, err, errlen);
    if (ds != NULL) {
        const char *c = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
        if (c == NULL || strcmp(c, want) != 0)
            set_err(err, errlen, "%s: compression is %s, not %s", path, c != NULL ? c : "none",
                    want);
        else
            rc = 0;
        GDALClose(ds);
    }
    errcap_pop();
    return rc;
}

/* ---- the rest ---------------------------------------------------------------------- */

void raster_free(struct raster *r)
{
    if (r == NULL)
        return;
    if (r->ds != NULL)
        GDALClose(r->ds);
    free(r->pixels);
    free(r);
}

unsigned raster_width(const struct raster *r)
{
    return r->width;
}

unsigned raster_height(const struct raster *r)
{
    return r->height;
}

unsigned raster_bands(const struct raster *r)
{
    return r->bands;
}

uint64_t raster_bytes(const struct raster *r)
{
    return r->bytes;
}
