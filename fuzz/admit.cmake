# SPDX-License-Identifier: MIT
# fuzz/admit.cmake - fuzz_admit: the multi-budget admission op interpreter and reference
# model of tests/model/admit_model.c driven by libFuzzer's bytes (see fuzz/fuzz_admit.c).
# Included by fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test
# "fuzz_admit" (label fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_admit.

band_add_fuzzer(NAME fuzz_admit
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_admit.c"
        "${PROJECT_SOURCE_DIR}/tests/model/admit_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_admit PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_admit PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_admit PRIVATE -fsanitize=address,undefined)
endif()
