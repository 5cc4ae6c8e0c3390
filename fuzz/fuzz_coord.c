/* SPDX-License-Identifier: MIT */
/*
 * fuzz_coord.c - libFuzzer target for band_group, band_latch and band_shutdown.
 *
 * The input bytes are an operation sequence for the interpreter in
 * tests/model/coord_model.c (the same one tests/model/model_coord.c runs from fixed seeds):
 * the first bytes choose the two latches' counts and the semaphore's permits, then each
 * operation is an op byte (see decode_op()), a byte choosing what its wakes do (nothing,
 * compare the whole state, unwatch their link, resubmit their waiter, or run another
 * operation from inside the wake) and its arguments (object, waiter slot, amount, reason,
 * deadline and token). Every result, every wake (once, in order, with its status), every
 * waiter's state, every token and the counters are compared with a reference model; a
 * mismatch prints the op and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "coord_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct coord_model *m = coord_model_new();
    if (m == NULL)
        return 0;
    if (coord_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_coord: model mismatch: %s\n", coord_model_error(m));
        abort();
    }
    coord_model_free(m);
    return 0;
}
