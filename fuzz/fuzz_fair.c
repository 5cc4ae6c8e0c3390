/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fair.c - libFuzzer target for the fair share (band_fair).
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/fair_model.c
 * (the same one tests/model/model_fair.c runs from fixed seeds and over this target's
 * corpus): the first bytes choose the fair's configuration (capacity up to the largest,
 * priority classes and their headroom, base quantum, default weight and cap, max_keys), then
 * each op byte selects try_acquire, a blocking acquire with a past or a 2 ms deadline,
 * acquire_async on one of the request slots, cancel, release, key_set, key_unset, close,
 * destroy while busy or recreate, followed by a byte that makes the wakes call back into
 * the fair and the operation's arguments. Every result, every wake (order and status),
 * every request's state, the counters, every key's counters and band__fair_check() are
 * compared with a reference model; a mismatch prints the op and aborts, which libFuzzer
 * reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fair_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fair_model *m = fair_model_new();
    if (m == NULL)
        return 0;
    if (fair_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_fair: model mismatch: %s\n", fair_model_error(m));
        abort();
    }
    fair_model_free(m);
    return 0;
}
