/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfrec: the reusable half of perfrecd.  Everything here records
 * perf_event data into perf.data (PERFILE2) files and reads them back; it has
 * no policy, no globals and prints nothing.  Errors are negative errno values.
 * This umbrella header pulls in every public object header.
 */
#ifndef PERFREC_PERFREC_H
#define PERFREC_PERFREC_H

#include <perfrec/common.h>
#include <perfrec/format.h>
#include <perfrec/event.h>
#include <perfrec/cpumap.h>
#include <perfrec/evspec.h>
#include <perfrec/evlist.h>
#include <perfrec/ring.h>
#include <perfrec/pdwriter.h>
#include <perfrec/pdreader.h>
#include <perfrec/synth.h>
#include <perfrec/hostinfo.h>
#include <perfrec/buildid.h>
#include <perfrec/recover.h>
#include <perfrec/tracing.h>
#include <perfrec/compress.h>
#include <perfrec/offcpu.h>
#include <perfrec/bpfmeta.h>
#include <perfrec/record.h>

#endif
