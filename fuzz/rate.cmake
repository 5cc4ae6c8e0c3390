# SPDX-License-Identifier: MIT
# fuzz/rate.cmake - fuzz_rate: the rate budget's op interpreter and reference token bucket
# of tests/model/rate_model.c driven by libFuzzer's bytes (see fuzz/fuzz_rate.c). Included
# by fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test "fuzz_rate"
# (label fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_rate, which model_rate replays too.

band_add_fuzzer(NAME fuzz_rate
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_rate.c"
        "${PROJECT_SOURCE_DIR}/tests/model/rate_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_rate PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_rate PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_rate PRIVATE -fsanitize=address,undefined)
endif()
