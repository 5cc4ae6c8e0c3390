/* SPDX-License-Identifier: MIT */
/*
 * fd_layout.h - sizes and offsets of struct band_fd_queue_op, as one translation unit sees them.
 */
#ifndef BAND_FD_LAYOUT_H
#define BAND_FD_LAYOUT_H

#include <stddef.h>

struct fdt_layout {
    size_t size, align;
    size_t ready_off, ready_size;
    size_t dl_off, dl_size;
    size_t dl_deadline_off, dl_child_off, dl_sibling_off, dl_prev_off;
    size_t hook_off;
};

/* The library's view (fd_layout.c). */
void fdt_layout_internal(struct fdt_layout *l);

#endif /* BAND_FD_LAYOUT_H */
