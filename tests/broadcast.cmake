# SPDX-License-Identifier: MIT
# tests/broadcast.cmake - band_broadcast: exact-outcome unit tests and the stress test
# (included by tests/CMakeLists.txt, in name order, like every fragment).

band_add_test(NAME test_broadcast
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_broadcast.c"
    TIMEOUT 60 LABELS unit)

# Senders and receivers on one lossless and one lossy broadcast; bounded by iterations and
# a few seconds of wall time per scenario (2 cores, TSan and ASan in CI).
band_add_test(NAME stress_broadcast
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_broadcast.c"
    TIMEOUT 120 LABELS stress)

# The reference-model test: random op sequences over fixed seeds on lossy and lossless
# broadcasts, every result, wake, lag and counter checked against a small model written
# in the test (tests/model/broadcast_model.c, shared with fuzz/fuzz_broadcast.c), then a
# replay of the fuzz corpus, so every build re-checks those inputs. Bounded by operations
# per seed and by BAND_MODEL_SECONDS of wall time (default 6).
band_add_test(NAME model_broadcast
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_broadcast.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/broadcast_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_broadcast"
    TIMEOUT 180 LABELS model)
