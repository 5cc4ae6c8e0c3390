# SPDX-License-Identifier: MIT
# tests/pipe/report.cmake - band-pipe's observability modules (tools/pipe: stats, names,
# jlog, summary and its verdict, progress, plot, verify), tested without the pipeline.
if(TARGET band_pipe_core)
    add_executable(report_test ${CMAKE_CURRENT_LIST_DIR}/report_test.c)
    target_link_libraries(report_test PRIVATE band_pipe_core)
    band_target_warnings(report_test)
    add_test(NAME pipe_report COMMAND report_test)
    set_tests_properties(pipe_report PROPERTIES LABELS pipe TIMEOUT 60)
endif()
