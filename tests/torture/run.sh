#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The reliability suite (make torture): see tests/torture/README.md.
#   tests/torture/run.sh [kill] [disk] [abuse] [soak] [freeze] [unwind] [reload] [diskstart] [lookback]
# Sizes from the environment: TORTURE_KILLS, TORTURE_DISK_CYCLES,
# TORTURE_ABUSE_SEC, TORTURE_SOAK_MIN, TORTURE_FREEZES, TORTURE_UNWIND_MIN,
# TORTURE_UNWIND_HZ, TORTURE_RELOADS, TORTURE_DISKSTARTS, TORTURE_HZ,
# TORTURE_LOOKBACK_SEC, TORTURE_LOOKBACK_CLIENTS, TORTURE_SEED, TORTURE_KEEP.
exec python3 "$(dirname "$0")/torture.py" "$@"
