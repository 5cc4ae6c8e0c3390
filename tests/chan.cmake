# SPDX-License-Identifier: MIT
# tests/chan.cmake - the bounded channel (include/band/chan.h, src/chan.c).
#
# test_chan: exact-outcome unit tests. stress_chan: producers and consumers on blocking,
# async, try and reserve paths with random cancels and deadlines, bounded by iterations
# and a few seconds of wall time per scenario. model_chan: random op sequences over fixed
# seeds checked against a reference model (tests/model/chan_model.c, shared with
# fuzz/fuzz_chan.c), then a replay of the fuzz corpus.

band_add_test(NAME test_chan
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_chan.c"
    TIMEOUT 60 LABELS unit)

# Seven scenarios of about a second each (3x3, 4x1 byte-bounded, 2x2 capacity one, two
# close-in-the-middle, drop-oldest, drop-newest); well under 30 s under TSan on 2 cores.
band_add_test(NAME stress_chan
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_chan.c"
    TIMEOUT 120 LABELS stress)

# The reference-model test: random op sequences over fixed seeds (12 x 10^5 ops), every
# result checked against a plain-array model; chan_model.c is shared with fuzz/fuzz_chan.c,
# and the fuzz corpus is replayed here too, so every build re-checks those inputs.
band_add_test(NAME model_chan
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_chan.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/chan_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_chan"
    TIMEOUT 180 LABELS model)

