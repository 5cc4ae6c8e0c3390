# SPDX-License-Identifier: MIT
# BandWarnings.cmake - the warning set every band target is built with.
#
#   band_target_warnings(<target>)
#
# Adds the warnings below to <target>'s own sources (PRIVATE: nothing leaks to consumers),
# plus -Werror when BAND_WERROR is ON. GCC 12 and Clang 14 both accept every flag.
# -Wconversion matters most: the core does uint64_t permit and byte arithmetic, where a
# silent narrowing is a bug.

include_guard(GLOBAL)

set(BAND_WARNING_FLAGS
    -Wall
    -Wextra
    -Wpedantic
    -Wshadow
    -Wstrict-prototypes
    -Wmissing-prototypes
    -Wcast-align
    -Wformat=2
    -Wundef
    -Wvla
    -Wconversion)

function(band_target_warnings target)
    if(NOT TARGET ${target})
        message(FATAL_ERROR "band_target_warnings: '${target}' is not a target")
    endif()
    if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
        target_compile_options(${target} PRIVATE ${BAND_WARNING_FLAGS})
        if(BAND_WERROR)
            target_compile_options(${target} PRIVATE -Werror)
        endif()
    elseif(MSVC)
        target_compile_options(${target} PRIVATE /W4)
        if(BAND_WERROR)
            target_compile_options(${target} PRIVATE /WX)
        endif()
    endif()
endfunction()
