#!/usr/bin/env bash
# test-full-disk.sh with the stacks unwound on the host (--unwind host):
# the unwinding worker writes the records, so a refused write is learnt on
# its thread, after the drain counted the record into the file.  The
# accounting must still hold: every sample the disk refused is a LOST
# record in the files and in the manifests, and the daemon's totals equal
# what the files hold.
#
# Not in make check: it fails about 1 run in 10 (the daemon counts some
# thousands of samples as written that its files report lost, after a file
# stalled on the full disk): a known fault of unwind=host's accounting,
# open.  Run it by hand, as root, from the tree's top:
#   bash tests/torture/dwarf-host-full-disk.sh
FULL_DISK_RECORD="-F 1000 -m 16M --call-graph dwarf --unwind host" exec bash "$(dirname "$0")/../e2e/test-full-disk.sh"
