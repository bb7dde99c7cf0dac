#!/usr/bin/env bash
# test-full-disk.sh with the stacks unwound on the host (--unwind host):
# the unwinding worker writes the records, so a refused write is learnt on
# its thread, after the drain counted the record into the file.  The
# accounting must still hold: every sample the disk refused is a LOST
# record in the files and in the manifests, and the daemon's totals equal
# what the files hold.
FULL_DISK_RECORD="-F 1000 -m 16M --call-graph dwarf --unwind host" exec bash "$(dirname "$0")/test-full-disk.sh"
