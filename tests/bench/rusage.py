#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a command and writes its own resource use to OUTFILE as one line,
# "USER_S SYS_S MAXRSS_KIB VOL_CSW INVOL_CSW", from wait4(2): microsecond CPU
# times where GNU time prints only hundredths, which at 99 Hz is 10% of what
# a recorder spends.  Children the command waited for are included, as
# wait4 reports them.  Usage: rusage.py OUTFILE COMMAND [ARGS...]
import os
import subprocess
import sys

p = subprocess.Popen(sys.argv[2:])
_, status, ru = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write("%.6f %.6f %d %d %d\n" % (ru.ru_utime, ru.ru_stime, ru.ru_maxrss, ru.ru_nvcsw, ru.ru_nivcsw))
sys.exit(os.waitstatus_to_exitcode(status))
