/* SPDX-License-Identifier: MIT */
/*
 * fuzz_broadcast.c - libFuzzer target for band_broadcast (lossy and lossless).
 *
 * The input bytes are an operation sequence for the interpreter in
 * tests/model/broadcast_model.c (the same one tests/model/model_broadcast.c runs from
 * fixed seeds): the first byte chooses the mode (lossy or lossless), the capacity (1-6)
 * and the element size, then each operation is an op byte, a byte choosing what its
 * wakes do (nothing, read the counters, reply, submit again, poll, unsubscribe, close, or
 * a choice per wake) and its arguments: try_send, send with a past, short or unbounded
 * deadline, send_async, try_recv, recv, recv_async, cancel of a send or a receive,
 * subscribe, unsubscribe, close, destroy while busy, misuse, or recreate. Every result,
 * every message and lag, every wake (once, per kind in order, with its status and
 * message), every op's state, each receiver's lag and backlog, the counters and
 * band__broadcast_check() are compared with a reference model; a mismatch prints the op
 * and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "broadcast_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct broadcast_model *m = broadcast_model_new();
    if (m == NULL)
        return 0;
    if (broadcast_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_broadcast: model mismatch: %s\n", broadcast_model_error(m));
        abort();
    }
    broadcast_model_free(m);
    return 0;
}
