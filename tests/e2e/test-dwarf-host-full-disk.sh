#!/usr/bin/env bash
# test-full-disk.sh with the stacks unwound on the host (--unwind host):
# the unwinding worker writes the records, so a refused write is learnt on
# its thread, after the drain handed the record over.  The accounting must
# hold all the same: every sample the disk refused is a LOST record in the
# files and in the manifests, each manifest counts what its file holds,
# and the daemon's totals equal what the files hold.  (It failed about 1
# run in 10 while the drain counted records before the worker wrote them;
# test-recorder-full-disk forces the orders that lost counts.)
FULL_DISK_RECORD="-F 1000 -m 16M --call-graph dwarf --unwind host" exec bash "$(dirname "$0")/test-full-disk.sh"
