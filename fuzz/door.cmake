# SPDX-License-Identifier: MIT
# fuzz/door.cmake - fuzz_door: the front door's op interpreter and reference model of
# tests/model/door_model.c driven by libFuzzer's bytes (see fuzz/fuzz_door.c). Included by
# fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test "fuzz_door"
# (label fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_door, which model_door replays.

band_add_fuzzer(NAME fuzz_door
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_door.c"
        "${PROJECT_SOURCE_DIR}/tests/model/door_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_door PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_door PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_door PRIVATE -fsanitize=address,undefined)
endif()
