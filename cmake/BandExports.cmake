# SPDX-License-Identifier: MIT
# BandExports.cmake - the shared libraries export their public API and nothing else.
#
#   band_export_map(<target> <lib> <node>)
#       Links the shared library <target> with a GNU ld version script that exports exactly
#       the functions <lib>'s installed headers declare with its export macro, all in
#       version node <node>, and makes every other symbol local. scripts/check_exports.sh
#       writes the script at configure time (build/exports/lib<lib>.map); editing or
#       adding a header re-runs CMake. Where the linker takes no version script (not GNU ld,
#       gold, lld or mold), nothing is added and hidden visibility alone limits the exports.
#   band_add_export_test(<target> <lib>)
#       Registers the ctest test exports_<lib> (labels unit and lint): scripts/check_exports.sh
#       compares `nm -D --defined-only` of <target>'s file with <lib>'s headers, both ways,
#       and checks that every export carries <target>'s version node.
#
# <lib> is band, band-uv or band-fd (scripts/check_exports.sh knows their headers and
# export macros). BAND_ABI_VERSION names the nodes: "0.<minor>" before 1.0, where every
# minor release may change the ABI, and "<major>" from 1.0 on, so a node changes exactly
# when binaries built against the old one cannot run against the new library.
# BAND_SOVERSION, the SOVERSION of libband, libband-uv and libband-fd, is the same string,
# so the sonames (libband.so.0.<minor>, libband.so.<major> from 1.0 on) and the nodes
# (BAND_0.<minor>, BAND_UV_0.<minor>, BAND_FD_0.<minor>) always change together
# (docs/abi.md).

include_guard(GLOBAL)
include(CheckLinkerFlag)

if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(BAND_ABI_VERSION "0.${PROJECT_VERSION_MINOR}")
else()
    set(BAND_ABI_VERSION "${PROJECT_VERSION_MAJOR}")
endif()
set(BAND_SOVERSION "${BAND_ABI_VERSION}")

set(BAND_EXPORTS_SCRIPT "${PROJECT_SOURCE_DIR}/scripts/check_exports.sh")
set(BAND_EXPORTS_DIR "${PROJECT_BINARY_DIR}/exports")
find_program(BAND_BASH bash)

if(NOT DEFINED BAND_HAVE_VERSION_SCRIPT)
    set(_probe "${BAND_EXPORTS_DIR}/probe.map")
    file(WRITE "${_probe}" "BAND_PROBE { global: *; };\n")
    check_linker_flag(C "LINKER:--version-script=${_probe}" BAND_HAVE_VERSION_SCRIPT)
    unset(_probe)
endif()

function(band_export_map target lib node)
    if(NOT BAND_HAVE_VERSION_SCRIPT OR NOT BAND_BASH OR APPLE OR WIN32)
        message(STATUS "band: no linker version script for ${target} (the linker takes "
            "none): hidden visibility alone limits its exports")
        return()
    endif()
    execute_process(
        COMMAND "${BAND_BASH}" "${BAND_EXPORTS_SCRIPT}" map ${lib} ${node}
        OUTPUT_VARIABLE _map
        ERROR_VARIABLE _err
        RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "band: scripts/check_exports.sh map ${lib} failed:\n${_err}")
    endif()
    # Rewritten only when it changes, so a re-configure does not relink.
    set(_file "${BAND_EXPORTS_DIR}/lib${lib}.map")
    set(_old "")
    if(EXISTS "${_file}")
        file(READ "${_file}" _old)
    endif()
    if(NOT _old STREQUAL _map)
        file(WRITE "${_file}" "${_map}")
    endif()
    execute_process(
        COMMAND "${BAND_BASH}" "${BAND_EXPORTS_SCRIPT}" headers ${lib}
        OUTPUT_VARIABLE _headers
        RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "band: scripts/check_exports.sh headers ${lib} failed")
    endif()
    string(STRIP "${_headers}" _headers)
    string(REPLACE "\n" ";" _headers "${_headers}")
    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
        "${BAND_EXPORTS_SCRIPT}" "${PROJECT_SOURCE_DIR}/scripts/header_decls.awk" ${_headers})
    # A header added to those directories re-runs CMake too.
    set(_dirs "")
    foreach(_h IN LISTS _headers)
        get_filename_component(_d "${_h}" DIRECTORY)
        list(APPEND _dirs "${_d}")
    endforeach()
    list(REMOVE_DUPLICATES _dirs)
    foreach(_d IN LISTS _dirs)
        file(GLOB _unused CONFIGURE_DEPENDS "${_d}/*.h")
    endforeach()
    target_link_options(${target} PRIVATE "LINKER:--version-script=${_file}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_file}")
    set_property(TARGET ${target} PROPERTY BAND_EXPORT_NODE "${node}")
endfunction()

function(band_add_export_test target lib)
    if(NOT BAND_BASH OR NOT CMAKE_NM OR APPLE OR WIN32)
        message(STATUS "band: exports_${lib} is not registered (needs bash and nm)")
        return()
    endif()
    get_target_property(_node ${target} BAND_EXPORT_NODE)
    if(NOT _node)
        set(_node "")
    endif()
    add_test(NAME exports_${lib}
        COMMAND "${BAND_BASH}" "${BAND_EXPORTS_SCRIPT}" check ${lib} "$<TARGET_FILE:${target}>"
            ${_node})
    set_tests_properties(exports_${lib} PROPERTIES
        LABELS "unit;lint"
        TIMEOUT 60
        ENVIRONMENT "NM=${CMAKE_NM}")
endfunction()
