# SPDX-License-Identifier: MIT
# BandSanitizers.cmake - BAND_SANITIZE, one cache string like NNG_SANITIZER.
#
#   ""        no sanitizer (default)
#   address   -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
#             (the ASan+UBSan job; build it as Debug)
#   thread    -fsanitize=thread (the TSan job; build it as RelWithDebInfo)
#
# Anything else, "address;thread" included, is a configure error: ASan and TSan cannot share
# a process. The flags are added with add_compile_options()/add_link_options() in the
# directory that includes this file, so they reach every target defined there and below:
# the libraries, tests, benches, examples and fuzz targets alike.

include_guard(GLOBAL)

set(BAND_SANITIZE "" CACHE STRING "Sanitizer for every target: '' | address | thread")
set_property(CACHE BAND_SANITIZE PROPERTY STRINGS "" "address" "thread")

set(BAND_SANITIZE_FLAGS "")
if(BAND_SANITIZE STREQUAL "")
    # plain build
elseif(BAND_SANITIZE STREQUAL "address")
    set(BAND_SANITIZE_FLAGS
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
elseif(BAND_SANITIZE STREQUAL "thread")
    set(BAND_SANITIZE_FLAGS -fsanitize=thread)
else()
    message(FATAL_ERROR
        "BAND_SANITIZE='${BAND_SANITIZE}' is not supported: use '' (none), 'address' "
        "(ASan+UBSan) or 'thread' (TSan); address and thread cannot be combined.")
endif()

if(BAND_SANITIZE_FLAGS)
    if(NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
        message(FATAL_ERROR "BAND_SANITIZE needs GCC or Clang (have ${CMAKE_C_COMPILER_ID})")
    endif()
    add_compile_options(${BAND_SANITIZE_FLAGS})
    add_link_options(${BAND_SANITIZE_FLAGS})
    message(STATUS "band: sanitizer '${BAND_SANITIZE}': ${BAND_SANITIZE_FLAGS}")
endif()

# Environment for every test run under a sanitizer (band_add_test and band_add_fuzzer set
# it as the ctest ENVIRONMENT). Harmless in plain builds.
# A TSan suppression file (third-party false positives only, like libuv's tsansupp.txt) is
# used when tests/tsan.supp exists.
set(_band_tsan_options "halt_on_error=1:second_deadlock_stack=1")
if(EXISTS "${PROJECT_SOURCE_DIR}/tests/tsan.supp")
    string(APPEND _band_tsan_options ":suppressions=${PROJECT_SOURCE_DIR}/tests/tsan.supp")
endif()
set(BAND_SANITIZER_TEST_ENV
    "TSAN_OPTIONS=${_band_tsan_options}"
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
