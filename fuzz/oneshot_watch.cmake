# SPDX-License-Identifier: MIT
# fuzz/oneshot_watch.cmake - fuzz_oneshot and fuzz_watch: the op interpreters and reference
# models of tests/model/oneshot_model.c and tests/model/watch_model.c driven by libFuzzer's
# bytes (see fuzz/fuzz_oneshot.c, fuzz/fuzz_watch.c). Included by fuzz/CMakeLists.txt after
# its Clang/TSan checks; ctest runs them as tests "fuzz_oneshot" and "fuzz_watch" (label
# fuzz, BAND_FUZZ_SECONDS each) over fuzz/corpus/fuzz_oneshot and fuzz/corpus/fuzz_watch.

foreach(_prim IN ITEMS oneshot watch)
    band_add_fuzzer(NAME fuzz_${_prim}
        SOURCES
            "${CMAKE_CURRENT_SOURCE_DIR}/fuzz_${_prim}.c"
            "${PROJECT_SOURCE_DIR}/tests/model/${_prim}_model.c"
            "${PROJECT_SOURCE_DIR}/tests/model/model_input.c"
        ARGS -seed=1)
    target_include_directories(fuzz_${_prim} PRIVATE "${PROJECT_SOURCE_DIR}/tests/model")

    if(NOT BAND_SANITIZE STREQUAL "address")
        target_compile_options(fuzz_${_prim} PRIVATE
            -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
        target_link_options(fuzz_${_prim} PRIVATE -fsanitize=address,undefined)
    endif()
endforeach()
unset(_prim)
