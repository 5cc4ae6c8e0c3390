# SPDX-License-Identifier: MIT
# fuzz/broadcast.cmake - fuzz_broadcast: the op interpreter and reference model of
# tests/model/broadcast_model.c (lossy and lossless broadcasts) driven by libFuzzer's bytes
# (see fuzz/fuzz_broadcast.c). Included by fuzz/CMakeLists.txt after its Clang/TSan
# checks; ctest runs it as test "fuzz_broadcast" (label fuzz, BAND_FUZZ_SECONDS) over
# fuzz/corpus/fuzz_broadcast.

band_add_fuzzer(NAME fuzz_broadcast
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_broadcast.c"
        "${PROJECT_SOURCE_DIR}/tests/model/broadcast_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_broadcast PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_broadcast PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_broadcast PRIVATE -fsanitize=address,undefined)
endif()
