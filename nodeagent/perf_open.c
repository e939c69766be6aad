/* perf_open.c: opening perf events: the attributes of a sampler
 * configuration, perf_event_open with a message that says what to do about
 * its errors, and the probe for a hardware memory-sampling PMU (PEBS, IBS,
 * SPE) under a sysfs root.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_open.h"

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
void cm_perf_attr_build(const struct cm_perf_config *cfg,
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

int cm_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu)
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
int cm_perf_open_error(struct cm_error *err, int e, const char *what,
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
	cm_perf_attr_build(&cfg, &a);
	fd = cm_perf_event_open(&a, 0, -1);
	if (fd >= 0) {
		close(fd);
		fmt(hw->reason, sizeof(hw->reason), "%s (%s, type %u) "
			 "accepted", cm_perf_hw_kind_name(hw->kind), hw->pmu,
			 hw->type);
		return 1;
	}
	fmt(found, sizeof(found), "%s %s", cm_perf_hw_kind_name(hw->kind),
		 hw->pmu);
	cm_perf_open_error(&e, errno, found, 0);
	fmt(hw->reason, sizeof(hw->reason), "%s", e.text);
	hw->kind = CM_PERF_HW_NONE;
	return 0;
}
