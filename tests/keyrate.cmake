# SPDX-License-Identifier: MIT
# tests/keyrate.cmake - keyed rate budgets (include/band/keyrate.h). Included by
# tests/CMakeLists.txt.

band_add_test(NAME test_keyrate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_keyrate.c" TIMEOUT 60 LABELS unit)

# The table against a per-key reference, on random operation sequences over a fake clock
# that also steps back, with rate changes, forgets, full tables of both kinds and several
# shards among the operations (24 seeds x 5 x 10^4 operations), then a replay of the fuzz
# corpus. tests/model/keyrate_model.c is shared with fuzz/fuzz_keyrate.c.
band_add_test(NAME model_keyrate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_keyrate.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/keyrate_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_keyrate"
    TIMEOUT 120 LABELS model)
