/* agent_result.c: the commap-result v1 document (see agent_result.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent_result.h"
#include "commap/matrix_io.h"
#include "grow.h"

void cm_agent_result_init(struct cm_agent_result *r)
{
	memset(r, 0, sizeof(*r));
	r->job = -1;
	r->step = -1;
	r->mode = "off";
	clock_gettime(CLOCK_REALTIME, &r->started_at);
	r->ended_at = r->started_at;
}

void cm_agent_result_free(struct cm_agent_result *r)
{
	if (r->argv)
		for (char **a = r->argv; *a; a++)
			free(*a);
	free(r->argv);
	free(r->cpuset);
	free(r->synthetic);
	free(r->threads);
	for (int i = 0; i < r->ntimeline; i++)
		free(r->timeline[i].os_pu);
	free(r->timeline);
	free(r->migrations);
	cm_rank_traffic_free(&r->traffic);
	for (int i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->pin_latency_ms);
	memset(r, 0, sizeof(*r));
}

int cm_agent_result_set_argv(struct cm_agent_result *r, int argc,
			     char *const argv[])
{
	char **a = calloc((size_t)argc + 1, sizeof(*a));

	if (!a)
		return -1;
	for (int i = 0; i < argc; i++) {
		a[i] = strdup(argv[i]);
		if (!a[i]) {
			while (i--)
				free(a[i]);
			free(a);
			return -1;
		}
	}
	if (r->argv)
		for (char **p = r->argv; *p; p++)
			free(*p);
	free(r->argv);
	r->argv = a;
	return 0;
}

int cm_agent_result_set_threads(struct cm_agent_result *r,
				const struct cm_result_thread *th, int n)
{
	struct cm_result_thread *copy = NULL;

	if (n > 0) {
		copy = malloc((size_t)n * sizeof(*copy));
		if (!copy)
			return -1;
		memcpy(copy, th, (size_t)n * sizeof(*copy));
	}
	free(r->threads);
	r->threads = copy;
	r->nthreads = n;
	r->threads_cap = n;
	return 0;
}

int cm_agent_result_add_mapping(struct cm_agent_result *r, double t,
				const int *os_pu, int n, double cost,
				const char *reason)
{
	struct cm_result_mapping *e;

	if (cm_grow((void **)&r->timeline, &r->timeline_cap,
		    r->ntimeline + 1, sizeof(*r->timeline)) < 0)
		return -1;
	e = &r->timeline[r->ntimeline];
	e->os_pu = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	if (!e->os_pu)
		return -1;
	if (n > 0)
		memcpy(e->os_pu, os_pu, (size_t)n * sizeof(int));
	e->t = t;
	e->n = n;
	e->cost = cost;
	e->live = 0;
	e->forced = 0;
	e->note[0] = '\0';
	snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
	r->ntimeline++;
	return 0;
}

int cm_agent_result_add_migration(struct cm_agent_result *r, double t,
				  int thread, int from, int to)
{
	struct cm_result_migration *e;

	if (cm_grow((void **)&r->migrations, &r->migrations_cap,
		    r->nmigrations + 1, sizeof(*r->migrations)) < 0)
		return -1;
	e = &r->migrations[r->nmigrations++];
	e->t = t;
	e->thread = thread;
	e->from = from;
	e->to = to;
	return 0;
}

int cm_agent_result_add_pin_latency(struct cm_agent_result *r, double ms)
{
	if (cm_grow((void **)&r->pin_latency_ms, &r->pin_latency_cap,
		    r->npin_latency + 1, sizeof(*r->pin_latency_ms)) < 0)
		return -1;
	r->pin_latency_ms[r->npin_latency++] = ms < 0 ? 0 : ms;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double cm_agent_result_pin_latency_quantile(const struct cm_agent_result *r,
					    double q)
{
	int n = r->npin_latency, k;
	double *v, out;

	if (n <= 0)
		return -1;
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return -1;
	memcpy(v, r->pin_latency_ms, (size_t)n * sizeof(*v));
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	/* nearest rank: the smallest value with at least q of them below */
	k = (int)(q * n + 0.999999999) - 1;
	out = v[k < 0 ? 0 : k >= n ? n - 1 : k];
	free(v);
	return out;
}

void cm_agent_result_warn(struct cm_agent_result *r, const char *text)
{
	if (r->nwarnings >= CM_RESULT_MAX_WARNINGS)
		return;
	r->warnings[r->nwarnings] = strdup(text);
	if (r->warnings[r->nwarnings])
		r->nwarnings++;
}

void cm_result_format_time(const struct timespec *ts, char *out, size_t len)
{
	struct tm tm;
	char base[24];

	gmtime_r(&ts->tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, len, "%s.%03ldZ", base, ts->tv_nsec / 1000000);
}

/* Every json_object_set_new() below steals its value even on failure, so
 * errors are accumulated in one flag and checked once per object. */
static json_t *identity_json(const struct cm_agent_result *r)
{
	json_t *o = json_object(), *argv = json_array();
	int bad = !o || !argv;

	for (char **a = r->argv; !bad && a && *a; a++)
		bad |= json_array_append_new(argv, json_string(*a));
	bad |= json_object_set_new(o, "job", r->job < 0 ? json_null() :
				   json_integer(r->job));
	bad |= json_object_set_new(o, "step", r->job < 0 || r->step < 0 ?
				   json_null() : json_integer(r->step));
	bad |= json_object_set_new(o, "node", json_string(r->node));
	bad |= json_object_set_new(o, "user", json_string(r->user));
	bad |= json_object_set_new(o, "uid", json_integer(r->uid));
	bad |= json_object_set_new(o, "executable",
				   json_string(r->executable[0] ?
					       r->executable : "unknown"));
	bad |= json_object_set_new(o, "exe_hash", r->exe_hash[0] ?
				   json_string(r->exe_hash) : json_null());
	bad |= json_object_set_new(o, "argv", argv);
	if (r->argv_shape[0])
		bad |= json_object_set_new(o, "argv_shape",
					   json_string(r->argv_shape));
	bad |= json_object_set_new(o, "ranks", json_integer(r->ranks));
	if (r->threads_per_rank > 0)
		bad |= json_object_set_new(o, "threads_per_rank",
					   json_integer(r->threads_per_rank));
	bad |= json_object_set_new(o, "threads", json_integer(r->nthreads));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *topology_json(const struct cm_agent_result *r)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= json_object_set_new(o, "cpuset",
				   json_string(r->cpuset ? r->cpuset : ""));
	bad |= json_object_set_new(o, "pus", json_integer(r->pus));
	bad |= json_object_set_new(o, "synthetic", r->synthetic ?
				   json_string(r->synthetic) : json_null());
	bad |= json_object_set_new(o, "dry_run", json_boolean(r->dry_run));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *thread_json(const struct cm_result_thread *t)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= json_object_set_new(o, "rank", json_integer(t->rank));
	bad |= json_object_set_new(o, "index", json_integer(t->index));
	bad |= json_object_set_new(o, "tid", json_integer(t->tid));
	bad |= json_object_set_new(o, "pid", json_integer(t->pid));
	if (t->cpu_s >= 0)
		bad |= json_object_set_new(o, "cpu_s", json_real(t->cpu_s));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *threads_json(const struct cm_agent_result *r)
{
	json_t *a = json_array();

	for (int i = 0; a && i < r->nthreads; i++)
		if (json_array_append_new(a, thread_json(&r->threads[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The matrix's edges, without those naming threads beyond the list. */
static json_t *edges_json(const struct cm_agent_result *r,
			  const struct cm_matrix *m)
{
	json_t *a;
	size_t i = 0;

	if (!m)
		return json_array();
	a = cm_matrix_edges_to_json(m);
	while (a && i < json_array_size(a)) {
		json_t *e = json_array_get(a, i);

		if (json_integer_value(json_array_get(e, 1)) >= r->nthreads)
			json_array_remove(a, i);
		else
			i++;
	}
	return a;
}

static json_t *int_array(const int *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_integer(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *timeline_json(const struct cm_agent_result *r)
{
	json_t *a = json_array();

	for (int i = 0; a && i < r->ntimeline; i++) {
		const struct cm_result_mapping *e = &r->timeline[i];
		int n = e->n < r->nthreads ? e->n : r->nthreads;
		json_t *o = json_object();
		int bad = !o;

		bad |= json_object_set_new(o, "t", json_real(e->t));
		bad |= json_object_set_new(o, "pu_of_thread",
					   int_array(e->os_pu, n));
		/* A static mapping has no matrix to price it with: the key
		 * is left out (docs/result-format.md), never null. */
		if (e->cost >= 0)
			bad |= json_object_set_new(o, "cost",
						   json_real(e->cost));
		bad |= json_object_set_new(o, "reason", json_string(e->reason));
		if (e->live > 0)
			bad |= json_object_set_new(o, "threads_live",
						   json_integer(e->live));
		if (e->forced)
			bad |= json_object_set_new(o, "forced", json_true());
		if (e->note[0])
			bad |= json_object_set_new(o, "note",
						   json_string(e->note));
		if (bad || json_array_append_new(a, o) < 0) {
			json_decref(o);
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *migrations_json(const struct cm_agent_result *r)
{
	json_t *a = json_array();

	for (int i = 0; a && i < r->nmigrations; i++) {
		const struct cm_result_migration *e = &r->migrations[i];

		if (e->thread >= r->nthreads)
			continue;
		if (json_array_append_new(a, json_pack("{s:f,s:i,s:i,s:i}",
				"t", e->t, "thread", e->thread,
				"from", e->from, "to", e->to)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *ms_or_null(double v)
{
	return v < 0 ? json_null() : json_real(v);
}

/* The creation-to-first-pin distribution, ms. */
static json_t *pin_latency_json(const struct cm_agent_result *r)
{
	return json_pack("{s:o,s:o,s:o,s:i}",
		"p50", ms_or_null(cm_agent_result_pin_latency_quantile(r, 0.5)),
		"p90", ms_or_null(cm_agent_result_pin_latency_quantile(r, 0.9)),
		"max", ms_or_null(cm_agent_result_pin_latency_quantile(r, 1.0)),
		"n", r->npin_latency);
}

/* [[t, us], ...] of the sampling periods used. */
static json_t *periods_json(const struct cm_result_stats *s)
{
	json_t *a = json_array();

	for (int i = 0; a && i < s->nperiods && i < 8; i++)
		json_array_append_new(a, json_pack("[f,i]", s->period_t[i],
						   (int)s->period_us[i]));
	return a;
}

/* [{"t", "phase", ...}, ...] of the sampling budget's phases. */
static json_t *budget_json(const struct cm_result_stats *s)
{
	json_t *a = json_array();

	for (int i = 0; a && i < s->nbudget && i < CM_RESULT_SPEND_MAX;
	     i++) {
		const struct cm_result_spend *b = &s->budget[i];

		json_array_append_new(a, json_pack(
			"{s:f,s:s,s:i,s:f,s:f,s:I,s:f}", "t", b->t,
			"phase", b->phase, "period_us", (int)b->period_us,
			"app_cpu_s", b->app_cpu_s, "agent_cpu_s",
			b->agent_cpu_s, "samples", (json_int_t)b->samples,
			"overhead", b->overhead));
	}
	return a;
}

static json_t *drops_json(const struct cm_result_stats *s)
{
	return json_pack("{s:I,s:I,s:I,s:I}",
			 "spin", (json_int_t)s->drop_spin,
			 "syscall", (json_int_t)s->drop_syscall,
			 "repeat", (json_int_t)s->drop_repeat,
			 "stack", (json_int_t)s->drop_stack);
}

static json_t *stats_json(const struct cm_agent_result *r)
{
	const struct cm_result_stats *s = &r->stats;
	json_t *o;

	o = json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:I,s:I,s:i,s:o}",
			 "samples", (json_int_t)s->samples,
			 "lost", (json_int_t)s->lost,
			 "decoded", (json_int_t)s->decoded,
			 "faults", (json_int_t)s->faults,
			 "agent_cpu_s", s->agent_cpu_s,
			 "mapping_ms", s->mapping_ms,
			 "pins", (json_int_t)s->pins,
			 "intervals", (json_int_t)s->intervals,
			 "sample_period_us", (int)s->sample_period_us,
			 "pin_latency_ms", pin_latency_json(r));
	if (o && s->nperiods > 0)
		json_object_set_new(o, "sample_periods", periods_json(s));
	if (o && s->nbudget > 0)
		json_object_set_new(o, "sample_budget", budget_json(s));
	if (o && s->drops_on)
		json_object_set_new(o, "dropped", drops_json(s));
	return o;
}

static json_t *model_json(const struct cm_agent_result *r)
{
	const struct cm_result_model *m = &r->model;

	if (m->state == CM_RESULT_MODEL_UNUSED)
		return json_pack("{s:b,s:s}", "used", 0, "reason", m->reason);
	return json_pack("{s:b,s:I,s:i,s:o}", "used", 1, "id",
			 (json_int_t)m->id, "runs", m->runs, "distance",
			 m->distance < 0 ? json_null() :
			 json_real(m->distance));
}

static json_t *warnings_json(const struct cm_agent_result *r)
{
	json_t *a = json_array();

	for (int i = 0; a && i < r->nwarnings; i++)
		if (json_array_append_new(a, json_string(r->warnings[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* {"source", "ranks": [R, ...], "pairs": [[src, dst, bytes, messages],
 * ...]}: the MPI library's counts between ranks (docs/result-format.md);
 * counts beyond JSON's integers are capped. */
static json_t *traffic_json(const struct cm_rank_traffic *t,
			    const char *place_nodes)
{
	json_t *ranks = json_array(), *pairs = json_array(), *o;
	char kind[8];
	double b, l;
	int runs;

	for (int i = 0; ranks && i < t->nranks; i++)
		json_array_append_new(ranks, json_integer(t->ranks[i]));
	for (int i = 0; pairs && i < t->npairs; i++) {
		const struct cm_rank_pair *p = &t->pairs[i];

		json_array_append_new(pairs, json_pack("[i,i,I,I]", p->src,
			p->dst, (json_int_t)(p->bytes > INT64_MAX ? INT64_MAX :
					     p->bytes),
			(json_int_t)(p->messages > INT64_MAX ? INT64_MAX :
				     p->messages)));
	}
	o = json_pack("{s:s,s:o,s:o}", "source", "ompi-monitoring", "ranks",
		      ranks, "pairs", pairs);
	/* srun placed the ranks from the learned matrix (or kept block):
	 * the bytes between nodes it predicted both ways */
	if (o && place_nodes && sscanf(place_nodes, "%7s %lf %lf %d", kind,
				       &b, &l, &runs) == 4)
		json_object_set_new(o, "placement", json_pack("{s:s, s:I, s:I,"
			" s:i}", "distribution", kind, "predicted_block",
			(json_int_t)b, "predicted", (json_int_t)l, "runs",
			runs));
	return o;
}

static json_t *document(const struct cm_agent_result *r,
			const struct cm_matrix *m)
{
	char started[40], ended[40];
	json_t *o = json_object();
	int bad = !o;

	cm_result_format_time(&r->started_at, started, sizeof(started));
	cm_result_format_time(&r->ended_at, ended, sizeof(ended));
	bad |= json_object_set_new(o, "format", json_string("commap-result"));
	bad |= json_object_set_new(o, "version", json_integer(1));
	bad |= json_object_set_new(o, "identity", identity_json(r));
	if (r->cluster[0])
		bad |= json_object_set_new(o, "cluster",
					   json_string(r->cluster));
	bad |= json_object_set_new(o, "mode", json_string(r->mode));
	bad |= json_object_set_new(o, "backend", r->backend ?
				   json_string(r->backend) : json_null());
	bad |= json_object_set_new(o, "started_at", json_string(started));
	bad |= json_object_set_new(o, "ended_at", json_string(ended));
	bad |= json_object_set_new(o, "topology", topology_json(r));
	bad |= json_object_set_new(o, "threads", threads_json(r));
	bad |= json_object_set_new(o, "edges", edges_json(r, m));
	bad |= json_object_set_new(o, "timeline", timeline_json(r));
	bad |= json_object_set_new(o, "migrations", migrations_json(r));
	bad |= json_object_set_new(o, "stats", stats_json(r));
	bad |= json_object_set_new(o, "warnings", warnings_json(r));
	if (r->model.state != CM_RESULT_MODEL_NONE)
		bad |= json_object_set_new(o, "model", model_json(r));
	if (r->not_pinned[0])
		bad |= json_object_set_new(o, "not_pinned",
					   json_string(r->not_pinned));
	if (r->guard_checked)
		bad |= json_object_set_new(o, "guard", json_pack(
				"{s:i, s:i}", "checked", r->guard_checked,
				"undone", r->guard_undone));
	if (r->traffic_on)
		bad |= json_object_set_new(o, "rank_traffic",
					   traffic_json(&r->traffic,
							r->place_nodes));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *cm_agent_result_json(const struct cm_agent_result *r,
			   const struct cm_matrix *m, struct cm_error *err)
{
	json_t *doc = document(r, m);
	char *text, *out;
	size_t len;

	if (!doc) {
		cm_errorf(err, ENOMEM, "out of memory building the result");
		return NULL;
	}
	text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(doc);
	if (!text) {
		cm_errorf(err, ENOMEM, "out of memory writing the result");
		return NULL;
	}
	len = strlen(text);
	out = realloc(text, len + 2);
	if (!out) {
		free(text);
		cm_errorf(err, ENOMEM, "out of memory writing the result");
		return NULL;
	}
	out[len] = '\n';
	out[len + 1] = '\0';
	return out;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int cm_result_write_file(const char *path, const char *text,
			 struct cm_error *err)
{
	char tmp[4200];
	int fd, saved;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >=
	    (int)sizeof(tmp))
		return cm_errorf(err, ENAMETOOLONG, "%s: name too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return cm_errorf(err, errno, "cannot write %s: %s", path,
				 strerror(errno));
	if (write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
		saved = errno;
		close(fd);
		unlink(tmp);
		return cm_errorf(err, saved, "cannot write %s: %s", path,
				 strerror(saved));
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		saved = errno;
		unlink(tmp);
		return cm_errorf(err, saved, "cannot write %s: %s", path,
				 strerror(saved));
	}
	return 0;
}
