# SPDX-License-Identifier: MIT
# fuzz/fair.cmake - fuzz_fair: the fair-share op interpreter and reference model of
# tests/model/fair_model.c driven by libFuzzer's bytes (see fuzz/fuzz_fair.c). Included by
# fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test "fuzz_fair"
# (label fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_fair, which tests/model/model_fair.c
# also replays in every build.

band_add_fuzzer(NAME fuzz_fair
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_fair.c"
        "${PROJECT_SOURCE_DIR}/tests/model/fair_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_fair PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_fair PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_fair PRIVATE -fsanitize=address,undefined)
endif()
