# SPDX-License-Identifier: MIT
# tests/oneshot_watch.cmake - band_oneshot and band_watch (include/band/oneshot.h, watch.h).
# Included by tests/CMakeLists.txt, which defines band_add_test() and band_test_support.

band_add_test(NAME test_oneshot
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_oneshot.c"
    TIMEOUT 60 LABELS unit)
band_add_test(NAME test_watch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_watch.c"
    TIMEOUT 60 LABELS unit)

# Watch: one sender, many receivers (blocking, async with racing cancels, polling) checking
# monotonic versions, consistent values and that the last version is always observed.
# Oneshot: ping-pong rounds with racing sends, drops, deadlines and cancels, checking that
# every value has exactly one owner. Bounded by iterations and wall time (a few seconds per
# scenario, also under TSan on 2 cores).
band_add_test(NAME stress_watch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_watch.c"
    TIMEOUT 120 LABELS stress)

# The reference-model tests: random op sequences over fixed seeds, every result, wake and
# counter checked against a small model written in the test (tests/model/oneshot_model.c,
# watch_model.c, shared with fuzz/fuzz_oneshot.c and fuzz/fuzz_watch.c), then a replay of
# the fuzz corpus, so every build re-checks those inputs. Bounded by operations per seed
# and by BAND_MODEL_SECONDS of wall time (default 6).
band_add_test(NAME model_oneshot
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_oneshot.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/oneshot_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_oneshot"
    TIMEOUT 180 LABELS model)
band_add_test(NAME model_watch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_watch.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/watch_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_watch"
    TIMEOUT 180 LABELS model)
