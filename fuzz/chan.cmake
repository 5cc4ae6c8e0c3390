# SPDX-License-Identifier: MIT
# fuzz/chan.cmake - fuzz_chan: the channel op interpreter and reference model of
# tests/model/chan_model.c driven by libFuzzer's bytes (see fuzz/fuzz_chan.c). Included by
# fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test "fuzz_chan"
# (label fuzz, BAND_FUZZ_SECONDS = 30 s) over fuzz/corpus/fuzz_chan.

band_add_fuzzer(NAME fuzz_chan
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_chan.c"
        "${PROJECT_SOURCE_DIR}/tests/model/chan_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_chan PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_chan PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_chan PRIVATE -fsanitize=address,undefined)
endif()
