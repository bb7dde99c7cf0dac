// SPDX-License-Identifier: LGPL-2.1-or-later
/* perfrecctl entry point (being written). */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "perfrecctl: not built yet\n");
	return 1;
}
