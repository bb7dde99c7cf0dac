// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Encoding and decoding of the sample body and of the sample_id trailer.
 * Field order follows the comments on PERF_RECORD_SAMPLE and
 * struct sample_id in linux/perf_event.h; every read is bounds-checked
 * against header.size because records come from files we did not write.
 */
#include <errno.h>
#include <string.h>

#include <perfrec/event.h>

#include "sample-layout.h"

size_t perfrec_sample_id__size(uint64_t st)
{
	size_t n = 0;

	if (st & PERF_SAMPLE_TID)
		n += 8;
	if (st & PERF_SAMPLE_TIME)
		n += 8;
	if (st & PERF_SAMPLE_ID)
		n += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		n += 8;
	if (st & PERF_SAMPLE_CPU)
		n += 8;
	if (st & PERF_SAMPLE_IDENTIFIER)
		n += 8;
	return n;
}

size_t perfrec_event__repair_sideband(const struct perf_event_header *h, size_t trailer_len,
				      void *buf, size_t bufsz)
{
	/* KSYMBOL: header, addr, len, ksym_type, flags, then the name padded to 8. */
	const size_t fixed = sizeof(*h) + 8 + 4 + 2 + 2;
	struct perf_event_header nh = *h;
	size_t body;

	switch (h->type) {
	case PERF_RECORD_KSYMBOL:
		if (h->size <= fixed)
			return 0;
		body = fixed + ((strnlen((const char *)h + fixed, h->size - fixed) + 1 + 7) & ~(size_t)7);
		break;
	case PERF_RECORD_BPF_EVENT:
		/* header, type, flags, id, tag[8] */
		body = sizeof(*h) + 2 + 2 + 4 + 8;
		break;
	default:
		return 0;
	}
	/* Stale bytes follow only when the record is longer than body and trailer. */
	if (body + trailer_len >= h->size || body + trailer_len > bufsz)
		return 0;
	nh.size = (uint16_t)(body + trailer_len);
	memcpy(buf, h, nh.size);
	memcpy(buf, &nh, sizeof(nh));
	return nh.size;
}

static unsigned char *put32x2(unsigned char *p, uint32_t a, uint32_t b)
{
	memcpy(p, &a, 4);
	memcpy(p + 4, &b, 4);
	return p + 8;
}

static unsigned char *put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

void perfrec_sample_id__write(void *buf, uint64_t st, const struct perfrec_sample_id *sid)
{
	unsigned char *p = buf;

	if (st & PERF_SAMPLE_TID)
		p = put32x2(p, sid->pid, sid->tid);
	if (st & PERF_SAMPLE_TIME)
		p = put64(p, sid->time);
	if (st & PERF_SAMPLE_ID)
		p = put64(p, sid->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		p = put64(p, sid->stream_id);
	if (st & PERF_SAMPLE_CPU)
		p = put32x2(p, sid->cpu, sid->res);
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(p, sid->id);
}

/* A cursor over a record's body that refuses to run past its end. */
struct cursor {
	const unsigned char *p, *end;
	int err;
};

static uint64_t take64(struct cursor *c)
{
	uint64_t v = 0;

	if (c->err || (size_t)(c->end - c->p) < 8) {
		c->err = -EINVAL;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static void take32x2(struct cursor *c, uint32_t *a, uint32_t *b)
{
	uint64_t v = take64(c);
	unsigned char raw[8];

	memcpy(raw, &v, 8);
	memcpy(a, raw, 4);
	memcpy(b, raw + 4, 4);
}

static const void *take_bytes(struct cursor *c, uint64_t n)
{
	const void *p = c->p;

	if (c->err || (uint64_t)(c->end - c->p) < n) {
		c->err = -EINVAL;
		return NULL;
	}
	c->p += n;
	return p;
}

int perfrec_sample_id__parse(const struct perf_event_header *rec, uint64_t st,
			     struct perfrec_sample_id *ret_sid)
{
	size_t n = perfrec_sample_id__size(st);
	struct perfrec_sample_id sid = {0};
	struct cursor c;
	uint32_t res;

	if (rec->size < sizeof(*rec) + n)
		return -EINVAL;
	c.p = (const unsigned char *)rec + rec->size - n;
	c.end = (const unsigned char *)rec + rec->size;
	c.err = 0;
	if (st & PERF_SAMPLE_TID)
		take32x2(&c, &sid.pid, &sid.tid);
	if (st & PERF_SAMPLE_TIME)
		sid.time = take64(&c);
	if (st & PERF_SAMPLE_ID)
		sid.id = take64(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		sid.stream_id = take64(&c);
	if (st & PERF_SAMPLE_CPU) {
		take32x2(&c, &sid.cpu, &res);
		sid.res = res;
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		sid.id = take64(&c);
	if (c.err)
		return c.err;
	*ret_sid = sid;
	return 0;
}

static void skip_read_format(struct cursor *c, uint64_t rf)
{
	uint64_t per_value = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);

	if (rf & PERF_FORMAT_GROUP) {
		uint64_t nr = take64(c);

		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			take64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			take64(c);
		if (nr > 0xffff) {
			c->err = -EINVAL;
			return;
		}
		take_bytes(c, nr * per_value * 8);
	} else {
		take64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			take64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			take64(c);
		if (rf & PERF_FORMAT_ID)
			take64(c);
		if (rf & PERF_FORMAT_LOST)
			take64(c);
	}
}

/*
 * The body after RAW: BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT,
 * DATA_SRC, TRANSACTION, REGS_INTR, PHYS_ADDR, CGROUP (perf_output_sample();
 * the UAPI comment leaves CGROUP out).  Register sets need their attr's
 * masks: without @a only a body free of variable-size fields before CGROUP
 * is walked, and CGROUP is left 0.
 */
static void parse_tail(struct cursor *c, uint64_t st, const struct perf_event_attr *a,
		       struct perfrec_sample *s)
{
	uint64_t var = PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
		       PERF_SAMPLE_REGS_INTR;

	/* Branch stacks depend on branch_sample_type (HW_INDEX): never recorded here. */
	if (st & PERF_SAMPLE_BRANCH_STACK)
		return;
	if (!a && (st & var))
		return;
	if (st & PERF_SAMPLE_REGS_USER) {
		s->regs_abi = take64(c);
		if (s->regs_abi) {
			s->regs_mask = a->sample_regs_user;
			s->nr_regs = (uint32_t)__builtin_popcountll(s->regs_mask);
			s->regs = take_bytes(c, (uint64_t)s->nr_regs * 8);
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		/*
		 * size, then size bytes, then (only when size != 0) the
		 * dyn_size the kernel could actually copy, at most size.
		 */
		s->stack_size = take64(c);
		if (!c->err && s->stack_size > (uint64_t)(c->end - c->p))
			c->err = -EINVAL;
		s->stack = take_bytes(c, s->stack_size);
		if (s->stack_size) {
			s->stack_dyn_size = take64(c);
			if (!c->err && s->stack_dyn_size > s->stack_size)
				c->err = -EINVAL;
		}
	}
	if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
		take64(c);
	if (st & PERF_SAMPLE_DATA_SRC)
		take64(c);
	if (st & PERF_SAMPLE_TRANSACTION)
		take64(c);
	if (st & PERF_SAMPLE_REGS_INTR) {
		if (take64(c))
			take_bytes(c, (uint64_t)__builtin_popcountll(a->sample_regs_intr) * 8);
	}
	if (st & PERF_SAMPLE_PHYS_ADDR)
		take64(c);
	if (st & PERF_SAMPLE_CGROUP)
		s->cgroup = take64(c);
}

static int parse(const struct perf_event_header *rec, uint64_t st, uint64_t rf,
		 const struct perf_event_attr *a, struct perfrec_sample *ret)
{
	struct perfrec_sample s = {0};
	struct cursor c;
	uint32_t res;

	if (rec->size < sizeof(*rec))
		return -EINVAL;
	c.p = (const unsigned char *)(rec + 1);
	c.end = (const unsigned char *)rec + rec->size;
	c.err = 0;

	if (st & PERF_SAMPLE_IDENTIFIER)
		s.id = take64(&c);
	if (st & PERF_SAMPLE_IP)
		s.ip = take64(&c);
	if (st & PERF_SAMPLE_TID)
		take32x2(&c, &s.pid, &s.tid);
	if (st & PERF_SAMPLE_TIME)
		s.time = take64(&c);
	if (st & PERF_SAMPLE_ADDR)
		s.addr = take64(&c);
	if (st & PERF_SAMPLE_ID)
		s.id = take64(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		s.stream_id = take64(&c);
	if (st & PERF_SAMPLE_CPU)
		take32x2(&c, &s.cpu, &res);
	if (st & PERF_SAMPLE_PERIOD)
		s.period = take64(&c);
	if (st & PERF_SAMPLE_READ)
		skip_read_format(&c, rf);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		s.nr_callchain = take64(&c);
		if (!c.err && s.nr_callchain > (uint64_t)(c.end - c.p) / 8)
			c.err = -EINVAL;
		s.callchain = take_bytes(&c, s.nr_callchain * 8);
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t pad;

		take32x2(&c, &s.raw_size, &pad);
		/* The u32 size is followed directly by the data: step back 4. */
		if (!c.err) {
			c.p -= 4;
			s.raw = take_bytes(&c, s.raw_size);
		}
	}
	if (!c.err)
		parse_tail(&c, st, a, &s);
	if (c.err)
		return c.err;
	*ret = s;
	return 0;
}

int perfrec_sample__parse(const struct perf_event_header *rec, uint64_t st, uint64_t rf,
			  struct perfrec_sample *ret)
{
	return parse(rec, st, rf, NULL, ret);
}

int perfrec_sample__parse_attr(const struct perf_event_header *rec, const struct perf_event_attr *attr,
			       struct perfrec_sample *ret)
{
	return parse(rec, attr->sample_type, attr->read_format, attr, ret);
}

int perfrec_event__identifier(const struct perf_event_header *rec, uint64_t *ret_id)
{
	const unsigned char *p = (const unsigned char *)rec;

	if (rec->type >= PERF_RECORD_MAX || rec->size < sizeof(*rec) + 8)
		return -ENOENT;
	if (rec->type == PERF_RECORD_SAMPLE)
		memcpy(ret_id, p + sizeof(*rec), 8);
	else
		memcpy(ret_id, p + rec->size - 8, 8);
	return 0;
}

static const char *const kernel_names[] = {
	[PERF_RECORD_MMAP] = "MMAP",
	[PERF_RECORD_LOST] = "LOST",
	[PERF_RECORD_COMM] = "COMM",
	[PERF_RECORD_EXIT] = "EXIT",
	[PERF_RECORD_THROTTLE] = "THROTTLE",
	[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
	[PERF_RECORD_FORK] = "FORK",
	[PERF_RECORD_READ] = "READ",
	[PERF_RECORD_SAMPLE] = "SAMPLE",
	[PERF_RECORD_MMAP2] = "MMAP2",
	[PERF_RECORD_AUX] = "AUX",
	[PERF_RECORD_ITRACE_START] = "ITRACE_START",
	[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
	[PERF_RECORD_SWITCH] = "SWITCH",
	[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
	[PERF_RECORD_NAMESPACES] = "NAMESPACES",
	[PERF_RECORD_KSYMBOL] = "KSYMBOL",
	[PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
	[PERF_RECORD_CGROUP] = "CGROUP",
	[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
	[PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
};

static const char *const user_names[] = {
	[PERFREC_RECORD_HEADER_ATTR - 64] = "HEADER_ATTR",
	[PERFREC_RECORD_HEADER_EVENT_TYPE - 64] = "HEADER_EVENT_TYPE",
	[PERFREC_RECORD_HEADER_TRACING_DATA - 64] = "HEADER_TRACING_DATA",
	[PERFREC_RECORD_HEADER_BUILD_ID - 64] = "HEADER_BUILD_ID",
	[PERFREC_RECORD_FINISHED_ROUND - 64] = "FINISHED_ROUND",
	[PERFREC_RECORD_ID_INDEX - 64] = "ID_INDEX",
	[PERFREC_RECORD_AUXTRACE_INFO - 64] = "AUXTRACE_INFO",
	[PERFREC_RECORD_AUXTRACE - 64] = "AUXTRACE",
	[PERFREC_RECORD_AUXTRACE_ERROR - 64] = "AUXTRACE_ERROR",
	[PERFREC_RECORD_THREAD_MAP - 64] = "THREAD_MAP",
	[PERFREC_RECORD_CPU_MAP - 64] = "CPU_MAP",
	[PERFREC_RECORD_STAT_CONFIG - 64] = "STAT_CONFIG",
	[PERFREC_RECORD_STAT - 64] = "STAT",
	[PERFREC_RECORD_STAT_ROUND - 64] = "STAT_ROUND",
	[PERFREC_RECORD_EVENT_UPDATE - 64] = "EVENT_UPDATE",
	[PERFREC_RECORD_TIME_CONV - 64] = "TIME_CONV",
	[PERFREC_RECORD_HEADER_FEATURE - 64] = "HEADER_FEATURE",
	[PERFREC_RECORD_COMPRESSED - 64] = "COMPRESSED",
	[PERFREC_RECORD_FINISHED_INIT - 64] = "FINISHED_INIT",
	[PERFREC_RECORD_COMPRESSED2 - 64] = "COMPRESSED2",
};

const char *perfrec_event__type_name(uint32_t type)
{
	const char *n = NULL;

	if (type < sizeof(kernel_names) / sizeof(kernel_names[0]))
		n = kernel_names[type];
	else if (type >= 64 && type - 64 < sizeof(user_names) / sizeof(user_names[0]))
		n = user_names[type - 64];
	return n ? n : "UNKNOWN";
}

/* The sample fields before READ, 8 bytes each, in the order parse() takes them. */
#define PREFIX_BITS                                                                                     \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | \
	 PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

/* What parse_tail() takes without an attr: nothing after a variable-size field. */
static uint32_t tail_len(uint64_t st)
{
	uint64_t var = PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
		       PERF_SAMPLE_REGS_INTR;
	uint32_t n = 0;

	if (st & var)
		return 0;
	if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
		n += 8;
	n += 8 * (uint32_t)__builtin_popcountll(st & (PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION |
						      PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP));
	return n;
}

void sample_layout_init(struct sample_layout *l, uint64_t st, uint64_t rf)
{
	const uint32_t hdr = sizeof(struct perf_event_header);
	uint32_t off = hdr;

	*l = (struct sample_layout){ .sample_type = st, .read_format = rf, .fixed = true };
	off += 8 * (uint32_t)__builtin_popcountll(st & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP));
	if (st & PERF_SAMPLE_TID)
		l->pid_off = off;
	l->time_off = st & PERF_SAMPLE_TIME ? off + (st & PERF_SAMPLE_TID ? 8 : 0) : 0;
	off = hdr + 8 * (uint32_t)__builtin_popcountll(st & PREFIX_BITS);
	if (st & PERF_SAMPLE_READ) {
		if (rf & PERF_FORMAT_GROUP)
			l->fixed = false;
		off += 8 * (1 + (uint32_t)__builtin_popcountll(rf & (PERF_FORMAT_TOTAL_TIME_ENABLED |
								       PERF_FORMAT_TOTAL_TIME_RUNNING |
								       PERF_FORMAT_ID | PERF_FORMAT_LOST)));
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		l->chain_off = off;
		off += 8;
	}
	/* RAW's size is in the record: only parse() knows what follows it. */
	if (st & PERF_SAMPLE_RAW)
		l->fixed = false;
	l->head_len = off;
	l->tail_len = tail_len(st);
}

int sample_layout_chain(const struct sample_layout *l, const struct perf_event_header *h,
			const uint64_t **ret_chain, uint64_t *ret_nr)
{
	struct perfrec_sample s;
	uint64_t nr;
	size_t room;

	if (!(l->sample_type & PERF_SAMPLE_CALLCHAIN))
		return -ENOENT;
	if (!l->fixed) {
		if (perfrec_sample__parse(h, l->sample_type, l->read_format, &s) < 0)
			return -EINVAL;
		*ret_chain = s.callchain;
		*ret_nr = s.nr_callchain;
		return 0;
	}
	/* Fields are taken in order: the record is whole iff each fits after the last. */
	if (h->size < l->head_len)
		return -EINVAL;
	memcpy(&nr, (const unsigned char *)h + l->chain_off, sizeof(nr));
	room = h->size - l->head_len;
	if (nr > room / 8 || room - nr * 8 < l->tail_len)
		return -EINVAL;
	*ret_chain = (const uint64_t *)((const unsigned char *)h + l->head_len);
	*ret_nr = nr;
	return 0;
}

/* @h, whose callchain is @nr entries at @chain, with its user chain ended (see below). */
static size_t end_chain(const struct perf_event_header *h, const uint64_t *chain, uint64_t nr,
			void *buf, size_t bufsz)
{
	const uint64_t user = (uint64_t)PERF_CONTEXT_USER, ctx_max = (uint64_t)PERF_CONTEXT_MAX;
	const unsigned char *p = (const unsigned char *)h;
	size_t nr_off, chain_end, cut, size;
	uint64_t end = 0, i = 0, v;

	/* Entries before PERF_CONTEXT_USER are the kernel's: not looked at. */
	for (; i < nr; i++) {
		memcpy(&v, chain + i, sizeof(v));
		if (v == user)
			break;
	}
	for (i++; i < nr; i++) {
		memcpy(&v, chain + i, sizeof(v));
		if (v >= ctx_max) {
			end = i;
			break;
		}
	}
	if (!end)
		return 0;
	nr_off = (size_t)((const unsigned char *)chain - p) - sizeof(uint64_t);
	chain_end = nr_off + sizeof(uint64_t) + (size_t)nr * sizeof(uint64_t);
	cut = (size_t)(nr - end) * sizeof(uint64_t);
	size = h->size - cut;
	if (size > bufsz)
		return 0;
	memcpy(buf, p, nr_off);
	memcpy((unsigned char *)buf + nr_off, &end, sizeof(end));
	memcpy((unsigned char *)buf + nr_off + sizeof(end), chain, (size_t)end * sizeof(uint64_t));
	memcpy((unsigned char *)buf + chain_end - cut, p + chain_end, h->size - chain_end);
	((struct perf_event_header *)buf)->size = (uint16_t)size;
	return size;
}

size_t sample_layout_end_user_chain(const struct sample_layout *l, const struct perf_event_header *h,
				    void *buf, size_t bufsz)
{
	const uint64_t *chain;
	uint64_t nr;

	if (!h || !buf || h->type != PERF_RECORD_SAMPLE || h->size < sizeof(*h) ||
	    sample_layout_chain(l, h, &chain, &nr) < 0)
		return 0;
	return end_chain(h, chain, nr, buf, bufsz);
}

size_t perfrec_sample__end_user_chain(const struct perf_event_header *h, uint64_t sample_type,
				      uint64_t read_format, void *buf, size_t bufsz)
{
	struct sample_layout l;

	sample_layout_init(&l, sample_type, read_format);
	return sample_layout_end_user_chain(&l, h, buf, bufsz);
}
