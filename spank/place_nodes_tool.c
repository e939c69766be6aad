/* place_nodes_tool.c: commap-place-nodes, run by the SPANK plugin inside
 * srun (as the user, before srun reads its environment) for
 * --commap-place-nodes (docs/slurm.md "Learned placement across nodes").
 *
 *   commap-place-nodes --service URL --nodes N1,N2,... --per-node K
 *                      [--timeout-ms MS] -- PROGRAM [ARGS...]
 *
 * It identifies the application as the agent does for learned models
 * (nodeagent/app_identity.h: the executable's hash and the command
 * line's shape), fetches its rank matrix (GET /v1/models/{app}/ranks,
 * docs/service.md), assigns the ranks to the nodes with cm_place_nodes
 * (block unless strictly fewer bytes cross between nodes) and, when the
 * learned assignment is kept, writes a hostfile (one node per rank, in
 * rank order: what srun's arbitrary distribution reads).  It prints one
 * line on stdout and exits 0:
 *
 *   placed FILE BLOCK LEARNED RUNS   the hostfile FILE (predicted bytes
 *                                    between nodes under block and with
 *                                    it; steps the matrix averages)
 *   block BLOCK RUNS                 the learned matrix gains nothing
 *   none REASON                      no matrix, service down, ...
 *
 * Exit 2 on bad arguments.  It reads only what the user can (it runs as
 * the user) and its work is bounded: the answer (cm_service_get's
 * limit), ranks (CM_PLACE_NODES_MAX_RANKS), the request (timeout).
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "app_identity.h"
#include "commap/place_nodes.h"
#include "place_nodes_answer.h"
#include "upload.h"

#define NODES_MAX CM_PLACE_NODES_MAX_RANKS

struct args {
	const char *service;
	char *nodes[NODES_MAX];
	char *nodes_text;	/* the --nodes value the names point into */
	int nnodes, per_node;
	long timeout_ms;
	int argc;
	char **argv;
};

static int usage(const char *why)
{
	fprintf(stderr, "commap-place-nodes: %s\nusage: commap-place-nodes "
		"--service URL --nodes N1,N2,... --per-node K "
		"[--timeout-ms MS] -- PROGRAM [ARGS...]\n", why);
	return 2;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--") == 0)
			break;
		if (!v)
			return -1;
		if (strcmp(o, "--service") == 0)
			a->service = v;
		else if (strcmp(o, "--per-node") == 0)
			a->per_node = atoi(v);
		else if (strcmp(o, "--timeout-ms") == 0)
			a->timeout_ms = atol(v);
		else if (strcmp(o, "--nodes") == 0) {
			char *s = strdup(v), *save = NULL;

			if (!s || a->nodes_text)
				return -1;
			a->nodes_text = s;
			for (char *t = strtok_r(s, ",", &save);
			     t && a->nnodes < NODES_MAX;
			     t = strtok_r(NULL, ",", &save))
				a->nodes[a->nnodes++] = t;
		} else
			return -1;
		i++;
	}
	if (i >= argc - 1 || !a->service || a->nnodes < 1 || a->per_node < 1)
		return -1;
	a->argc = argc - i - 1;
	a->argv = argv + i + 1;
	return 0;
}

/* The program as srun will run it: a path with '/' as is, else the
 * first executable regular file of that name in PATH. */
static int resolve(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];
	struct stat st;

	if (strchr(prog, '/'))
		return realpath(prog, out) && len >= PATH_MAX ? 0 : -1;
	for (const char *p = path ? path : ""; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, prog);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(cand, X_OK) == 0)
			return realpath(cand, out) ? 0 : -1;
		p += n + (p[n] == ':');
	}
	return -1;
}

/* Append text, then v percent-encoded (RFC 3986 unreserved characters
 * kept), to out.  0, or -1 when out is full. */
static int append(char *out, size_t len, const char *text, const char *v)
{
	size_t u = strlen(out);
	int w = snprintf(out + u, len - u, "%s", text);

	if (w < 0 || (size_t)w >= len - u)
		return -1;
	u += (size_t)w;
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			   (c >= '0' && c <= '9') || strchr("-._~", c);

		if (u + 4 >= len)
			return -1;
		u += (size_t)snprintf(out + u, len - u, keep ? "%c" : "%%%02X",
				      c);
	}
	return 0;
}

/* The hostfile: rank r's node on line r.  Made with mkstemp in TMPDIR
 * (else /tmp), the user's, mode 0600. */
static int write_hostfile(const struct args *a, const int *node_of,
			  char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int n = a->nnodes * a->per_node, fd;
	FILE *f;

	snprintf(path, len, "%s/commap-hostfile.XXXXXX",
		 dir && *dir == '/' ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (int r = 0; r < n; r++)
		fprintf(f, "%s\n", a->nodes[node_of[r]]);
	if (fclose(f) != 0) {
		unlink(path);
		return -1;
	}
	return 0;
}

/* The request path for the program's rank matrix; -1 with why. */
static int request_path(const struct args *a, char *req, size_t len,
			char *why, size_t wlen)
{
	char exe[PATH_MAX], hash[CM_EXE_HASH_MAX], shape[CM_ARGV_SHAPE_MAX];
	char ranks[16];
	const char *app;
	struct cm_error err = { "" };

	if (resolve(a->argv[0], exe, sizeof(exe)) < 0) {
		snprintf(why, wlen, "%s: not found", a->argv[0]);
		return -1;
	}
	if (cm_app_exe_hash(exe, NULL, NULL, hash, &err) < 0) {
		snprintf(why, wlen, "%s", err.text);
		return -1;
	}
	cm_app_argv_shape(a->argc, a->argv, exe, shape, sizeof(shape));
	app = strrchr(exe, '/') + 1;
	snprintf(ranks, sizeof(ranks), "%d", a->nnodes * a->per_node);
	req[0] = '\0';
	if (append(req, len, "/v1/models/", app) < 0 ||
	    append(req, len, "/ranks?exe_hash=", hash) < 0 ||
	    append(req, len, "&argv_shape=", shape) < 0 ||
	    append(req, len, "&ranks=", ranks) < 0) {
		snprintf(why, wlen, "command line too long");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { .timeout_ms = 1000 };
	struct cm_deliver_opts o = { 0 };
	struct cm_place_nodes_result res;
	struct cm_error err = { "" };
	char req[8192], why[CM_ERROR_TEXT_MAX + 64], file[PATH_MAX];
	struct cm_matrix *m = NULL;
	char *body = NULL;
	long code = 0;
	int runs = 0, *node_of = NULL;

	if (parse_args(argc, argv, &a) < 0) {
		free(a.nodes_text);
		return usage("bad arguments");
	}
	why[0] = '\0';
	o.service_url = a.service;
	o.timeout_ms = a.timeout_ms;
	if (request_path(&a, req, sizeof(req), why, sizeof(why)) < 0)
		goto none;
	if (cm_service_get(&o, req, NULL, &code, &body, &err) < 0) {
		snprintf(why, sizeof(why), "service: %s", err.text);
		goto none;
	}
	if (code == 404) {
		snprintf(why, sizeof(why), "no learned rank matrix for %s yet",
			 a.argv[0]);
		goto none;
	}
	if (code != 200) {
		snprintf(why, sizeof(why), "service answered %ld", code);
		goto none;
	}
	m = cm_place_nodes_answer(body, a.nnodes * a.per_node, &runs, why,
				  sizeof(why));
	node_of = malloc(sizeof(int) * (size_t)(a.nnodes * a.per_node));
	if (!m || !node_of)
		goto none;
	if (cm_place_nodes(m, a.nnodes, a.per_node, node_of, &res, &err) < 0) {
		snprintf(why, sizeof(why), "%s", err.text);
		goto none;
	}
	if (!res.learned) {
		printf("block %.0f %d\n", res.between_block, runs);
	} else if (write_hostfile(&a, node_of, file, sizeof(file)) < 0) {
		snprintf(why, sizeof(why), "cannot write a hostfile: %s",
			 strerror(errno));
		goto none;
	} else {
		printf("placed %s %.0f %.0f %d\n", file, res.between_block,
		       res.between_learned, runs);
	}
	goto out;
none:
	printf("none %s\n", why[0] ? why : "unknown");
out:
	cm_matrix_free(m);
	free(node_of);
	free(body);
	free(a.nodes_text);
	return 0;
}
