/* SPDX-License-Identifier: MIT */
/*
 * shm_seg.c - creating, checking, mapping and closing segments.
 *
 * A segment is built where nobody can open it - an unnamed O_TMPFILE file in /dev/shm, or
 * a temporary name when the file system has no O_TMPFILE - and linked to its name only
 * once complete, so an opener never meets a half-built one. Its memory is allocated up
 * front: a tmpfs that is full fails creation with BAND_ENOSPC instead of killing a later
 * user with SIGBUS at a page fault. An opener reads and checks the header with pread()
 * before it maps anything, and checks the file's size against it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_internal.h"

static size_t band__round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* The layout of a segment with these counts: offsets of records and slots, total size. */
static void band__shm_layout(uint32_t nrecords, uint32_t nslots, uint64_t *rec_off,
                             uint64_t *slot_off, uint64_t *size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *rec_off = band__round_up(sizeof(struct band__shm_hdr), 64);
    *slot_off = band__round_up(*rec_off + (uint64_t)nrecords * sizeof(struct band__shm_record), 64);
    *size = band__round_up(*slot_off + (uint64_t)nslots * sizeof(struct band__shm_slot), page);
}

static int band__shm_name_ok(const char *name)
{
    if (name == NULL || name[0] != '/' || name[1] == '\0')
        return 0;
    size_t len = strlen(name);
    if (len > 255 || strchr(name + 1, '/') != NULL)
        return 0;
    return strcmp(name, "/.") != 0 && strcmp(name, "/..") != 0;
}

static int band__shm_path(char *buf, size_t cap, const char *name)
{
    int n = snprintf(buf, cap, "%s%s", BAND__SHM_DIR, name);
    return n > 0 && (size_t)n < cap;
}

static int band__errno_code(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return BAND_ENOENT;
    case EEXIST:
        return BAND_EEXIST;
    case EACCES:
    case EPERM:
    case EROFS:
        return BAND_EACCES;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return BAND_ENOSPC;
    case ENOMEM:
        return BAND_ENOMEM;
    default:
        return BAND_EINVAL;
    }
}

static void band__shm_init_segment(unsigned char *base, const band_shm_bound *bounds,
                                   unsigned nbounds, uint32_t nrecords, uint32_t nslots,
                                   uint64_t rec_off, uint64_t slot_off, uint64_t size)
{
    struct band__shm_hdr *h = (struct band__shm_hdr *)(void *)base;
    h->version = BAND_SHM_VERSION;
    h->hdr_size = (uint32_t)sizeof *h;
    h->size = size;
    h->nbounds = nbounds;
    h->nrecords = nrecords;
    h->nslots = nslots;
    h->rec_off = rec_off;
    h->slot_off = slot_off;
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    h->created_ns = (uint64_t)ts.tv_sec * (uint64_t)BAND_SEC + (uint64_t)ts.tv_nsec;
    for (unsigned b = 0; b < nbounds; b++) {
        struct band__shm_bound *bd = &h->bounds[b];
        (void)snprintf(bd->name, sizeof bd->name, "%s", bounds[b].name);
        bd->kind = (uint64_t)bounds[b].kind;
        bd->capacity = bounds[b].capacity;
        bd->available = bounds[b].capacity;
    }
    /* The magic last: a segment is a segment once it is complete. */
    memcpy(h->magic, BAND__SHM_MAGIC, sizeof h->magic);
}

/* The segment's lock, made in place: shared between processes, and robust, so that a
 * process that dies holding it hands it on with EOWNERDEAD instead of blocking all. */
static int band__shm_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return BAND_ENOMEM;
    int rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (rc == 0)
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (rc == 0)
        rc = pthread_mutex_init(m, &a);
    (void)pthread_mutexattr_destroy(&a);
    return rc == 0 ? 0 : BAND_ENOMEM;
}

static int band__shm_check_bounds(const band_shm_bound *bounds, unsigned nbounds)
{
    if (bounds == NULL || nbounds == 0 || nbounds > BAND_SHM_MAX_BOUNDS)
        return BAND_EINVAL;
    for (unsigned b = 0; b < nbounds; b++) {
        const char *n = bounds[b].name;
        if (n == NULL || n[0] == '\0' || strlen(n) >= BAND_NAME_MAX)
            return BAND_EINVAL;
        if (bounds[b].capacity > BAND_MAX_UNITS)
            return BAND_EINVAL;
        if (bounds[b].kind != BAND_SHM_UNITS && bounds[b].kind != BAND_SHM_BYTES)
            return BAND_EINVAL;
        for (unsigned c = 0; c < b; c++)
            if (strcmp(bounds[c].name, n) == 0)
                return BAND_EINVAL;
    }
    return 0;
}

/* A created file, not yet named: an O_TMPFILE, or a temporary name in *tmp. */
static int band__shm_create_file(unsigned mode, char *tmp, size_t cap)
{
    tmp[0] = '\0';
    int fd = open(BAND__SHM_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    for (int attempt = 0; attempt < 100; attempt++) {
        (void)snprintf(tmp, cap, "%s/.band-shm-%ld-%ld-%d", BAND__SHM_DIR, (long)getpid(),
                       (long)band_now(), attempt);
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static int band__shm_link(int fd, const char *tmp, const char *path)
{
    if (tmp[0] != '\0') {
        int rc = link(tmp, path);
        int e = errno;
        (void)unlink(tmp);
        errno = e;
        return rc;
    }
    char proc[64];
    (void)snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

/* The inline fast paths of band/shm.h read these two fields by this layout. */
_Static_assert(offsetof(struct band_shm, fast) == offsetof(struct band_shm_prefix, fast),
               "band_shm_prefix.fast");
_Static_assert(offsetof(struct band_shm, nbounds) == offsetof(struct band_shm_prefix, nbounds),
               "band_shm_prefix.nbounds");
_Static_assert(BAND__CACHE_FROZEN == BAND_SHM_CACHE_FROZEN &&
                   BAND__CACHE_SHIFT == BAND_SHM_CACHE_SHIFT,
               "the cache word's encoding");

/* What an opener checked of a header, and trusts from then on. */
struct band__shm_dims {
    uint32_t nbounds, nrecords, nslots;
    uint64_t rec_off, slot_off;
    size_t size;
};

static int band__shm_attach(band_shm **out, int fd, const struct band__shm_dims *d, int inspect);

int band_shm_create(band_shm **out, const char *name, const band_shm_bound *bounds,
                    unsigned nbounds, const band_shm_opts *opts)
{
    band_shm_opts o = {0};
    if (opts != NULL)
        o = *opts;
    if (out == NULL || (name != NULL && !band__shm_name_ok(name)))
        return BAND_EINVAL;
    int rc = band__shm_check_bounds(bounds, nbounds);
    if (rc != 0)
        return rc;
    uint32_t nrec = o.max_handles ? o.max_handles : 64;
    uint32_t nslots = o.max_waiters ? o.max_waiters : 256;
    unsigned mode = o.mode ? o.mode : 0600;
    if (nrec > BAND__SHM_MAX_HANDLES || nslots > BAND__SHM_MAX_WAITERS || (mode & ~0777u) != 0)
        return BAND_EINVAL;
    uint64_t rec_off, slot_off, size;
    band__shm_layout(nrec, nslots, &rec_off, &slot_off, &size);
    char path[300], tmp[300];
    int fd;
    if (name == NULL) {
        fd = memfd_create("band-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        tmp[0] = '\0';
    } else {
        if (!band__shm_path(path, sizeof path, name))
            return BAND_EINVAL;
        fd = band__shm_create_file(mode, tmp, sizeof tmp);
    }
    if (fd < 0)
        return band__errno_code(errno);
    if (name != NULL && fchmod(fd, mode) != 0)
        goto fail_errno;
    if (ftruncate(fd, (off_t)size) != 0)
        goto fail_errno;
    rc = posix_fallocate(fd, 0, (off_t)size);
    if (rc != 0) {
        errno = rc;
        goto fail_errno;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        goto fail_errno;
    rc = band__shm_mutex_init(&((struct band__shm_hdr *)base)->lock.m);
    if (rc != 0) {
        (void)munmap(base, size);
        goto fail;
    }
    band__shm_init_segment(base, bounds, nbounds, nrec, nslots, rec_off, slot_off, size);
    (void)munmap(base, size);
    if (name == NULL) {
        /* An anonymous segment can never be resized under its users. */
        (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    } else if (band__shm_link(fd, tmp, path) != 0) {
        tmp[0] = '\0';
        goto fail_errno;
    }
    struct band__shm_dims d = {nbounds, nrec, nslots, rec_off, slot_off, size};
    rc = band__shm_attach(out, fd, &d, 0);
    if (rc != 0) {
        if (name != NULL)
            (void)unlink(path);
        (void)close(fd);
    }
    return rc;

fail_errno:
    rc = band__errno_code(errno);
fail:
    if (tmp[0] != '\0')
        (void)unlink(tmp);
    (void)close(fd);
    return rc;
}

/* Read and check the header of the segment behind @fd: 0 and its size, or an error. */
static int band__shm_check_header(int fd, struct band__shm_dims *d)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return BAND_EINVAL;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < 24)
        return BAND_EBADSEG;
    struct band__shm_hdr h;
    memset(&h, 0, sizeof h);
    ssize_t n = pread(fd, &h, sizeof h, 0);
    if (n < 24 || memcmp(h.magic, BAND__SHM_MAGIC, sizeof h.magic) != 0)
        return BAND_EBADSEG;
    if (h.version != BAND_SHM_VERSION)
        return BAND_EVERSION;
    if ((size_t)n != sizeof h || h.hdr_size != sizeof h)
        return BAND_EBADSEG;
    if (h.nbounds == 0 || h.nbounds > BAND_SHM_MAX_BOUNDS || h.nrecords == 0 ||
        h.nrecords > BAND__SHM_MAX_HANDLES || h.nslots == 0 || h.nslots > BAND__SHM_MAX_WAITERS)
        return BAND_EBADSEG;
    uint64_t rec_off, slot_off, size;
    band__shm_layout(h.nrecords, h.nslots, &rec_off, &slot_off, &size);
    if (h.rec_off != rec_off || h.slot_off != slot_off || h.size != size ||
        (uint64_t)st.st_size != size)
        return BAND_EBADSEG;
    if (h.log_count > BAND__SHM_LOG_MAX)
        return BAND_EBADSEG;
    for (uint32_t b = 0; b < h.nbounds; b++) {
        const struct band__shm_bound *bd = &h.bounds[b];
        if (memchr(bd->name, '\0', sizeof bd->name) == NULL || bd->kind > BAND_SHM_BYTES ||
            bd->capacity > BAND_MAX_UNITS)
            return BAND_EBADSEG;
    }
    d->nbounds = h.nbounds;
    d->nrecords = h.nrecords;
    d->nslots = h.nslots;
    d->rec_off = rec_off;
    d->slot_off = slot_off;
    d->size = (size_t)size;
    return 0;
}

static int band__shm_attach(band_shm **out, int fd, const struct band__shm_dims *d, int inspect)
{
    size_t size = d->size;
    band_shm *s = calloc(1, sizeof *s);
    if (s == NULL)
        return BAND_ENOMEM;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *fast = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fast == MAP_FAILED) {
        free(s);
        return BAND_ENOMEM;
    }
    s->fast = fast;
    /* Without MADV_WIPEONFORK (Linux before 4.14) a child could not tell the page is its
     * parent's: the fast paths stay off (rec NULL) and every call takes the lock. */
    s->fast_ok = madvise(fast, page, MADV_WIPEONFORK) == 0;
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        int rc = band__errno_code(errno);
        (void)munmap(fast, page);
        free(s);
        return rc == BAND_EINVAL ? BAND_EBADSEG : rc;
    }
    s->fd = fd;
    s->size = size;
    s->base = base;
    s->h = base;
    s->rec = (struct band__shm_record *)(void *)(s->base + d->rec_off);
    s->slot = (struct band__shm_slot *)(void *)(s->base + d->slot_off);
    s->nbounds = d->nbounds;
    s->nrecords = d->nrecords;
    s->nslots = d->nslots;
    s->inspect = inspect;
    int rc = band__shm_local_init(s);
    if (rc == 0 && inspect) {
        /* gen stays 0: no fast path, and every use of a record is refused. */
        *out = s;
        return 0;
    }
    if (rc == 0) {
        struct band__shm_op op;
        rc = band__shm_lock(&op, s);
        if (rc == 0) {
            (void)band__shm_sweep_locked(&op, 0);
            rc = band__shm_register_locked(&op, &s->self);
            band__shm_unlock(&op);
        }
        if (rc != 0)
            (void)band__shm_local_fini(s);
    }
    if (rc != 0) {
        (void)munmap(base, size);
        (void)munmap(fast, page);
        free(s);
        return rc;
    }
    s->gen = band__shm_generation();
    band__shm_fast_publish(s);
    *out = s;
    return 0;
}

static int band__shm_open_desc(band_shm **out, int fd, const band_shm_opts *opts)
{
    int inspect = opts != NULL ? opts->inspect : 0;
    if (inspect != 0 && inspect != 1)
        return BAND_EINVAL;
    struct band__shm_dims d;
    int rc = band__shm_check_header(fd, &d);
    if (rc == 0)
        rc = band__shm_attach(out, fd, &d, inspect);
    return rc;
}

int band_shm_open(band_shm **out, const char *name, const band_shm_opts *opts)
{
    char path[300];
    if (out == NULL || !band__shm_name_ok(name) || !band__shm_path(path, sizeof path, name))
        return BAND_EINVAL;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ELOOP || errno == EISDIR ? BAND_EBADSEG : band__errno_code(errno);
    int rc = band__shm_open_desc(out, fd, opts);
    if (rc != 0)
        (void)close(fd);
    return rc;
}

int band_shm_open_fd(band_shm **out, int fd, const band_shm_opts *opts)
{
    if (out == NULL || fd < 0)
        return BAND_EINVAL;
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0)
        return BAND_EINVAL;
    int rc = band__shm_open_desc(out, dup, opts);
    if (rc != 0)
        (void)close(dup);
    return rc;
}

int band_shm_destroy(band_shm *s)
{
    if (s == NULL)
        return 0;
    int rc = band__shm_local_fini(s);
    if (rc != 0)
        return rc;
    /* A forked child that never used the handle has no record of its own to free. */
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == band__shm_generation()) {
        struct band__shm_op op;
        if (band__shm_lock(&op, s) == 0) {
            band__shm_reclaim_record_locked(&op, s->self);
            band__shm_unlock(&op);
        }
    }
    (void)munmap(s->base, s->size);
    (void)munmap(s->fast, (size_t)sysconf(_SC_PAGESIZE));
    (void)close(s->fd);
    free(s);
    return 0;
}

int band_shm_unlink(const char *name)
{
    char path[300];
    if (!band__shm_name_ok(name) || !band__shm_path(path, sizeof path, name))
        return BAND_EINVAL;
    if (unlink(path) != 0)
        return band__errno_code(errno);
    return 0;
}

int band_shm_fd(const band_shm *s)
{
    return s == NULL ? -1 : s->fd;
}
