/* SPDX-License-Identifier: MIT */
/*
 * fuzz_relay.c - libFuzzer target for band_relay.
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/relay_model.c
 * (the one tests/model/model_relay.c runs from fixed seeds): pairs of an op byte and an
 * argument byte choosing the waiter, the status or reason, and whether its wake parks it
 * again. Every result, wake, cancel hook call and waiter state is compared with a reference
 * model; a mismatch prints the op and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "relay_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct relay_model *m = relay_model_new();
    if (m == NULL)
        return 0;
    if (relay_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_relay: model mismatch: %s\n", relay_model_error(m));
        abort();
    }
    relay_model_free(m);
    return 0;
}
