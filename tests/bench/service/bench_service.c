/* bench_service.c: commap-service throughput and page latency
 * (docs/PERFORMANCE.md, "Service").
 *
 *   bench_service --port PORT [--clients 4] [--uploads 4000]
 *                 [--threads 256] [--all-pairs] [--pages 400]
 *                 [--job-base N]
 *
 * 1. Makes one munge credential per request up front (munge_encode: the
 *    service refuses replays, so every request needs its own), timed
 *    separately: agents make theirs on their own nodes.
 * 2. Uploads: CLIENTS threads, one keep-alive connection each, POST
 *    distinct 256-thread results (a 16 x 16 grid of threads in 16 ranks,
 *    each talking to its 4 neighbours: 480 pairs, ~27 KB; --all-pairs:
 *    all 32,640 pairs, ~0.9 MB).  Prints uploads/s and latency.
 * 2b. Learned models: the service folds results into models off the
 *    upload path (svc_model_worker.c); polls GET /metrics until no fold
 *    is pending and prints the backlog left after the uploads and the
 *    time to drain it (all uploads share one model key).
 * 3. Pages: GET /jobs/{job} (the HTML report of one 256-thread job) and
 *    GET /jobs (the list), one client, PAGES requests each: p50/p99.
 * Exit 1 if any request got an unexpected status.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <munge.h>

struct opts {
	int port, clients, uploads, threads, all_pairs, pages;
	long job_base;
};

struct shared {
	const struct opts *o;
	char **creds;
	char *prefix, *suffix;	/* the document around its job number */
	int next;		/* next upload to send */
	int failures;
	double *lat;		/* per upload, seconds */
	pthread_mutex_t lock;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("bench_service: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Read one response; returns the status, -1 on error.  The body is
 * read and dropped (its length goes to *body_len). */
static int read_response(int fd, size_t *body_len)
{
	static __thread char buf[1 << 16];
	size_t have = 0, clen = 0, got;
	char *end = NULL, *p;
	int status;

	while (!end) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);

		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end && have == sizeof(buf) - 1)
			return -1;
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	p = strcasestr(buf, "\r\ncontent-length:");
	if (p && p < end)
		clen = strtoul(p + 17, NULL, 10);
	got = have - (size_t)(end + 4 - buf);
	while (got < clen) {
		ssize_t r = read(fd, buf, sizeof(buf) - 1);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	*body_len = clen;
	return status;
}

static char *make_cred(void)
{
	char *cred = NULL;
	munge_err_t e = munge_encode(&cred, NULL, NULL, 0);

	if (e != EMUNGE_SUCCESS) {
		fprintf(stderr, "bench_service: munge_encode: %s\n",
			munge_strerror(e));
		exit(1);
	}
	return cred;
}

/* The result document split around its job number. */
static void make_document(struct shared *s, int n, int all_pairs)
{
	size_t cap = (size_t)n * n * 40 + 65536, len = 0;
	char *b = malloc(cap);
	int i, j, side = 16;

#define PUT(...) (len += (size_t)snprintf(b + len, cap - len, __VA_ARGS__))
	PUT("{\"format\":\"commap-result\",\"version\":1,\"identity\":"
	    "{\"job\":");
	s->prefix = strndup(b, len);
	len = 0;
	PUT(",\"step\":0,\"node\":\"bench1\",\"user\":\"root\",\"uid\":0,"
	    "\"executable\":\"/opt/apps/bench-stencil\",\"exe_hash\":"
	    "\"sha256:be\",\"argv\":[\"bench-stencil\",\"-n\",\"%d\"],"
	    "\"ranks\":%d,\"threads\":%d},\"mode\":\"dynamic\","
	    "\"backend\":\"sample\",\"started_at\":\"2026-11-22T14:00:00Z\","
	    "\"ended_at\":\"2026-11-22T14:10:00Z\",\"topology\":{\"cpuset\":"
	    "\"0-%d\",\"pus\":%d,\"synthetic\":\"pack:2 numa:2 l3:2 core:16 "
	    "pu:2\",\"dry_run\":false},\"threads\":[", n, n / 16 ? n / 16 : 1,
	    n, n - 1, n);
	for (i = 0; i < n; i++)
		PUT("%s{\"index\":%d,\"rank\":%d,\"tid\":%d,\"pid\":%d,"
		    "\"cpu_s\":%.2f}", i ? "," : "", i, i / 16, 1000 + i,
		    1000 + i / 16 * 16, 590.0 + i % 7);
	PUT("],\"edges\":[");
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			int grid = (j == i + 1 && (i + 1) % side) ||
				   j == i + side;

			if (!all_pairs && !grid)
				continue;
			PUT("%s[%d,%d,%.1f]", b[len - 1] == '[' ? "" : ",", i,
			    j, grid ? 1000.0 + i : 1.0 + j);
		}
	PUT("],\"timeline\":[{\"t\":0.5,\"pu_of_thread\":[");
	for (i = 0; i < n; i++)
		PUT("%s%d", i ? "," : "", i);
	PUT("],\"cost\":123456.0,\"reason\":\"initial\"}],\"migrations\":[");
	for (i = 0; i < 8; i++)
		PUT("%s{\"t\":%d.5,\"thread\":%d,\"from\":%d,\"to\":%d}",
		    i ? "," : "", 10 + i, i * 7 % n, i, i * 7 % n);
	PUT("],\"stats\":{\"samples\":1000000,\"lost\":12,\"decoded\":990000,"
	    "\"faults\":0,\"agent_cpu_s\":3.1,\"mapping_ms\":4.2,\"pins\":%d,"
	    "\"intervals\":600,\"sample_period_us\":1000}}", n);
#undef PUT
	s->suffix = b;
}

static void *upload_client(void *arg)
{
	struct shared *s = arg;
	const struct opts *o = s->o;
	size_t plen = strlen(s->prefix), slen = strlen(s->suffix), blen;
	int fd = connect_to(o->port);

	for (;;) {
		char head[1024], num[32];
		struct iovec iov[4];
		double t0;
		int k, st;

		pthread_mutex_lock(&s->lock);
		k = s->next < o->uploads ? s->next++ : -1;
		pthread_mutex_unlock(&s->lock);
		if (k < 0)
			break;
		snprintf(num, sizeof(num), "%ld", o->job_base + k);
		snprintf(head, sizeof(head),
			 "POST /v1/results HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			 "X-Munge-Credential: %s\r\nContent-Type: "
			 "application/json\r\nContent-Length: %zu\r\n\r\n",
			 s->creds[k], plen + strlen(num) + slen);
		iov[0] = (struct iovec){ head, strlen(head) };
		iov[1] = (struct iovec){ s->prefix, plen };
		iov[2] = (struct iovec){ num, strlen(num) };
		iov[3] = (struct iovec){ s->suffix, slen };
		t0 = now();
		if (write_all(fd, iov, 4) < 0 ||
		    (st = read_response(fd, &blen)) < 0) {
			close(fd);	/* the server closed: reconnect */
			fd = connect_to(o->port);
			st = -1;
		}
		s->lat[k] = now() - t0;
		if (st != 201) {
			pthread_mutex_lock(&s->lock);
			if (s->failures++ < 5)
				fprintf(stderr, "upload %d: status %d\n", k,
					st);
			pthread_mutex_unlock(&s->lock);
		}
	}
	close(fd);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void percentiles(double *v, int n, double *p50, double *p99,
			double *max)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	*p50 = v[n / 2];
	*p99 = v[(int)((n - 1) * 0.99)];
	*max = v[n - 1];
}

/* PAGES sequential GETs of path; p50/p99 in ms. */
static int page_latency(const struct opts *o, const char *path,
			size_t *size)
{
	double *lat = malloc((size_t)o->pages * sizeof(double));
	double p50, p99, max;
	int fd = connect_to(o->port), i, bad = 0;

	for (i = 0; i < o->pages; i++) {
		char *cred = make_cred(), head[1024];
		struct iovec iov;
		double t0;
		int st;

		snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: "
			 "127.0.0.1\r\nX-Munge-Credential: %s\r\n\r\n", path,
			 cred);
		free(cred);
		iov = (struct iovec){ head, strlen(head) };
		t0 = now();
		if (write_all(fd, &iov, 1) < 0 ||
		    (st = read_response(fd, size)) != 200) {
			bad++;
			close(fd);
			fd = connect_to(o->port);
		}
		lat[i] = now() - t0;
	}
	close(fd);
	percentiles(lat, o->pages, &p50, &p99, &max);
	printf("page %-28s %6d requests  %7zu bytes  p50 %6.2f ms  "
	       "p99 %6.2f ms  max %6.2f ms%s\n", path, o->pages, *size,
	       p50 * 1e3, p99 * 1e3, max * 1e3, bad ? "  (FAILURES)" : "");
	free(lat);
	return bad;
}

/* A value from GET /metrics (HTTP/1.0: read to EOF); -1 if absent (an
 * older service). */
static long metric(int port, const char *name)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	static char buf[1 << 16];
	char key[128];
	size_t have = 0;
	int fd = connect_to(port);
	struct iovec iov = { (void *)req, sizeof(req) - 1 };
	const char *p;
	ssize_t r;

	if (write_all(fd, &iov, 1) < 0) {
		close(fd);
		return -1;
	}
	while (have < sizeof(buf) - 1 &&
	       (r = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)r;
	close(fd);
	buf[have] = '\0';
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(buf, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static long model_pending(int port)
{
	return metric(port, "commap_model_pending");
}

/* Group commit: how many uploads shared a transaction. */
static void commits(int port)
{
	long stores = metric(port, "commap_upload_stores_total");
	long groups = metric(port, "commap_upload_commits_total");

	if (stores > 0 && groups > 0)
		printf("commits      %ld uploads stored in %ld transactions "
		       "(%.2f per commit)\n", stores, groups,
		       (double)stores / (double)groups);
}

/* Wait (at most 10 minutes) for the model worker to fold every upload. */
static void model_drain(const struct opts *o, double upload_s)
{
	long backlog = model_pending(o->port), n = backlog;
	double t0 = now();

	if (backlog < 0) {
		printf("models       (no commap_model_pending in /metrics)\n");
		return;
	}
	while (n > 0 && now() - t0 < 600) {
		usleep(20000);
		n = model_pending(o->port);
	}
	printf("models       %ld folds pending after the uploads, drained in "
	       "%.2f s: %.0f uploads/s folded into models end to end%s\n",
	       backlog, now() - t0, o->uploads / (upload_s + now() - t0),
	       n ? "  (NOT DRAINED)" : "");
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_service --port PORT [--clients N] "
		"[--uploads N] [--threads N] [--all-pairs] [--pages N] "
		"[--job-base N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "uploads", required_argument, NULL, 'u' },
		{ "threads", required_argument, NULL, 't' },
		{ "all-pairs", no_argument, NULL, 'a' },
		{ "pages", required_argument, NULL, 'g' },
		{ "job-base", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { 0, 4, 4000, 256, 0, 400, 3000000 };
	struct shared s = { .o = &o };
	pthread_t *th;
	double t0, dt, p50, p99, max;
	char path[64];
	size_t size = 0;
	int c, i, bad;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o.port = atoi(optarg); break;
		case 'c': o.clients = atoi(optarg); break;
		case 'u': o.uploads = atoi(optarg); break;
		case 't': o.threads = atoi(optarg); break;
		case 'a': o.all_pairs = 1; break;
		case 'g': o.pages = atoi(optarg); break;
		case 'j': o.job_base = atol(optarg); break;
		default: usage();
		}
	}
	if (o.port <= 0 || o.clients < 1 || o.uploads < 1 || o.threads < 2 ||
	    o.pages < 1)
		usage();
	make_document(&s, o.threads, o.all_pairs);
	s.creds = malloc((size_t)o.uploads * sizeof(char *));
	s.lat = malloc((size_t)o.uploads * sizeof(double));
	th = malloc((size_t)o.clients * sizeof(pthread_t));
	pthread_mutex_init(&s.lock, NULL);
	t0 = now();
	for (i = 0; i < o.uploads; i++)
		s.creds[i] = make_cred();
	dt = now() - t0;
	printf("credentials  %d made in %.2f s (%.0f/s, not counted below)\n",
	       o.uploads, dt, o.uploads / dt);
	printf("document     %d threads, %s, %zu bytes\n", o.threads,
	       o.all_pairs ? "all pairs" : "grid neighbours",
	       strlen(s.prefix) + strlen(s.suffix) + 7);
	t0 = now();
	for (i = 0; i < o.clients; i++)
		pthread_create(&th[i], NULL, upload_client, &s);
	for (i = 0; i < o.clients; i++)
		pthread_join(th[i], NULL);
	dt = now() - t0;
	percentiles(s.lat, o.uploads, &p50, &p99, &max);
	printf("uploads      %d in %.2f s with %d clients: %.0f uploads/s  "
	       "latency p50 %.2f ms  p99 %.2f ms  max %.2f ms%s\n",
	       o.uploads, dt, o.clients, o.uploads / dt, p50 * 1e3,
	       p99 * 1e3, max * 1e3, s.failures ? "  (FAILURES)" : "");
	commits(o.port);
	model_drain(&o, dt);
	snprintf(path, sizeof(path), "/jobs/%ld", o.job_base);
	bad = page_latency(&o, path, &size);
	bad += page_latency(&o, "/jobs", &size);
	for (i = 0; i < o.uploads; i++)
		free(s.creds[i]);
	free(s.creds);
	free(s.lat);
	free(th);
	free(s.prefix);
	free(s.suffix);
	return s.failures || bad ? 1 : 0;
}
