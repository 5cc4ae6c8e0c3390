# SPDX-License-Identifier: MIT
# BandFuzz.cmake - libFuzzer targets (BAND_BUILD_FUZZ=ON, Clang only).
#
# Defines band_fuzzing: a static library of the same sources as band_testing (BAND_TESTING
# and BAND_FUZZING defined, src/ on the public include path), compiled with coverage
# instrumentation (-fsanitize=fuzzer-no-link). Linking it adds -fsanitize=fuzzer to the
# consumer's compile and link, so a fuzz target only has to define LLVMFuzzerTestOneInput.
# Combine with BAND_SANITIZE=address (ASan+UBSan) for useful crashes; `make check` does.
#
#   band_add_fuzzer(NAME <name> SOURCES <files...>
#                   [CORPUS <dir>]          # seed corpus, default fuzz/corpus/<name>
#                   [SECONDS <n>]           # -max_total_time for the ctest run,
#                                           #   default BAND_FUZZ_SECONDS (30)
#                   [ARGS <libFuzzer args...>]
#                   [LABELS <labels...>])   # "fuzz" is always added
#
# The ctest case runs `<name> -max_total_time=<n> ... <build>/corpus/<name> <CORPUS>`:
# new inputs go to the build tree, never into the source corpus, and crash/leak/timeout
# artifacts are written into the build directory as <name>-crash-<sha1>. Minimise a
# corpus by hand with `<name> -merge=1 fuzz/corpus/<name> <build>/corpus/<name>`.

include_guard(GLOBAL)

set(BAND_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzz target runs under ctest")

function(band_add_fuzzer)
    cmake_parse_arguments(PARSE_ARGV 0 BAF "" "NAME;CORPUS;SECONDS" "SOURCES;ARGS;LABELS")
    if(BAF_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "band_add_fuzzer: unknown arguments: ${BAF_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT BAF_NAME OR NOT BAF_SOURCES)
        message(FATAL_ERROR "band_add_fuzzer: NAME and SOURCES are required")
    endif()
    if(NOT TARGET band_fuzzing)
        message(FATAL_ERROR "band_add_fuzzer: needs BAND_BUILD_FUZZ=ON (target band_fuzzing)")
    endif()
    if(NOT BAF_SECONDS)
        set(BAF_SECONDS ${BAND_FUZZ_SECONDS})
    endif()
    if(NOT BAF_CORPUS)
        set(BAF_CORPUS "${PROJECT_SOURCE_DIR}/fuzz/corpus/${BAF_NAME}")
    endif()

    add_executable(${BAF_NAME} ${BAF_SOURCES})
    target_link_libraries(${BAF_NAME} PRIVATE band_fuzzing Threads::Threads)
    band_target_warnings(${BAF_NAME})

    set(_work "${CMAKE_CURRENT_BINARY_DIR}/corpus/${BAF_NAME}")
    file(MAKE_DIRECTORY "${_work}")
    set(_dirs "${_work}")
    if(EXISTS "${BAF_CORPUS}")
        list(APPEND _dirs "${BAF_CORPUS}")
    endif()
    add_test(NAME ${BAF_NAME}
        COMMAND ${BAF_NAME}
            -max_total_time=${BAF_SECONDS}
            -timeout=10
            -rss_limit_mb=4096
            -print_final_stats=1
            "-artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/${BAF_NAME}-"
            ${BAF_ARGS}
            ${_dirs})
    math(EXPR _timeout "${BAF_SECONDS} + 120")
    set(_labels fuzz ${BAF_LABELS})
    set_tests_properties(${BAF_NAME} PROPERTIES
        TIMEOUT ${_timeout}
        LABELS "${_labels}"
        ENVIRONMENT "${BAND_SANITIZER_TEST_ENV}")
endfunction()
