/* SPDX-License-Identifier: MIT */
/*
 * fuzz_shm_ops.c - libFuzzer target for operation sequences on a valid shared segment.
 *
 * The input bytes are an operation sequence for the two-process interpreter of
 * tests/model/shm_model.c (the one tests/model/model_shm.c runs from fixed seeds): the
 * first bytes choose the bound's capacity, then each op byte picks the process that runs
 * it (this one or a forked child with its own handle on the same segment) and one of try,
 * acquire with a past or a 1 ms deadline, async, release, reduce, grow, drain, cancel,
 * close and recreate, destroy while busy, stats. Every result, wake, counter and listing
 * is compared with the reference model; a mismatch prints the op and aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shm_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct shm_model *m;
    if (m == NULL && (m = shm_model_new()) == NULL)
        return 0;
    if (shm_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_shm_ops: model mismatch: %s\n", shm_model_error(m));
        abort();
    }
    return 0;
}
