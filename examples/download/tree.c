/* SPDX-License-Identifier: MIT */
/*
 * tree.c - generate the tree of files the server serves, and remove it afterwards.
 *
 * Sizes are log-uniform between the minimum and the maximum (as many small files as large
 * ones per doubling), with the minimum and the maximum each present once; if they add up
 * to more than the cap, the largest files are halved until they fit. The order is shuffled
 * so the largest file is not always first. Contents are an xorshift64* stream seeded per
 * file, hashed with FNV-1a as they are written.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TREE_DIRS 4u                /* files are spread over d0 .. d3 */
#define CHUNK     ((size_t)1 << 16) /* bytes generated and written per write() */

/* xorshift64*: small, fast, and the same sequence everywhere for a given seed. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

/* A non-zero PRNG state derived from @seed and @salt (splitmix64's finaliser). */
static uint64_t seed_state(uint64_t seed, uint64_t salt)
{
    uint64_t z = seed + (salt + 1) * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return z != 0 ? z : 1;
}

uint64_t tree_checksum(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Fills @sizes with the sizes described at the top of this file. */
static void make_sizes(uint64_t *sizes, const struct tree_spec *spec)
{
    uint64_t rnd = seed_state(spec->seed, UINT64_MAX);
    unsigned doublings = 0;
    while ((spec->min_size << (doublings + 1)) <= spec->max_size)
        doublings++;

    for (size_t i = 0; i < spec->files; i++) {
        if (i == 0) {
            sizes[i] = spec->max_size;
        } else if (i == 1) {
            sizes[i] = spec->min_size;
        } else {
            /* a doubling band [min << e, min << (e + 1)), then a uniform size inside it */
            unsigned e = doublings > 0 ? (unsigned)(next_random(&rnd) % doublings) : 0;
            uint64_t lo = spec->min_size << e;
            uint64_t s = lo + next_random(&rnd) % lo;
            sizes[i] = s < spec->max_size ? s : spec->max_size;
        }
    }

    uint64_t total = 0;
    for (size_t i = 0; i < spec->files; i++)
        total += sizes[i];
    while (total > spec->max_total) {
        size_t big = 2; /* 0 and 1 keep the extremes */
        for (size_t i = 3; i < spec->files; i++)
            if (sizes[i] > sizes[big])
                big = i;
        if (spec->files <= 2 || sizes[big] / 2 < spec->min_size)
            break; /* nothing left to halve: the cap cannot be met */
        total -= sizes[big] - sizes[big] / 2;
        sizes[big] /= 2;
    }

    for (size_t i = spec->files - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = (size_t)(next_random(&rnd) % (i + 1));
        uint64_t tmp = sizes[i];
        sizes[i] = sizes[j];
        sizes[j] = tmp;
    }
}

/* Writes file @i (@f->size bytes) to @path and stores its checksum. Returns 0 or -1. */
static int write_file(const char *path, struct tree_file *f, uint64_t seed, size_t i,
                      unsigned char *chunk)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "download: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint64_t rnd = seed_state(seed, i);
    uint64_t h = TREE_CHECKSUM_INIT;
    uint64_t left = f->size;
    while (left > 0) {
        size_t n = left < CHUNK ? (size_t)left : CHUNK;
        for (size_t off = 0; off < n; off += 8) {
            uint64_t w = next_random(&rnd);
            memcpy(chunk + off, &w, n - off < 8 ? n - off : 8);
        }
        h = tree_checksum(h, chunk, n);
        for (size_t done = 0; done < n;) {
            ssize_t w = write(fd, chunk + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                fprintf(stderr, "download: writing %s: %s\n", path,
                        w < 0 ? strerror(errno) : "short write");
                close(fd);
                return -1;
            }
            done += (size_t)w;
        }
        left -= n;
    }
    f->sum = h;
    if (close(fd) != 0) {
        fprintf(stderr, "download: closing %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int tree_create(struct tree *t, const char *root, const struct tree_spec *spec)
{
    memset(t, 0, sizeof(*t));
    if (spec->files < 2 || spec->min_size == 0 || spec->max_size < spec->min_size) {
        fprintf(stderr, "download: bad tree: %zu files of %" PRIu64 "..%" PRIu64 " bytes\n",
                spec->files, spec->min_size, spec->max_size);
        return -1;
    }
    if (snprintf(t->root, sizeof(t->root), "%s", root) >= (int)sizeof(t->root)) {
        fprintf(stderr, "download: path too long: %s\n", root);
        return -1;
    }
    t->files = calloc(spec->files, sizeof(*t->files));
    uint64_t *sizes = calloc(spec->files, sizeof(*sizes));
    unsigned char *chunk = malloc(CHUNK);
    int rc = -1;
    if (t->files == NULL || sizes == NULL || chunk == NULL) {
        fprintf(stderr, "download: out of memory\n");
        goto out;
    }
    make_sizes(sizes, spec);

    char path[TREE_PATH_MAX];
    if (mkdir(root, 0755) != 0) {
        fprintf(stderr, "download: cannot create %s: %s\n", root, strerror(errno));
        goto out;
    }
    for (unsigned d = 0; d < TREE_DIRS; d++) {
        snprintf(path, sizeof(path), "%s/d%u", root, d);
        if (mkdir(path, 0755) != 0) {
            fprintf(stderr, "download: cannot create %s: %s\n", path, strerror(errno));
            goto out;
        }
    }
    t->min = UINT64_MAX;
    for (size_t i = 0; i < spec->files; i++) {
        struct tree_file *f = &t->files[i];
        snprintf(f->path, sizeof(f->path), "d%u/f%04zu.bin", (unsigned)(i % TREE_DIRS), i);
        f->size = sizes[i];
        if (snprintf(path, sizeof(path), "%s/%s", root, f->path) >= (int)sizeof(path)) {
            fprintf(stderr, "download: path too long under %s\n", root);
            goto out;
        }
        if (write_file(path, f, spec->seed, i, chunk) != 0)
            goto out;
        t->n = i + 1;
        t->total += f->size;
        t->min = f->size < t->min ? f->size : t->min;
        t->max = f->size > t->max ? f->size : t->max;
    }
    rc = 0;
out:
    free(sizes);
    free(chunk);
    return rc;
}

void tree_free(struct tree *t)
{
    free(t->files);
    t->files = NULL;
    t->n = 0;
}

int tree_remove_dir(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0) {
            fprintf(stderr, "download: cannot remove %s: %s\n", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    DIR *dir = opendir(path);
    if (dir == NULL) {
        fprintf(stderr, "download: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    char *child = malloc(TREE_PATH_MAX);
    if (child == NULL) {
        closedir(dir);
        return -1;
    }
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (snprintf(child, TREE_PATH_MAX, "%s/%s", path, e->d_name) >= TREE_PATH_MAX) {
            rc = -1;
            continue;
        }
        if (tree_remove_dir(child) != 0)
            rc = -1;
    }
    closedir(dir);
    free(child);
    if (rmdir(path) != 0) {
        fprintf(stderr, "download: cannot remove %s: %s\n", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

int make_temp_dir(const char *prefix, char *out, size_t outlen)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    int n = snprintf(out, outlen, "%s/%sXXXXXX", base, prefix);
    if (n < 0 || (size_t)n >= outlen) {
        fprintf(stderr, "download: temporary directory path too long under %s\n", base);
        return -1;
    }
    if (mkdtemp(out) == NULL) {
        fprintf(stderr, "download: cannot create a directory under %s: %s\n", base,
                strerror(errno));
        return -1;
    }
    return 0;
}
