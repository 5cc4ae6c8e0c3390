/* SPDX-License-Identifier: MIT */
/*
 * fuzz_shm.c - libFuzzer target for the checks band_shm_open() makes of a segment file.
 *
 * The input becomes a segment file (a memfd, or with the mode's bit 0x80 a /dev/shm name
 * unique to this process) that band_shm_open_fd() or band_shm_open() must refuse or
 * accept without crashing:
 *  - mode 0 (first byte % 3): the rest of the input is the whole file;
 *  - mode 1: a valid segment (one to three bounds, made by band_shm_create()) patched
 *    with the input: (offset: 2 bytes, length: 1 byte, bytes) records, except the bytes
 *    of the lock (a process-shared mutex whose bytes claim an owner can block a caller
 *    for ever; no check could tell such a mutex from a live owner's);
 *  - mode 2: the same, but the patches keep the header (the first header-size bytes)
 *    intact, so the body - records, slots, queue links - is what varies.
 * When open accepts a file it runs a few operations on it: stats, lists, try, release,
 * drain, grow, reduce, reclaim, close, then destroys the handle. Refusals must be one of
 * open's documented codes.
 *
 * tests/unit/test_shm_corpus.c replays fuzz/corpus/fuzz_shm through this function in
 * every build; the op-sequence fuzzing of a valid segment is fuzz_shm_ops.c.
 */
#define _GNU_SOURCE

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "band/shm.h"
#include "shm/shm_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int allowed_refusal(int rc)
{
    return rc == BAND_EBADSEG || rc == BAND_EVERSION || rc == BAND_EBUSY || rc == BAND_ENOMEM ||
           rc == BAND_EINVAL;
}

/* A few operations on an accepted segment; nothing may crash. */
static void exercise(band_shm *s)
{
    band_shm_stats st;
    (void)band_shm_get_stats(s, &st);
    band_shm_holder h[4];
    band_shm_waiter_info w[4];
    size_t n;
    (void)band_shm_list_holders(s, h, 4, &n);
    (void)band_shm_list_waiters(s, w, 4, &n);
    unsigned nb = band_shm_bound_count(s);
    for (unsigned b = 0; b < nb && b < BAND_SHM_MAX_BOUNDS; b++) {
        if (band_shm_try_acquire(s, b, 1) == 0)
            (void)band_shm_release(s, b, 1);
        (void)band_shm_acquire(s, b, 1, 0, NULL);
        uint64_t got = band_shm_drain(s, b, 2);
        (void)band_shm_release(s, b, got);
        if (band_shm_grow(s, b, 1) == 0)
            (void)band_shm_reduce(s, b, 1);
        (void)band_shm_available(s, b);
        (void)band_shm_held(s, b);
    }
    unsigned dead;
    (void)band_shm_reclaim(s, &dead);
    (void)band_shm_close(s);
    (void)band_shm_get_stats(s, &st);
}

/* A valid segment's bytes, made once. */
static unsigned char *valid_image(unsigned nbounds, size_t *len)
{
    static unsigned char *img[4];
    static size_t img_len[4];
    if (img[nbounds] != NULL) {
        *len = img_len[nbounds];
        return img[nbounds];
    }
    static const band_shm_bound b[3] = {
        {"conns", 4, BAND_SHM_UNITS}, {"bytes", 1000, BAND_SHM_BYTES}, {"z", 0, BAND_SHM_UNITS}};
    band_shm_opts o = {.max_handles = 3, .max_waiters = 4};
    band_shm *s = NULL;
    if (band_shm_create(&s, NULL, b, nbounds, &o) != 0)
        abort();
    /* Some state: units held by a record that is not alive once we are done. */
    (void)band_shm_try_acquire(s, 0, 1);
    int fd = band_shm_fd(s);
    off_t end = lseek(fd, 0, SEEK_END);
    unsigned char *p = malloc((size_t)end);
    if (p == NULL || pread(fd, p, (size_t)end, 0) != (ssize_t)end)
        abort();
    (void)band_shm_release(s, 0, 1);
    (void)band_shm_destroy(s);
    img[nbounds] = p;
    img_len[nbounds] = (size_t)end;
    *len = (size_t)end;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    unsigned char *file = NULL;
    size_t flen = 0;
    if (mode % 3 == 0) {
        file = malloc(size + 1);
        if (file == NULL)
            return 0;
        memcpy(file, data, size);
        flen = size;
    } else {
        unsigned nb = 1 + (size > 0 ? data[0] % 3 : 0);
        size_t ilen;
        const unsigned char *img = valid_image(nb, &ilen);
        file = malloc(ilen);
        if (file == NULL)
            return 0;
        memcpy(file, img, ilen);
        flen = ilen;
        const size_t lock_lo = offsetof(struct band__shm_hdr, lock);
        const size_t lock_hi = lock_lo + sizeof(((struct band__shm_hdr *)0)->lock);
        const size_t keep = mode % 3 == 2 ? sizeof(struct band__shm_hdr) : 0;
        size_t i = 1;
        while (i + 3 <= size) {
            size_t off = (size_t)data[i] | (size_t)data[i + 1] << 8;
            size_t len = (size_t)(data[i + 2] % 16) + 1;
            i += 3;
            /* Offsets scale over the whole file, so patches reach the slots too. */
            off = (off * flen) >> 16;
            for (size_t k = 0; k < len && i < size; k++, i++) {
                size_t at = off + k;
                if (at >= flen || at < keep || (at >= lock_lo && at < lock_hi))
                    continue;
                file[at] = data[i];
            }
        }
    }

    band_shm *s = NULL;
    int rc;
    if (mode & 0x80) {
        char name[64];
        snprintf(name, sizeof(name), "/band_fuzz_shm_%d", (int)getpid());
        char path[96];
        snprintf(path, sizeof(path), "/dev/shm/%s", name + 1);
        FILE *f = fopen(path, "wb");
        if (f == NULL) {
            free(file);
            return 0;
        }
        size_t wrote = fwrite(file, 1, flen, f);
        fclose(f);
        if (wrote != flen) {
            (void)unlink(path);
            free(file);
            return 0;
        }
        rc = band_shm_open(&s, name, NULL);
        (void)unlink(path);
    } else {
        int fd = memfd_create("band-fuzz-shm", MFD_CLOEXEC);
        if (fd < 0) {
            free(file);
            return 0;
        }
        if (write(fd, file, flen) != (ssize_t)flen) {
            close(fd);
            free(file);
            return 0;
        }
        rc = band_shm_open_fd(&s, fd, NULL);
        close(fd);
    }
    free(file);
    if (rc == 0) {
        exercise(s);
        if (band_shm_destroy(s) != 0)
            abort(); /* nothing async is pending */
    } else if (!allowed_refusal(rc)) {
        fprintf(stderr, "fuzz_shm: open returned %s\n", band_err_name(rc));
        abort();
    }
    return 0;
}
