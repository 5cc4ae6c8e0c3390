/* SPDX-License-Identifier: MIT */
/*
 * opts.c - parse band-pipe's command line (getopt_long).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "opts.h"

#include "raster.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <band/band.h>

enum {
    O_CONNECTIONS = 256,
    O_REQUESTS,
    O_CPU,
    O_MEMORY,
    O_DISK,
    O_DESCRIPTORS,
    O_MEMORY_BY_COUNT,
    O_CRS,
    O_COMPRESS,
    O_RESAMPLING,
    O_LOG,
    O_PLOT,
    O_VERIFY,
    O_RESUME,
    O_RETRIES,
    O_KEEP,
    O_PROGRESS,
    O_NO_PROGRESS,
    O_GENERATE,
    O_SERVE,
    O_TILES,
    O_SEED,
    O_SERVER_RATE,
    O_SERVER_BURST,
    O_SERVER_POLICY,
    O_VERSION,
};

static const struct option longopts[] = {
    {"out", required_argument, NULL, 'o'},
    {"crs", required_argument, NULL, O_CRS},
    {"compress", required_argument, NULL, O_COMPRESS},
    {"resampling", required_argument, NULL, O_RESAMPLING},
    {"connections", required_argument, NULL, O_CONNECTIONS},
    {"requests", required_argument, NULL, O_REQUESTS},
    {"cpu", required_argument, NULL, O_CPU},
    {"memory", required_argument, NULL, O_MEMORY},
    {"disk", required_argument, NULL, O_DISK},
    {"descriptors", required_argument, NULL, O_DESCRIPTORS},
    {"memory-by-count", no_argument, NULL, O_MEMORY_BY_COUNT},
    {"log", required_argument, NULL, O_LOG},
    {"plot", required_argument, NULL, O_PLOT},
    {"verify", no_argument, NULL, O_VERIFY},
    {"resume", no_argument, NULL, O_RESUME},
    {"retries", required_argument, NULL, O_RETRIES},
    {"quiet", no_argument, NULL, 'q'},
    {"keep", no_argument, NULL, O_KEEP},
    {"progress", no_argument, NULL, O_PROGRESS},
    {"no-progress", no_argument, NULL, O_NO_PROGRESS},
    {"generate", required_argument, NULL, O_GENERATE},
    {"serve", required_argument, NULL, O_SERVE},
    {"tiles", required_argument, NULL, O_TILES},
    {"seed", required_argument, NULL, O_SEED},
    {"server-rate", required_argument, NULL, O_SERVER_RATE},
    {"server-burst", required_argument, NULL, O_SERVER_BURST},
    {"server-policy", required_argument, NULL, O_SERVER_POLICY},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0},
};

void opts_usage(FILE *out)
{
    fputs("usage: band-pipe [options] [INPUT [OUTDIR]]\n"
          "\n"
          "Fetch raster tiles, decode and reproject them with GDAL, and write compressed\n"
          "GeoTIFFs, with every stage bounded by a budget named after the resource it uses.\n"
          "INPUT is a file of URLs (http://, https://, file:// or paths; '#' comments), '-'\n"
          "for standard input, or a directory of rasters (*.tif, *.tiff). Without INPUT,\n"
          "band-pipe generates a dataset, serves it from a private nginx on 127.0.0.1 that\n"
          "answers 429 with Retry-After past its request rate, and runs on it.\n"
          "\n"
          "budgets (unset: sized from the machine; the sizes are printed at start)\n"
          "  --connections N|auto  open fetches; auto: found online by an adaptive limit\n"
          "  --requests N          requests per second (unset: unlimited until the server\n"
          "                        throttles, then the server's pace)\n"
          "  --cpu N               decode+reproject jobs at once (unset: the cores)\n"
          "  --memory SIZE         bytes of bodies and rasters (K, M, G; unset: half of the\n"
          "                        cgroup memory limit or of physical memory)\n"
          "  --disk N              writes at once (unset: 4 on SSDs, 2 on spinning disks)\n"
          "  --descriptors N       tiles in flight from fetch to write (unset: from\n"
          "                        RLIMIT_NOFILE)\n"
          "  --memory-by-count     bound memory by a count of typical tiles instead of bytes\n"
          "                        (shows the overshoot the byte budget prevents)\n"
          "\n"
          "output\n"
          "  -o, --out DIR         output directory (or the second argument)\n"
          "  --crs CRS             target CRS (EPSG:3857)\n"
          "  --compress C          zstd (default), deflate (readers without ZSTD) or lzw\n"
          "  --resampling R        bilinear (default), nearest (keeps values: classes,\n"
          "                        masks), cubic, lanczos or average\n"
          "  --log FILE            JSON lines: one event per tile per stage\n"
          "  --plot FILE.svg       in flight per stage and reserved bytes over time (SVG and PNG)\n"
          "  --verify              sample /proc/self/fd and RSS; exit 3 if a budget was exceeded\n"
          "  --resume              skip tiles whose outputs are already complete\n"
          "  --retries N           retries of a failed fetch (3)\n"
          "  --progress, --no-progress   the live line on stderr (default: when a terminal)\n"
          "  -q, --quiet           print only the summary\n"
          "  --keep                keep the demonstration's temporary directory\n"
          "\n"
          "dataset and server (for the benchmark and for trying things by hand)\n"
          "  --generate DIR        write the demonstration dataset into DIR and exit\n"
          "  --tiles N, --seed S   its size (48) and seed (1)\n"
          "  --serve DIR           serve DIR (from --generate) with the private nginx, write\n"
          "                        DIR/urls.txt, run until SIGINT or SIGTERM\n"
          "  --server-rate R, --server-burst B   its request limit (40/s, burst 10)\n"
          "  --server-policy all|throttled|none  which answers state RateLimit-Policy: all\n"
          "                        (default), only the 429s, or none (only Retry-After)\n"
          "\n"
          "exit status: 0 every tile done or skipped, 1 some tile failed, 2 bad usage, a\n"
          "set-up failure or an unwritable standard output, 3 --verify saw a budget\n"
          "exceeded, 130 interrupted\n",
          out);
}

int opts_parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !(v > 0))
        return -1;
    double mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' && mult > 1)
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    v *= mult;
    if (v < 1 || v > (double)BAND_MAX_UNITS)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

int opts_parse(int argc, char **argv, struct pipe_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->crs = "EPSG:3857";
    o->compress = RASTER_ZSTD;
    o->resampling = RASTER_BILINEAR;
    o->connections = o->requests = o->cpu = o->disk = o->descriptors = o->memory = OPT_UNSET;
    o->progress = OPT_UNSET;
    o->retries = 3;
    o->tiles = 48;
    o->seed = 1;
    o->server_rate = 40;
    o->server_burst = 10;

    int c;
    int64_t v;
    uint64_t size;
    optind = 1;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): getopt's globals; main parses before any thread
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->outdir = optarg;
            break;
        case O_CRS:
            o->crs = optarg;
            break;
        case O_CONNECTIONS:
            if (strcmp(optarg, "auto") == 0) {
                o->connections_auto = 1;
            } else if (parse_count(optarg, 1, 4096, &v) == 0) {
                o->connections = v;
            } else {
                FAIL("--connections: '%s' is neither 'auto' nor a count from 1 to 4096", optarg);
            }
            break;
        case O_REQUESTS:
            if (parse_count(optarg, 1, 1000000, &v) != 0)
                FAIL("--requests: '%s' is not a rate from 1 to 1000000 per second", optarg);
            o->requests = v;
            break;
        case O_CPU:
            if (parse_count(optarg, 1, 1024, &v) != 0)
                FAIL("--cpu: '%s' is not a count from 1 to 1024", optarg);
            o->cpu = v;
            break;
        case O_DISK:
            if (parse_count(optarg, 1, 256, &v) != 0)
                FAIL("--disk: '%s' is not a count from 1 to 256", optarg);
            o->disk = v;
            break;
        case O_DESCRIPTORS:
            if (parse_count(optarg, 1, 1000000, &v) != 0)
                FAIL("--descriptors: '%s' is not a count from 1 to 1000000", optarg);
            o->descriptors = v;
            break;
        case O_MEMORY:
            if (opts_parse_size(optarg, &size) != 0)
                FAIL("--memory: '%s' is not a size (bytes, or with K, M, G)", optarg);
            o->memory = (int64_t)size;
            break;
        case O_MEMORY_BY_COUNT:
            o->memory_by_count = 1;
            break;
        case O_COMPRESS: {
            enum raster_codec codec;
            if (raster_codec_parse(optarg, &codec) != 0)
                FAIL("--compress: '%s' is not zstd, deflate or lzw", optarg);
            o->compress = (int)codec;
            break;
        }
        case O_RESAMPLING: {
            enum raster_resampling how;
            if (raster_resampling_parse(optarg, &how) != 0)
                FAIL("--resampling: '%s' is not nearest, bilinear, cubic, lanczos or average",
                     optarg);
            o->resampling = (int)how;
            break;
        }
        case O_LOG:
            o->log = optarg;
            break;
        case O_PLOT: {
            size_t n = strlen(optarg);
            if (n < 5 ||
                (strcmp(optarg + n - 4, ".svg") != 0 && strcmp(optarg + n - 4, ".png") != 0))
                FAIL("--plot: '%s' must end in .svg or .png", optarg);
            o->plot = optarg;
            break;
        }
        case O_VERIFY:
            o->verify = 1;
            break;
        case O_RESUME:
            o->resume = 1;
            break;
        case O_RETRIES:
            if (parse_count(optarg, 0, 20, &v) != 0)
                FAIL("--retries: '%s' is not a count from 0 to 20", optarg);
            o->retries = (unsigned)v;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case O_KEEP:
            o->keep = 1;
            break;
        case O_PROGRESS:
            o->progress = 1;
            break;
        case O_NO_PROGRESS:
            o->progress = 0;
            break;
        case O_GENERATE:
            o->generate = optarg;
            break;
        case O_SERVE:
            o->serve = optarg;
            break;
        case O_TILES:
            if (parse_count(optarg, 1, 100000, &v) != 0)
                FAIL("--tiles: '%s' is not a count from 1 to 100000", optarg);
            o->tiles = (unsigned)v;
            break;
        case O_SEED:
            if (parse_count(optarg, 0, INT64_MAX, &v) != 0)
                FAIL("--seed: '%s' is not a non-negative integer", optarg);
            o->seed = (uint64_t)v;
            break;
        case O_SERVER_RATE:
            if (parse_count(optarg, 0, 1000000, &v) != 0)
                FAIL("--server-rate: '%s' is not a rate from 0 (none) to 1000000", optarg);
            o->server_rate = (unsigned)v;
            break;
        case O_SERVER_BURST:
            if (parse_count(optarg, 0, 1000000, &v) != 0)
                FAIL("--server-burst: '%s' is not a count from 0 to 1000000", optarg);
            o->server_burst = (unsigned)v;
            break;
        case O_SERVER_POLICY:
            if (strcmp(optarg, "all") == 0)
                o->server_policy = 0;
            else if (strcmp(optarg, "throttled") == 0)
                o->server_policy = 1;
            else if (strcmp(optarg, "none") == 0)
                o->server_policy = 2;
            else
                FAIL("--server-policy: '%s' is not all, throttled or none", optarg);
            break;
        case 'h':
            opts_usage(stdout);
            return 1;
        case O_VERSION:
            printf("band-pipe (band %s)\n", band_version());
            return 1;
        default:
            FAIL("unknown option (band-pipe --help lists them)");
        }
    }
    int rest = argc - optind;
    if (rest > 2)
        FAIL("too many arguments: INPUT and OUTDIR at most");
    if (rest >= 1)
        o->input = argv[optind];
    if (rest == 2) {
        if (o->outdir != NULL)
            FAIL("the output directory is given twice (--out and OUTDIR)");
        o->outdir = argv[optind + 1];
    }
    if (o->generate != NULL && o->serve != NULL)
        FAIL("--generate and --serve are separate steps: run one, then the other");
    if ((o->generate != NULL || o->serve != NULL) && o->input != NULL)
        FAIL("--generate and --serve take no INPUT");
    if (o->input != NULL && o->outdir == NULL)
        FAIL("an output directory is needed: band-pipe INPUT OUTDIR, or --out DIR");
    if (o->connections_auto && o->connections != OPT_UNSET)
        FAIL("--connections is given twice");
    return 0;
}
