# SPDX-License-Identifier: MIT
# fuzz/coord.cmake - fuzz_coord: the op interpreter and reference model of
# tests/model/coord_model.c (wait groups, latches, shutdown scopes with watch links and
# tokens) driven by libFuzzer's bytes (see fuzz/fuzz_coord.c). Included by
# fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test "fuzz_coord"
# (label fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_coord.

band_add_fuzzer(NAME fuzz_coord
    SOURCES
        "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_coord.c"
        "${PROJECT_SOURCE_DIR}/tests/model/coord_model.c"
        "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
    ARGS -seed=1)
target_include_directories(fuzz_coord PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

if(NOT BAND_SANITIZE STREQUAL "address")
    target_compile_options(fuzz_coord PRIVATE
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(fuzz_coord PRIVATE -fsanitize=address,undefined)
endif()
