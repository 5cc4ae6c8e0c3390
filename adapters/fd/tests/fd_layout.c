/* SPDX-License-Identifier: MIT */
/*
 * fd_layout.c - the library's own view of struct band_fd_queue_op (the node types of
 * adapters/common, included before band/fd.h), for test_fd's layout check: test_fd.c sees
 * the definitions band/fd.h gives an application, and the two must agree.
 */
#include "fd_internal.h"

#include "fd_layout.h"

void fdt_layout_internal(struct fdt_layout *l)
{
    l->size = sizeof(band_fd_queue_op);
    l->align = _Alignof(band_fd_queue_op);
    l->ready_off = offsetof(band_fd_queue_op, _ready);
    l->ready_size = sizeof(struct band__ready_node);
    l->dl_off = offsetof(band_fd_queue_op, _dl);
    l->dl_size = sizeof(struct band__dl_node);
    l->dl_deadline_off = offsetof(struct band__dl_node, deadline);
    l->dl_child_off = offsetof(struct band__dl_node, child);
    l->dl_sibling_off = offsetof(struct band__dl_node, sibling);
    l->dl_prev_off = offsetof(struct band__dl_node, prev);
    l->hook_off = offsetof(band_fd_queue_op, _hook);
}
