# fuzz/oneshot_watch.cmake - fuzz_oneshot: the op interpreter and reference model of
# tests/model/oneshot_model.c driven by libFuzzer's bytes (see fuzz/fuzz_oneshot.c).
# Included by fuzz/CMakeLists.txt after its Clang/TSan checks; ctest runs it as test
# "fuzz_oneshot" (label fuzz, BAND_FUZZ_SECONDS) over fuzz/corpus/fuzz_oneshot.

foreach(_prim IN ITEMS oneshot)
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
