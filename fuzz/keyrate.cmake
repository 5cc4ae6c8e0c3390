# SPDX-License-Identifier: MIT
# fuzz/keyrate.cmake - fuzz_keyrate: the keyed rate budgets' op interpreter and per-key
# reference of tests/model/keyrate_model.c driven by libFuzzer's bytes (see
# fuzz/fuzz_keyrate.c). Included by fuzz/CMakeLists.txt after its Clang/TSan checks; ctest
# runs it as test "fuzz_keyrate" (label fuzz, BAND_FUZZ_SECONDS) over
# fuzz/corpus/fuzz_keyrate, which model_keyrate replays too.

band_add_fuzzer(NAME fuzz_keyrate
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_keyrate.c"
        "${PROJECT_SOURCE_DIR}/tests/model/keyrate_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_keyrate PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_keyrate PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_keyrate PRIVATE -fsanitize=address,undefined)
endif()
