/* SPDX-License-Identifier: MIT */
/**
 * @file band/adapter_nodes.h
 * @brief Private node types that the adapters' operation structs embed.
 *
 * Installed with libband-uv and libband-fd, because band/uv.h and band/fd.h embed these
 * nodes in the caller's operation structs (no allocation per operation). One definition,
 * one include guard, so the two headers can be included in any order. The fields are the
 * adapters' own (adapters/common/ready_list.h and deadline_heap.h): never touch them.
 */
#ifndef BAND_ADAPTER_NODES_H
#define BAND_ADAPTER_NODES_H

#include "band/core.h"

/** @brief A node of an adapter's lock-free ready list (private: never touch it). */
struct band__ready_node {
    struct band__ready_node *next; /**< the next node on the list */
};

/** @brief A node of an adapter's deadline heap (a pairing heap; private: never touch it). */
struct band__dl_node {
    band_time deadline;            /**< the operation's deadline */
    struct band__dl_node *child;   /**< first child */
    struct band__dl_node *sibling; /**< next sibling */
    struct band__dl_node *prev;    /**< previous sibling, or the parent for a first child */
};

#endif /* BAND_ADAPTER_NODES_H */
