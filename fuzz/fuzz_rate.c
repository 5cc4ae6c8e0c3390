/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rate.c - libFuzzer target for the rate budget.
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/rate_model.c
 * (the same one tests/model/model_rate.c runs from fixed seeds): the first bytes choose an
 * exact or an extreme run, the bucket's settings and the fake clock's start, then each op
 * byte selects try, reserve, wait, cancel, a clock step forward, back or to the ends of the
 * band_time range, band_rate_set(), available, stats, close or recreate, followed by its
 * arguments. Every result is compared with a reference token bucket (exactly, or against
 * the contract where the settings are too large for the reference to follow); a mismatch
 * prints the op and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rate_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rate_model *m = rate_model_new();
    if (m == NULL)
        return 0;
    if (rate_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_rate: model mismatch: %s\n", rate_model_error(m));
        abort();
    }
    rate_model_free(m);
    return 0;
}
