/* SPDX-License-Identifier: MIT */
/*
 * consumer_redis.c - a program built against an installed libband-redis, through
 * `pkg-config band-redis` and through find_package(band COMPONENTS redis). It checks
 * that band/redis.h compiles on its own (-std=c11 -Wall -Wextra -Wpedantic -Werror), that
 * libband-redis, libband and hiredis link and load, and that a keyed rate table on a
 * server that is not there answers at once per fail option (no server is needed: port 1
 * on the loopback refuses the connection).
 */
#define _POSIX_C_SOURCE 200809L

#include <band/keyrate.h>
#include <band/redis.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    band_redis_opts ro;
    memset(&ro, 0, sizeof(ro));
    ro.connect_timeout = 200 * BAND_MSEC;
    band_redis *r = NULL;
    if (band_redis_create(&r, "127.0.0.1", 1, &ro) != 0)
        return 1;
    band_keyrate_backend be;
    if (band_redis_backend(r, &be) != 0)
        return 1;
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    o.backend = &be;
    band_keyrate *closed = NULL, *open = NULL;
    o.fail = BAND_KEYRATE_FAIL_CLOSED;
    if (band_keyrate_create(&closed, 10, BAND_SEC, 5, &o) != 0)
        return 1;
    o.fail = BAND_KEYRATE_FAIL_OPEN;
    if (band_keyrate_create(&open, 10, BAND_SEC, 5, &o) != 0)
        return 1;
    band_time t0 = band_now();
    int rc_closed = band_keyrate_try_acquire(closed, "tenant", 6, 1, NULL);
    int rc_open = band_keyrate_try_acquire(open, "tenant", 6, 1, NULL);
    band_time took = band_now() - t0;
    band_redis_stats st;
    if (band_redis_get_stats(r, &st) != 0 || st.connected != 0) {
        fprintf(stderr, "consumer_redis: connected to port 1?\n");
        return 1;
    }
    if (rc_closed != BAND_EUNAVAIL || rc_open != 0 || took > 2 * BAND_SEC) {
        fprintf(stderr, "consumer_redis: without a server: closed %d, open %d, %lld ns\n",
                rc_closed, rc_open, (long long)took);
        return 1;
    }
    if (band_keyrate_destroy(closed) != 0 || band_keyrate_destroy(open) != 0 ||
        band_redis_destroy(r) != 0)
        return 1;
    printf("consumer_redis: band %s, libband-redis: no server, failed closed and open\n",
           band_version());
    return 0;
}
