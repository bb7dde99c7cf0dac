/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal: the BPF programs of a recording (bpfmeta.h) kept up to date by
 * the drain: a sink (sink.h) whose record() gives every KSYMBOL and
 * BPF_EVENT to perfrec_bpfmeta__note_record(), its ctx the struct
 * perfrec_bpfmeta (NULL: none kept).  Programs come and go while a file
 * is written; the features at its end name those it sampled.
 */
#ifndef PERFREC_BPFMETA_SINK_H
#define PERFREC_BPFMETA_SINK_H

#include "sink.h"

extern const struct sink_ops bpfmeta_sink_ops;

#endif
