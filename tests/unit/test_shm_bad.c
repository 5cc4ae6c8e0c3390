/* SPDX-License-Identifier: MIT */
/*
 * test_shm_bad.c - segments that band_shm_open() must refuse: a wrong magic, another
 * layout version, header and size fields that disagree with each other or with the file,
 * truncated and extended files, garbage, a symbolic link, a file truncated while another
 * process has it mapped; and the refusals of the file system: no permission (as an
 * unprivileged user) and a full /dev/shm (a 64 KiB tmpfs in a private mount namespace).
 *
 * Each case builds a real segment with band_shm_create(), closes the handle (the file
 * stays), damages the file through its path and opens it again. The permission and
 * full-disk cases need root and the right to unshare a mount namespace; they are skipped
 * with a message otherwise.
 */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS, MAP_ANONYMOUS */

#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "band/shm.h"
#include "shm/shm_internal.h"

/* What a child reports when its environment does not allow the case. */
#define CHILD_SKIP 77

struct fixture {
    char name[64];
    char path[96];
};

static unsigned name_counter;

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    snprintf(f->name, sizeof(f->name), "/band_test_shmbad_%d_%u", (int)getpid(), name_counter++);
    snprintf(f->path, sizeof(f->path), "/dev/shm/%s", f->name + 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    (void)unlink(f->path);
    free(f);
    return 0;
}

static int reap(pid_t p)
{
    int st = 0;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A forked child dies of its own faults: cmocka's handlers would longjmp it back into
 * the parent's test. */
static void child_default_signals(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        signal(sigs[i], SIG_DFL);
}

static const band_shm_bound bounds[] = {{"conns", 10, BAND_SHM_UNITS},
                                        {"bytes", 4096, BAND_SHM_BYTES}};

/* Create the segment and close its handle; returns the file's size. */
static off_t make_file(struct fixture *f)
{
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, f->name, bounds, 2, NULL), 0);
    assert_int_equal(band_shm_destroy(s), 0);
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    return st.st_size;
}

static void patch(struct fixture *f, off_t off, const void *bytes, size_t n)
{
    int fd = open(f->path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
    close(fd);
}

static void patch_u32(struct fixture *f, off_t off, uint32_t v)
{
    patch(f, off, &v, sizeof(v));
}

static void patch_u64(struct fixture *f, off_t off, uint64_t v)
{
    patch(f, off, &v, sizeof(v));
}

/* band_shm_open() of the file fails with @want, and so does band_shm_open_fd(). */
static void expect_open(struct fixture *f, int want)
{
    band_shm *const sentinel = (band_shm *)(uintptr_t)0x4321;
    band_shm *s = sentinel;
    int rc = band_shm_open(&s, f->name, NULL);
    if (rc != want)
        print_error("open: %s, expected %s\n", band_err_name(rc), band_err_name(want));
    assert_int_equal(rc, want);
    assert_ptr_equal(s, sentinel);
    int fd = open(f->path, O_RDWR);
    assert_true(fd >= 0);
    rc = band_shm_open_fd(&s, fd, NULL);
    if (rc != want)
        print_error("open_fd: %s, expected %s\n", band_err_name(rc), band_err_name(want));
    assert_int_equal(rc, want);
    assert_ptr_equal(s, sentinel);
    close(fd);
}

static void test_good_reopens(void **state)
{
    struct fixture *f = *state;
    make_file(f);
    band_shm *s = NULL;
    assert_int_equal(band_shm_open(&s, f->name, NULL), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    assert_int_equal(band_shm_destroy(s), 0);
    char magic[8];
    int fd = open(f->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, magic, 8, 0), 8);
    close(fd);
    assert_memory_equal(magic, "BANDSHM", 8);
}

static void test_magic(void **state)
{
    struct fixture *f = *state;
    make_file(f);
    patch(f, 0, "X", 1);
    expect_open(f, BAND_EBADSEG);
    patch(f, 0, "BANDSHM", 8); /* repaired: accepted again */
    band_shm *s = NULL;
    assert_int_equal(band_shm_open(&s, f->name, NULL), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_version(void **state)
{
    struct fixture *f = *state;
    make_file(f);
    patch_u32(f, 8, BAND_SHM_VERSION + 1);
    expect_open(f, BAND_EVERSION);
    patch_u32(f, 8, 0);
    expect_open(f, BAND_EVERSION);
    patch_u32(f, 8, UINT32_MAX);
    expect_open(f, BAND_EVERSION);
}

static void test_size_fields(void **state)
{
    struct fixture *f = *state;
    off_t size = make_file(f);
    uint32_t hdr;
    int fd = open(f->path, O_RDONLY);
    assert_int_equal(pread(fd, &hdr, 4, 12), 4);
    close(fd);
    assert_int_equal(hdr, sizeof(struct band__shm_hdr));

    patch_u32(f, 12, hdr + 8);
    expect_open(f, BAND_EBADSEG);
    patch_u32(f, 12, 0);
    expect_open(f, BAND_EBADSEG);
    patch_u32(f, 12, hdr);

    patch_u64(f, 16, (uint64_t)size + 4096);
    expect_open(f, BAND_EBADSEG);
    patch_u64(f, 16, (uint64_t)size - 1);
    expect_open(f, BAND_EBADSEG);
    patch_u64(f, 16, 0);
    expect_open(f, BAND_EBADSEG);
    patch_u64(f, 16, UINT64_MAX);
    expect_open(f, BAND_EBADSEG);
    patch_u64(f, 16, (uint64_t)size);

    /* The counts and offsets behind the size. */
    const struct {
        size_t off;
        uint32_t v;
    } u32s[] = {
        {offsetof(struct band__shm_hdr, nbounds), 0},
        {offsetof(struct band__shm_hdr, nbounds), BAND_SHM_MAX_BOUNDS + 1},
        {offsetof(struct band__shm_hdr, nrecords), 0},
        {offsetof(struct band__shm_hdr, nrecords), 65},
        {offsetof(struct band__shm_hdr, nrecords), UINT32_MAX},
        {offsetof(struct band__shm_hdr, nslots), 0},
        {offsetof(struct band__shm_hdr, nslots), 1024}, /* 255 would fit the same pages */
        {offsetof(struct band__shm_hdr, nslots), UINT32_MAX},
    };
    for (size_t i = 0; i < TEST_COUNTOF(u32s); i++) {
        uint32_t old;
        fd = open(f->path, O_RDONLY);
        assert_int_equal(pread(fd, &old, 4, (off_t)u32s[i].off), 4);
        close(fd);
        patch_u32(f, (off_t)u32s[i].off, u32s[i].v);
        expect_open(f, BAND_EBADSEG);
        patch_u32(f, (off_t)u32s[i].off, old);
    }
    const size_t u64s[] = {offsetof(struct band__shm_hdr, rec_off),
                           offsetof(struct band__shm_hdr, slot_off)};
    for (size_t i = 0; i < TEST_COUNTOF(u64s); i++) {
        uint64_t old;
        fd = open(f->path, O_RDONLY);
        assert_int_equal(pread(fd, &old, 8, (off_t)u64s[i]), 8);
        close(fd);
        patch_u64(f, (off_t)u64s[i], old + 8);
        expect_open(f, BAND_EBADSEG);
        patch_u64(f, (off_t)u64s[i], (uint64_t)size);
        expect_open(f, BAND_EBADSEG);
        patch_u64(f, (off_t)u64s[i], old);
    }
    /* A bound whose name has no NUL, or a bad kind, or capacity. */
    size_t b0 = offsetof(struct band__shm_hdr, bounds);
    char fill[BAND_NAME_MAX];
    memset(fill, 'z', sizeof(fill));
    patch(f, (off_t)b0, fill, sizeof(fill));
    expect_open(f, BAND_EBADSEG);
    patch(f, (off_t)b0, "conns\0", 6);
    patch(f, (off_t)(b0 + 6), "\0", 1);
    fd = open(f->path, O_RDWR);
    char zeros[BAND_NAME_MAX] = {0};
    assert_int_equal(pwrite(fd, zeros, sizeof(zeros) - 5, (off_t)(b0 + 5)),
                     (ssize_t)sizeof(zeros) - 5);
    close(fd);
    size_t kind = b0 + offsetof(struct band__shm_bound, kind);
    patch_u64(f, (off_t)kind, 2);
    expect_open(f, BAND_EBADSEG);
    patch_u64(f, (off_t)kind, BAND_SHM_UNITS);
    size_t cap = b0 + offsetof(struct band__shm_bound, capacity);
    patch_u64(f, (off_t)cap, BAND_MAX_UNITS + 1);
    expect_open(f, BAND_EBADSEG);
    patch_u64(f, (off_t)cap, 10);

    /* Repaired: accepted, with the bound as created. */
    band_shm *s = NULL;
    assert_int_equal(band_shm_open(&s, f->name, NULL), 0);
    unsigned idx = 9;
    assert_int_equal(band_shm_bound_index(s, "conns", &idx), 0);
    assert_int_equal(idx, 0);
    assert_u64_equal(band_shm_available(s, 0), 10);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_truncated(void **state)
{
    struct fixture *f = *state;
    off_t size = make_file(f);
    const off_t lens[] = {size - 4096,
                          size - 1,
                          (off_t)sizeof(struct band__shm_hdr),
                          (off_t)sizeof(struct band__shm_hdr) - 1,
                          24,
                          23,
                          12,
                          8,
                          0};
    for (size_t i = 0; i < TEST_COUNTOF(lens); i++) {
        assert_int_equal(truncate(f->path, lens[i]), 0);
        expect_open(f, BAND_EBADSEG);
    }
    /* Extended beyond its size field. */
    assert_int_equal(unlink(f->path), 0);
    size = make_file(f);
    assert_int_equal(truncate(f->path, size + 4096), 0);
    expect_open(f, BAND_EBADSEG);
    assert_int_equal(truncate(f->path, size), 0);
    band_shm *s = NULL;
    assert_int_equal(band_shm_open(&s, f->name, NULL), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_garbage(void **state)
{
    struct fixture *f = *state;
    off_t size = make_file(f);
    uint64_t rng = 0x5eed;
    unsigned char *buf = malloc((size_t)size);
    assert_non_null(buf);
    for (int round = 0; round < 4; round++) {
        for (off_t i = 0; i < size; i++)
            buf[i] = (unsigned char)test_rng_next(&rng);
        if (round == 1)
            memset(buf, 0, (size_t)size);
        if (round == 2)
            memset(buf, 0xff, (size_t)size);
        if (round == 3) { /* a right magic and version are not enough */
            memcpy(buf, "BANDSHM", 8);
            uint32_t v = BAND_SHM_VERSION;
            memcpy(buf + 8, &v, 4);
        }
        int fd = open(f->path, O_RDWR | O_TRUNC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, (size_t)size), (ssize_t)size);
        close(fd);
        expect_open(f, BAND_EBADSEG);
    }
    free(buf);
    /* Not a regular file: a FIFO, and a symbolic link (not followed). */
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    int fd = open(f->path, O_RDWR | O_NONBLOCK);
    assert_true(fd >= 0);
    band_shm *s = NULL;
    assert_int_equal(band_shm_open_fd(&s, fd, NULL), BAND_EBADSEG);
    close(fd);
    assert_int_equal(unlink(f->path), 0);

    struct fixture g;
    snprintf(g.name, sizeof(g.name), "%.50s_target", f->name);
    snprintf(g.path, sizeof(g.path), "%.80s_target", f->path);
    make_file(&g);
    assert_int_equal(symlink(g.path, f->path), 0);
    assert_int_equal(band_shm_open(&s, f->name, NULL), BAND_EBADSEG);
    assert_int_equal(unlink(g.path), 0);
}

/* Another process has the segment mapped; the file is truncated under it. */
static void test_truncated_while_mapped(void **state)
{
    struct fixture *f = *state;
    off_t size = make_file(f);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        band_shm *c = NULL;
        char ok =
            band_shm_open(&c, f->name, NULL) == 0 && band_shm_try_acquire(c, 0, 3) == 0 ? 'y' : 'n';
        if (write(pipefd[1], &ok, 1) != 1)
            _exit(2);
        for (;;)
            pause();
    }
    char ok = 0;
    assert_int_equal(read(pipefd[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    assert_int_equal(truncate(f->path, size / 2), 0);
    expect_open(f, BAND_EBADSEG);
    assert_int_equal(truncate(f->path, 0), 0);
    expect_open(f, BAND_EBADSEG);
    kill(p, SIGKILL);
    assert_int_equal(reap(p), 128 + SIGKILL);
    close(pipefd[0]);
    close(pipefd[1]);
}

/* In a child: open the damaged file; when it is accepted, use it. Exit 0 when it was
 * refused with BAND_EBADSEG or survived the use. */
static int child_use_damaged(struct fixture *f)
{
    band_shm *s = NULL;
    int rc = band_shm_open(&s, f->name, NULL);
    if (rc == BAND_EBADSEG)
        return 0;
    if (rc != 0)
        return 20;
    band_shm_waiter_info wi[4];
    band_shm_holder h[4];
    size_t n;
    (void)band_shm_list_waiters(s, wi, 4, &n);
    (void)band_shm_list_holders(s, h, 4, &n);
    (void)band_shm_try_acquire(s, 0, 1);
    (void)band_shm_grow(s, 0, 1); /* a grant pass over the queue */
    unsigned dead;
    (void)band_shm_reclaim(s, &dead);
    (void)band_shm_destroy(s);
    return 0;
}

static int run_damaged(struct fixture *f)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        child_default_signals();
        _exit(child_use_damaged(f));
    }
    int rc = reap(p);
    if (rc != 0)
        print_error("opening and using the damaged segment ended with %s %d\n",
                    rc > 128 ? "signal" : "status", rc > 128 ? rc - 128 : rc);
    return rc;
}

/*
 * A right header over a damaged body: queue links and slot owners out of range (found by
 * fuzz_shm: band_shm_list_waiters() indexed the slots with an unchecked link). Open must
 * refuse such a segment (garbage), or every operation must survive it.
 */
static void test_damaged_body(void **state)
{
    struct fixture *f = *state;
    make_file(f);
    uint32_t nslots;
    int fd = open(f->path, O_RDONLY);
    assert_int_equal(pread(fd, &nslots, 4, (off_t)offsetof(struct band__shm_hdr, nslots)), 4);
    uint64_t slot_off;
    assert_int_equal(pread(fd, &slot_off, 8, (off_t)offsetof(struct band__shm_hdr, slot_off)), 8);
    close(fd);

    /* The queue's head beyond the slots. */
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, qhead), (uint64_t)nslots + 1000000);
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, qtail), (uint64_t)nslots + 1000000);
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, nwaiting), 1);
    int rc_head = run_damaged(f);

    /* A waiting slot owned by a record that does not exist, linked to a slot beyond. */
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, qhead), 1);
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, qtail), 1);
    off_t s0 = (off_t)slot_off;
    patch_u64(f, s0 + (off_t)offsetof(struct band__shm_slot, state), BAND__SLOT_WAITING);
    patch_u64(f, s0 + (off_t)offsetof(struct band__shm_slot, record), 1u << 30);
    patch_u64(f, s0 + (off_t)offsetof(struct band__shm_slot, next), (uint64_t)nslots + 77);
    patch_u64(f, s0 + (off_t)offsetof(struct band__shm_slot, want), 1);
    int rc_slot = run_damaged(f);

    /* Trusting the body, both ended with SIGSEGV (or a sanitizer report). */
    assert_int_equal(rc_head, 0);
    assert_int_equal(rc_slot, 0);
}

/*
 * An undo log that claims more entries than it has room for, with no dead lock owner
 * (found by fuzz_shm: the first logged store of the opener's registration aborted the
 * process). Open must refuse it, or every operation must survive it.
 */
static void test_damaged_log(void **state)
{
    struct fixture *f = *state;
    make_file(f);
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, log_count), BAND__SHM_LOG_MAX);
    int rc_full = run_damaged(f);
    assert_int_equal(unlink(f->path), 0); /* a fresh file: the first child may have died
                                             holding the lock */
    make_file(f);
    patch_u64(f, (off_t)offsetof(struct band__shm_hdr, log_count), UINT64_MAX);
    int rc_huge = run_damaged(f);
    /* Refused at open (BAND_EBADSEG) or dropped and rebuilt at the first lock: no abort. */
    assert_int_equal(rc_full, 0);
    assert_int_equal(rc_huge, 0);
}

static void test_no_permission(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0) {
        print_message("test_no_permission: SKIPPED: needs root (to create as root and open "
                      "as uid 65534)\n");
        skip();
    }
    band_shm *s = NULL;
    band_shm_opts o = {.mode = 0600};
    assert_int_equal(band_shm_create(&s, f->name, bounds, 2, &o), 0);
    char open_name[64];
    snprintf(open_name, sizeof(open_name), "%.50s_open", f->name);
    band_shm *t = NULL;
    band_shm_opts oo = {.mode = 0666};
    assert_int_equal(band_shm_create(&t, open_name, bounds, 2, &oo), 0);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(CHILD_SKIP);
        band_shm *c = (band_shm *)(uintptr_t)0x77;
        if (band_shm_open(&c, f->name, NULL) != BAND_EACCES)
            _exit(10);
        if (c != (band_shm *)(uintptr_t)0x77)
            _exit(11);
        if (band_shm_unlink(f->name) != BAND_EACCES) /* sticky /dev/shm, not its owner */
            _exit(12);
        /* Mode 0666 lets it in. */
        if (band_shm_open(&c, open_name, NULL) != 0)
            _exit(13);
        if (band_shm_try_acquire(c, 0, 1) != 0)
            _exit(14);
        _exit(band_shm_destroy(c) == 0 ? 0 : 15);
    }
    int rc = reap(p);
    if (rc == CHILD_SKIP) {
        print_message("test_no_permission: SKIPPED: setuid(65534) refused\n");
        band_shm_destroy(s);
        band_shm_destroy(t);
        band_shm_unlink(open_name);
        skip();
    }
    assert_int_equal(rc, 0);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(band_shm_unlink(open_name), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* Entries of @dir other than . and .. */
static int dir_entries(const char *dir)
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

static int child_full(const char *name)
{
    if (unshare(CLONE_NEWNS) != 0)
        return CHILD_SKIP;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return CHILD_SKIP;
    if (mount("band-test", "/dev/shm", "tmpfs", 0, "size=64k,mode=1777") != 0)
        return CHILD_SKIP;
    if (dir_entries("/dev/shm") != 0)
        return 10;
    band_shm *s = (band_shm *)(uintptr_t)0x88;
    band_shm_opts o = {.max_handles = 4096, .max_waiters = 65536}; /* megabytes */
    int rc = band_shm_create(&s, name, bounds, 2, &o);
    if (rc != BAND_ENOSPC) {
        fprintf(stderr, "full /dev/shm: create returned %s\n", band_err_name(rc));
        return 11;
    }
    if (s != (band_shm *)(uintptr_t)0x88)
        return 12;
    int n = dir_entries("/dev/shm");
    if (n != 0) {
        fprintf(stderr, "full /dev/shm: %d files left behind\n", n);
        return 13;
    }
    /* A small one still fits, and the tmpfs is really the one we mounted. */
    rc = band_shm_create(&s, name, bounds, 2, &(band_shm_opts){.max_handles = 1, .max_waiters = 1});
    if (rc != 0) {
        fprintf(stderr, "small segment on the 64k tmpfs: %s\n", band_err_name(rc));
        return 14;
    }
    if (dir_entries("/dev/shm") != 1)
        return 15;
    (void)band_shm_destroy(s);
    (void)band_shm_unlink(name);
    return 0;
}

static void test_full_dev_shm(void **state)
{
    struct fixture *f = *state;
    fflush(NULL);
    pid_t p = fork();
    if (p == 0)
        _exit(child_full(f->name));
    int rc = reap(p);
    if (rc == CHILD_SKIP) {
        print_message("test_full_dev_shm: SKIPPED: unshare(CLONE_NEWNS) or mounting a "
                      "tmpfs on /dev/shm is not permitted here\n");
        skip();
    }
    assert_int_equal(rc, 0);
    struct stat st;
    assert_int_equal(stat(f->path, &st), -1); /* the host's /dev/shm never saw it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_reopens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_magic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_while_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_dev_shm, setup, teardown),
    };
    return cmocka_run_group_tests_name("test_shm_bad", tests, NULL, NULL);
}
