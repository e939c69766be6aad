/* wl_common.c: patterns, buffers, the sharing loop and the ground truth
 * of the test workloads (see wl_common.h). */
#define _GNU_SOURCE
#include "wl_common.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* --yield-every: words between two sched_yield calls (0: none). */
static size_t wl_yield_words;

static const char *const wl_patterns[] = {
	"pairs", "phases", "ring", "stencil", "clusters", "all2all",
	"independent", "compute", NULL
};

static void wl_usage(FILE *f, const char *prog, const char *extra)
{
	fprintf(f,
		"usage: %s --pattern NAME [options]\n"
		"  --pattern pairs|phases|ring|stencil|clusters|all2all|"
		"independent|compute\n"
		"  --threads N          workload threads (default 8)\n"
		"  --seconds S          run time (default 2)\n"
		"  --passes N           buffer passes per thread instead of "
		"--seconds\n"
		"  --cpu-seconds S      until each thread used S s of CPU\n"
		"                       (with --seconds too: whichever first)\n"
		"  --phase-seconds S    phases: switch partners at S "
		"(default seconds/2)\n"
		"  --cluster K          clusters: group size (default 4)\n"
		"  --buffer-kib K       bytes per buffer / 1024 (default 256)\n"
		"  --truth FILE         truth of the whole run, commap-matrix\n"
		"  --truth1 FILE        ground truth of phase 1\n"
		"  --truth2 FILE        ground truth of phase 2 (phases)\n"
		"  --truth-map FILE     lines 'i rank index pid tid'\n"
		"  --report-time        print elapsed_s=S cpu_s=S at the end\n"
		"  --yield-every P      sched_yield after every P pages of a "
		"buffer pass\n"
		"%s", prog, extra ? extra : "");
}

__attribute__((format(printf, 2, 3), noreturn))
static void wl_die(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static double wl_number(const char *prog, const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		wl_die(prog, "bad number '%s' for %s", s, opt);
	return v;
}

static int wl_known_pattern(const char *name)
{
	for (int i = 0; wl_patterns[i]; i++)
		if (!strcmp(name, wl_patterns[i]))
			return 1;
	return 0;
}

void wl_parse(struct wl_opts *o, int argc, char **argv, const char *prog,
	      const char *usage_extra)
{
	static const struct option lo[] = {
		{"pattern", 1, 0, 'p'}, {"threads", 1, 0, 'n'},
		{"seconds", 1, 0, 's'}, {"passes", 1, 0, 'i'},
		{"phase-seconds", 1, 0, 'P'}, {"cluster", 1, 0, 'k'},
		{"buffer-kib", 1, 0, 'b'}, {"truth", 1, 0, 't'},
		{"truth1", 1, 0, '1'}, {"truth2", 1, 0, 'T'},
		{"truth-map", 1, 0, 'm'},
		{"report-time", 0, 0, 'r'}, {"help", 0, 0, 'h'},
		{"cpu-seconds", 1, 0, 'c'}, {"yield-every", 1, 0, 'y'},
		{0, 0, 0, 0}
	};
	int c, seconds_given = 0;
	double v;

	memset(o, 0, sizeof(*o));
	o->pattern = "pairs";
	o->threads = 8;
	o->seconds = 2;
	o->phase_seconds = -1;
	o->cluster = 4;
	o->buffer_bytes = 256 << 10;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o->pattern = optarg; break;
		case 'n':
			v = wl_number(prog, "--threads", optarg);
			if (v < 1 || v > WL_MAX_THREADS || v != (int)v)
				wl_die(prog, "--threads %s: need 1..1024",
				       optarg);
			o->threads = (int)v;
			break;
		case 's': o->seconds = wl_number(prog, "--seconds", optarg);
			seconds_given = 1;
			break;
		case 'c':
			o->cpu_seconds = wl_number(prog, "--cpu-seconds",
						   optarg);
			break;
		case 'i':
			o->passes = (long)wl_number(prog, "--passes", optarg);
			o->seconds = 0;
			break;
		case 'P': o->phase_seconds =
			wl_number(prog, "--phase-seconds", optarg); break;
		case 'k':
			v = wl_number(prog, "--cluster", optarg);
			if (v < 1 || v != (int)v)
				wl_die(prog, "--cluster %s: need >= 1", optarg);
			o->cluster = (int)v;
			break;
		case 'b':
			v = wl_number(prog, "--buffer-kib", optarg);
			if (v < 4 || v > 65536 || v != (int)v)
				wl_die(prog, "--buffer-kib %s: need 4..65536",
				       optarg);
			o->buffer_bytes = (size_t)v << 10;
			break;
		case 't': o->truth = optarg; break;
		case '1': o->truth1 = optarg; break;
		case 'T': o->truth2 = optarg; break;
		case 'm': o->truth_map = optarg; break;
		case 'r': o->report_time = 1; break;
		case 'y':
			v = wl_number(prog, "--yield-every", optarg);
			if (v < 1 || v != (int)v)
				wl_die(prog, "--yield-every %s: need >= 1",
				       optarg);
			wl_yield_words = (size_t)v * 512;
			break;
		case 'h': wl_usage(stdout, prog, usage_extra); exit(0);
		default: wl_usage(stderr, prog, usage_extra); exit(2);
		}
	}
	if (optind != argc)
		wl_die(prog, "unexpected argument '%s'", argv[optind]);
	if (!wl_known_pattern(o->pattern))
		wl_die(prog, "unknown pattern '%s'", o->pattern);
	if (o->cpu_seconds > 0 && !seconds_given)
		o->seconds = 0;
	if (o->passes > 0 && o->cpu_seconds > 0)
		wl_die(prog, "%s",
		       "--passes and --cpu-seconds exclude each other");
	if (o->seconds == 0 && o->passes <= 0 && o->cpu_seconds <= 0)
		wl_die(prog, "%s",
		       "need --seconds, --cpu-seconds or --passes > 0");
	if (o->phase_seconds < 0)
		o->phase_seconds = o->seconds > 0 ? o->seconds / 2 : 1;
}

/* Grid px x py = n with px the largest divisor of n not above sqrt(n). */
static void wl_grid(int n, int *px, int *py)
{
	int x = 1;

	for (int d = 1; d * d <= n; d++)
		if (n % d == 0)
			x = d;
	*px = x;
	*py = n / x;
}

/* Alternate who writes, so every thread both writes and reads. */
static struct wl_edge wl_mix(int i, int j)
{
	struct wl_edge e = {i, j};

	if ((i + j) % 2) {
		e.writer = j;
		e.reader = i;
	}
	return e;
}

int wl_pattern_edges(const char *pattern, int n, int cluster, int phase,
		     struct wl_edge **e, int *ne)
{
	struct wl_edge *v = calloc((size_t)n * n + 1, sizeof(*v));
	int k = 0, phases = 1, px, py;

	if (!v)
		return -1;
	if (!strcmp(pattern, "pairs") || !strcmp(pattern, "phases")) {
		/* SPCD §V-B: neighbours first, distant threads second. */
		if (!strcmp(pattern, "phases"))
			phases = 2;
		if (phase == 0)
			for (int i = 0; i + 1 < n; i += 2)
				v[k++] = (struct wl_edge){i, i + 1};
		else
			for (int i = 0; i < n / 2; i++)
				v[k++] = (struct wl_edge){i, i + n / 2};
	} else if (!strcmp(pattern, "ring")) {
		for (int i = 0; i < n && n > 1; i++)
			if (n > 2 || i == 0)
				v[k++] = (struct wl_edge){i, (i + 1) % n};
	} else if (!strcmp(pattern, "stencil")) {
		wl_grid(n, &px, &py);
		for (int y = 0; y < py; y++)
			for (int x = 0; x < px; x++) {
				int i = y * px + x;

				if (x + 1 < px)
					v[k++] = wl_mix(i, i + 1);
				if (y + 1 < py)
					v[k++] = wl_mix(i, i + px);
			}
	} else if (!strcmp(pattern, "clusters") ||
		   !strcmp(pattern, "all2all")) {
		int g = !strcmp(pattern, "all2all") ? n : cluster;

		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n && j / g == i / g; j++)
				v[k++] = wl_mix(i, j);
	} else if (strcmp(pattern, "independent") &&
		   strcmp(pattern, "compute")) {
		free(v);
		return -1;
	}
	*e = v;
	*ne = k;
	return phases;
}

/* A buffer of its own, 64 KiB aligned, left untouched (a fresh anonymous
 * mapping is zero): the thread that uses it touches it first, so the main
 * thread never looks like a sharer, and under AddressSanitizer the shadow
 * of one buffer (1/8 of it, 8 KiB aligned) never shares a 4 KiB block with
 * the shadow of the next. */
static void *wl_mmap(size_t k, size_t bytes, void *arg)
{
	const size_t align = 64 << 10;
	char *p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	(void)k;
	(void)arg;
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + bytes < p + bytes + align)
		munmap(a + bytes, (size_t)(p + bytes + align - (a + bytes)));
	return a;
}

static int wl_is(const struct wl_opts *o, const char *name)
{
	return !strcmp(o->pattern, name);
}

size_t wl_plan_nbuffers(const struct wl_opts *o, int n)
{
	struct wl_edge *e;
	int ne, phases;
	size_t total = 0;

	if (wl_is(o, "independent"))
		return (size_t)n;
	phases = wl_pattern_edges(o->pattern, n, o->cluster, 0, &e, &ne);
	for (int ph = 0; ph < phases; ph++) {
		if (ph > 0)
			wl_pattern_edges(o->pattern, n, o->cluster, ph, &e,
					 &ne);
		total += (size_t)ne;
		free(e);
	}
	return total;
}

static void *wl_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		perror("calloc");
		exit(1);
	}
	return p;
}

static void wl_role_add(struct wl_role *r, volatile uint64_t *buf,
			int writes, int edge)
{
	r->buf[r->nbuf] = buf;
	r->writes[r->nbuf] = writes;
	r->edge[r->nbuf] = edge;
	r->nbuf++;
}

static void wl_roles_alloc(struct wl_plan *p, int ph, int maxbuf)
{
	p->role[ph] = wl_xcalloc((size_t)p->n, sizeof(struct wl_role));
	for (int t = 0; t < p->n; t++) {
		p->role[ph][t].buf = wl_xcalloc((size_t)maxbuf,
						sizeof(uint64_t *));
		p->role[ph][t].writes = wl_xcalloc((size_t)maxbuf,
						   sizeof(int));
		p->role[ph][t].edge = wl_xcalloc((size_t)maxbuf,
						 sizeof(int));
	}
}

void wl_plan_build(struct wl_plan *p, const struct wl_opts *o, int n,
		   wl_alloc_fn alloc, void *arg)
{
	size_t k = 0;

	memset(p, 0, sizeof(*p));
	p->n = n;
	p->words = o->buffer_bytes / sizeof(uint64_t);
	p->compute = wl_is(o, "compute");
	p->independent = wl_is(o, "independent");
	if (!alloc)
		alloc = wl_mmap;
	p->nphases = wl_pattern_edges(o->pattern, n, o->cluster, 0,
				      &p->edges[0], &p->nedges[0]);
	if (p->nphases < 0) {
		fprintf(stderr, "unknown pattern '%s'\n", o->pattern);
		exit(2);
	}
	if (p->nphases > 1)
		wl_pattern_edges(o->pattern, n, o->cluster, 1, &p->edges[1],
				 &p->nedges[1]);
	for (int ph = 0; ph < p->nphases; ph++) {
		wl_roles_alloc(p, ph, n);
		p->passes[ph] = wl_xcalloc((size_t)p->nedges[ph],
					   sizeof(long));
		for (int i = 0; i < p->nedges[ph]; i++, k++) {
			struct wl_edge e = p->edges[ph][i];
			volatile uint64_t *b = alloc(k, o->buffer_bytes, arg);

			wl_role_add(&p->role[ph][e.writer], b, 1, i);
			wl_role_add(&p->role[ph][e.reader], b, 0, i);
		}
	}
	if (p->independent)
		for (int t = 0; t < n; t++, k++)
			wl_role_add(&p->role[0][t],
				    alloc(k, o->buffer_bytes, arg), 1, -1);
}

void wl_plan_free(struct wl_plan *p, size_t bytes, int unmap)
{
	for (int ph = 0; ph < p->nphases; ph++) {
		for (int t = 0; t < p->n; t++) {
			struct wl_role *r = &p->role[ph][t];

			for (int k = 0; unmap && k < r->nbuf; k++)
				if (r->writes[k])
					munmap((void *)r->buf[k], bytes);
			free(r->buf);
			free(r->writes);
			free(r->edge);
		}
		free(p->role[ph]);
		free(p->passes[ph]);
		free(p->edges[ph]);
	}
	memset(p, 0, sizeof(*p));
}

void wl_report_time(double elapsed)
{
	struct rusage ru;
	double cpu = 0;

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
		      (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
	printf("elapsed_s=%.6f cpu_s=%.6f\n", elapsed, cpu);
}

double wl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

pid_t wl_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* One whole buffer: stores by the writer, loads by the reader (plain
 * indexed moves, which the agent's decoder turns into addresses); with
 * --yield-every, a sched_yield after every so many pages (threads of a
 * real code that wait or call the system between accesses). */
static uint64_t wl_pass(volatile uint64_t *b, size_t words, int writes,
			uint64_t seq)
{
	uint64_t sum = 0;
	size_t step = wl_yield_words ? wl_yield_words : words;

	for (size_t lo = 0; lo < words; lo += step) {
		size_t hi = words - lo > step ? lo + step : words;

		if (writes)
			for (size_t i = lo; i < hi; i++)
				b[i] = seq + i;
		else
			for (size_t i = lo; i < hi; i++)
				sum += b[i];
		if (wl_yield_words)
			sched_yield();
	}
	return writes ? seq : sum;
}

/* Register-only arithmetic of about the cost of one buffer pass. */
static uint64_t wl_compute(size_t words, uint64_t x)
{
	for (size_t i = 0; i < words; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/* This thread's CPU time (a system call: no shared user memory). */
static double wl_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A thread's own copy of its roles, in page-aligned memory of its own:
 * the plan's arrays sit in blocks shared by all threads, and reading them
 * on every pass would look like communication to the agent. */
struct wl_mine {
	int nbuf[2];
	volatile uint64_t **buf[2];
	int *writes[2];
	long *count[2];
	void *mem;
};

static void wl_mine_init(struct wl_mine *m, const struct wl_plan *p, int t)
{
	size_t need = 0, off = 0, size;
	char *mem;

	for (int ph = 0; ph < p->nphases; ph++)
		need += ((size_t)p->role[ph][t].nbuf + 1) *
			(sizeof(void *) + sizeof(int) + sizeof(long));
	size = (need + 4095) & ~(size_t)4095;
	mem = aligned_alloc(4096, size);
	if (!mem) {
		perror("aligned_alloc");
		exit(1);
	}
	memset(mem, 0, size);
	memset(m, 0, sizeof(*m));
	m->mem = mem;
	for (int ph = 0; ph < p->nphases; ph++) {
		const struct wl_role *r = &p->role[ph][t];
		size_t nb = (size_t)r->nbuf + 1;

		m->nbuf[ph] = r->nbuf;
		m->buf[ph] = (volatile uint64_t **)(void *)(mem + off);
		off += nb * sizeof(void *);
		m->count[ph] = (long *)(void *)(mem + off);
		off += nb * sizeof(long);
		m->writes[ph] = (int *)(void *)(mem + off);
		off += nb * sizeof(int);
		for (int k = 0; k < r->nbuf; k++) {
			m->buf[ph][k] = r->buf[k];
			m->writes[ph][k] = r->writes[k];
		}
	}
}

/* Add a thread's pass counts to the plan's per-edge totals. */
static void wl_mine_done(struct wl_mine *m, const struct wl_plan *p, int t)
{
	for (int ph = 0; ph < p->nphases; ph++) {
		const struct wl_role *r = &p->role[ph][t];

		for (int k = 0; k < r->nbuf; k++)
			if (r->edge[k] >= 0)
				__atomic_fetch_add(&p->passes[ph][r->edge[k]],
						   m->count[ph][k],
						   __ATOMIC_RELAXED);
	}
	free(m->mem);
}

uint64_t wl_work(const struct wl_plan *p, const struct wl_opts *o, int t,
		 double start)
{
	/* Everything the loop reads is local or in this thread's pages. */
	const double seconds = o->seconds, switch_at = o->phase_seconds;
	const double cpu_seconds = o->cpu_seconds;
	const int timed = seconds > 0 || cpu_seconds > 0;
	const long passes = o->passes;
	const size_t words = p->words;
	const int compute = p->compute, nphases = p->nphases;
	uint64_t sum = (uint64_t)t;
	double el = 0, cpu = 0;
	int next = 0, ph = 0;
	struct wl_mine m;
	long pass;

	wl_mine_init(&m, p, t);
	for (pass = 0;; pass++) {
		/* The clock (the shared vDSO data page) every 8th pass. */
		if (timed && pass % 8 == 0) {
			el = wl_now() - start;
			if (cpu_seconds > 0)
				cpu = wl_thread_cpu();
		}
		if ((seconds > 0 && el >= seconds) ||
		    (cpu_seconds > 0 && cpu >= cpu_seconds) ||
		    (!timed && pass >= passes))
			break;
		if (nphases > 1)
			ph = timed ? el >= switch_at : pass >= passes / 2;
		if (compute || m.nbuf[ph] == 0) {
			/* No buffer (or no partner in this phase): compute. */
			sum = wl_compute(words, sum);
			continue;
		}
		if (next >= m.nbuf[ph])
			next = 0;
		sum += wl_pass(m.buf[ph][next], words, m.writes[ph][next],
			       (uint64_t)pass);
		m.count[ph][next]++;
		next++;
	}
	wl_mine_done(&m, p, t);
	return sum;
}

/* Truth of phase ph, or of the whole run when ph < 0. */
static int wl_write_matrix(const struct wl_plan *p, int ph,
			   const char *path)
{
	FILE *f = fopen(path, "w");
	double *w = wl_xcalloc((size_t)p->n * p->n, sizeof(double));
	int first = 1;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		free(w);
		return -1;
	}
	for (int q = 0; q < p->nphases; q++) {
		if (ph >= 0 && q != ph)
			continue;
		for (int i = 0; i < p->nedges[q]; i++) {
			struct wl_edge e = p->edges[q][i];
			int a = e.writer < e.reader ? e.writer : e.reader;
			int b = e.writer + e.reader - a;

			w[(size_t)a * p->n + b] += (double)p->passes[q][i];
		}
	}
	fprintf(f, "{\"format\":\"commap-matrix\",\"version\":1,"
		"\"threads\":%d,\"edges\":[", p->n);
	for (int a = 0; a < p->n; a++)
		for (int b = a + 1; b < p->n; b++) {
			if (w[(size_t)a * p->n + b] <= 0)
				continue;
			fprintf(f, "%s[%d,%d,%.1f]", first ? "" : ",", a, b,
				w[(size_t)a * p->n + b]);
			first = 0;
		}
	fprintf(f, "]}\n");
	free(w);
	return fclose(f) ? -1 : 0;
}

int wl_write_truth(const struct wl_plan *p, const struct wl_opts *o,
		   const struct wl_ident *id)
{
	FILE *f;

	if (o->truth && wl_write_matrix(p, -1, o->truth))
		return -1;
	if (o->truth1 && wl_write_matrix(p, 0, o->truth1))
		return -1;
	if (o->truth2 && wl_write_matrix(p, p->nphases - 1, o->truth2))
		return -1;
	if (!o->truth_map)
		return 0;
	f = fopen(o->truth_map, "w");
	if (!f) {
		fprintf(stderr, "%s: %s\n", o->truth_map, strerror(errno));
		return -1;
	}
	for (int t = 0; t < p->n; t++)
		fprintf(f, "%d %d %d %d %d\n", t, id[t].rank, id[t].index,
			(int)id[t].pid, (int)id[t].tid);
	return fclose(f) ? -1 : 0;
}

/* Field 22 of /proc/self/task/TID/stat: start time in clock ticks. */
static unsigned long long wl_task_start(pid_t tid)
{
	char path[64], line[1024], *p;
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')'))) {
		/* After ")": field 3 onwards; start time is field 22. */
		for (int field = 2; p && field < 22; field++)
			p = strchr(p + 1, ' ');
		if (p)
			v = strtoull(p + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

int wl_creation_index(pid_t tid)
{
	unsigned long long mine = wl_task_start(tid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int index = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		pid_t other = (pid_t)atoi(de->d_name);
		unsigned long long s;

		if (other <= 0 || other == tid)
			continue;
		s = wl_task_start(other);
		if (s < mine || (s == mine && other < tid))
			index++;
	}
	closedir(d);
	return index;
}
