# SPDX-License-Identifier: MIT
# tests/rate.cmake - the rate budget (include/band/rate.h). Included by tests/CMakeLists.txt.

band_add_test(NAME test_rate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_rate.c" TIMEOUT 60 LABELS unit)

# The rate budget against an independently written token bucket, on random operation
# sequences over a fake clock that also steps back, with rate and burst changes among the
# operations (24 seeds x 10^5 operations), then a replay of the fuzz corpus.
# tests/model/rate_model.c is shared with fuzz/fuzz_rate.c, so every build re-checks the
# inputs the fuzzer kept.
band_add_test(NAME model_rate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_rate.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/rate_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_rate"
    TIMEOUT 120 LABELS model)

# Threads trying, booking and cancelling on the real clock: the rate is never exceeded and
# the counters agree; then the same while a fifth thread keeps changing the burst (two
# scenarios of about half a second each).
band_add_test(NAME stress_rate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_rate.c" TIMEOUT 120 LABELS stress)

# The lock-free try_acquire under compare-and-swap races: eight threads (more than CI's
# cores) on a fake clock frozen in phases, where the tokens granted, what is left, every
# retry-after and the counters must match an integer reference exactly; then eight threads
# on the real clock, where the rate is never exceeded.
band_add_test(NAME stress_rate_cas
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_rate_cas.c" TIMEOUT 120 LABELS stress)
