# SPDX-License-Identifier: MIT
# BandDocsRun.cmake - run Doxygen and show its warnings.
#
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DLOG=<its WARN_LOGFILE>
#         [-DOUTPUT=<dir>] [-DWERROR=ON] [-DHEADERS=<header;...>] -P BandDocsRun.cmake
#
# The Doxyfile writes its warnings to LOG; they are printed here, after the run, and with
# WERROR=ON (or WARN_AS_ERROR = FAIL_ON_WARNINGS in the Doxyfile) any warning fails. OUTPUT
# overrides OUTPUT_DIRECTORY (the api_reference test writes into a directory of its own).
# With HEADERS, every function that those headers export (a line "BAND_API <type>
# band_<name>(" or BAND_UV_API) must have its man page man3/band_<name>.3 and every header
# its page man3/band_<header>.h.3, and the HTML index must exist.
cmake_minimum_required(VERSION 3.21)

foreach(v DOXYGEN DOXYFILE LOG)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "BandDocsRun.cmake: -D${v}=... is required")
    endif()
endforeach()

file(READ "${DOXYFILE}" _config)
if(DEFINED OUTPUT)
    file(REMOVE_RECURSE "${OUTPUT}")
    file(MAKE_DIRECTORY "${OUTPUT}")
    string(APPEND _config "\nOUTPUT_DIRECTORY = \"${OUTPUT}\"\n")
endif()
if(WERROR)
    string(APPEND _config "\nWARN_AS_ERROR = FAIL_ON_WARNINGS\n")
endif()
string(APPEND _config "\nWARN_LOGFILE = \"${LOG}\"\n")
get_filename_component(_dir "${LOG}" DIRECTORY)
file(MAKE_DIRECTORY "${_dir}")
file(REMOVE "${LOG}")
set(_cfg "${LOG}.Doxyfile")
file(WRITE "${_cfg}" "${_config}")

execute_process(COMMAND "${DOXYGEN}" "${_cfg}" RESULT_VARIABLE _rc)
set(_warnings "")
if(EXISTS "${LOG}")
    file(READ "${LOG}" _warnings)
endif()
if(NOT _warnings STREQUAL "")
    message("${_warnings}")
endif()
# MAN_LINKS makes a page for every member of every struct too (available.3, queue.3,
# ...): names that belong to no band function and could clash with other packages' pages.
# Kept: the pages of band_* and BAND_* names, and the headers' pages, renamed from
# <name>.h.3 (Doxygen names them after the file alone: error.h.3) to band_<name>.h.3,
# with the link pages (".so man3/sem.h.3") pointing at the new names.
if(DEFINED OUTPUT)
    set(_man "${OUTPUT}/man/man3")
else()
    get_filename_component(_man "${DOXYFILE}" DIRECTORY)
    set(_man "${_man}/man/man3")
endif()
file(GLOB _pages RELATIVE "${_man}" "${_man}/*.3")
set(_renamed "")
foreach(_p IN LISTS _pages)
    if(_p MATCHES "^[a-z0-9_]+\\.h\\.3$" AND NOT _p MATCHES "^band_")
        file(RENAME "${_man}/${_p}" "${_man}/band_${_p}")
        list(APPEND _renamed "${_p}")
    elseif(NOT _p MATCHES "^(band_|BAND_)")
        file(REMOVE "${_man}/${_p}")
    endif()
endforeach()
if(_renamed)
    file(GLOB _pages "${_man}/*.3")
    foreach(_p IN LISTS _pages)
        file(READ "${_p}" _text LIMIT 200)
        if(_text MATCHES "^\\.so man3/([a-z0-9_]+\\.h\\.3)" AND CMAKE_MATCH_1 IN_LIST _renamed)
            file(WRITE "${_p}" ".so man3/band_${CMAKE_MATCH_1}\n")
        endif()
    endforeach()
endif()

set(_fail "")
if(NOT _rc EQUAL 0)
    set(_fail "doxygen failed (exit ${_rc}); its warnings are above and in ${LOG}")
elseif(WERROR AND NOT _warnings STREQUAL "")
    set(_fail "doxygen warned (above; also in ${LOG})")
endif()

if(DEFINED HEADERS)
    set(_missing "")
    set(_nfun 0)
    foreach(_h IN LISTS HEADERS)
        get_filename_component(_base "${_h}" NAME)
        if(NOT EXISTS "${_man}/band_${_base}.3")
            list(APPEND _missing "band_${_base}.3 (the page of band/${_base})")
        endif()
        file(STRINGS "${_h}" _decls REGEX "^BAND_(UV_)?API [^(]*band_[a-z0-9_]+\\(")
        foreach(_d IN LISTS _decls)
            string(REGEX MATCH "band_[a-z0-9_]+\\(" _f "${_d}")
            string(REGEX REPLACE "\\($" "" _f "${_f}")
            math(EXPR _nfun "${_nfun} + 1")
            if(NOT EXISTS "${_man}/${_f}.3")
                list(APPEND _missing "${_f}.3 (${_f}() of band/${_base})")
            endif()
        endforeach()
    endforeach()
    get_filename_component(_html "${_man}/../../html/index.html" ABSOLUTE)
    if(NOT EXISTS "${_html}")
        list(APPEND _missing "${_html}")
    endif()
    if(_missing)
        list(JOIN _missing "\n  " _list)
        message("the API reference misses pages (a function without a doc comment, or a "
            "header without @file):\n  ${_list}")
        if(_fail STREQUAL "")
            set(_fail "the API reference misses pages (above)")
        else()
            string(APPEND _fail "; the API reference misses pages (above)")
        endif()
    elseif(_fail STREQUAL "")
        list(LENGTH HEADERS _nh)
        message(STATUS "API reference: ${_nh} headers and ${_nfun} functions, each with its "
            "man page in ${_man}")
    endif()
endif()

if(NOT _fail STREQUAL "")
    message(FATAL_ERROR "${_fail}")
endif()
