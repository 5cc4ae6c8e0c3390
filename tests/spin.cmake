# SPDX-License-Identifier: MIT
# tests/spin.cmake - the Promela model of the etcd budget protocol (tests/spin/
# etcd_budget.pml), checked by spin: one test per property, each run by
# tests/spin/run_spin.sh, which also checks that the model's broken variants fail (so no
# test can pass vacuously). Every run is an exhaustive search bounded in depth, memory
# (2 GB) and time; the largest takes about 40 s on one core.
#
# The model does not depend on the build, so only the builds without a sanitizer or
# fuzzing, compiled with gcc, register it (the plain suite), and only when spin and bash are
# found.
# pan is compiled with the project's C compiler.

find_program(BAND_SPIN spin)
if(BAND_SANITIZE STREQUAL "" AND NOT BAND_BUILD_FUZZ AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
    if(BAND_SPIN AND BAND_BASH AND CMAKE_C_COMPILER)
        foreach(_spin_mode s1 s1-lease s2 s3 fence l1 multi)
            string(REPLACE "-" "_" _spin_name "spin_etcd_${_spin_mode}")
            add_test(NAME ${_spin_name}
                COMMAND "${BAND_BASH}" "${CMAKE_CURRENT_SOURCE_DIR}/spin/run_spin.sh"
                        "${CMAKE_CURRENT_SOURCE_DIR}/spin/etcd_budget.pml" ${_spin_mode})
            # One search at a time: two of them, each hashing over a 512 MB table, take
            # twice as long side by side as one after the other. COST starts them first,
            # so the other tests run beside them rather than after them.
            set_tests_properties(${_spin_name} PROPERTIES
                LABELS "model;etcd-model" TIMEOUT 300 COST 30 RESOURCE_LOCK band-spin-search
                ENVIRONMENT "SPIN=${BAND_SPIN};CC=${CMAKE_C_COMPILER}")
        endforeach()
    else()
        message(STATUS "band: spin or bash not found: the spin_etcd_* model tests are not registered")
    endif()
endif()
