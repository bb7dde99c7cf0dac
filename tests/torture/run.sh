#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The reliability suite (make torture): see tests/torture/README.md.
#   tests/torture/run.sh [kill] [disk] [abuse] [soak] [reload] [diskstart]
# Sizes from the environment: TORTURE_KILLS, TORTURE_DISK_CYCLES,
# TORTURE_ABUSE_SEC, TORTURE_SOAK_MIN, TORTURE_HZ, TORTURE_SEED, TORTURE_KEEP,
# TORTURE_RELOADS, TORTURE_DISKSTARTS.
exec python3 "$(dirname "$0")/torture.py" "$@"
