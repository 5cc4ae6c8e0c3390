# SPDX-License-Identifier: MIT
# BandUninstall.cmake - remove what the last install from a build tree installed.
#
#   cmake -DBAND_BUILD_DIR=<build> -P cmake/BandUninstall.cmake
#
# Removes every file listed in <build>/install_manifest.txt (written by CMake at every
# install, without DESTDIR), under the DESTDIR of that install (<build>/install_destdir.txt,
# written by cmake/BandInstallDirs.cmake.in; the environment's DESTDIR when that file is
# missing), then removes, deepest first, each directory
# that is now empty and either is listed in <build>/install_dirs.txt (directories the
# install created: cmake/BandInstall.cmake) or lies at or under a directory named "band"
# below the prefix (<build>/install_root.txt) that held a removed file (include/band,
# lib/cmake/band, share/doc/band/...). A file that is already gone is reported and
# skipped; a directory that is not empty stays. Fails when <build> has no manifest (nothing was installed from it) or a file cannot be removed.

cmake_minimum_required(VERSION 3.21)

if(NOT BAND_BUILD_DIR)
    message(FATAL_ERROR "BandUninstall.cmake: pass -DBAND_BUILD_DIR=<build tree>")
endif()
set(_manifest "${BAND_BUILD_DIR}/install_manifest.txt")
if(NOT EXISTS "${_manifest}")
    message(FATAL_ERROR "band uninstall: ${_manifest} does not exist: nothing was installed "
        "from ${BAND_BUILD_DIR}")
endif()

set(_root "")
if(EXISTS "${BAND_BUILD_DIR}/install_root.txt")
    file(STRINGS "${BAND_BUILD_DIR}/install_root.txt" _root LIMIT_COUNT 1)
endif()
# band_norm(<var>) - <var> as a normal path (no "//", ".", "..") without a trailing "/"
macro(band_norm var)
    cmake_path(SET ${var} NORMALIZE "${${var}}")
    if(NOT ${var} STREQUAL "/")
        string(REGEX REPLACE "/+$" "" ${var} "${${var}}")
    endif()
endmacro()
if(_root)
    band_norm(_root)
endif()

set(_destdir "$ENV{DESTDIR}")
if(EXISTS "${BAND_BUILD_DIR}/install_destdir.txt")
    file(STRINGS "${BAND_BUILD_DIR}/install_destdir.txt" _line REGEX "^DESTDIR=" LIMIT_COUNT 1)
    string(REGEX REPLACE "^DESTDIR=" "" _destdir "${_line}")
endif()
if(NOT _destdir STREQUAL "")
    message(STATUS "band uninstall: under DESTDIR ${_destdir}")
endif()

file(STRINGS "${_manifest}" _files)
list(REMOVE_DUPLICATES _files) # a header two adapters install is listed twice
set(_removed 0)
set(_dirs "")
foreach(_f IN LISTS _files)
    if(_f STREQUAL "")
        continue()
    endif()
    set(_f "${_destdir}${_f}")
    if(EXISTS "${_f}" OR IS_SYMLINK "${_f}")
        message(STATUS "Uninstalling: ${_f}")
        file(REMOVE "${_f}")
        if(EXISTS "${_f}" OR IS_SYMLINK "${_f}")
            message(FATAL_ERROR "band uninstall: could not remove ${_f}")
        endif()
        math(EXPR _removed "${_removed} + 1")
    else()
        message(STATUS "Already gone: ${_f}")
    endif()
    # The directories at or under a "band" directory on the way up from this file.
    set(_d "${_f}")
    band_norm(_d)
    get_filename_component(_d "${_d}" DIRECTORY)
    set(_chain "")
    while(_root AND NOT _d STREQUAL _root AND NOT _d STREQUAL "/" AND NOT _d STREQUAL "")
        list(APPEND _chain "${_d}")
        get_filename_component(_name "${_d}" NAME)
        if(_name STREQUAL "band")
            list(APPEND _dirs ${_chain})
            break()
        endif()
        get_filename_component(_d "${_d}" DIRECTORY)
    endwhile()
endforeach()

if(EXISTS "${BAND_BUILD_DIR}/install_dirs.txt")
    file(STRINGS "${BAND_BUILD_DIR}/install_dirs.txt" _created)
    list(APPEND _dirs ${_created})
endif()
list(REMOVE_ITEM _dirs "")
list(REMOVE_DUPLICATES _dirs)

# Deepest first: sort by the number of path components, longest first.
set(_keyed "")
foreach(_d IN LISTS _dirs)
    string(REGEX MATCHALL "/" _slashes "${_d}")
    list(LENGTH _slashes _n)
    math(EXPR _k "1000 + ${_n}")
    list(APPEND _keyed "${_k}|${_d}")
endforeach()
list(SORT _keyed ORDER DESCENDING)
foreach(_e IN LISTS _keyed)
    string(REGEX REPLACE "^[0-9]+\\|" "" _d "${_e}")
    if(IS_DIRECTORY "${_d}" AND NOT IS_SYMLINK "${_d}")
        # rmdir removes only an empty directory, hidden files included.
        execute_process(COMMAND rmdir "${_d}" RESULT_VARIABLE _rc ERROR_QUIET)
        if(_rc EQUAL 0)
            message(STATUS "Removed empty directory: ${_d}")
        endif()
    endif()
endforeach()

list(LENGTH _files _n)
message(STATUS "band uninstall: removed ${_removed} of the ${_n} files installed from "
    "${BAND_BUILD_DIR}")
