# SPDX-License-Identifier: MIT
# fuzz/relay.cmake - fuzz_relay: the op interpreter and reference model of
# tests/model/relay_model.c driven by libFuzzer's bytes (fuzz/fuzz_relay.c). Included by
# fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as "fuzz_relay" (label
# fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_relay.

band_add_fuzzer(NAME fuzz_relay
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_relay.c"
        "${PROJECT_SOURCE_DIR}/tests/model/relay_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_relay PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")
if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_relay PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_relay PRIVATE -fsanitize=address,undefined)
endif()
