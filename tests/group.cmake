# SPDX-License-Identifier: MIT
# tests/group.cmake - the coordination objects: the wait group (include/band/group.h), the
# latch (latch.h) and the shutdown scope (shutdown.h). Included by tests/CMakeLists.txt.

band_add_test(NAME test_group
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_latch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_latch.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_shutdown
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_shutdown.c" TIMEOUT 60 LABELS unit)

# Threads on wait groups, latches and shutdown scopes (with watch links on a semaphore);
# bounded by iterations and a few seconds of wall time per scenario.
band_add_test(NAME stress_group
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_group.c" TIMEOUT 120 LABELS stress)

# The reference-model test: random op sequences over fixed seeds on two wait groups, two
# latches and two shutdown scopes (with watch links on semaphore waiters and tokens), every
# result, wake and counter checked against a small model written in the test
# (tests/model/coord_model.c, shared with fuzz/fuzz_coord.c), then a replay of the fuzz
# corpus, so every build re-checks those inputs. Bounded by operations per seed and by
# BAND_MODEL_SECONDS of wall time (default 6).
band_add_test(NAME model_coord
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_coord.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/coord_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_coord"
    TIMEOUT 180 LABELS model)
