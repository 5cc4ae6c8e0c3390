# SPDX-License-Identifier: MIT
# tests/overload.cmake - overload answers and the front door (include/band/answer.h and
# include/band/front_door.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_overload
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_overload.c" TIMEOUT 60 LABELS unit)

# The reference-model test: random op sequences over fixed seeds (12 x 50000 ops) of
# door admissions, done() calls and other users of the same semaphore, rate budget and
# backlog on a fake clock, every answer checked against a small model
# (tests/model/door_model.c, shared with fuzz/fuzz_door.c); the fuzz corpus is replayed too.
band_add_test(NAME model_door
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_door.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/door_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_door"
    TIMEOUT 180 LABELS model)
