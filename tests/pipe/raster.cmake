# SPDX-License-Identifier: MIT
# tests/pipe/raster.cmake - band-pipe's GDAL side (tools/pipe/raster.c, dataset.c) on a
# generated dataset: probe, decode, warp, write, broken tiles, failed writes, threads.
# Needs the band_pipe_core target (tools/pipe, built when GDAL, curl and libuv are found).
if(TARGET band_pipe_core)
    add_executable(raster_test ${CMAKE_CURRENT_LIST_DIR}/raster_test.c)
    target_link_libraries(raster_test PRIVATE band_pipe_core)
    band_target_warnings(raster_test)
    add_test(NAME pipe_raster COMMAND raster_test ${CMAKE_CURRENT_BINARY_DIR}/raster_test_data)
    set_tests_properties(pipe_raster PROPERTIES TIMEOUT 120 LABELS pipe
                         ENVIRONMENT "${BAND_SANITIZER_TEST_ENV}")
endif()
