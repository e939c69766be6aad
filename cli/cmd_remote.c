/* cmd_remote.c: 'commap jobs', 'commap apps' and 'commap report': the
 * service's client (docs/cli.md).  Requests are authenticated with munge as
 * the calling user (remote_http.c); the terminal report is remote_text.c;
 * SVG and HTML come from the report library (report/render.h). */
#define _GNU_SOURCE	/* asprintf, strptime, timegm */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli_common.h"
#include "commands.h"
#include "remote.h"
#include "remote_args.h"
#include "remote_nodes.h"
#ifdef CLI_HAVE_RENDER
#include "render.h"
#endif

/* ---- output -------------------------------------------------------------- */

static FILE *open_output(const struct remote_args *a)
{
	FILE *f = a->output ? fopen(a->output, "w") : stdout;

	if (!f)
		cli_error("cannot write '%s': %s", a->output, strerror(errno));
	return f;
}

static int close_output(const struct remote_args *a, FILE *f, int rv)
{
	const char *name = a->output ? a->output : "standard output";

	if (fflush(f) == EOF || ferror(f))
		rv = -1;
	if (f != stdout && fclose(f) == EOF)
		rv = -1;
	if (rv < 0) {
		cli_error("writing '%s': %s", name, strerror(errno));
		return CLI_EXIT_RUNTIME;
	}
	return CLI_EXIT_OK;
}

/* GET path and parse the JSON answer; what names it in errors.  On
 * success *json is set and, if raw is not NULL, the answer is kept. */
static int fetch(const char *base, const char *path, const char *what,
		 json_t **json, struct remote_answer *raw)
{
	struct remote_answer ans;
	json_error_t je;

	if (remote_get(base, path, &ans))
		return CLI_EXIT_RUNTIME;
	if (ans.code != 200) {
		remote_http_error(base, what, &ans);
		remote_answer_free(&ans);
		return CLI_EXIT_RUNTIME;
	}
	*json = json_loadb(ans.body, ans.len, 0, &je);
	if (!json_is_object(*json)) {
		/* A 200 that is not the service's JSON: another server
		 * (a web server's index page, a captive portal). */
		json_decref(*json);
		*json = NULL;
		remote_not_service(base, &ans);
		remote_answer_free(&ans);
		return CLI_EXIT_RUNTIME;
	}
	if (raw)
		*raw = ans;
	else
		remote_answer_free(&ans);
	return CLI_EXIT_OK;
}

static const char *str_or(const json_t *o, const char *key, const char *d)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : d;
}

static long long int_or(const json_t *o, const char *key, long long d)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : d;
}

/* ---- commap jobs --------------------------------------------------------- */

/* "?user=..&app=.." from the filters, malloc'ed (NULL on ENOMEM). */
static char *jobs_query(const char *base_path, const struct remote_args *a)
{
	const char *keys[] = { "user", "app", "since", "until" };
	const char *vals[] = { a->user, a->app, a->since, a->until };
	char *q = strdup(base_path), *t, *e;
	int i, first = 1;

	for (i = 0; q && i < 5; i++) {
		char num[16];

		if (i == 4 && !a->limit)
			break;
		if (i == 4)
			snprintf(num, sizeof(num), "%d", a->limit);
		else if (!vals[i])
			continue;
		e = remote_escape(i == 4 ? num : vals[i]);
		t = NULL;
		if (!e || asprintf(&t, "%s%c%s=%s", q, first ? '?' : '&',
				   i == 4 ? "limit" : keys[i], e) < 0)
			t = NULL;
		free(e);
		free(q);
		q = t;
		first = 0;
	}
	return q;
}

/* Does the listing hold jobs of more than one cluster (results with no
 * cluster name count as one, "")?  Then a CLUSTER column tells apart two
 * jobs of the same id. */
static int many_clusters(const json_t *list)
{
	const char *first = NULL, *c;
	size_t i;

	for (i = 0; i < json_array_size(list); i++) {
		c = str_or(json_array_get(list, i), "cluster", "");
		if (!first)
			first = c;
		else if (strcmp(first, c))
			return 1;
	}
	return 0;
}

static void print_job_row(const json_t *j, int clusters)
{
	const json_t *job = json_object_get(j, "job");
	char id[32], nodes[24];

	if (clusters)
		printf("%-12s ", *str_or(j, "cluster", "") ?
		       str_or(j, "cluster", "") : "-");
	if (json_is_integer(job))
		snprintf(id, sizeof(id), "%lld",
			 (long long)json_integer_value(job));
	else
		snprintf(id, sizeof(id), "r%lld",
			 (long long)json_integer_value(json_array_get(
				 json_object_get(j, "result_ids"), 0)));
	snprintf(nodes, sizeof(nodes), "%lld", int_or(j, "nodes", 0));
	printf("%-10s %-12s %-16s %-20s %7lld %5lld %5s %6lld\n", id,
	       str_or(j, "user", "-"), str_or(j, "app", "-"),
	       str_or(j, "started_at", "-"), int_or(j, "threads", 0),
	       int_or(j, "steps", 0),
	       json_object_get(j, "nodes") ? nodes : "-",
	       int_or(j, "migrations", 0));
}

/* The learned models visible to the caller (GET /v1/models), under the
 * applications.  Quiet when the service has no models endpoint (an older
 * service answers 404): the applications are still worth listing. */
static void print_models(const char *base)
{
	struct remote_answer ans;
	json_t *j, *m;
	size_t i;

	if (remote_get(base, "/v1/models?limit=100", &ans))
		return;
	j = ans.code == 200 ? json_loadb(ans.body, ans.len, 0, NULL) : NULL;
	if (!j && ans.code != 404)	/* a refusal is said, not hidden */
		remote_http_error(base, "learned models", &ans);
	remote_answer_free(&ans);
	if (!j)
		return;
	printf("\nlearned models:\n");
	json_array_foreach(json_object_get(j, "models"), i, m) {
		const json_t *k = json_object_get(m, "key");
		const json_t *st = json_object_get(m, "stability");
		long long runs = int_or(m, "runs", 0);
		char stab[32] = "stability -";

		if (json_is_number(st))
			snprintf(stab, sizeof(stab), "stability %.2f",
				 json_number_value(st));
		printf("  model %lld  %-12s %-12s \"%s\"  %lld x %lld threads"
		       "  %lld run%s, %s, updated %s\n",
		       int_or(m, "id", 0), str_or(m, "app", "-"),
		       str_or(m, "user", "-"), str_or(k, "argv_shape", "-"),
		       int_or(k, "ranks", 0), int_or(k, "threads_per_rank", 0),
		       runs, runs == 1 ? "" : "s", stab,
		       str_or(m, "updated_at", "-"));
	}
	if (!json_array_size(json_object_get(j, "models")))
		printf("  (none yet)\n");
	json_decref(j);
}

/* An empty listing.  The service answers another user's jobs with an
 * empty list rather than a refusal (an admin sees them, others see only
 * their own): say so, rather than "(no jobs)" for jobs that may exist. */
static void print_none(int jobs, const struct remote_args *a)
{
	const struct passwd *pw = getpwuid(getuid());
	const char *user = a->user;
	int filtered = a->app || a->since || a->until;

	if (!jobs) {
		printf("(no applications)\n");
		return;
	}
	if (user && !(pw && !strcmp(pw->pw_name, user))) {
		printf("(no jobs of %s%s that you may see: the service shows "
		       "you only your own\n jobs, unless you are one of its "
		       "admins)\n", user, filtered ? " matching --app, "
		       "--since, --until" : "");
		return;
	}
	printf(filtered ? "(no jobs match --app, --since, --until)\n" :
			  "(no jobs)\n");
}

static int run_list(const char *cmd, int argc, char *argv[], int jobs)
{
	struct remote_args a = { .service = NULL };
	struct remote_answer raw = { 0 };
	json_t *j = NULL, *list;
	char *base = NULL, *path = NULL;
	size_t i;
	int rv;

	rv = remote_parse(cmd, argc, argv, &a);
	if (rv)
		return rv < 0 ? CLI_EXIT_OK : rv;
	base = remote_service_url(a.service);
	if (!base)
		return CLI_EXIT_RUNTIME;
	path = jobs_query(jobs ? "/v1/jobs" : "/v1/apps", &a);
	rv = path ? fetch(base, path, jobs ? "jobs" : "applications", &j,
			  &raw) : CLI_EXIT_RUNTIME;
	if (rv)
		goto out;
	if (a.format == FMT_JSON) {
		fwrite(raw.body, 1, raw.len, stdout);
		rv = close_output(&a, stdout, 0);
		goto out;
	}
	list = json_object_get(j, jobs ? "jobs" : "apps");
	if (!json_is_array(list)) {
		rv = remote_not_service(base, &raw);
		goto out;
	}
	if (jobs && many_clusters(list))
		printf("%-12s ", "CLUSTER");
	if (jobs)
		printf("%-10s %-12s %-16s %-20s %7s %5s %5s %6s\n", "JOB",
		       "USER", "APP", "STARTED", "THREADS", "STEPS", "NODES",
		       "MIGR");
	else
		printf("%-16s %6s %7s %5s %11s %-20s %s\n", "APP", "JOBS",
		       "RESULTS", "USERS", "MAX-THREADS", "LAST-RUN",
		       "EXECUTABLE");
	for (i = 0; i < json_array_size(list); i++) {
		const json_t *e = json_array_get(list, i);

		if (jobs)
			print_job_row(e, many_clusters(list));
		else
			printf("%-16s %6lld %7lld %5lld %11lld %-20s %s\n",
			       str_or(e, "app", "-"), int_or(e, "jobs", 0),
			       int_or(e, "results", 0), int_or(e, "users", 0),
			       int_or(e, "max_threads", 0),
			       str_or(e, "last_started_at", "-"),
			       str_or(e, "executable", "-"));
	}
	if (!json_array_size(list))
		print_none(jobs, &a);
	if (!jobs)
		print_models(base);
	rv = close_output(&a, stdout, 0);
out:
	remote_answer_free(&raw);
	json_decref(j);
	free(path);
	free(base);
	return rv;
}

int cmd_jobs(int argc, char *argv[])
{
	return run_list("jobs", argc, argv, 1);
}

/* commap apps forget MODEL_ID: DELETE /v1/models/ID. */
static int forget_model(int argc, char *argv[])
{
	struct remote_args a = { .service = NULL };
	struct remote_answer ans = { 0 };
	char *base = NULL, *path = NULL, what[64];
	json_t *j;
	int rv;

	rv = remote_parse("forget", argc, argv, &a);
	if (rv)
		return rv < 0 ? CLI_EXIT_OK : rv;
	if (strspn(a.id, "0123456789") != strlen(a.id) || !a.id[0] ||
	    strlen(a.id) > 18)
		return cli_usage_error("apps", "forget: '%s' is not a model id "
				       "(the number after 'model' in 'commap apps')",
				       a.id);
	base = remote_service_url(a.service);
	if (!base)
		return CLI_EXIT_RUNTIME;
	snprintf(what, sizeof(what), "model %s", a.id);
	rv = CLI_EXIT_RUNTIME;
	if (asprintf(&path, "/v1/models/%s", a.id) < 0)
		path = NULL;
	if (path && remote_request(base, "DELETE", path, &ans) == 0) {
		if (ans.code != 200) {
			rv = remote_http_error(base, what, &ans);
		} else if (!remote_answer_is_json(&ans)) {
			rv = remote_not_service(base, &ans);
		} else {
			j = json_loadb(ans.body, ans.len, 0, NULL);
			printf("forgot model %s (%lld run%s); the next run "
			       "starts without it\n", a.id,
			       int_or(j, "runs", 0),
			       int_or(j, "runs", 0) == 1 ? "" : "s");
			json_decref(j);
			rv = CLI_EXIT_OK;
		}
	}
	remote_answer_free(&ans);
	free(path);
	free(base);
	return rv;
}

int cmd_apps(int argc, char *argv[])
{
	if (argc > 1 && !strcmp(argv[1], "forget"))
		return forget_model(argc - 1, argv + 1);
	return run_list("apps", argc, argv, 0);
}

/* ---- commap report ------------------------------------------------------- */

/* "/v1/jobs/N" or, for rN, "/v1/results/N"; what names it for errors. */
static int report_path(const char *id, char *path, size_t size, char *what,
		       size_t wsize, long long *step)
{
	uint64_t n;
	int result = id[0] == 'r';
	char job[32];
	const char *dot = strchr(id, '.');

	/* JOBID.STEP as sacct writes it: 6.0, 6.batch */
	if (dot && !result && (size_t)(dot - id) < sizeof(job)) {
		long long s = cm_report_step_parse(dot + 1);

		if (s < 0)
			return cli_usage_error("report", "'%s': the step after "
					       "the dot must be a number, batch, "
					       "extern or interactive", id);
		if (*step >= 0 && *step != s)
			return cli_usage_error("report", "'%s' and --step name "
					       "different steps", id);
		*step = s;
		snprintf(job, sizeof(job), "%.*s", (int)(dot - id), id);
		id = job;
	}
	if (cli_parse_u64("JOBID", id + result, result ? 1 : 0, UINT32_MAX,
			  &n))
		return cli_usage_error("report", "JOBID must be a job id, "
				       "JOBID.STEP (6.0, 6.batch) or rID (a "
				       "result id)");
	snprintf(path, size, "%s%llu", result ? "/v1/results/" : "/v1/jobs/",
		 (unsigned long long)n);
	snprintf(what, wsize, "%s %llu", result ? "result" : "job",
		 (unsigned long long)n);
	return 0;
}

/* Keep only the results of --step/--node; the job object is changed in
 * place.  A bare result row (rID) becomes a one-result job. */
static int select_results(json_t *doc, const struct remote_args *a,
			  const char *what)
{
	json_t *results = json_object_get(doc, "results");
	char step[40] = "";
	size_t i = 0;

	if (!results)
		return 0;	/* a single result row */
	while (i < json_array_size(results)) {
		const json_t *r = json_array_get(results, i);

		if ((a->step >= 0 && int_or(r, "step", -1) != a->step) ||
		    (a->node && strcmp(str_or(r, "node", ""), a->node)))
			json_array_remove(results, i);
		else
			i++;
	}
	if (json_array_size(results))
		return 0;
	if (a->step >= 0) {
		char name[24];

		snprintf(step, sizeof(step), " for step %s",
			 cm_report_step_name(a->step, name, sizeof(name)));
	}
	cli_error("%s has no result%s%s%s", what, step,
		  a->node ? " on node " : "", a->node ? a->node : "");
	return -1;
}

static int terminal_width(int tty)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		return ws.ws_col;
	if (cols && atoi(cols) > 20)
		return atoi(cols);
	return 80;
}

static int report_text(FILE *f, const json_t *doc, const struct remote_args *a)
{
	const json_t *results = json_object_get(doc, "results");
	int tty = !a->output && isatty(STDOUT_FILENO);
	const char *nc = getenv("NO_COLOR");
	struct remote_text_opts o = {
		.width = terminal_width(tty),
		.color = a->color >= 0 ? a->color : tty && !(nc && *nc),
	};
	size_t i;

	if (!results)
		return remote_text_report(f, doc, &o);
	if (remote_nodes_summary(f, doc) > 0)	/* a job across nodes */
		fputs("\n", f);
	for (i = 0; i < json_array_size(results); i++) {
		if (i)
			fputs("\n\n", f);
		if (remote_text_report(f, json_array_get(results, i), &o))
			return -1;
	}
	return 0;
}

#ifdef CLI_HAVE_RENDER
static int report_render(FILE *f, const json_t *doc,
			 const struct remote_args *a, const char *base)
{
	const json_t *results = json_object_get(doc, "results");
	const json_t *row = results ? json_array_get(results, 0) : doc;
	const json_t *rdoc = json_object_get(row, "document");
	struct cm_render_opts ro = { .base_url = base, .footer = NULL };
	struct cm_report *r = NULL;
	struct cm_error err = { "" };
	int rv;

	if (a->format == FMT_HTML)
		rv = cm_render_job_html(f, doc, &ro, &err);
	else {
		if (json_array_size(results) > 1)
			fprintf(stderr, "commap: report: %zu results; drawing "
				"step %lld on node %s (choose with --step, "
				"--node)\n", json_array_size(results),
				int_or(row, "step", -1),
				str_or(row, "node", "?"));
		rv = cm_report_parse(&r, rdoc ? rdoc : row, &err);
		if (rv == 0)
			rv = cm_render_heatmap_svg(f, r, &ro, 1, &err);
		cm_report_free(r);
	}
	if (rv)
		cli_error("report: cannot render %s: %s",
			  a->format == FMT_HTML ? "HTML" : "SVG", err.text);
	return rv;
}
#else
static int report_render(FILE *f, const json_t *doc,
			 const struct remote_args *a, const char *base)
{
	(void)f, (void)doc, (void)base;
	cli_error("report: --format %s is not available in this build (the "
		  "report library was not built)",
		  a->format == FMT_HTML ? "html" : "svg");
	return -2;
}
#endif

static int report_write(const struct remote_args *a, json_t *doc,
			const struct remote_answer *raw, const char *base)
{
	FILE *f;
	int rv;

#ifndef CLI_HAVE_RENDER
	if (a->format == FMT_SVG || a->format == FMT_HTML)
		return report_render(NULL, doc, a, base) ? CLI_EXIT_RUNTIME : 0;
#endif
	f = open_output(a);
	if (!f)
		return CLI_EXIT_RUNTIME;
	switch (a->format) {
	case FMT_JSON:
		if (a->step < 0 && !a->node)
			rv = fwrite(raw->body, 1, raw->len, f) == raw->len ?
				     0 : -1;
		else
			rv = json_dumpf(doc, f, JSON_COMPACT) ? -1 : 0;
		break;
	case FMT_TEXT:
		rv = report_text(f, doc, a);
		break;
	default:
		rv = report_render(f, doc, a, base);
		if (rv) {
			if (f != stdout)
				fclose(f);
			return CLI_EXIT_RUNTIME;
		}
	}
	return close_output(a, f, rv);
}

int cmd_report(int argc, char *argv[])
{
	struct remote_args a = { .service = NULL };
	struct remote_answer raw = { 0 };
	char path[64], what[64], *base;
	json_t *doc = NULL;
	int rv;

	rv = remote_parse("report", argc, argv, &a);
	if (rv)
		return rv < 0 ? CLI_EXIT_OK : rv;
	rv = report_path(a.id, path, sizeof(path), what, sizeof(what),
			 &a.step);
	if (rv)
		return rv;
	base = remote_service_url(a.service);
	if (!base)
		return CLI_EXIT_RUNTIME;
	rv = fetch(base, path, what, &doc, &raw);
	if (rv == 0 && select_results(doc, &a, what))
		rv = CLI_EXIT_RUNTIME;
	if (rv == 0)
		rv = report_write(&a, doc, &raw, base);
	remote_answer_free(&raw);
	json_decref(doc);
	free(base);
	return rv;
}
