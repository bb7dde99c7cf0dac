// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the S3 client's offline parts: ListObjectsV2 answers parsed
 * (keys entity-decoded, sizes, continuation), key templates expanded and
 * their listing prefix cut where the first unknown placeholder begins, and
 * credentials files read in both spellings.  The requests themselves are
 * exercised against a real server by tests/e2e/test-upload.sh and
 * test-bucket.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s3.h"

#define S 1000000000ULL
/* 2026-11-23T14:03:00Z */
#define T0 (1795442580ULL * S)

Test(s3, utc_times_parse_to_ns)
{
	static const struct {
		const char *s;
		uint64_t ns;
		int r;
	} cases[] = {
		{ "2026-11-23T14:03:00Z", T0, 0 },
		{ "2026-11-23T14:03:00.123456Z", T0 + 123456000, 0 },
		{ "2026-11-23T14:03:00.5Z", T0 + 500000000, 0 },
		{ "2026-11-23T14:03:00.123456789Z", T0 + 123456789, 0 },
		{ "2026-11-23T14:03:00.1234567891Z", T0 + 123456789, 0 }, /* beyond ns: cut */
		{ "1970-01-01T00:00:00Z", 0, 0 },
		{ "2026-11-23T14:03:00", 0, -EINVAL },        /* no zone: not UTC */
		{ "2026-11-23T14:03:00+01:00", 0, -EINVAL },
		{ "2026-11-23T14:03:00.Z", 0, -EINVAL },
		{ "2026-13-23T14:03:00Z", 0, -EINVAL },
		{ "2026-11-23 14:03:00Z", 0, -EINVAL },
		{ "14:03", 0, -EINVAL },
		{ "", 0, -EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ns = 42;

		cr_expect_eq(s3_parse_utc(cases[i].s, &ns), cases[i].r, "'%s'", cases[i].s);
		if (cases[i].r == 0)
			cr_expect_eq(ns, cases[i].ns, "'%s': %llu", cases[i].s, (unsigned long long)ns);
	}
	cr_expect_eq(s3_parse_utc(NULL, &(uint64_t){ 0 }), -EINVAL);
}

Test(s3, list_answer_gives_keys_sizes_and_continuation)
{
	const char *xml =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Name>perf</Name><Prefix>fleet/</Prefix><KeyCount>2</KeyCount>"
		"<IsTruncated>true</IsTruncated><NextContinuationToken>a+b/c=&amp;</NextContinuationToken>"
		"<Contents><Key>fleet/a&amp;b/x.data</Key><Size>1234</Size><ETag>&quot;e&quot;</ETag>"
		"<LastModified>2026-11-23T14:03:00.250Z</LastModified></Contents>"
		"<Contents><Key>fleet/a&amp;b/x.data.json</Key><LastModified>2026-11-23T14:03:00.000Z</LastModified>"
		"<Size>77</Size></Contents>"
		"</ListBucketResult>";
	struct s3_object *objs = NULL;
	size_t nr = 0;
	bool trunc = false;
	char *tok = NULL;

	cr_assert_eq(s3_parse_list(xml, &objs, &nr, &trunc, &tok), 0);
	cr_assert_eq(nr, 2);
	cr_expect_str_eq(objs[0].key, "fleet/a&b/x.data");
	cr_expect_eq(objs[0].size, 1234);
	cr_expect_eq(objs[0].mtime_ns, T0 + S / 4);
	cr_expect_str_eq(objs[1].key, "fleet/a&b/x.data.json");
	cr_expect_eq(objs[1].size, 77);
	cr_expect_eq(objs[1].mtime_ns, T0);
	cr_expect(trunc);
	cr_assert_not_null(tok);
	cr_expect_str_eq(tok, "a+b/c=&");
	free(tok);

	/* A second page appends; the last page has no token. */
	cr_assert_eq(s3_parse_list("<ListBucketResult><IsTruncated>false</IsTruncated>"
				   "<Contents><Key>z</Key><Size>1</Size></Contents></ListBucketResult>",
				   &objs, &nr, &trunc, &tok), 0);
	cr_expect_eq(nr, 3);
	cr_expect_str_eq(objs[2].key, "z");
	cr_expect_not(trunc);
	cr_expect_null(tok);
	s3_objects_free(objs, nr);
}

Test(s3, answers_that_are_not_a_listing_are_refused)
{
	static const char *const bad[] = {
		"<Error><Code>AccessDenied</Code></Error>",
		"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", /* no key */
		"<ListBucketResult><Contents><Key>a</Key>", /* cut off */
		"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", /* no token */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct s3_object *objs = NULL;
		size_t nr = 0;
		bool trunc = false;
		char *tok = NULL;

		cr_expect_eq(s3_parse_list(bad[i], &objs, &nr, &trunc, &tok), -EBADMSG, "accepted: %s", bad[i]);
		free(tok);
		s3_objects_free(objs, nr);
	}
}

Test(s3, key_templates_expand_and_give_their_listing_prefix)
{
	static const struct {
		const char *tmpl, *host, *prefix, *key, *list_any, *list_host;
	} cases[] = {
		{ "{host}/{date}/{file}", "a", "perfrecd", "a/2026-11-23/f.data", "", "a/" },
		{ "fleet/{host}/{date}/{file}", "web-1", "p", "fleet/web-1/2026-11-23/f.data", "fleet/", "fleet/web-1/" },
		{ "x/{date}/{host}/{file}", "a", "p", "x/2026-11-23/a/f.data", "x/", "x/" },
		{ "{prefix}-{host}/{file}", "a", "p", "p-a/f.data", "", "" },
		{ "flat/{file}", "a", "p", "flat/f.data", "flat/", "flat/" },
	};
	/* 2026-11-23T14:03:00Z */
	const int64_t when = 1795442580;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *k = s3_expand_key(cases[i].tmpl, cases[i].host, cases[i].prefix, "f.data", when);
		char *pa = s3_key_prefix(cases[i].tmpl, NULL, NULL);
		char *ph = s3_key_prefix(cases[i].tmpl, cases[i].host, NULL);

		cr_assert_not_null(k);
		cr_expect_str_eq(k, cases[i].key, "%s", cases[i].tmpl);
		cr_assert_not_null(pa);
		cr_expect_str_eq(pa, cases[i].list_any, "%s", cases[i].tmpl);
		cr_assert_not_null(ph);
		cr_expect_str_eq(ph, cases[i].list_host, "%s", cases[i].tmpl);
		/* Every key of the template starts with its listing prefixes. */
		cr_expect(!strncmp(k, pa, strlen(pa)) && !strncmp(k, ph, strlen(ph)));
		free(k);
		free(pa);
		free(ph);
	}
	errno = 0;
	cr_expect_null(s3_expand_key("{host}/{nope}", "a", "p", "f", when));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(s3_key_prefix("{nope}/{host}", "a", NULL));
	cr_expect_eq(errno, EINVAL);
}

Test(s3, credentials_files_in_both_spellings)
{
	static const struct {
		const char *text, *key, *secret;
	} cases[] = {
		{ "[default]\naws_access_key_id = AK\naws_secret_access_key = SK \n", "AK", "SK" },
		{ "access-key=k2\nsecret-key=s2\n", "k2", "s2" },
		{ "aws_access_key_id = AK\n", NULL, NULL },
		{ "# nothing\n", NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[] = "/tmp/test-s3-creds-XXXXXX", *k = NULL, *s = NULL;
		int fd = mkstemp(path), r;

		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, cases[i].text, strlen(cases[i].text)), (ssize_t)strlen(cases[i].text));
		close(fd);
		r = s3_read_credentials(path, &k, &s);
		unlink(path);
		if (!cases[i].key) {
			cr_expect_eq(r, -EINVAL, "case %zu", i);
			continue;
		}
		cr_assert_eq(r, 0, "case %zu", i);
		cr_expect_str_eq(k, cases[i].key);
		cr_expect_str_eq(s, cases[i].secret);
		free(k);
		free(s);
	}
	cr_expect_eq(s3_read_credentials("/nonexistent/creds", &(char *){ NULL }, &(char *){ NULL }), -ENOENT);
}
