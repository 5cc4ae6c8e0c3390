/* SPDX-License-Identifier: MIT */
/*
 * tree.h - the generated tree of files the download example serves and fetches.
 *
 * Sizes and contents come from a seeded PRNG, so every run with the same seed writes the
 * same bytes. Each file's checksum is computed while it is written; the client computes the
 * same checksum over what it received.
 */
#ifndef DOWNLOAD_TREE_H
#define DOWNLOAD_TREE_H

#include <stddef.h>
#include <stdint.h>

#define TREE_PATH_MAX 4096

/* What to generate. */
struct tree_spec {
    size_t files;       /* how many (at least 2: the smallest and the largest size appear) */
    uint64_t min_size;  /* bytes */
    uint64_t max_size;  /* bytes */
    uint64_t max_total; /* the largest files are halved until the sizes sum to at most this */
    uint64_t seed;
};

struct tree_file {
    char path[32]; /* relative to the root, '/'-separated: it is also the URL path */
    uint64_t size;
    uint64_t sum; /* tree_checksum() of the contents */
};

struct tree {
    char root[TREE_PATH_MAX]; /* the directory the files are under */
    struct tree_file *files;
    size_t n;
    uint64_t total; /* bytes in all files */
    uint64_t min, max;
};

/**
 * tree_create() - write the files of @spec under the new directory @root.
 *
 * @root must not exist. Returns 0, or -1 after printing why to stderr; on failure whatever
 * was written stays under @root for the caller's tree_remove_dir(). Free @t with
 * tree_free() either way.
 */
int tree_create(struct tree *t, const char *root, const struct tree_spec *spec);

/** tree_free() - free @t's file list (the files on disk stay). */
void tree_free(struct tree *t);

/**
 * tree_checksum() - continue a 64-bit FNV-1a hash over @len bytes at @p.
 *
 * Start with TREE_CHECKSUM_INIT. The generator and the client both use it.
 */
#define TREE_CHECKSUM_INIT UINT64_C(0xcbf29ce484222325)
uint64_t tree_checksum(uint64_t h, const void *p, size_t len);

/**
 * tree_remove_dir() - remove @path and everything under it (never following symlinks).
 *
 * Returns 0, or -1 after printing what could not be removed. A missing @path is 0.
 */
int tree_remove_dir(const char *path);

/**
 * make_temp_dir() - create a private directory "<$TMPDIR or /tmp>/<prefix>XXXXXX".
 *
 * Stores its path in @out (@outlen bytes). Returns 0, or -1 after printing why.
 */
int make_temp_dir(const char *prefix, char *out, size_t outlen);

#endif /* DOWNLOAD_TREE_H */
