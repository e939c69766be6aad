/* ompi_monitoring.c: read Open MPI's pml monitoring files of a node's
 * ranks (see ompi_monitoring.h). */
#define _GNU_SOURCE
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ompi_monitoring.h"
#include "user_file.h"

void cm_rank_traffic_free(struct cm_rank_traffic *t)
{
	free(t->ranks);
	free(t->pairs);
	memset(t, 0, sizeof(*t));
}

/* A decimal integer of at most 19 digits at *p, ending at a blank, a
 * tab or the end (len bytes left); advances *p.  0 or -1. */
static int read_u64(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 19)
			return -1;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (!digits)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/* Expect the literal word at *p; advances *p.  0 or -1. */
static int expect(const char **p, const char *end, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(end - *p) < n || memcmp(*p, word, n) != 0)
		return -1;
	*p += n;
	return 0;
}

/* One "E" line (without its newline) into *pair.  0 or -1. */
static int parse_e_line(const char *s, const char *end,
			struct cm_rank_pair *pair)
{
	uint64_t src, dst;

	if (expect(&s, end, "E\t") < 0 || read_u64(&s, end, &src) < 0 ||
	    expect(&s, end, "\t") < 0 || read_u64(&s, end, &dst) < 0 ||
	    expect(&s, end, "\t") < 0 ||
	    read_u64(&s, end, &pair->bytes) < 0 ||
	    expect(&s, end, " bytes\t") < 0 ||
	    read_u64(&s, end, &pair->messages) < 0 ||
	    expect(&s, end, " msgs sent") < 0 || (s < end && *s != '\t'))
		return -1;
	if (src >= CM_OMPI_MON_RANK_MAX || dst >= CM_OMPI_MON_RANK_MAX)
		return -1;
	pair->src = (int)src;
	pair->dst = (int)dst;
	return 0;
}

static int add_pair(struct cm_rank_traffic *t, const struct cm_rank_pair *p)
{
	if (t->npairs == t->pairs_cap) {
		int cap = t->pairs_cap ? t->pairs_cap * 2 : 64;
		void *np = realloc(t->pairs, (size_t)cap * sizeof(*t->pairs));

		if (!np)
			return -1;
		t->pairs = np;
		t->pairs_cap = cap;
	}
	t->pairs[t->npairs++] = *p;
	return 0;
}

static int add_rank(struct cm_rank_traffic *t, int rank)
{
	if (t->nranks == t->ranks_cap) {
		int cap = t->ranks_cap ? t->ranks_cap * 2 : 16;
		void *nr = realloc(t->ranks, (size_t)cap * sizeof(*t->ranks));

		if (!nr)
			return -1;
		t->ranks = nr;
		t->ranks_cap = cap;
	}
	t->ranks[t->nranks++] = rank;
	return 0;
}

static int by_dst(const void *a, const void *b)
{
	const struct cm_rank_pair *x = a, *y = b;

	return (x->dst > y->dst) - (x->dst < y->dst);
}

/* The pairs from index first on are one file's: one entry per
 * destination, counts summed (saturating: the service bounds them). */
static void merge_same_dst(struct cm_rank_traffic *t, int first)
{
	int n = t->npairs - first, out = 0;
	struct cm_rank_pair *p;

	if (n <= 1)
		return;		/* (pairs may still be NULL) */
	p = t->pairs + first;
	qsort(p, (size_t)n, sizeof(*p), by_dst);
	for (int i = 0; i < n; i++) {
		if (out && p[out - 1].dst == p[i].dst) {
			struct cm_rank_pair *q = &p[out - 1];

			q->bytes = q->bytes + p[i].bytes < q->bytes ?
				   UINT64_MAX : q->bytes + p[i].bytes;
			q->messages = q->messages + p[i].messages <
				      q->messages ? UINT64_MAX :
				      q->messages + p[i].messages;
			continue;
		}
		p[out++] = p[i];
	}
	t->npairs = first + out;
}

int cm_ompi_mon_parse(const char *text, size_t len, int rank,
		      struct cm_rank_traffic *t, struct cm_error *err)
{
	const char *s = text, *end = text + len;
	int first = t->npairs, line = 0;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		struct cm_rank_pair pair;

		line++;
		if (eol - s >= 2 && s[0] == 'E' && s[1] == '\t') {
			if (parse_e_line(s, eol, &pair) < 0 ||
			    pair.src != rank) {
				t->npairs = first;
				return cm_errorf(err, EINVAL, "line %d: not an "
						 "application message line of "
						 "rank %d (E SRC DST N bytes M "
						 "msgs sent)", line, rank);
			}
			if (t->npairs >= CM_OMPI_MON_PAIRS_MAX) {
				t->npairs = first;
				return cm_errorf(err, E2BIG, "more than %d "
						 "pairs", CM_OMPI_MON_PAIRS_MAX);
			}
			if (add_pair(t, &pair) < 0) {
				t->npairs = first;
				return cm_errorf(err, ENOMEM, "out of memory");
			}
		}
		s = eol + 1;
	}
	merge_same_dst(t, first);
	if (add_rank(t, rank) < 0) {
		t->npairs = first;
		return cm_errorf(err, ENOMEM, "out of memory");
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int seen_rank(const struct cm_rank_traffic *t, int rank)
{
	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i] == rank)
			return 1;
	return 0;
}

/* Read and parse one rank's file.  1 read, 0 none there, -1 a problem
 * (said). */
static int collect_one(const char *dir, int rank,
		       const struct cm_user_cred *cred, int timeout_ms,
		       struct cm_rank_traffic *t,
		       void (*problem)(void *, const char *), void *arg)
{
	char path[4096], line[768];
	struct cm_error err;
	struct stat st;
	size_t len;
	char *buf;
	int rc;

	snprintf(path, sizeof(path), "%s/prof.%d.prof", dir, rank);
	/* The step's own directory: whether a name is there is no secret;
	 * reading it is done with the user's rights. */
	if (lstat(path, &st) < 0 && errno == ENOENT)
		return 0;
	if (cm_user_file_read(path, NULL, cred, CM_OMPI_MON_FILE_MAX,
			      timeout_ms, &buf, &len, &err) < 0) {
		snprintf(line, sizeof(line), "MPI traffic of rank %d: %s",
			 rank, err.text);
		problem(arg, line);
		return -1;
	}
	rc = cm_ompi_mon_parse(buf, len, rank, t, &err);
	free(buf);
	if (rc < 0) {
		char name[256];

		cm_user_file_name(path, name, sizeof(name));
		snprintf(line, sizeof(line), "MPI traffic of rank %d: %s: %s",
			 rank, name, err.text);
		problem(arg, line);
		return -1;
	}
	return 1;
}

int cm_ompi_mon_collect(const char *dir, const int *ranks, int n,
			const struct cm_user_cred *cred, int timeout_ms,
			struct cm_rank_traffic *t,
			void (*problem)(void *arg, const char *line),
			void *arg)
{
	long long deadline = now_ms() + timeout_ms;
	int files = 0;

	for (int i = 0; i < n; i++) {
		long long left = deadline - now_ms();
		char line[160];

		if (ranks[i] < 0 || ranks[i] >= CM_OMPI_MON_RANK_MAX ||
		    seen_rank(t, ranks[i]))
			continue;
		if (left <= 0) {
			snprintf(line, sizeof(line), "MPI traffic: reading "
				 "stopped after %d ms, %d of %d ranks left out",
				 timeout_ms, n - i, n);
			problem(arg, line);
			break;
		}
		if (collect_one(dir, ranks[i], cred,
				left < CM_USER_FILE_TIMEOUT_MS ? (int)left :
				CM_USER_FILE_TIMEOUT_MS, t, problem, arg) > 0)
			files++;
	}
	return files;
}

int cm_ompi_mon_remove_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	/* Names relative to the directory we opened: a link put in its
	 * place later is never followed; links inside are removed, not
	 * followed (unlinkat). */
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode))
			unlinkat(fd, e->d_name, 0);
	}
	closedir(d);
	return rmdir(dir);
}
