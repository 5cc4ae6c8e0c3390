/* SPDX-License-Identifier: MIT */
/*
 * fuzz_oneshot.c - libFuzzer target for band_oneshot.
 *
 * The input bytes are an operation sequence for the interpreter in
 * tests/model/oneshot_model.c (the same one tests/model/model_oneshot.c runs from fixed
 * seeds): the first byte chooses the value size (0, 1, 8 or 24 bytes), then each
 * operation is an op byte, a byte choosing what its wakes do (nothing, read the counters,
 * poll, resubmit their op, destroy the oneshot) and its arguments: send, close,
 * try_recv, recv with a past, short or unbounded deadline, recv_async, cancel,
 * receiver_drop, destroy while busy, misuse, or recreate. Every result, every wake (once,
 * with its status and the value in its buffer), every op's state and the counters are
 * compared with a reference model; a mismatch prints the op and aborts, which libFuzzer
 * reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "oneshot_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct oneshot_model *m = oneshot_model_new();
    if (m == NULL)
        return 0;
    if (oneshot_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_oneshot: model mismatch: %s\n", oneshot_model_error(m));
        abort();
    }
    oneshot_model_free(m);
    return 0;
}
