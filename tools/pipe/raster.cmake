# SPDX-License-Identifier: MIT
# tools/pipe/raster.cmake - the GDAL side of band-pipe: decode, reproject and write
# (raster.c) and the generated demonstration dataset (dataset.c).
target_sources(band_pipe_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/raster.c
                                      ${CMAKE_CURRENT_LIST_DIR}/dataset.c)
