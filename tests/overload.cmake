# tests/overload.cmake - overload answers and the front door (include/band/overload.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_overload
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_overload.c" TIMEOUT 60 LABELS unit)
