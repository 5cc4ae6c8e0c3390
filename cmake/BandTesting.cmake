# SPDX-License-Identifier: MIT
# BandTesting.cmake - how band's unit, stress and model tests are built and registered.
#
#   band_add_test(NAME <name> SOURCES <files...>
#                 [TIMEOUT <seconds>]     # default 120
#                 [LABELS <labels...>]    # ctest labels, e.g. unit, stress, model
#                 [ARGS <args...>]        # command-line arguments for the test binary
#                 [LIBRARIES <libs...>])  # extra libraries to link (optional)
#
# Builds executable <name> from SOURCES, linked to band_testing (the library's sources with
# BAND_TESTING defined and src/ on the include path, so "sem_internal.h" and "core/..."
# resolve), cmocka and Threads::Threads, with tests/support on the include path and the
# warning set of BandWarnings.cmake. If a target named band_test_support exists when the
# function is called (a static library of tests/support/*.c), every test links it too.
# Registers it with add_test(NAME <name> COMMAND <name> <args...>), its TIMEOUT and LABELS,
# and the sanitizer environment (halt on the first report, so a race fails the test).
# Tests labelled "stress" are RUN_SERIAL: ctest -j never runs them beside another test.
#
# cmocka: Debian's libcmocka-dev 1.1.5 ships cmocka-config.cmake that defines NO imported
# target, only CMOCKA_LIBRARIES / CMOCKA_INCLUDE_DIR; newer cmocka defines cmocka::cmocka.
# Either way, this file provides the imported target band::cmocka, falling back to
# pkg-config's cmocka.pc when no CMake package is found.

include_guard(GLOBAL)

find_package(Threads REQUIRED)

if(NOT TARGET band::cmocka)
    find_package(cmocka CONFIG QUIET)
    add_library(band::cmocka INTERFACE IMPORTED GLOBAL)
    if(TARGET cmocka::cmocka)
        target_link_libraries(band::cmocka INTERFACE cmocka::cmocka)
        set(_band_cmocka_how "cmocka::cmocka")
    elseif(TARGET cmocka)
        target_link_libraries(band::cmocka INTERFACE cmocka)
        set(_band_cmocka_how "target cmocka")
    elseif(cmocka_FOUND AND CMOCKA_LIBRARIES AND EXISTS "${CMOCKA_LIBRARY}")
        target_link_libraries(band::cmocka INTERFACE ${CMOCKA_LIBRARIES})
        if(CMOCKA_INCLUDE_DIR)
            target_include_directories(band::cmocka INTERFACE ${CMOCKA_INCLUDE_DIR})
        endif()
        set(_band_cmocka_how "cmocka-config.cmake (${CMOCKA_LIBRARIES})")
    else()
        find_package(PkgConfig QUIET)
        if(PKG_CONFIG_FOUND)
            pkg_check_modules(BAND_CMOCKA QUIET IMPORTED_TARGET cmocka)
        endif()
        if(BAND_CMOCKA_FOUND)
            target_link_libraries(band::cmocka INTERFACE PkgConfig::BAND_CMOCKA)
            set(_band_cmocka_how "pkg-config cmocka ${BAND_CMOCKA_VERSION}")
        else()
            message(FATAL_ERROR
                "band tests need cmocka (Debian: apt-get install libcmocka-dev, or run "
                "'make deps'), or configure with -DBAND_BUILD_TESTS=OFF.")
        endif()
    endif()
    message(STATUS "band: cmocka from ${_band_cmocka_how}")
    unset(_band_cmocka_how)
endif()

set(BAND_TEST_SUPPORT_DIR "${PROJECT_SOURCE_DIR}/tests/support")

function(band_add_test)
    cmake_parse_arguments(PARSE_ARGV 0 BAT "" "NAME;TIMEOUT" "SOURCES;LABELS;ARGS;LIBRARIES")
    if(BAT_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "band_add_test: unknown arguments: ${BAT_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT BAT_NAME)
        message(FATAL_ERROR "band_add_test: NAME is required")
    endif()
    if(NOT BAT_SOURCES)
        message(FATAL_ERROR "band_add_test(${BAT_NAME}): SOURCES is required")
    endif()
    if(NOT BAT_TIMEOUT)
        set(BAT_TIMEOUT 120)
    endif()

    add_executable(${BAT_NAME} ${BAT_SOURCES})
    target_include_directories(${BAT_NAME} PRIVATE "${BAND_TEST_SUPPORT_DIR}")
    target_link_libraries(${BAT_NAME} PRIVATE band_testing band::cmocka Threads::Threads)
    if(TARGET band_test_support AND NOT BAT_NAME STREQUAL "band_test_support")
        target_link_libraries(${BAT_NAME} PRIVATE band_test_support)
    endif()
    if(BAT_LIBRARIES)
        target_link_libraries(${BAT_NAME} PRIVATE ${BAT_LIBRARIES})
    endif()
    band_target_warnings(${BAT_NAME})

    add_test(NAME ${BAT_NAME} COMMAND ${BAT_NAME} ${BAT_ARGS})
    set_tests_properties(${BAT_NAME} PROPERTIES
        TIMEOUT ${BAT_TIMEOUT}
        ENVIRONMENT "${BAND_SANITIZER_TEST_ENV}")
    if(BAT_LABELS)
        set_tests_properties(${BAT_NAME} PROPERTIES LABELS "${BAT_LABELS}")
    endif()
    # Stress tests load every core and are bounded by wall time: never run them beside
    # another test under `ctest -j` (CI machines have 2 cores).
    if("stress" IN_LIST BAT_LABELS)
        set_tests_properties(${BAT_NAME} PROPERTIES RUN_SERIAL ON)
    endif()
endfunction()
