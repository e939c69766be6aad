/* perf_sample.c: perf event samples for the sample and hw backends.
 *
 * Record format: include/uapi/linux/perf_event.h (the fields of a sample
 * follow the order of the sample_type bits; a REGS_USER block is the abi
 * word followed by one word per mask bit, or by nothing when abi is NONE).
 * Ring protocol: the kernel advances data_head, the reader data_tail;
 * records are 8-byte aligned and may wrap at the end of the data area.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "perf_sample.h"
#include "grow.h"

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

/* ---- Records ---------------------------------------------------------- */

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

/* ---- Hardware probe --------------------------------------------------- */

/* snprintf into a fixed buffer; text is cut at the buffer's end (paths are
 * checked by the open that follows). */
static int __attribute__((format(printf, 3, 4)))
fmt(char *dst, size_t n, const char *f, ...)
{
	va_list ap;
	int r;

	va_start(ap, f);
	r = vsnprintf(dst, n, f, ap);
	va_end(ap);
	return r;
}

const char *cm_perf_hw_kind_name(enum cm_perf_hw_kind k)
{
	static const char *const names[] = { "none", "pebs", "ibs", "spe" };

	if ((unsigned)k >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[k];
}

/* First line of a small file, newline stripped.  0 or -1. */
static int read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	char *nl;

	if (!f)
		return -1;
	if (!fgets(buf, (int)n, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

static int read_type(const char *devdir, const char *pmu, uint32_t *type)
{
	char path[4096], line[64], *end;
	unsigned long v;

	fmt(path, sizeof(path), "%s/%s/type", devdir, pmu);
	if (read_line(path, line, sizeof(line)))
		return -1;
	errno = 0;
	v = strtoul(line, &end, 10);
	if (errno || end == line || v > UINT32_MAX)
		return -1;
	*type = (uint32_t)v;
	return 0;
}

/* Put value into the bits a format file ("config:0-7", "config1:0-15",
 * "config:32") names.  0 or -1 for a format it does not understand. */
static int apply_format(const char *fmt, uint64_t value, uint64_t *config,
			uint64_t *config1)
{
	unsigned lo, hi;
	uint64_t *dst, mask;
	const char *bits;
	int n = 0;

	if (strncmp(fmt, "config1:", 8) == 0) {
		dst = config1;
		bits = fmt + 8;
	} else if (strncmp(fmt, "config:", 7) == 0) {
		dst = config;
		bits = fmt + 7;
	} else {
		return -1;
	}
	if (sscanf(bits, "%u-%u%n", &lo, &hi, &n) != 2 || bits[n] != '\0') {
		if (sscanf(bits, "%u%n", &lo, &n) != 1 || bits[n] != '\0')
			return -1;
		hi = lo;
	}
	if (hi < lo || hi > 63)
		return -1;
	mask = hi - lo == 63 ? ~0ull : ((1ull << (hi - lo + 1)) - 1);
	*dst = (*dst & ~(mask << lo)) | ((value & mask) << lo);
	return 0;
}

/* Turn "event=0xcd,umask=0x1,ldlat=3" into config bits with the PMU's
 * format directory. */
static int encode_event(const char *pmudir, const char *terms,
			struct cm_perf_hw *hw)
{
	char copy[256], path[4096], form[64], *save = NULL, *tok;

	fmt(copy, sizeof(copy), "%s", terms);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long long v = 1;

		if (eq) {
			*eq = '\0';
			errno = 0;
			v = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end)
				return -1;
		}
		fmt(path, sizeof(path), "%s/format/%s", pmudir, tok);
		if (read_line(path, form, sizeof(form)) ||
		    apply_format(form, v, &hw->config, &hw->config1))
			return -1;
	}
	return 0;
}

static int find_pebs(const char *devdir, struct cm_perf_hw *hw)
{
	static const char *const pmus[] = { "cpu", "cpu_core" };
	char pmudir[4096], path[4200], terms[256];

	for (size_t i = 0; i < sizeof(pmus) / sizeof(pmus[0]); i++) {
		fmt(pmudir, sizeof(pmudir), "%s/%s", devdir, pmus[i]);
		fmt(path, sizeof(path), "%s/events/mem-loads", pmudir);
		if (read_line(path, terms, sizeof(terms)) ||
		    read_type(devdir, pmus[i], &hw->type))
			continue;
		hw->config = hw->config1 = 0;
		if (encode_event(pmudir, terms, hw)) {
			fmt(hw->reason, sizeof(hw->reason), "%s: cannot "
				 "encode mem-loads \"%s\" with its format",
				 path, terms);
			return -1;
		}
		hw->kind = CM_PERF_HW_PEBS;
		hw->precise_ip = 2;
		fmt(hw->pmu, sizeof(hw->pmu), "%s", pmus[i]);
		return 1;
	}
	return 0;
}

/* Names of the PMUs present, for the reason text. */
static void list_pmus(const char *devdir, char *out, size_t n)
{
	DIR *d = opendir(devdir);
	struct dirent *e;
	size_t used = 0;

	out[0] = '\0';
	if (!d) {
		fmt(out, n, "(cannot open: %s)", strerror(errno));
		return;
	}
	while ((e = readdir(d)) && used + 2 < n) {
		if (e->d_name[0] == '.')
			continue;
		used += (size_t)fmt(out + used, n - used, "%s%s",
					 used ? " " : "", e->d_name);
	}
	closedir(d);
	if (!used)
		fmt(out, n, "(none)");
}

/* The first arm_spe* PMU, if any. */
static int find_spe(const char *devdir, struct cm_perf_hw *hw)
{
	DIR *d = opendir(devdir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "arm_spe", 7) == 0 &&
		    read_type(devdir, e->d_name, &hw->type) == 0) {
			fmt(hw->pmu, sizeof(hw->pmu), "%s", e->d_name);
			found = 1;
			break;
		}
	}
	closedir(d);
	return found;
}

int cm_perf_hw_find(const char *sysfs_root, struct cm_perf_hw *hw)
{
	char devdir[4096], have[160];
	int r;

	if (!hw)
		return cm_errorf(NULL, EINVAL, "hw probe: NULL");
	memset(hw, 0, sizeof(*hw));
	fmt(devdir, sizeof(devdir), "%s/bus/event_source/devices",
		 sysfs_root ? sysfs_root : "/sys");
	r = find_pebs(devdir, hw);
	if (r)
		return r > 0 ? 1 : 0;
	if (read_type(devdir, "ibs_op", &hw->type) == 0) {
		hw->kind = CM_PERF_HW_IBS;
		fmt(hw->pmu, sizeof(hw->pmu), "ibs_op");
		return 1;
	}
	if (find_spe(devdir, hw)) {
		/* SPE writes its packets to the AUX area, not as
		 * PERF_SAMPLE_ADDR records; decoding them is not done. */
		hw->kind = CM_PERF_HW_NONE;
		fmt(hw->reason, sizeof(hw->reason), "%s/%s: Arm SPE "
			 "found, but its records come through the AUX area, "
			 "which commap does not decode", devdir, hw->pmu);
		return 0;
	}
	list_pmus(devdir, have, sizeof(have));
	fmt(hw->reason, sizeof(hw->reason), "no hardware memory-sampling "
		 "PMU (cpu/events/mem-loads, ibs_op, arm_spe*) in %s; present: "
		 "%s", devdir, have);
	return 0;
}

/* The perf_event_attr of a sampler configuration (also used by the probe
 * with default periods). */
static void build_attr(const struct cm_perf_config *cfg,
		       struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->disabled = 1;
	a->inherit = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = cfg->ring_pages * (uint32_t)getpagesize() / 4;
	if (cfg->backend == CM_PERF_BACKEND_HW) {
		a->type = cfg->hw.type;
		a->config = cfg->hw.config;
		a->config1 = cfg->hw.config1;
		a->precise_ip = (unsigned)cfg->hw.precise_ip & 3;
		/* IBS cannot filter by privilege level (the kernel refuses
		 * exclude_kernel for it): kernel samples are dropped when
		 * read. */
		a->exclude_kernel = cfg->hw.kind != CM_PERF_HW_IBS;
		a->sample_period = cfg->hw_period;
		a->sample_type = CM_PERF_SAMPLE_TYPE_HW;
		return;
	}
	a->type = PERF_TYPE_SOFTWARE;
	a->config = cfg->clock == CM_PERF_TASK_CLOCK ?
		    PERF_COUNT_SW_TASK_CLOCK : PERF_COUNT_SW_CPU_CLOCK;
	a->sample_period = cfg->period_ns;
	a->sample_type = CM_PERF_SAMPLE_TYPE_SW;
	a->sample_regs_user = cfg->regs_mask;
}

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

static int paranoid_level(void)
{
	char line[32];

	if (read_line("/proc/sys/kernel/perf_event_paranoid", line,
		      sizeof(line)))
		return 99;
	return atoi(line);
}

/* A message that tells the user what to do about a perf_event_open error. */
static int open_error(struct cm_error *err, int e, const char *what,
		      pid_t tid)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return cm_errorf(err, e, "perf_event_open(%s, tid %d): %s; "
				 "kernel.perf_event_paranoid is %d: run as "
				 "root or with CAP_PERFMON, or sample only "
				 "your own processes with paranoid <= 2",
				 what, (int)tid, strerror(e),
				 paranoid_level());
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return cm_errorf(err, e, "perf_event_open(%s, tid %d): %s: "
				 "this kernel or CPU does not support the "
				 "event", what, (int)tid, strerror(e));
	case ESRCH:
		return cm_errorf(err, e, "perf_event_open(%s, tid %d): no "
				 "such thread", what, (int)tid);
	case EMFILE:
	case ENFILE:
		return cm_errorf(err, e, "perf_event_open(%s, tid %d): out of "
				 "file descriptors (one per thread and CPU)",
				 what, (int)tid);
	default:
		return cm_errorf(err, e, "perf_event_open(%s, tid %d): %s",
				 what, (int)tid, strerror(e));
	}
}

int cm_perf_hw_probe(const char *sysfs_root, struct cm_perf_hw *hw)
{
	struct cm_perf_config cfg;
	struct perf_event_attr a;
	struct cm_error e;
	char found[96];
	int r, fd;

	r = cm_perf_hw_find(sysfs_root, hw);
	if (r <= 0)
		return r;
	cm_perf_config_default(&cfg);
	cfg.backend = CM_PERF_BACKEND_HW;
	cfg.hw = *hw;
	build_attr(&cfg, &a);
	fd = perf_open(&a, 0, -1);
	if (fd >= 0) {
		close(fd);
		fmt(hw->reason, sizeof(hw->reason), "%s (%s, type %u) "
			 "accepted", cm_perf_hw_kind_name(hw->kind), hw->pmu,
			 hw->type);
		return 1;
	}
	fmt(found, sizeof(found), "%s %s", cm_perf_hw_kind_name(hw->kind),
		 hw->pmu);
	open_error(&e, errno, found, 0);
	fmt(hw->reason, sizeof(hw->reason), "%s", e.text);
	hw->kind = CM_PERF_HW_NONE;
	return 0;
}

/* ---- Sampler ---------------------------------------------------------- */

void cm_perf_config_default(struct cm_perf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = CM_PERF_BACKEND_SAMPLE;
	cfg->clock = CM_PERF_CPU_CLOCK;
	cfg->period_ns = CM_PERF_DEFAULT_PERIOD_NS;
	cfg->regs_mask = CM_PERF_REGS_MASK;
	cfg->hw_period = 10007;
	cfg->ring_pages = CM_PERF_DEFAULT_RING_PAGES;
}

struct ring {
	int fd;				/* the event that owns the mapping */
	void *base;			/* metadata page + data */
	size_t maplen;
	uint8_t *data;
	uint64_t size;
	/* drain cursor: the records in [tail, head) are being read; next
	 * is the first sample not yet handed out when has_next */
	uint64_t head, tail;
	int has_next;
	struct cm_perf_sample next;
};

struct cm_perf_sampler {
	struct cm_perf_config cfg;
	struct perf_event_attr attr;
	struct cm_perf_layout lay;
	int ncpu;
	struct ring *rings;		/* one per possible CPU */
	struct ring **heap;		/* drain: rings with a pending sample,
					 * a min-heap on its time */
	int *fds;			/* every event */
	int nfds, capfds;
	pid_t *tids;			/* attached tasks */
	int ntids, captids;
	struct cm_perf_stats st;
	uint8_t buf[65536];		/* a record wrapping the ring end */
};

static int check_config(const struct cm_perf_config *cfg,
			struct cm_error *err)
{
	unsigned p = cfg->ring_pages;

	if (p == 0 || (p & (p - 1)) || p > 4096)
		return cm_errorf(err, EINVAL, "perf sampler: ring_pages %u is "
				 "not a power of two in [1, 4096]", p);
	if (cfg->backend == CM_PERF_BACKEND_HW) {
		if (cfg->hw.kind == CM_PERF_HW_NONE)
			return cm_errorf(err, ENOENT, "perf sampler: hw "
					 "backend without a hardware PMU%s%s",
					 cfg->hw.reason[0] ? ": " : "",
					 cfg->hw.reason);
		if (cfg->hw_period == 0)
			return cm_errorf(err, EINVAL, "perf sampler: "
					 "hw_period 0");
		return 0;
	}
	if (cfg->backend != CM_PERF_BACKEND_SAMPLE ||
	    (cfg->clock != CM_PERF_CPU_CLOCK &&
	     cfg->clock != CM_PERF_TASK_CLOCK))
		return cm_errorf(err, EINVAL, "perf sampler: unknown backend "
				 "or clock");
	if (cfg->period_ns < CM_PERF_MIN_PERIOD_NS)
		return cm_errorf(err, EINVAL, "perf sampler: period %llu ns "
				 "below the minimum %llu ns",
				 (unsigned long long)cfg->period_ns,
				 (unsigned long long)CM_PERF_MIN_PERIOD_NS);
	if (!cfg->regs_mask || (cfg->regs_mask & ~CM_PERF_REGS_MASK &
				~0xe00ull))
		return cm_errorf(err, EINVAL, "perf sampler: regs_mask 0x%llx "
				 "outside the x86-64 general registers",
				 (unsigned long long)cfg->regs_mask);
	return 0;
}

struct cm_perf_sampler *cm_perf_sampler_new(const struct cm_perf_config *cfg,
					    struct cm_error *err)
{
	struct cm_perf_sampler *s;
	long n;

	if (!cfg) {
		cm_errorf(err, EINVAL, "perf sampler: NULL config");
		return NULL;
	}
	if (check_config(cfg, err))
		return NULL;
	n = sysconf(_SC_NPROCESSORS_CONF);
	if (n < 1)
		n = 1;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->rings = calloc((size_t)n, sizeof(*s->rings));
		s->heap = calloc((size_t)n, sizeof(*s->heap));
	}
	if (!s || !s->rings || !s->heap) {
		if (s) {
			free(s->rings);
			free(s->heap);
		}
		free(s);
		cm_errorf(err, ENOMEM, "perf sampler: out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->ncpu = (int)n;
	for (int c = 0; c < s->ncpu; c++)
		s->rings[c].fd = -1;
	build_attr(cfg, &s->attr);
	s->lay.sample_type = s->attr.sample_type;
	s->lay.regs_mask = s->attr.sample_regs_user;
	return s;
}

void cm_perf_sampler_free(struct cm_perf_sampler *s)
{
	if (!s)
		return;
	for (int c = 0; c < s->ncpu; c++)
		if (s->rings[c].base)
			munmap(s->rings[c].base, s->rings[c].maplen);
	for (int i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->rings);
	free(s->heap);
	free(s->fds);
	free(s->tids);
	free(s);
}

static int map_ring(struct cm_perf_sampler *s, int cpu, int fd,
		    struct cm_error *err)
{
	size_t page = (size_t)getpagesize();
	struct ring *r = &s->rings[cpu];
	struct perf_event_mmap_page *meta;

	r->maplen = (1 + (size_t)s->cfg.ring_pages) * page;
	r->base = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	if (r->base == MAP_FAILED) {
		int e = errno;

		r->base = NULL;
		return cm_errorf(err, e, "perf sampler: mmap of the CPU %d "
				 "ring (%zu bytes): %s%s", cpu, r->maplen,
				 strerror(e), e == EPERM ? " (too much locked "
				 "memory: see kernel.perf_event_mlock_kb)" : "");
	}
	meta = r->base;
	r->data = (uint8_t *)r->base + (meta->data_offset ? meta->data_offset
					: page);
	r->size = meta->data_size ? meta->data_size
		  : (uint64_t)s->cfg.ring_pages * page;
	r->fd = fd;
	return 0;
}

static void unmap_ring(struct ring *r)
{
	munmap(r->base, r->maplen);
	r->base = NULL;
	r->fd = -1;
}

/* Route fd's records to the CPU's ring, mapping it if fd is the first
 * event there.  1 if a ring was mapped, 0 if redirected, -1 on error. */
static int route_event(struct cm_perf_sampler *s, int cpu, int fd,
		       pid_t tid, struct cm_error *err)
{
	if (s->rings[cpu].fd < 0)
		return map_ring(s, cpu, fd, err) ? -1 : 1;
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->rings[cpu].fd))
		return cm_errorf(err, errno, "perf sampler: tid %d cpu %d: "
				 "cannot share the CPU's ring: %s", (int)tid,
				 cpu, strerror(errno));
	return 0;
}

static const char *event_name(const struct cm_perf_sampler *s)
{
	if (s->cfg.backend == CM_PERF_BACKEND_HW)
		return cm_perf_hw_kind_name(s->cfg.hw.kind);
	return s->cfg.clock == CM_PERF_TASK_CLOCK ? "task-clock:u"
	       : "cpu-clock:u";
}

/* Undo a failed attach: close its events, unmap the rings it mapped. */
static void attach_rollback(struct cm_perf_sampler *s, const int *fds,
			    const bool *mapped)
{
	for (int c = 0; c < s->ncpu; c++) {
		if (mapped[c])
			unmap_ring(&s->rings[c]);
		if (fds[c] >= 0)
			close(fds[c]);
	}
}

static int attach_events(struct cm_perf_sampler *s, pid_t tid, int *fds,
			 bool *mapped, struct cm_error *err)
{
	int opened = 0;

	for (int c = 0; c < s->ncpu; c++) {
		int r;

		fds[c] = perf_open(&s->attr, tid, c);
		if (fds[c] < 0 && errno == ENODEV && c > 0)
			continue;	/* CPU offline */
		if (fds[c] < 0)
			return open_error(err, errno, event_name(s), tid);
		opened++;
		r = route_event(s, c, fds[c], tid, err);
		if (r < 0)
			return -1;
		mapped[c] = r == 1;
	}
	if (!opened)
		return cm_errorf(err, ENODEV, "perf sampler: no online CPU");
	for (int c = 0; c < s->ncpu; c++)
		if (fds[c] >= 0 && ioctl(fds[c], PERF_EVENT_IOC_ENABLE, 0))
			return cm_errorf(err, errno, "perf sampler: enable: %s",
					 strerror(errno));
	return 0;
}

int cm_perf_sampler_attach(struct cm_perf_sampler *s, pid_t tid,
			   struct cm_error *err)
{
	int *fds;
	bool *mapped;
	int rv = -1;

	if (!s || tid <= 0)
		return cm_errorf(err, EINVAL, "perf sampler: bad tid %d",
				 (int)tid);
	for (int i = 0; i < s->ntids; i++)
		if (s->tids[i] == tid)
			return 0;
	if (cm_grow((void **)&s->tids, &s->captids, s->ntids + 1,
		    sizeof(*s->tids)) ||
	    cm_grow((void **)&s->fds, &s->capfds, s->nfds + s->ncpu,
		    sizeof(*s->fds)))
		return cm_errorf(err, ENOMEM, "perf sampler: out of memory");
	fds = malloc((size_t)s->ncpu * sizeof(*fds));
	mapped = calloc((size_t)s->ncpu, sizeof(*mapped));
	if (!fds || !mapped) {
		cm_errorf(err, ENOMEM, "perf sampler: out of memory");
		goto out;
	}
	for (int c = 0; c < s->ncpu; c++)
		fds[c] = -1;
	if (attach_events(s, tid, fds, mapped, err)) {
		int e = errno;

		attach_rollback(s, fds, mapped);
		errno = e;
		goto out;
	}
	for (int c = 0; c < s->ncpu; c++)
		if (fds[c] >= 0)
			s->fds[s->nfds++] = fds[c];
	s->tids[s->ntids++] = tid;
	rv = 0;
out:
	free(fds);
	free(mapped);
	return rv;
}

/* Drain one ring; corrupt data skips to head (counted). */
/* Advance r's cursor to its next user-mode sample, accounting the other
 * records (lost, throttle, kernel-mode samples) on the way.  Returns 1 with
 * r->next set, 0 when the ring has nothing more up to the head snapshot. */
static int ring_advance(struct cm_perf_sampler *s, struct ring *r)
{
	struct cm_perf_record rec;
	const uint8_t *p;
	size_t len;
	int got;

	r->has_next = 0;
	while ((got = cm_perf_ring_next(r->data, r->size, r->head, &r->tail,
					s->buf, sizeof(s->buf), &p, &len,
					NULL)) > 0) {
		if (cm_perf_parse_record(&s->lay, p, len, &rec, NULL)) {
			s->st.malformed++;
			continue;	/* its size was sane: skip it */
		}
		if (rec.kind == CM_PERF_REC_SAMPLE &&
		    (rec.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		    PERF_RECORD_MISC_KERNEL) {
			s->st.kernel++;
			continue;
		}
		cm_perf_stats_account(&s->st, &rec);
		if (rec.kind == CM_PERF_REC_SAMPLE) {
			r->next = rec.sample;
			r->has_next = 1;
			return 1;
		}
	}
	if (got < 0) {
		s->st.malformed++;
		r->tail = r->head;
	}
	return 0;
}

static void ring_open_cursor(struct cm_perf_sampler *s, struct ring *r)
{
	struct perf_event_mmap_page *meta = r->base;

	r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	r->tail = meta->data_tail;
	ring_advance(s, r);
}

static void ring_close_cursor(struct ring *r)
{
	struct perf_event_mmap_page *meta = r->base;

	__atomic_store_n(&meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

/* Restore the heap order below slot i (the rings' pending sample times:
 * the oldest on top). */
static void heap_down(struct ring **h, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, m = i;
		struct ring *t;

		if (l < n && h[l]->next.time < h[m]->next.time)
			m = l;
		if (l + 1 < n && h[l + 1]->next.time < h[m]->next.time)
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Hand out the samples of every CPU's ring merged in time order: the
 * sharer table keeps the most recent sharers of each block (SPCD §III-C),
 * so reading one CPU's ring after the other would let the threads of the
 * last CPU read push out those of the others and skew the matrix towards
 * (or against) threads that happened to share a CPU.  Each ring is in
 * time order already; this is a k-way merge (a heap of the rings, so a
 * node with many CPUs pays log(CPUs) per sample) bounded by the head each
 * ring had when the drain began. */
long cm_perf_sampler_read(struct cm_perf_sampler *s, cm_perf_sample_fn fn,
			  void *arg)
{
	struct ring **h;
	long n = 0;
	int nh = 0;

	if (!s)
		return cm_errorf(NULL, EINVAL, "perf sampler: NULL");
	h = s->heap;
	for (int c = 0; c < s->ncpu; c++) {
		if (!s->rings[c].base)
			continue;
		ring_open_cursor(s, &s->rings[c]);
		if (s->rings[c].has_next)
			h[nh++] = &s->rings[c];
	}
	for (int i = nh / 2 - 1; i >= 0; i--)
		heap_down(h, nh, i);
	while (nh > 0) {
		n++;
		if (fn)
			fn(&h[0]->next, arg);
		if (!ring_advance(s, h[0]))
			h[0] = h[--nh];		/* that ring is drained */
		heap_down(h, nh, 0);
	}
	for (int c = 0; c < s->ncpu; c++)
		if (s->rings[c].base)
			ring_close_cursor(&s->rings[c]);
	return n;
}

int cm_perf_sampler_set_period(struct cm_perf_sampler *s, uint64_t period,
			       struct cm_error *err)
{
	struct cm_perf_config cfg;

	if (!s)
		return cm_errorf(err, EINVAL, "perf sampler: NULL");
	cfg = s->cfg;
	if (cfg.backend == CM_PERF_BACKEND_HW)
		cfg.hw_period = period;
	else
		cfg.period_ns = period;
	if (check_config(&cfg, err))
		return -1;
	for (int i = 0; i < s->nfds; i++)
		if (ioctl(s->fds[i], PERF_EVENT_IOC_PERIOD, &period))
			return cm_errorf(err, errno, "perf sampler: set period "
					 "%llu: %s", (unsigned long long)period,
					 strerror(errno));
	s->cfg = cfg;
	s->attr.sample_period = period;
	return 0;
}

int cm_perf_sampler_pollfds(const struct cm_perf_sampler *s,
			    struct pollfd *pfd, int max)
{
	int n = 0;

	if (!s || !pfd)
		return 0;
	for (int c = 0; c < s->ncpu && n < max; c++) {
		if (!s->rings[c].base)
			continue;
		pfd[n].fd = s->rings[c].fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		n++;
	}
	return n;
}

int cm_perf_sampler_ntasks(const struct cm_perf_sampler *s)
{
	return s ? s->ntids : 0;
}

int cm_perf_sampler_nevents(const struct cm_perf_sampler *s)
{
	return s ? s->nfds : 0;
}

void cm_perf_sampler_stats(const struct cm_perf_sampler *s,
			   struct cm_perf_stats *st)
{
	if (s)
		*st = s->st;
	else
		memset(st, 0, sizeof(*st));
}

void cm_perf_sampler_layout(const struct cm_perf_sampler *s,
			    struct cm_perf_layout *lay)
{
	if (s)
		*lay = s->lay;
	else
		memset(lay, 0, sizeof(*lay));
}
