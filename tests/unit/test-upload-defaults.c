// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * upload.c relies on the config table for upload-key= and upload-region=
 * (it keeps no fallback of its own): they are set from the start and an
 * empty value restores the default rather than leaving NULL.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config.h"

Test(upload_defaults, key_and_region_never_null)
{
	static const char *const keys[] = { "upload-key", "upload-region" };
	struct config c;
	char err[256] = "";

	config_init(&c);
	cr_assert_str_eq(c.upload_key, "{host}/{date}/{file}");
	cr_assert_str_eq(c.upload_region, "us-east-1");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert_eq(config_set(&c, "upload", keys[i], "", err, sizeof(err)), 0, "%s: %s", keys[i], err);
	cr_expect_str_eq(c.upload_key, "{host}/{date}/{file}", "upload-key= left %s", c.upload_key);
	cr_expect_str_eq(c.upload_region, "us-east-1", "upload-region= left %s", c.upload_region);
	config_exit(&c);
}
