/* SPDX-License-Identifier: MIT */
/**
 * @file band/redis.h
 * @brief libband-redis: keyed rate budgets whose buckets live on a Redis server.
 *
 * A band_redis is one connection (hiredis) to one Redis server and a backend for
 * band_keyrate (band_keyrate_opts.backend): the application keeps calling
 * band_keyrate_try_acquire(), and every decision runs as one Lua script on the server
 * (EVALSHA, loaded once per connection and reloaded after NOSCRIPT), on the server's clock
 * (TIME), so every process and host that uses the server shares each key's rate. A key
 * that is full again is deleted by its TTL (up to a second later), as an idle key is
 * dropped in process.
 *
 * Nothing ever hangs on a dead server: the connection has a connect timeout and a
 * command timeout, a failed connection is dropped, and it is tried again at most once per
 * reconnect interval (calls in between fail at once). A call that fails is "could not
 * decide", and band_keyrate_opts.fail says what the application gets (BAND_EUNAVAIL when
 * failing closed, a grant when failing open).
 *
 * The script counts in doubles, so the settings it accepts are tokens <= 2^32 and
 * burst x period <= 2^52 (a burst of 10^6 tokens of 1 ms each, or 4.5 10^6 s of depth);
 * other settings make every call fail with BAND_EOVERFLOW. The server's clock has
 * microseconds, so retry-afters are exact on a microsecond clock.
 */
#ifndef BAND_REDIS_H
#define BAND_REDIS_H

#include <stddef.h>

#include "band/core.h"
#include "band/keyrate.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A Redis connection that backs keyed rate budgets (opaque). */
typedef struct band_redis band_redis;

/** @brief Options of band_redis_create(); NULL or zero-initialised means the defaults. */
typedef struct band_redis_opts {
    band_time connect_timeout;    /**< 0: 100 ms */
    band_time command_timeout;    /**< 0: 50 ms */
    band_time reconnect_interval; /**< 0: 100 ms; the least time between connect attempts */
    const char *prefix;           /**< NULL: "band:kr:"; prepended to every key (copied) */
} band_redis_opts;

/** @brief Counters; see band_redis_get_stats(). */
typedef struct band_redis_stats {
    uint64_t calls;    /**< scripts run */
    uint64_t errors;   /**< calls that could not decide */
    uint64_t connects; /**< connections made */
    uint64_t reloads;  /**< scripts loaded again after NOSCRIPT */
    int connected;     /**< 1 while the connection is up */
} band_redis_stats;

/**
 * @brief Connect to Redis at @p host : @p port.
 *
 * The first connection is tried here: a server that is down is not an error (calls fail,
 * and the connection is tried again later). Returns 0 and stores the handle in *@p out,
 * BAND_EINVAL (NULL @p out or @p host, @p port outside 1 to 65535, a negative timeout) or
 * BAND_ENOMEM. MT-safe. Free it with band_redis_destroy() after every table that uses it.
 *
 * @param[out] out  Receives the handle; the caller owns it.
 * @param host      Host name or address, copied.
 * @param port      TCP port.
 * @param opts      Options, or NULL for the defaults; read during the call only.
 * @return 0, BAND_EINVAL or BAND_ENOMEM as described above.
 */
BAND_API int band_redis_create(band_redis **out, const char *host, int port,
                               const band_redis_opts *opts);

/**
 * @brief Close the connection and free @p r (NULL is a no-op).
 *
 * Not MT-safe against other calls on @p r; destroy the tables that use it first.
 *
 * @param r  The handle, or NULL.
 * @return 0.
 */
BAND_API int band_redis_destroy(band_redis *r);

/**
 * @brief Fill in *@p out, a backend for band_keyrate_opts.backend that uses @p r.
 *
 * Its calls are MT-safe: they share the connection under @p r's mutex, one command at a
 * time (one round trip per decision). Returns 0, or BAND_EINVAL (NULL argument).
 *
 * @param r         The handle; it must outlive every table created with the backend.
 * @param[out] out  Receives the backend.
 * @return 0 or BAND_EINVAL.
 */
BAND_API int band_redis_backend(band_redis *r, band_keyrate_backend *out);

/**
 * @brief A snapshot of @p r's counters.
 *
 * MT-safe.
 *
 * @param r         The handle.
 * @param[out] out  Receives the snapshot.
 * @return 0 or BAND_EINVAL (NULL argument).
 */
BAND_API int band_redis_get_stats(const band_redis *r, band_redis_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_REDIS_H */
