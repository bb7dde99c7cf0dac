// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl unwind IN [-o] OUT`: rewrite a raw DWARF recording (samples
 * with user registers and a stack copy, --call-graph dwarf) into the
 * callchain form, unwound on this host by libperfrec's unwinder, the one
 * perfrecd uses.  The copy is about as small as a frame-pointer file and
 * every reader shows its whole stacks without unwinding.  ELF files are
 * looked up as the unwinder does: through /proc while the processes live,
 * else by path, and only when their build id is the recorded one.  The
 * input must pass verify and so must the output.  Exit 0 done, 1 the input
 * is not sound perf data, 2 usage or I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/unwind.h>

#include "perfrecctl.h"

/* The attr a record belongs to: by its identifier, else the only one. */
static const struct perf_event_attr *record_attr(struct perfrec_pdreader *in, const struct perf_event_header *rec)
{
	const struct perfrec_pdreader_attr *a = NULL;
	uint64_t id;

	if (perfrec_event__identifier(rec, &id) == 0)
		a = perfrec_pdreader__attr_by_id(in, id);
	if (!a && perfrec_pdreader__nr_attrs(in) == 1)
		a = perfrec_pdreader__attr(in, 0);
	return a ? &a->attr : NULL;
}

/* A record's time: the sample's, or its sample_id trailer's; 0 when it has none. */
static uint64_t record_time(struct perfrec_pdreader *in, const struct perf_event_header *rec)
{
	const struct perf_event_attr *a = record_attr(in, rec);
	struct perfrec_sample_id sid;
	struct perfrec_sample s;

	if (!a || !(a->sample_type & PERF_SAMPLE_TIME))
		return 0;
	if (rec->type == PERF_RECORD_SAMPLE)
		return perfrec_sample__parse(rec, a->sample_type, a->read_format, &s) < 0 ? 0 : s.time;
	if (rec->type >= PERF_RECORD_MAX || !a->sample_id_all)
		return 0;
	return perfrec_sample_id__parse(rec, a->sample_type, &sid) < 0 ? 0 : sid.time;
}

/*
 * The records of one round (up to a FINISHED_ROUND), copied: a file holds
 * each CPU's records in turn, so a process's FORK or MMAP2 on one CPU can
 * come after its samples on another.  The unwinder sees them in time order,
 * as perf's readers do; the output keeps the input's order.
 */
struct round {
	unsigned char *buf;
	size_t len, cap;
	struct slot { size_t off, len; uint64_t time; int out; size_t out_off; } *slots;
	size_t nr, slots_cap;
	unsigned char *outbuf;
	size_t out_len, out_cap;
};

static int round_add(struct round *rd, const struct perf_event_header *rec, uint64_t time)
{
	if (rd->len + rec->size > rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 1 << 20;
		unsigned char *b;

		while (cap < rd->len + rec->size)
			cap *= 2;
		b = realloc(rd->buf, cap);
		if (!b)
			return -ENOMEM;
		rd->buf = b;
		rd->cap = cap;
	}
	if (rd->nr == rd->slots_cap) {
		size_t cap = rd->slots_cap ? rd->slots_cap * 2 : 4096;
		struct slot *sl = realloc(rd->slots, cap * sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		rd->slots = sl;
		rd->slots_cap = cap;
	}
	memcpy(rd->buf + rd->len, rec, rec->size);
	rd->slots[rd->nr++] = (struct slot){ .off = rd->len, .len = rec->size, .time = time, .out = 0 };
	rd->len += rec->size;
	return 0;
}

static const struct round *sort_round;

/* By time, then by position: stable, so records of equal time keep their order. */
static int by_time(const void *a, const void *b)
{
	const struct slot *x = &sort_round->slots[*(const size_t *)a], *y = &sort_round->slots[*(const size_t *)b];

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : *(const size_t *)a > *(const size_t *)b;
}

/* Unwind the round in time order, write it in file order, empty it. */
static int round_flush(struct round *rd, struct perfrec_pdreader *in, struct perfrec_unwinder *u,
		       struct perfrec_pdwriter *out, const char *in_path, const char *out_path)
{
	static unsigned char buf[65536];
	size_t *order;
	int r = 0;

	if (!rd->nr)
		return 0;
	order = malloc(rd->nr * sizeof(*order));
	if (!order)
		return EXIT_USAGE;
	for (size_t i = 0; i < rd->nr; i++)
		order[i] = i;
	sort_round = rd;
	qsort(order, rd->nr, sizeof(*order), by_time);
	rd->out_len = 0;
	for (size_t k = 0; k < rd->nr && !r; k++) {
		struct slot *sl = &rd->slots[order[k]];
		const struct perf_event_header *rec = (const void *)(rd->buf + sl->off);
		int n = perfrec_unwinder__rewrite(u, rec, rec->type == PERF_RECORD_SAMPLE ? record_attr(in, rec) : NULL,
						  buf, sizeof(buf));

		if (n < 0) {
			fprintf(stderr, "perfrecctl unwind: %s: a %s record: %s\n", in_path,
				perfrec_event__type_name(rec->type), strerror(-n));
			r = n == -ENOMEM ? EXIT_USAGE : EXIT_BAD;
			break;
		}
		sl->out = n;
		if (n > 0) {
			if (rd->out_len + (size_t)n > rd->out_cap) {
				size_t cap = rd->out_cap ? rd->out_cap * 2 : 1 << 20;
				unsigned char *b;

				while (cap < rd->out_len + (size_t)n)
					cap *= 2;
				b = realloc(rd->outbuf, cap);
				if (!b) {
					r = EXIT_USAGE;
					break;
				}
				rd->outbuf = b;
				rd->out_cap = cap;
			}
			memcpy(rd->outbuf + rd->out_len, buf, (size_t)n);
			sl->out_off = rd->out_len;
			rd->out_len += (size_t)n;
		}
	}
	free(order);
	for (size_t i = 0; i < rd->nr && !r; i++) {
		const struct slot *sl = &rd->slots[i];
		const struct perf_event_header *rec = (const void *)(rd->buf + sl->off);
		int w;

		/*
		 * Maps of data segments were there for unwinders reading
		 * .eh_frame_hdr (perf's mmap_data); with the stacks unwound
		 * they only cost bytes, as in a -g file.
		 */
		if (rec->type == PERF_RECORD_MMAP2 && (rec->misc & PERF_RECORD_MISC_MMAP_DATA))
			continue;
		w = sl->out > 0 ? perfrec_pdwriter__write(out, rd->outbuf + sl->out_off, (size_t)sl->out)
				    : perfrec_pdwriter__write(out, rd->buf + sl->off, sl->len);

		if (w < 0) {
			fprintf(stderr, "perfrecctl unwind: cannot write %s: %s\n", out_path, strerror(-w));
			r = EXIT_USAGE;
		}
	}
	rd->nr = 0;
	rd->len = 0;
	return r;
}

static int rewrite(const char *in_path, struct perfrec_pdreader *in, const char *out_path,
		   struct perfrec_pdwriter *out, struct perfrec_unwinder *u)
{
	const struct perf_event_header *rec;
	struct round rd = {0};
	uint64_t off;
	int r, rc = 0;

	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(in); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(in, i);
		struct perf_event_attr na;

		perfrec_unwinder__rewrite_attr(&a->attr, &na);
		r = perfrec_pdwriter__add_attr(out, &na, a->ids, a->nr_ids, a->name);
		if (r < 0) {
			fprintf(stderr, "perfrecctl unwind: %s: attr %zu cannot be copied: %s\n", in_path, i, strerror(-r));
			return EXIT_BAD;
		}
	}
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		const void *data;
		size_t len;

		if (f == PERFREC_FEAT_EVENT_DESC || f == PERFREC_FEAT_COMPRESSED)
			continue;
		if (perfrec_pdreader__feature(in, f, &data, &len) < 0)
			continue;
		r = perfrec_pdwriter__set_feature(out, f, data, len);
		if (r < 0) {
			fprintf(stderr, "perfrecctl unwind: %s: %s\n", out_path, strerror(-r));
			return EXIT_USAGE;
		}
	}
	while ((r = perfrec_pdreader__next(in, &rec, &off)) > 0) {
		if (rec->type == PERFREC_RECORD_HEADER_ATTR || rec->type == PERFREC_RECORD_HEADER_FEATURE)
			continue;
		if (round_add(&rd, rec, record_time(in, rec)) < 0) {
			rc = EXIT_USAGE;
			break;
		}
		if (rec->type == PERFREC_RECORD_FINISHED_ROUND && (rc = round_flush(&rd, in, u, out, in_path, out_path)))
			break;
	}
	if (!rc && r < 0) {
		fprintf(stderr, "perfrecctl unwind: %s: %s at offset %llu\n", in_path,
			perfrec_pdreader__error(in, &off), (unsigned long long)off);
		rc = EXIT_BAD;
	}
	if (!rc)
		rc = round_flush(&rd, in, u, out, in_path, out_path);
	free(rd.buf);
	free(rd.slots);
	free(rd.outbuf);
	if (rc)
		return rc;
	r = perfrec_pdwriter__finish(out);
	if (r < 0) {
		fprintf(stderr, "perfrecctl unwind: cannot finish %s: %s\n", out_path, strerror(-r));
		return EXIT_USAGE;
	}
	return 0;
}

static int verify_output(const char *path)
{
	struct perfrec_pdreader_opts opts = { .sz = sizeof(opts) };
	struct perfrec_pdreader *r;
	uint64_t off;
	int ret;

	ret = perfrec_pdreader__open(path, &opts, &r);
	if (ret < 0) {
		fprintf(stderr, "perfrecctl unwind: cannot read back %s: %s\n", path, strerror(-ret));
		return EXIT_USAGE;
	}
	ret = perfrec_pdreader__verify(r);
	if (ret < 0)
		fprintf(stderr, "perfrecctl unwind: %s as written does not verify: %s at offset %llu\n", path,
			ret == -EBADMSG ? perfrec_pdreader__error(r, &off) : strerror(-ret),
			ret == -EBADMSG ? (unsigned long long)off : 0ULL);
	perfrec_pdreader__free(r);
	return ret < 0 ? EXIT_BAD : 0;
}

int cmd_unwind(int argc, char **argv)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_unwinder_opts uo = { .sz = sizeof(uo) };
	struct perfrec_pdreader *in = NULL;
	struct perfrec_pdwriter *out = NULL;
	struct perfrec_unwinder *u = NULL;
	struct perfrec_unwinder_stats st;
	const char *paths[2] = { NULL, NULL };
	uint64_t off;
	int np = 0, r, rc, fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc && !paths[1])
			paths[1] = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1])
			return perfrecctl_usage("unwind");
		else if (np == 0)
			paths[np++] = argv[i];
		else if (np == 1 && !paths[1])
			paths[np++] = argv[i];
		else
			return perfrecctl_usage("unwind");
	}
	if (!paths[0] || !paths[1])
		return perfrecctl_usage("unwind");
	r = perfrec_pdreader__open(paths[0], &ro, &in);
	if (r < 0) {
		fprintf(stderr, "perfrecctl unwind: cannot open %s: %s\n", paths[0], strerror(-r));
		return EXIT_USAGE;
	}
	if (perfrec_pdreader__verify(in) < 0) {
		fprintf(stderr, "perfrecctl unwind: %s: %s at offset %llu (perfrecctl verify rejects it)\n", paths[0],
			perfrec_pdreader__error(in, &off), (unsigned long long)off);
		perfrec_pdreader__free(in);
		return EXIT_BAD;
	}
	r = perfrec_unwinder__new(&uo, &u);
	if (r < 0) {
		fprintf(stderr, "perfrecctl unwind: %s\n", strerror(-r));
		perfrec_pdreader__free(in);
		return EXIT_USAGE;
	}
	fd = open(paths[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	r = fd < 0 ? -errno : perfrec_pdwriter__new(fd, &wo, &out);
	if (r < 0) {
		fprintf(stderr, "perfrecctl unwind: cannot write %s: %s\n", paths[1], strerror(-r));
		if (fd >= 0)
			close(fd);
		perfrec_unwinder__free(u);
		perfrec_pdreader__free(in);
		return EXIT_USAGE;
	}
	rc = rewrite(paths[0], in, paths[1], out, u);
	perfrec_unwinder__stats(u, &st);
	perfrec_pdwriter__free(out, false);
	perfrec_pdreader__free(in);
	perfrec_unwinder__free(u);
	if (rc == 0)
		rc = verify_output(paths[1]);
	if (rc) {
		unlink(paths[1]);
		return rc;
	}
	fprintf(stderr, "perfrecctl unwind: %llu samples, %llu with callers, %.1f user frames each; "
		"%llu ELF files opened, %llu maps without a matching file\n",
		(unsigned long long)st.samples, (unsigned long long)st.unwound,
		st.samples ? (double)st.frames / (double)st.samples : 0.0,
		(unsigned long long)st.elf_opened, (unsigned long long)st.elf_missing);
	return 0;
}
