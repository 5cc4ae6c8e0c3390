/* SPDX-License-Identifier: MIT */
/*
 * shm_hold.c - a process that holds or waits for units of a named segment, for the
 * band-shm tests (tests/shm_tool/shm_tool.sh), which SIGKILL it to make a dead holder.
 *
 *   shm_hold NAME BOUND=N ...          take the units now (one try per bound), print
 *                                      "held", then sleep until killed
 *   shm_hold --wait NAME BOUND=N ...   print "waiting", admit all parts at once (blocking,
 *                                      20 s deadline), print "granted", then sleep
 *   shm_hold --async NAME BOUND=N ...  the same through band_shm_admit_async(): "granted"
 *                                      is printed by the wake, on the doorbell thread
 *
 * Exits 1 when a step fails (the band error on stderr), 2 on bad usage. An alarm ends it
 * after 60 s, so a test that dies never leaves it behind for long.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <band/band.h>
#include <band/shm.h>

/* The wake of an asynchronous admission: runs once, on the handle's doorbell thread. */
static void on_granted(band_waiter *w)
{
    static const char granted[] = "granted\n";
    static const char failed[] = "failed\n";
    if (band_waiter_status(w) == 0)
        (void)!write(STDOUT_FILENO, granted, sizeof(granted) - 1);
    else
        (void)!write(STDOUT_FILENO, failed, sizeof(failed) - 1);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "shm_hold: %s: %s (%s)\n", what, band_strerror(rc), band_err_name(rc));
    return 1;
}

int main(int argc, char **argv)
{
    int wait = 0, async = 0;
    int i = 1;
    alarm(60);
    if (i < argc && strcmp(argv[i], "--wait") == 0) {
        wait = 1;
        i++;
    } else if (i < argc && strcmp(argv[i], "--async") == 0) {
        wait = async = 1;
        i++;
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: shm_hold [--wait|--async] NAME BOUND=N ...\n");
        return 2;
    }
    band_shm *s = NULL;
    int rc = band_shm_open(&s, argv[i], NULL);
    if (rc != 0)
        return fail("open", rc);
    static band_shm_req req; /* the asynchronous one lives until the process ends */
    (void)band_shm_req_init(&req, async ? on_granted : NULL, NULL);
    for (i++; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "shm_hold: %s: expected BOUND=N\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        unsigned idx;
        rc = band_shm_bound_index(s, argv[i], &idx);
        if (rc != 0)
            return fail(argv[i], rc);
        uint64_t n = strtoull(eq + 1, NULL, 10);
        if (wait)
            rc = band_shm_req_add(&req, idx, n);
        else
            rc = band_shm_try_acquire(s, idx, n);
        if (rc != 0)
            return fail(argv[i], rc);
    }
    if (async) {
        rc = band_shm_admit_async(s, &req);
        if (rc != BAND_PENDING)
            return fail("admit_async (expected to queue)", rc);
        printf("waiting\n");
    } else if (wait) {
        printf("waiting\n");
        fflush(stdout);
        rc = band_shm_admit(s, &req, band_deadline_after(20 * BAND_SEC), NULL);
        if (rc != 0)
            return fail("admit", rc);
        printf("granted\n");
    } else {
        printf("held\n");
    }
    fflush(stdout);
    for (;;)
        pause();
}
