// SPDX-License-Identifier: LGPL-2.1-or-later
/* perfrecd entry point (being written). */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "perfrecd: not built yet\n");
	return 1;
}
