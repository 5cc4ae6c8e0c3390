/* SPDX-License-Identifier: MIT */
/*
 * fuzz_watch.c - libFuzzer target for band_watch.
 *
 * The input bytes are an operation sequence for the interpreter in
 * tests/model/watch_model.c (the same one tests/model/model_watch.c runs from fixed
 * seeds): the first byte chooses the value size, the initial value and whether the
 * version starts next to UINT64_MAX, then each operation is an op byte, a byte choosing
 * what its wakes do (nothing, read the counters or the value, poll, wait again, send,
 * close, or a choice per wake) and its arguments: send, close, read, rx_init, rx_read or
 * mark_seen, try_recv, recv with a past, short or unbounded deadline,
 * recv_async, cancel, destroy while busy, misuse, or recreate. Every result, every
 * wake (once, in order, with its status, version and value), every op's state, each
 * cursor and the counters are compared with a reference model; a mismatch prints the op
 * and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "watch_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct watch_model *m = watch_model_new();
    if (m == NULL)
        return 0;
    if (watch_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_watch: model mismatch: %s\n", watch_model_error(m));
        abort();
    }
    watch_model_free(m);
    return 0;
}
