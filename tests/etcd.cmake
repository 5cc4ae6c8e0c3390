# SPDX-License-Identifier: MIT
# libband-etcd against real 3-member etcd clusters (tests/etcd/): band-dist end to end
# and the fault tests. Each script starts its own cluster on 127.0.0.1 on free ports
# (tests/etcd/lib.sh) and kills it and every process it started however it ends.
#
#   dist_tool     band-dist show/--json/set-capacity/revoke and its errors   (etcd;tools)
#   fence_stop    a holder SIGSTOPped past its lease: its token is refused, another process
#                 gets the units, and after SIGCONT it is told through on_lost  (etcd)
#   kill_holder   a SIGKILLed holder's units come back within TTL + 1 s        (etcd)
#   kill_leader   the leader killed twice under load; conservation checked     (etcd)
#   faketime      clients with shifted clocks (libfaketime) behave as others   (etcd)
#   conservation  10^4 random operations from 4 processes never exceed the capacity,
#                 proven from the cluster's history (tests/etcd/etcd_check.c)    (etcd)
#
# This file is included before adapters/etcd is added, so the tests are defined at the
# end of the top directory (cmake_language DEFER), once band_etcd and band-dist exist.
# They are registered only when libband-etcd is built and etcd, etcdctl and bash are
# found. Each runs a cluster of three members, so they hold the resource lock
# band-etcd-cluster (as test_etcd does): never two clusters at once on the machine's cores.
# They are not RUN_SERIAL: they spend most of their time waiting for leases, elections
# and the cluster's disk (a fault test keeps 8 to 70% of two cores busy), so one other
# test may run beside them.

function(band_etcd_define_tests)
    if(NOT TARGET band_etcd OR BAND_BUILD_FUZZ)
        return()
    endif()
    find_program(BAND_ETCD_SERVER etcd)
    find_program(BAND_ETCDCTL etcdctl)
    find_program(BAND_PYTHON3 python3)
    if(NOT BAND_ETCD_SERVER OR NOT BAND_ETCDCTL OR NOT BAND_BASH OR NOT BAND_PYTHON3)
        message(STATUS "band: the etcd tests are skipped: they need etcd, etcdctl, bash and "
            "python3 on the PATH (Debian: etcd-server etcd-client)")
        return()
    endif()
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
        pkg_check_modules(BAND_ETCDT_CURL QUIET IMPORTED_TARGET libcurl)
        pkg_check_modules(BAND_ETCDT_JANSSON QUIET IMPORTED_TARGET jansson)
    endif()
    set(_lib band_etcd)
    if(TARGET band_etcd_static)
        set(_lib band_etcd_static)
    endif()
    set(_dir "${PROJECT_SOURCE_DIR}/tests/etcd")
    foreach(_prog etcd_hold etcd_probe etcd_worker)
        add_executable(${_prog} "${_dir}/${_prog}.c")
        target_link_libraries(${_prog} PRIVATE ${_lib} Threads::Threads)
        band_target_warnings(${_prog})
    endforeach()
    set(_env "ETCD_BIN=${BAND_ETCD_SERVER}" "ETCDCTL_BIN=${BAND_ETCDCTL}"
        ${BAND_SANITIZER_TEST_ENV})

    macro(_band_etcd_test name timeout labels)
        add_test(NAME ${name} COMMAND "${BAND_BASH}" "${_dir}/${name}.sh" ${ARGN})
        set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout}
                             RESOURCE_LOCK band-etcd-cluster ENVIRONMENT "${_env}")
    endmacro()

    if(TARGET band-dist)
        find_program(BAND_JQ jq)
        if(BAND_JQ)
            _band_etcd_test(dist_tool 120 "etcd;tools" $<TARGET_FILE:band-dist>
                            $<TARGET_FILE:etcd_hold>)
        else()
            message(STATUS "band: dist_tool is skipped: it needs jq")
        endif()
    endif()
    _band_etcd_test(fence_stop 90 "etcd;etcd-fault" $<TARGET_FILE:etcd_hold> $<TARGET_FILE:etcd_probe>)
    _band_etcd_test(kill_holder 90 "etcd;etcd-fault" $<TARGET_FILE:etcd_hold>)
    find_file(BAND_LIBFAKETIME_MT libfaketimeMT.so.1
              PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib /usr/local/lib
              PATH_SUFFIXES faketime NO_DEFAULT_PATH)
    # libfaketime is preloaded, which a sanitizer runtime that must load first refuses; the
    # test is about clocks, so the builds without a sanitizer run it.
    if(BAND_LIBFAKETIME_MT AND BAND_SANITIZE STREQUAL "")
        _band_etcd_test(faketime 90 "etcd;etcd-fault" $<TARGET_FILE:etcd_hold> $<TARGET_FILE:etcd_probe>
                        "${BAND_LIBFAKETIME_MT}")
    else()
        message(STATUS "band: the etcd faketime test is skipped: it needs libfaketime "
            "(Debian: faketime) and a build without a sanitizer")
    endif()
    if(BAND_ETCDT_CURL_FOUND AND BAND_ETCDT_JANSSON_FOUND)
        add_executable(etcd_check "${_dir}/etcd_check.c")
        target_link_libraries(etcd_check PRIVATE PkgConfig::BAND_ETCDT_CURL
                              PkgConfig::BAND_ETCDT_JANSSON)
        band_target_warnings(etcd_check)
        _band_etcd_test(conservation 180 "etcd;etcd-fault" $<TARGET_FILE:etcd_worker>
                        $<TARGET_FILE:etcd_check>)
        _band_etcd_test(kill_leader 120 "etcd;etcd-fault" $<TARGET_FILE:etcd_worker>
                        $<TARGET_FILE:etcd_check>)
        # The longest etcd tests start first, so the short ones fill the other slot.
        set_tests_properties(conservation kill_leader PROPERTIES COST 40)
    endif()
endfunction()

cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL band_etcd_define_tests)
