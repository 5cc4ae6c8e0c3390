/* SPDX-License-Identifier: MIT */
/*
 * main.c - band-pipe: options, the input list, the demonstration's dataset and server,
 * the run, the summary and the exit status.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <band/band.h>

#include "dataset.h"
#include "errtext.h"
#include "opts.h"
#include "pipeline.h"
#include "plot.h"
#include "raster.h"
#include "serve.h"
#include "sizing.h"
#include "stats.h"
#include "summary.h"
#include "tile.h"

#define EXIT_TILE_FAILED 1
#define EXIT_SETUP       2
#define EXIT_VERIFY      3
#define EXIT_INTERRUPTED 130

/* ---- the input --------------------------------------------------------------------- */

struct input {
    struct tile *tiles;
    size_t n, cap;
    int http; /* some source is http:// or https:// */
};

static int input_add(struct input *in, const char *src)
{
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 64;
        struct tile *t = realloc(in->tiles, cap * sizeof(*t));
        if (t == NULL)
            return -1;
        in->tiles = t;
        in->cap = cap;
    }
    struct tile *t = &in->tiles[in->n];
    memset(t, 0, sizeof(*t));
    t->index = in->n;
    t->source = strdup(src);
    if (t->source == NULL)
        return -1;
    if (strncmp(src, "http://", 7) == 0 || strncmp(src, "https://", 8) == 0)
        in->http = 1;
    in->n++;
    return 0;
}

static int read_list(FILE *f, struct input *in)
{
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        s[strcspn(s, "\r\n")] = '\0';
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
            s[--l] = '\0';
        if (l == 0 || s[0] == '#')
            continue;
        if (input_add(in, s) != 0) {
            free(line);
            return -1;
        }
    }
    free(line);
    return 0;
}

static int tif_name(const struct dirent *e)
{
    size_t l = strlen(e->d_name);
    return e->d_name[0] != '.' && ((l > 4 && strcasecmp(e->d_name + l - 4, ".tif") == 0) ||
                                   (l > 5 && strcasecmp(e->d_name + l - 5, ".tiff") == 0));
}

static int read_dir(const char *dir, struct input *in)
{
    struct dirent **list = NULL;
    int n = scandir(dir, &list, tif_name, alphasort);
    if (n < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
        if (rc == 0 && input_add(in, path) != 0)
            rc = -1;
        free(list[i]);
    }
    free(list);
    return rc;
}

/* Output names: the source's base name without query or extension, made safe; a name
 * used twice gets the tile's position appended. */
static int name_tiles(struct input *in, const char *outdir)
{
    for (size_t i = 0; i < in->n; i++) {
        struct tile *t = &in->tiles[i];
        const char *s = t->source;
        size_t end = strcspn(s, "?#");
        size_t start = end;
        while (start > 0 && s[start - 1] != '/')
            start--;
        char name[200];
        size_t k = 0;
        for (size_t j = start; j < end && k + 1 < sizeof(name) - 24; j++) {
            char ch = s[j];
            int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
            if (!ok)
                ch = '_';
            name[k++] = ch;
        }
        name[k] = '\0';
        char *dot = strrchr(name, '.');
        if (dot != NULL && (strcasecmp(dot, ".tif") == 0 || strcasecmp(dot, ".tiff") == 0))
            *dot = '\0';
        if (name[0] == '\0' || name[0] == '.')
            snprintf(name, sizeof(name), "tile");
        for (size_t j = 0; j < i; j++) {
            if (strcmp(in->tiles[j].name, name) == 0) {
                size_t l = strlen(name);
                snprintf(name + l, sizeof(name) - l, "-%zu", i);
                break;
            }
        }
        t->name = strdup(name);
        if (t->name == NULL || asprintf(&t->out_path, "%s/%s.tif", outdir, name) < 0)
            return -1;
    }
    return 0;
}

static void input_free(struct input *in)
{
    for (size_t i = 0; i < in->n; i++) {
        free(in->tiles[i].source);
        free(in->tiles[i].name);
        free(in->tiles[i].out_path);
    }
    free(in->tiles);
}

/* ---- directories -------------------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return -1;
    for (char *s = path + 1; *s != '\0'; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* 0, or -1 when something in @dir could not be removed (nftw stops there). */
static int rm_rf(const char *dir)
{
    /* nftw keeps no static state (glibc, musl); without FTW_CHDIR it leaves the working
     * directory alone, so other threads are not disturbed. */
    // NOLINTNEXTLINE(concurrency-mt-unsafe)
    return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* ---- --serve ------------------------------------------------------------------------ */

static int run_serve(const struct pipe_opts *o)
{
    char err[512];
    struct serve s;
    struct serve_opts so;
    memset(&so, 0, sizeof(so));
    so.req_rate = o->server_rate;
    so.req_burst = o->server_burst;
    so.policy = o->server_policy;
    so.retry_after = 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* taken by sigwait below */
    if (serve_start(&s, o->serve, &so, err, sizeof(err)) != 0) {
        fprintf(stderr, "band-pipe: --serve: %s\n", err);
        return EXIT_SETUP;
    }
    printf("serving %s (urls: %s, access log: %s)\n", serve_base_url(&s), serve_urls_path(&s),
           serve_access_log(&s));
    fflush(stdout);
    int sig = 0;
    (void)sigwait(&set, &sig);
    return serve_stop(&s) == 0 ? 0 : EXIT_SETUP;
}

/* ---- the run ------------------------------------------------------------------------ */

static void mark_resumed(struct input *in, const char *crs)
{
    for (size_t i = 0; i < in->n; i++)
        if (raster_output_complete(in->tiles[i].out_path, crs) == 1)
            in->tiles[i].result = TILE_SKIPPED;
}

static int run(int argc, char **argv)
{
    struct pipe_opts o;
    char err[512];
    int rc = opts_parse(argc, argv, &o, err, sizeof(err));
    if (rc != 0) {
        if (rc > 0)
            return 0;
        fprintf(stderr, "band-pipe: %s\n", err);
        return EXIT_SETUP;
    }
    if (o.generate != NULL) {
        struct dataset_opts dop = {o.tiles, o.seed};
        if (dataset_generate(o.generate, &dop, err, sizeof(err)) != 0) {
            fprintf(stderr, "band-pipe: --generate: %s\n", err);
            return EXIT_SETUP;
        }
        printf("generated %u tiles in %s (manifest: %s/manifest.tsv)\n", o.tiles, o.generate,
               o.generate);
        return 0;
    }
    if (o.serve != NULL)
        return run_serve(&o);

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "band-pipe: curl_global_init failed\n");
        return EXIT_SETUP;
    }
    int status = EXIT_SETUP;
    char tmp[4096] = "", data[4200], outbuf[4200];
    struct serve srv;
    int serving = 0;
    struct input in;
    memset(&in, 0, sizeof(in));
    const char *input = o.input, *outdir = o.outdir;

    if (input == NULL) { /* the demonstration */
        // NOLINTNEXTLINE(concurrency-mt-unsafe): no thread has started yet
        const char *base = getenv("TMPDIR");
        snprintf(tmp, sizeof(tmp), "%s/band-pipe.XXXXXX", base && *base ? base : "/tmp");
        if (mkdtemp(tmp) == NULL) {
            fprintf(stderr, "band-pipe: mkdtemp %s: %s\n", tmp, errtext(errno));
            goto out;
        }
        snprintf(data, sizeof(data), "%s/data", tmp);
        struct dataset_opts dop = {o.tiles, o.seed};
        band_time g0 = band_now();
        if (dataset_generate(data, &dop, err, sizeof(err)) != 0) {
            fprintf(stderr, "band-pipe: generating the dataset: %s\n", err);
            goto out;
        }
        struct serve_opts so;
        memset(&so, 0, sizeof(so));
        so.req_rate = o.server_rate;
        so.req_burst = o.server_burst;
        so.policy = o.server_policy;
        so.retry_after = 1;
        if (serve_start(&srv, data, &so, err, sizeof(err)) != 0) {
            fprintf(stderr, "band-pipe: starting nginx: %s\n", err);
            goto out;
        }
        serving = 1;
        if (!o.quiet)
            printf("band-pipe (band %s): %u generated tiles (%.2f s) served by nginx at %s,\n"
                   "  which allows %u requests/s (burst %u) and answers 429 with Retry-After "
                   "past that\n",
                   band_version(), o.tiles, (double)(band_now() - g0) / 1e9, serve_base_url(&srv),
                   o.server_rate, o.server_burst);
        input = serve_urls_path(&srv);
        if (outdir == NULL) {
            snprintf(outbuf, sizeof(outbuf), "%s/out", tmp);
            outdir = outbuf;
        }
    }

    struct stat st;
    if (strcmp(input, "-") == 0) {
        rc = read_list(stdin, &in);
    } else if (stat(input, &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = read_dir(input, &in);
    } else {
        FILE *f = fopen(input, "r");
        if (f == NULL) {
            fprintf(stderr, "band-pipe: %s: %s\n", input, errtext(errno));
            goto out;
        }
        rc = read_list(f, &in);
        fclose(f);
    }
    if (rc != 0) {
        fprintf(stderr, "band-pipe: reading %s: %s\n", input, errtext(errno));
        goto out;
    }
    if (mkdir_p(outdir) != 0) {
        fprintf(stderr, "band-pipe: cannot create %s: %s\n", outdir, errtext(errno));
        goto out;
    }
    if (name_tiles(&in, outdir) != 0) {
        fprintf(stderr, "band-pipe: out of memory\n");
        goto out;
    }

    struct pipe_sizes z;
    if (sizing_compute(&o, in.http, outdir, &z, err, sizeof(err)) != 0) {
        fprintf(stderr, "band-pipe: %s\n", err);
        goto out;
    }
    if (!o.quiet) {
        printf("%zu tiles from %s into %s, reprojected to %s (%s), compressed with %s\n", in.n,
               input, outdir, o.crs, raster_resampling_name((enum raster_resampling)o.resampling),
               raster_codec_name((enum raster_codec)o.compress));
        sizing_print(stdout, &z, o.memory_by_count);
        fflush(stdout);
    }
    if (raster_init(z.gdal_cache, err, sizeof(err)) != 0) {
        fprintf(stderr, "band-pipe: GDAL: %s\n", err);
        goto out;
    }
    if (!raster_codec_supported((enum raster_codec)o.compress)) {
        fprintf(stderr,
                "band-pipe: this GDAL's GTiff driver does not write %s: give --compress "
                "deflate\n",
                raster_codec_name((enum raster_codec)o.compress));
        raster_shutdown();
        goto out;
    }
    unsigned stale = 0;
    if (raster_remove_stale_temps(outdir, &stale, err, sizeof(err)) != 0)
        fprintf(stderr, "band-pipe: %s\n", err);
    else if (stale > 0 && !o.quiet)
        printf("removed %u temporary files left by an earlier run that was killed\n", stale);
    if (o.resume)
        mark_resumed(&in, o.crs);

    int tty = o.progress == OPT_UNSET ? isatty(STDERR_FILENO) : o.progress;
    struct pipe_run_config cfg = {&o, &z, in.tiles, in.n, outdir, tty && !o.quiet ? stderr : NULL};
    struct pipe_stats stats;
    struct pipe_run_result res;
    if (pipe_run(&cfg, &stats, &res) != 0) {
        stats_free(&stats);
        raster_shutdown();
        goto out;
    }
    printf("\n");
    summary_print(stdout, &stats, in.tiles, in.n);
    printf("loop thread: %.0f%% of one core (above ~50%%, give --cpu %" PRIu64
           " so it keeps a core)\n",
           res.loop_cpu_share * 100, z.cores > 1 ? z.cores - 1 : 1);
    if (res.cpu_borrowed > 0)
        printf("cpu: large warps borrowed %" PRIu64 " idle slots, one warp thread each\n",
               res.cpu_borrowed);
    if (o.plot != NULL) {
        if (plot_write(o.plot, &stats, err, sizeof(err)) != 0)
            fprintf(stderr, "band-pipe: --plot: %s\n", err);
        else
            printf("plot: %s (and its PNG/SVG twin and data beside it)\n", o.plot);
    }
    if (res.log_failed)
        fprintf(stderr, "band-pipe: writing the log %s failed\n", o.log);
    if (o.verify) {
        if (res.verify_failed)
            printf("verify: FAILED: %s\n", res.verify_text);
        else
            printf("verify: open descriptors stayed within %" PRIu64
                   " and budgeted bytes within the memory budget\n",
                   z.fd_budget);
    }
    if (res.interrupted)
        status = EXIT_INTERRUPTED;
    else if (res.verify_failed)
        status = EXIT_VERIFY;
    else if (stats.failed > 0 || stats.pending > 0 || stats.abandoned > 0)
        status = EXIT_TILE_FAILED;
    else
        status = 0;
    if (res.verify_failed && status == EXIT_TILE_FAILED)
        status = EXIT_VERIFY;
    stats_free(&stats);
    raster_shutdown();

out:
    if (serving && serve_stop(&srv) != 0 && status == 0)
        status = EXIT_SETUP;
    if (tmp[0] != '\0') {
        if (o.keep)
            printf("kept %s\n", tmp);
        else if (rm_rf(tmp) != 0)
            fprintf(stderr, "band-pipe: %s was left behind: %s\n", tmp, errtext(errno));
    }
    input_free(&in);
    curl_global_cleanup();
    return status;
}

/* What band-pipe prints on stdout (the summary, the sizes, --help) is written with stdio
 * and its errors are not checked call by call: a failed write there (a full disk, say)
 * is caught once, here, and makes the exit status 2. */
int main(int argc, char **argv)
{
    int status = run(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        fprintf(stderr, "band-pipe: writing the standard output failed%s%s\n", e != 0 ? ": " : "",
                e != 0 ? errtext(e) : "");
        status = EXIT_SETUP;
    }
    return status;
}
