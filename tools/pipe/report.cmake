# SPDX-License-Identifier: MIT
# tools/pipe/report.cmake - band-pipe's observability: enum names, counters, /proc readings,
# the progress line, the JSON lines log, the summary and verdict, the plot and --verify.
target_sources(band_pipe_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/names.c
    ${CMAKE_CURRENT_LIST_DIR}/stats.c
    ${CMAKE_CURRENT_LIST_DIR}/procfs.c
    ${CMAKE_CURRENT_LIST_DIR}/progress.c
    ${CMAKE_CURRENT_LIST_DIR}/jlog.c
    ${CMAKE_CURRENT_LIST_DIR}/summary.c
    ${CMAKE_CURRENT_LIST_DIR}/plot.c
    ${CMAKE_CURRENT_LIST_DIR}/verify.c)
