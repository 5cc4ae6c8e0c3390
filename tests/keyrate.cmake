# SPDX-License-Identifier: MIT
# tests/keyrate.cmake - keyed rate budgets (include/band/keyrate.h). Included by
# tests/CMakeLists.txt.

band_add_test(NAME test_keyrate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_keyrate.c" TIMEOUT 60 LABELS unit)

# The table against a per-key reference, on random operation sequences over a fake clock
# that also steps back, with rate changes, forgets, full tables of both kinds and several
# shards among the operations (24 seeds x 10^5 operations), then a replay of the fuzz
# corpus. tests/model/keyrate_model.c is shared with fuzz/fuzz_keyrate.c.
band_add_test(NAME model_keyrate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_keyrate.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/keyrate_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_keyrate"
    TIMEOUT 120 LABELS model)

# Eight workers on four shared keys, a thread churning fresh keys through a full table and
# one reading stats and forgetting, on the real clock: no key ever gets more than its
# rate allows, and the counters agree (one shard, then sixteen; about half a second each).
band_add_test(NAME stress_keyrate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_keyrate.c" TIMEOUT 120 LABELS stress)
