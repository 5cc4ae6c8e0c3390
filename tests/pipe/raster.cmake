# SPDX-License-Identifier: MIT
# tests/pipe/raster.cmake - band-pipe's GDAL side (tools/pipe/raster.c, dataset.c) on a
# generated dataset: probe, decode, warp, write, broken tiles, failed writes, threads.
# Needs the band_pipe_core target (tools/pipe, built when GDAL, curl and libuv are found).
# Under TSan, GDAL's own lock-order reports are suppressed (gdal.tsan.supp); data races
# are not.
if(TARGET band_pipe_core)
    add_executable(raster_test ${CMAKE_CURRENT_LIST_DIR}/raster_test.c)
    target_link_libraries(raster_test PRIVATE band_pipe_core)
    band_target_warnings(raster_test)
    add_test(NAME pipe_raster COMMAND raster_test ${CMAKE_CURRENT_BINARY_DIR}/raster_test_data)
    set(_pipe_raster_env ${BAND_SANITIZER_TEST_ENV})
    list(FILTER _pipe_raster_env EXCLUDE REGEX "^TSAN_OPTIONS=")
    list(APPEND _pipe_raster_env "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${CMAKE_CURRENT_LIST_DIR}/gdal.tsan.supp")
    set_tests_properties(pipe_raster PROPERTIES TIMEOUT 120 LABELS pipe
                         ENVIRONMENT "${_pipe_raster_env}")
endif()
