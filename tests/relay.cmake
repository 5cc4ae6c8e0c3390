# SPDX-License-Identifier: MIT
# tests/relay.cmake - band_relay (include/band/relay.h): waiters completed by outside code.
# Included by tests/CMakeLists.txt, which defines band_add_test() and band_test_support.

# Argument checks, park/complete/cancel in every order, the cancel hook, a wake that frees
# its waiter, and 2000 waiters whose completes race cancels and each other on six threads
# (each ends exactly once).
band_add_test(NAME test_relay
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_relay.c"
    TIMEOUT 60 LABELS unit)

# The reference-model test: random op sequences over fixed seeds, every result, wake, cancel
# hook call and waiter state checked against a small model (tests/model/relay_model.c,
# shared with fuzz/fuzz_relay.c), then a replay of the fuzz corpus. Bounded by operations
# per seed and by BAND_MODEL_SECONDS of wall time (default 4).
band_add_test(NAME model_relay
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_relay.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/relay_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_relay"
    TIMEOUT 120 LABELS model)
