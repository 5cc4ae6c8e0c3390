/* SPDX-License-Identifier: MIT */
/*
 * consumer.c - a program built against an installed band, through pkg-config and through
 * find_package(band CONFIG). It checks that the installed headers compile on their own
 * (-std=c11 -Wall -Wextra -Wpedantic -Werror), that the library links and loads, and that
 * the header and library versions agree.
 */
#include <band/band.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    band_sem *s = NULL;
    int rc;

    if (strcmp(band_version(), BAND_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: library %s, headers %s\n", band_version(), BAND_VERSION_STRING);
        return 1;
    }
    if (band_version_number() != BAND_VERSION_NUMBER) {
        fprintf(stderr, "consumer: version number %u != %d\n", band_version_number(),
                BAND_VERSION_NUMBER);
        return 1;
    }
    rc = band_sem_create(&s, 2, NULL);
    if (rc != 0 || s == NULL) {
        fprintf(stderr, "consumer: band_sem_create: %s\n", band_strerror(rc));
        return 1;
    }
    if ((rc = band_sem_try_acquire(s, 2)) != 0) {
        fprintf(stderr, "consumer: try_acquire(2): %s\n", band_strerror(rc));
        return 1;
    }
    if ((rc = band_sem_try_acquire(s, 1)) != BAND_EAGAIN) {
        fprintf(stderr, "consumer: try_acquire on empty semaphore gave %d\n", rc);
        return 1;
    }
    if ((rc = band_sem_release(s, 2)) != 0) {
        fprintf(stderr, "consumer: release(2): %s\n", band_strerror(rc));
        return 1;
    }
    if (band_sem_available(s) != 2) {
        fprintf(stderr, "consumer: available %llu, want 2\n",
                (unsigned long long)band_sem_available(s));
        return 1;
    }
    if ((rc = band_sem_destroy(s)) != 0) {
        fprintf(stderr, "consumer: destroy: %s\n", band_strerror(rc));
        return 1;
    }
    printf("band %s consumer: ok\n", band_version());
    return 0;
}
