/* SPDX-License-Identifier: MIT */
/*
 * keyrate_internal.h - test hooks of the keyed rate budgets, compiled only into the
 * libraries that define BAND_TESTING. libband.so and libband.a neither contain nor export
 * them.
 */
#ifndef BAND_KEYRATE_INTERNAL_H
#define BAND_KEYRATE_INTERNAL_H

#include <stddef.h>

#include "band/keyrate.h"

#ifdef BAND_TESTING
/* The shard @key lives in (0 to shards - 1): a test with several shards finds keys that
 * share one. MT-safe. */
unsigned band__keyrate_shard_of(const band_keyrate *k, const void *key, size_t keylen);
/* Keys held by shard @shard, idle ones included (what the table holds, not what it
 * answers): a test sees when idle keys were dropped. Takes the shard's mutex. */
size_t band__keyrate_held(const band_keyrate *k, unsigned shard);
#endif

#endif /* BAND_KEYRATE_INTERNAL_H */
