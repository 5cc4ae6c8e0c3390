# SPDX-License-Identifier: MIT
# tests/tools_common.cmake - the command-line tools' shared modules (tools/common).
# Included by tests/CMakeLists.txt.

# The text table of band-dist and band-shm: widths, the last column, cut cells, refused
# columns, growth, free.
if(BAND_BUILD_TOOLS AND NOT BAND_BUILD_FUZZ)
    add_executable(test_text_table "${CMAKE_CURRENT_SOURCE_DIR}/tools_common/test_text_table.c"
                                   "${PROJECT_SOURCE_DIR}/tools/common/text_table.c")
    target_include_directories(test_text_table PRIVATE "${PROJECT_SOURCE_DIR}/tools/common")
    band_target_warnings(test_text_table)
    add_test(NAME test_text_table COMMAND test_text_table)
    set_tests_properties(test_text_table PROPERTIES LABELS "tools;unit" TIMEOUT 30
                         ENVIRONMENT "${BAND_SANITIZER_TEST_ENV}")
endif()
