/* SPDX-License-Identifier: MIT */
/*
 * fuzz_keyrate.c - libFuzzer target for the keyed rate budgets.
 *
 * The input bytes are an operation sequence for the interpreter in
 * tests/model/keyrate_model.c (the same one tests/model/model_keyrate.c runs from fixed
 * seeds): the first bytes choose the fake clock's start, the settings and the table (one
 * shard with 1 to 6 keys, or several shards with room for every key; evict or refuse when
 * full), then each op byte selects try, available, forget, a clock step (forward, to the
 * last retry-after, back, to the ends of the band_time range), band_keyrate_set(), stats,
 * close or recreate, followed by its arguments. Every result is compared with a per-key
 * reference; a mismatch prints the op and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "keyrate_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct keyrate_model *m = keyrate_model_new();
    if (m == NULL)
        return 0;
    if (keyrate_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_keyrate: model mismatch: %s\n", keyrate_model_error(m));
        abort();
    }
    keyrate_model_free(m);
    return 0;
}
