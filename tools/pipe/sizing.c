/* SPDX-License-Identifier: MIT */
/*
 * sizing.c - budget sizes from the machine (see sizing.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sizing.h"

#include "raster.h"

#include <dirent.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

char *sizing_human(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

/* The first line of a small file, or "" when it cannot be read. */
static void read_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

/* This process's cgroup v2 directory ("/sys/fs/cgroup/<path>"), or "" on cgroup v1. */
static void cgroup_dir(char *buf, size_t len)
{
    char line[1024];
    buf[0] = '\0';
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(buf, len, "/sys/fs/cgroup%s", line + 3);
            break;
        }
    }
    fclose(f);
}

/* The cgroup memory limit in bytes, 0 when there is none. */
static uint64_t cgroup_memory(char *where, size_t wlen)
{
    char dir[1100], path[1200], line[64];
    cgroup_dir(dir, sizeof(dir));
    if (dir[0] != '\0') {
        snprintf(path, sizeof(path), "%s/memory.max", dir);
        read_line(path, line, sizeof(line));
        if (line[0] != '\0' && strcmp(line, "max") != 0) {
            snprintf(where, wlen, "cgroup memory.max");
            return strtoull(line, NULL, 10);
        }
    }
    read_line("/sys/fs/cgroup/memory/memory.limit_in_bytes", line, sizeof(line));
    if (line[0] != '\0') {
        uint64_t v = strtoull(line, NULL, 10);
        if (v > 0 && v < ((uint64_t)1 << 60)) { /* "no limit" reads as a huge number */
            snprintf(where, wlen, "cgroup memory.limit_in_bytes");
            return v;
        }
    }
    return 0;
}

/* Cores this process may run on: the affinity mask, lowered by a cgroup CPU quota. */
static uint64_t usable_cores(char *where, size_t wlen)
{
    cpu_set_t set;
    uint64_t n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = (uint64_t)CPU_COUNT(&set);
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (uint64_t)c : 1;
    }
    snprintf(where, wlen, "%" PRIu64 " cores", n);
    char dir[1100], path[1200], line[64];
    cgroup_dir(dir, sizeof(dir));
    if (dir[0] != '\0') {
        snprintf(path, sizeof(path), "%s/cpu.max", dir);
        read_line(path, line, sizeof(line));
        unsigned long long quota = 0, period = 0;
        if (sscanf(line, "%llu %llu", &quota, &period) == 2 && period > 0) {
            uint64_t q = (uint64_t)((quota + period - 1) / period);
            if (q >= 1 && q < n) {
                n = q;
                snprintf(where, wlen, "cgroup cpu.max quota of %" PRIu64 " cores", n);
            }
        }
    }
    return n;
}

static uint64_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 8; /* stdin, stdout, stderr and a few more: a guess when /proc is missing */
    uint64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) // NOLINT(concurrency-mt-unsafe): d is ours alone
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n > 0 ? n - 1 : 0; /* the directory's own descriptor */
}

/* 1 when the device holding @dir spins, 0 when not (or unknown). */
static int rotational(const char *dir)
{
    struct stat st;
    if (dir == NULL || stat(dir, &st) != 0)
        return 0;
    char path[128], line[16];
    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/rotational", major(st.st_dev),
             minor(st.st_dev));
    read_line(path, line, sizeof(line));
    if (line[0] == '\0') { /* a partition: its disk's queue is one level up */
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/rotational", major(st.st_dev),
                 minor(st.st_dev));
        read_line(path, line, sizeof(line));
    }
    return line[0] == '1';
}

int sizing_compute(const struct pipe_opts *o, int http, const char *outdir, struct pipe_sizes *z,
                   char *err, size_t errlen)
{
    char where[128], h1[32], h2[32];
    memset(z, 0, sizeof(*z));

    /* cpu: the cores. The loop thread only moves bytes and parses headers, so it does not
     * take a core from the decoders; the summary reports its real share. */
    z->cores = usable_cores(where, sizeof(where));
    if (o->cpu != OPT_UNSET) {
        z->limit[BUDGET_CPU] = (uint64_t)o->cpu;
        snprintf(z->origin[BUDGET_CPU], SIZING_ORIGIN_MAX, "--cpu");
    } else {
        z->limit[BUDGET_CPU] = z->cores;
        snprintf(z->origin[BUDGET_CPU], SIZING_ORIGIN_MAX, "%s", where);
    }

    /* memory: half of what the process may use; the other half is the program, GDAL's
     * own allocations outside the rasters, and the page cache the writes go through. */
    if (o->memory != OPT_UNSET) {
        z->limit[BUDGET_MEMORY] = (uint64_t)o->memory;
        snprintf(z->origin[BUDGET_MEMORY], SIZING_ORIGIN_MAX, "--memory");
    } else {
        uint64_t lim = cgroup_memory(where, sizeof(where));
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        uint64_t phys = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
        if (lim == 0 || (phys != 0 && phys < lim)) {
            lim = phys;
            snprintf(where, sizeof(where), "physical memory");
        }
        if (lim == 0) {
            snprintf(err, errlen, "cannot tell how much memory there is: give --memory");
            return -1;
        }
        z->limit[BUDGET_MEMORY] = lim / 2;
        snprintf(z->origin[BUDGET_MEMORY], SIZING_ORIGIN_MAX, "half of the %s, %s", where,
                 sizing_human(lim, h1, sizeof(h1)));
    }
    uint64_t mem = z->limit[BUDGET_MEMORY];
    /* GDAL's block cache and each job's warp buffers are reserved from the same budget:
     * they are bytes the pipeline holds, just not tile buffers. */
    z->gdal_cache = mem / 8 < 64 * MIB ? mem / 8 : 64 * MIB;
    z->warp_work = RASTER_WARP_MEMORY; /* the warp's own working buffers (raster.c) */
    /* Bodies waiting for the decoders never hold more than a third, so a decode always
     * finds the rest once the decodes and writes ahead of it are done: no wait cycle. */
    z->body_share = (mem - z->gdal_cache) / 3;
    z->decode_share = mem - z->gdal_cache - z->body_share;

    /* disk: small and flat; the device serialises writes anyway. */
    if (o->disk != OPT_UNSET) {
        z->limit[BUDGET_DISK] = (uint64_t)o->disk;
        snprintf(z->origin[BUDGET_DISK], SIZING_ORIGIN_MAX, "--disk");
    } else if (rotational(outdir)) {
        z->limit[BUDGET_DISK] = 2;
        snprintf(z->origin[BUDGET_DISK], SIZING_ORIGIN_MAX, "the output device spins: 2");
    } else {
        z->limit[BUDGET_DISK] = 4;
        snprintf(z->origin[BUDGET_DISK], SIZING_ORIGIN_MAX, "the output device does not spin: 4");
    }

    /* connections: the only bound that depends on the remote service. */
    uint64_t conn = 16;
    if (o->connections != OPT_UNSET) {
        conn = (uint64_t)o->connections;
        snprintf(z->origin[BUDGET_CONNECTIONS], SIZING_ORIGIN_MAX, "--connections");
    } else if (o->connections_auto) {
        z->connections_auto = 1;
        conn = 4;
    } else {
        snprintf(z->origin[BUDGET_CONNECTIONS], SIZING_ORIGIN_MAX,
                 "default 16 (measure once with --connections auto)");
    }

    /* descriptors: what RLIMIT_NOFILE leaves after what is open now, a margin for GDAL,
     * the log and the plot, and curl's cache of idle connections; two per tile. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        rl.rlim_cur = 1 << 20;
    z->nofile = (uint64_t)rl.rlim_cur;
    uint64_t now_open = open_fds();
    uint64_t cache = o->connections_auto ? 8 : conn;
    z->fd_reserved = now_open + 16;
    if (http)
        z->fd_reserved += cache;
    if (o->descriptors != OPT_UNSET) {
        z->limit[BUDGET_DESCRIPTORS] = (uint64_t)o->descriptors;
        snprintf(z->origin[BUDGET_DESCRIPTORS], SIZING_ORIGIN_MAX, "--descriptors");
    } else {
        if (z->nofile <= z->fd_reserved + SIZING_FDS_PER_TILE) {
            snprintf(err, errlen,
                     "RLIMIT_NOFILE is %" PRIu64 ", and %" PRIu64
                     " descriptors are needed outside the tiles: raise it (ulimit -n)",
                     z->nofile, z->fd_reserved);
            return -1;
        }
        uint64_t units = (z->nofile - z->fd_reserved) / SIZING_FDS_PER_TILE;
        if (units > 4096)
            units = 4096;
        z->limit[BUDGET_DESCRIPTORS] = units;
        snprintf(z->origin[BUDGET_DESCRIPTORS], SIZING_ORIGIN_MAX,
                 "RLIMIT_NOFILE %" PRIu64 ", %" PRIu64 " kept for the program%s, / %d per tile%s",
                 z->nofile, z->fd_reserved, http ? " and idle connections" : "",
                 SIZING_FDS_PER_TILE, units == 4096 ? ", at most 4096" : "");
    }
    z->fd_budget = z->fd_reserved + z->limit[BUDGET_DESCRIPTORS] * SIZING_FDS_PER_TILE;
    if (z->fd_budget > z->nofile)
        z->fd_budget = z->nofile;

    if (o->connections_auto) {
        uint64_t max = z->limit[BUDGET_DESCRIPTORS] < 64 ? z->limit[BUDGET_DESCRIPTORS] : 64;
        if (max < conn)
            conn = max;
        z->connections_max = max;
        snprintf(z->origin[BUDGET_CONNECTIONS], SIZING_ORIGIN_MAX,
                 "auto: adaptive limit from %" PRIu64 ", at most %" PRIu64
                 ", +1 per window of answers, cut by a quarter on throttling or errors",
                 conn, max);
    }
    z->limit[BUDGET_CONNECTIONS] = conn;
    if (conn > z->limit[BUDGET_DESCRIPTORS])
        snprintf(z->note, SIZING_ORIGIN_MAX,
                 "note: %" PRIu64 " connections but %" PRIu64 " tiles in flight: at most %" PRIu64
                 " fetch at once",
                 conn, z->limit[BUDGET_DESCRIPTORS], z->limit[BUDGET_DESCRIPTORS]);

    if (o->requests != OPT_UNSET) {
        z->limit[BUDGET_REQUESTS] = (uint64_t)o->requests;
        snprintf(z->origin[BUDGET_REQUESTS], SIZING_ORIGIN_MAX, "--requests");
    } else {
        z->limit[BUDGET_REQUESTS] = 0;
        snprintf(z->origin[BUDGET_REQUESTS], SIZING_ORIGIN_MAX,
                 "unlimited until the server throttles; then the server's pace");
    }
    (void)h2;
    return 0;
}

void sizing_print(FILE *out, const struct pipe_sizes *z, int memory_by_count)
{
    char h[32], h2[32];
    fprintf(out, "budgets (named after the resource each one protects):\n");
    for (int b = 0; b < BUDGET_COUNT; b++) {
        char value[64];
        if (b == BUDGET_MEMORY)
            snprintf(value, sizeof(value), "%s", sizing_human(z->limit[b], h, sizeof(h)));
        else if (b == BUDGET_REQUESTS && z->limit[b] == 0)
            snprintf(value, sizeof(value), "unlimited");
        else if (b == BUDGET_REQUESTS)
            snprintf(value, sizeof(value), "%" PRIu64 "/s", z->limit[b]);
        else if (b == BUDGET_CONNECTIONS && z->connections_auto)
            snprintf(value, sizeof(value), "auto");
        else
            snprintf(value, sizeof(value), "%" PRIu64, z->limit[b]);
        fprintf(out, "  %-12s %10s   %s\n", pipe_budget_name(b), value, z->origin[b]);
    }
    char h3[32], h4[32];
    fprintf(out,
            "  (memory: GDAL's block cache %s; fetched bodies hold at most %s until decoded,\n"
            "   so decoding always has %s, warp buffers of %s per job included;\n"
            "   descriptors: at most %" PRIu64 " open, of RLIMIT_NOFILE %" PRIu64 ")\n",
            sizing_human(z->gdal_cache, h, sizeof(h)), sizing_human(z->body_share, h3, sizeof(h3)),
            sizing_human(z->decode_share, h4, sizeof(h4)),
            sizing_human(z->warp_work, h2, sizeof(h2)), z->fd_budget, z->nofile);
    if (memory_by_count)
        fprintf(out, "  --memory-by-count: memory is a count of tiles, the budget divided by the\n"
                     "   first tile's working set, instead of bytes reserved per tile\n");
    if (z->note[0] != '\0')
        fprintf(out, "  %s\n", z->note);
}
