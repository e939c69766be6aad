/* perf_record.c: parsing perf event records and reading them off a ring.
 *
 * Record format: include/uapi/linux/perf_event.h (the fields of a sample
 * follow the order of the sample_type bits; a REGS_USER block is the abi
 * word followed by one word per mask bit, or by nothing when abi is NONE).
 * Ring protocol: the kernel advances data_head, the reader data_tail;
 * records are 8-byte aligned and may wrap at the end of the data area.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <linux/perf_event.h>

#include "perf_sample.h"

_Static_assert(CM_PERF_SAMPLE_TYPE_SW == (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	       PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER), "sw layout");
_Static_assert(CM_PERF_SAMPLE_TYPE_HW == (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	       PERF_SAMPLE_IP | PERF_SAMPLE_ADDR), "hw layout");

#define SUPPORTED_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | \
	PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | \
	PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | \
	PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_WEIGHT | \
	PERF_SAMPLE_DATA_SRC)

#define HDR_SIZE sizeof(struct perf_event_header)

int cm_perf_layout_check(const struct cm_perf_layout *lay,
			 struct cm_error *err)
{
	if (!lay)
		return cm_errorf(err, EINVAL, "perf layout: NULL");
	if (lay->sample_type & ~(uint64_t)SUPPORTED_SAMPLE_TYPE)
		return cm_errorf(err, EINVAL, "perf layout: sample_type 0x%llx "
				 "has fields the parser does not know (0x%llx)",
				 (unsigned long long)lay->sample_type,
				 (unsigned long long)(lay->sample_type &
				 ~(uint64_t)SUPPORTED_SAMPLE_TYPE));
	return 0;
}

/* A cursor over one record's body. */
struct cursor {
	const uint8_t *p, *end;
};

static bool take_u64(struct cursor *c, uint64_t *v)
{
	if ((size_t)(c->end - c->p) < sizeof(*v))
		return false;
	memcpy(v, c->p, sizeof(*v));
	c->p += sizeof(*v);
	return true;
}

/* Two u32 in one u64 slot (pid/tid, cpu/res), in memory order. */
static bool take_u32_pair(struct cursor *c, uint32_t *a, uint32_t *b)
{
	if ((size_t)(c->end - c->p) < 2 * sizeof(uint32_t))
		return false;
	memcpy(a, c->p, sizeof(*a));
	memcpy(b, c->p + sizeof(*a), sizeof(*b));
	c->p += 2 * sizeof(uint32_t);
	return true;
}

/* The optional u64 field of sample_type bit `bit`. */
static bool take_opt(struct cursor *c, uint64_t type, uint64_t bit,
		     uint64_t *v)
{
	return !(type & bit) || take_u64(c, v);
}

static int parse_regs(struct cursor *c, uint64_t mask,
		      struct cm_perf_sample *s, struct cm_error *err)
{
	size_t n = (size_t)__builtin_popcountll(mask);
	uint64_t vals[64];

	s->has_regs_block = 1;
	if (!take_u64(c, &s->regs_abi))
		return cm_errorf(err, EBADMSG, "perf sample: truncated "
				 "before the register abi");
	if (s->regs_abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0;	/* no registers follow */
	if ((size_t)(c->end - c->p) < n * sizeof(uint64_t))
		return cm_errorf(err, EBADMSG, "perf sample: %zu registers "
				 "announced, %zu bytes left", n,
				 (size_t)(c->end - c->p));
	memcpy(vals, c->p, n * sizeof(uint64_t));
	c->p += n * sizeof(uint64_t);
	if (cm_regs_from_sample(&s->regs, s->regs_abi, mask, vals, n, err))
		return cm_errorf(err, EBADMSG, "perf sample: register abi "
				 "%llu is not 64-bit",
				 (unsigned long long)s->regs_abi);
	return 0;
}

static int parse_sample(const struct cm_perf_layout *lay, struct cursor *c,
			struct cm_perf_sample *s, struct cm_error *err)
{
	uint64_t t = lay->sample_type, unused;
	uint32_t res;
	bool okf = true;

	okf = okf && take_opt(c, t, PERF_SAMPLE_IDENTIFIER, &s->id);
	okf = okf && take_opt(c, t, PERF_SAMPLE_IP, &s->ip);
	if (okf && (t & PERF_SAMPLE_TID))
		okf = take_u32_pair(c, &s->pid, &s->tid);
	okf = okf && take_opt(c, t, PERF_SAMPLE_TIME, &s->time);
	okf = okf && take_opt(c, t, PERF_SAMPLE_ADDR, &s->addr);
	okf = okf && take_opt(c, t, PERF_SAMPLE_ID, &s->id);
	okf = okf && take_opt(c, t, PERF_SAMPLE_STREAM_ID, &unused);
	if (okf && (t & PERF_SAMPLE_CPU))
		okf = take_u32_pair(c, &s->cpu, &res);
	okf = okf && take_opt(c, t, PERF_SAMPLE_PERIOD, &s->period);
	if (!okf)
		return cm_errorf(err, EBADMSG, "perf sample: record ends "
				 "inside its fixed fields");
	if ((t & PERF_SAMPLE_REGS_USER) &&
	    parse_regs(c, lay->regs_mask, s, err))
		return -1;
	okf = take_opt(c, t, PERF_SAMPLE_WEIGHT, &s->weight) &&
	      take_opt(c, t, PERF_SAMPLE_DATA_SRC, &s->data_src);
	if (!okf)
		return cm_errorf(err, EBADMSG, "perf sample: record ends "
				 "inside weight/data_src");
	return 0;
}

/* Body of LOST (id, lost), LOST_SAMPLES (lost), THROTTLE (time, id, ...). */
static int parse_lost(uint32_t type, struct cursor *c,
		      struct cm_perf_record *out, struct cm_error *err)
{
	uint64_t id;

	if (type == PERF_RECORD_LOST && !take_u64(c, &id))
		goto short_rec;
	if (!take_u64(c, &out->lost))
		goto short_rec;
	out->kind = CM_PERF_REC_LOST;
	return 0;
short_rec:
	return cm_errorf(err, EBADMSG, "perf record: lost record of %u "
			 "bytes is too short", out->size);
}

int cm_perf_parse_record(const struct cm_perf_layout *lay, const void *rec,
			 size_t len, struct cm_perf_record *out,
			 struct cm_error *err)
{
	struct perf_event_header h;
	struct cursor c;

	if (!rec || !out)
		return cm_errorf(err, EINVAL, "perf record: NULL argument");
	if (cm_perf_layout_check(lay, err))
		return -1;
	if (len < HDR_SIZE)
		return cm_errorf(err, EBADMSG, "perf record: %zu bytes, "
				 "shorter than a header", len);
	memcpy(&h, rec, HDR_SIZE);
	if (h.size < HDR_SIZE || h.size > len)
		return cm_errorf(err, EBADMSG, "perf record: header size %u "
				 "outside [%zu, %zu]", h.size, HDR_SIZE, len);
	memset(out, 0, sizeof(*out));
	out->type = h.type;
	out->misc = h.misc;
	out->size = h.size;
	c.p = (const uint8_t *)rec + HDR_SIZE;
	c.end = (const uint8_t *)rec + h.size;
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		out->kind = CM_PERF_REC_SAMPLE;
		return parse_sample(lay, &c, &out->sample, err);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		return parse_lost(h.type, &c, out, err);
	case PERF_RECORD_THROTTLE:
		out->kind = CM_PERF_REC_THROTTLE;
		return 0;
	case PERF_RECORD_UNTHROTTLE:
		out->kind = CM_PERF_REC_UNTHROTTLE;
		return 0;
	default:
		out->kind = CM_PERF_REC_OTHER;
		return 0;
	}
}

/* Copy n bytes of the ring starting at free-running position pos. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t pos,
		      void *dst, size_t n)
{
	uint64_t off = pos & (size - 1);
	size_t first = n;

	if (off + n > size)
		first = (size_t)(size - off);
	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, n - first);
}

int cm_perf_ring_next(const uint8_t *data, uint64_t size, uint64_t head,
		      uint64_t *tail, uint8_t *buf, size_t bufsize,
		      const uint8_t **rec, size_t *len, struct cm_error *err)
{
	struct perf_event_header h;
	uint64_t avail, off;

	if (!data || !tail || !rec || !len || size < HDR_SIZE ||
	    (size & (size - 1)))
		return cm_errorf(err, EINVAL, "perf ring: bad argument");
	avail = head - *tail;
	if (avail == 0)
		return 0;
	if (avail > size)
		return cm_errorf(err, EBADMSG, "perf ring: %llu bytes pending "
				 "in a ring of %llu", (unsigned long long)avail,
				 (unsigned long long)size);
	if (avail < HDR_SIZE)
		return cm_errorf(err, EBADMSG, "perf ring: %llu bytes pending, "
				 "less than a header", (unsigned long long)avail);
	ring_copy(data, size, *tail, &h, HDR_SIZE);
	if (h.size < HDR_SIZE)
		return cm_errorf(err, EBADMSG, "perf ring: record header size "
				 "%u (zero or short)", h.size);
	if (h.size > avail)
		return cm_errorf(err, EBADMSG, "perf ring: record of %u bytes "
				 "beyond the %llu written", h.size,
				 (unsigned long long)avail);
	off = *tail & (size - 1);
	if (off + h.size <= size) {
		*rec = data + off;
	} else {
		if (!buf || bufsize < h.size)
			return cm_errorf(err, EINVAL, "perf ring: wrapped record "
					 "of %u bytes, buffer of %zu", h.size,
					 bufsize);
		ring_copy(data, size, *tail, buf, h.size);
		*rec = buf;
	}
	*len = h.size;
	*tail += h.size;
	return 1;
}

void cm_perf_stats_account(struct cm_perf_stats *st,
			   const struct cm_perf_record *rec)
{
	st->bytes += rec->size;
	switch (rec->kind) {
	case CM_PERF_REC_SAMPLE:
		st->samples++;
		if (rec->sample.has_regs_block && !rec->sample.regs.valid)
			st->no_regs++;
		break;
	case CM_PERF_REC_LOST:
		st->lost += rec->lost;
		break;
	case CM_PERF_REC_THROTTLE:
		st->throttle++;
		break;
	case CM_PERF_REC_UNTHROTTLE:
		st->unthrottle++;
		break;
	default:
		st->other++;
		break;
	}
}
