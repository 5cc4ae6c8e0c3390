# SPDX-License-Identifier: MIT
# tests/metrics.cmake - the metrics registry and its Prometheus text (include/band/metrics.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_metrics
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_metrics.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_metrics_families
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_metrics_families.c" TIMEOUT 60 LABELS unit)
