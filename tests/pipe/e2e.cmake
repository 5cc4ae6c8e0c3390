# SPDX-License-Identifier: MIT
# tests/pipe/e2e.cmake - band-pipe end to end: bash scripts (tests/pipe/e2e_*.sh, the
# shared parts in e2e_lib.sh) that generate a small dataset, serve it with
# `band-pipe --serve` (a private nginx) and run the program on it, checking its exit
# status, summary, log (with jq) and outputs (with gdalinfo -json). Each gets the program
# and its own work directory; they need bash, jq, gdal-bin and nginx (scripts/deps.sh).
# Labels pipe and pipe-e2e (the clang suite leaves the latter out: see scripts/check.sh).
# Under TSan, GDAL's own lock-order reports are suppressed (gdal.tsan.supp); data races
# are not.
if(TARGET band-pipe)
    find_program(BAND_BASH bash)
    set(_pipe_e2e_env ${BAND_SANITIZER_TEST_ENV})
    list(FILTER _pipe_e2e_env EXCLUDE REGEX "^TSAN_OPTIONS=")
    list(APPEND _pipe_e2e_env "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${CMAKE_CURRENT_LIST_DIR}/gdal.tsan.supp")
    foreach(_t IN ITEMS basic sigint_once sigint_twice nofile too_large memory_by_count local
                        usage auto unreachable throttle)
        add_test(NAME pipe_e2e_${_t}
                 COMMAND ${BAND_BASH} ${CMAKE_CURRENT_LIST_DIR}/e2e_${_t}.sh $<TARGET_FILE:band-pipe>
                         ${CMAKE_CURRENT_BINARY_DIR}/e2e/${_t})
        set_tests_properties(pipe_e2e_${_t} PROPERTIES TIMEOUT 180 LABELS "pipe;pipe-e2e"
                             ENVIRONMENT "${_pipe_e2e_env}")
    endforeach()
    # The longest of them (a run on local files, checked against gdalwarp) starts first.
    set_tests_properties(pipe_e2e_local PROPERTIES COST 30)
endif()
