# SPDX-License-Identifier: MIT
# The run itself: options, budget sizes, stages, the fetch stage and the worker jobs.
target_sources(band_pipe_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/opts.c
    ${CMAKE_CURRENT_LIST_DIR}/sizing.c
    ${CMAKE_CURRENT_LIST_DIR}/pipeline.c
    ${CMAKE_CURRENT_LIST_DIR}/fetch.c
    ${CMAKE_CURRENT_LIST_DIR}/jobs.c)
