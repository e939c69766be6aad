/* place_nodes_line.c: what srun's command line and environment say about
 * a step's layout (place_nodes_line.h).  Plain POSIX: unit-tested
 * without Slurm (tests/unit/test_place_nodes_line.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "place_nodes_line.h"

/* An executable regular file as srun would find it (PATH when no '/'). */
static int is_program(const char *a)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];
	struct stat st;

	if (strchr(a, '/'))
		return stat(a, &st) == 0 && S_ISREG(st.st_mode) &&
		       access(a, X_OK) == 0;
	for (const char *p = path ? path : ""; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, a);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(cand, X_OK) == 0)
			return 1;
		p += n + (p[n] == ':');
	}
	return 0;
}

/* The value of -X V, -XV, --name=V or --name V. */
static const char *value_of(int argc, char **argv, int i)
{
	const char *eq = strchr(argv[i], '=');

	if (argv[i][1] != '-' && argv[i][2])
		return argv[i] + 2;
	if (eq && argv[i][1] == '-')
		return eq + 1;
	return i + 1 < argc ? argv[i + 1] : "";
}

/* srun's options end at its program: the first word that is neither an
 * option nor an option's value and names an executable file. */
void cm_srun_line_scan(int argc, char **argv, struct cm_srun_line *l)
{
	static const char *const own_long[] = { "distribution", "nodelist",
		"exclude", "relative", "nodefile", "het-group", "multi-prog",
		"arbitrary", NULL };

	memset(l, 0, sizeof(*l));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			l->prog = i + 1 < argc ? i + 1 : 0;
			return;
		}
		if (strcmp(a, ":") == 0) {
			l->own = "a heterogeneous step";
			continue;
		}
		if (strncmp(a, "--", 2) == 0) {
			size_t n = strcspn(a + 2, "=");

			if (strcmp(a, "--commap-place-nodes") == 0)
				l->asked = 1;
			for (int k = 0; own_long[k]; k++)
				if (strlen(own_long[k]) == n &&
				    strncmp(a + 2, own_long[k], n) == 0)
					l->own = own_long[k];
			if (n == 6 && strncmp(a + 2, "ntasks", 6) == 0)
				l->ntasks = atol(value_of(argc, argv, i));
			if (n == 5 && strncmp(a + 2, "nodes", 5) == 0)
				l->nnodes = atol(value_of(argc, argv, i));
			continue;
		}
		if (a[0] == '-' && a[1]) {
			if (strchr("mwxrF", a[1]))
				l->own = a[1] == 'm' ? "distribution" :
					 a[1] == 'w' ? "nodelist" :
					 a[1] == 'x' ? "exclude" :
					 a[1] == 'r' ? "relative" : "nodefile";
			if (a[1] == 'n')
				l->ntasks = atol(value_of(argc, argv, i));
			if (a[1] == 'N')
				l->nnodes = atol(value_of(argc, argv, i));
			continue;
		}
		if (is_program(a)) {
			l->prog = i;
			return;
		}
	}
}

long cm_srun_even_slots(const char *tpn, int nnodes)
{
	char *end;
	long k = tpn ? strtol(tpn, &end, 10) : 0;

	if (!tpn || end == tpn || k < 1)
		return 0;
	if (*end == '\0')
		return nnodes == 1 ? k : 0;
	if (strncmp(end, "(x", 2) == 0 && strtol(end + 2, &end, 10) ==
	    nnodes && strcmp(end, ")") == 0)
		return k;
	return 0;
}


int cm_place_nodes_note_valid(const char *s)
{
	unsigned long long b, l;
	unsigned runs;
	char kind[8];
	int end = 0;

	if (!s || strlen(s) > 80 || strspn(s, "abcdefghijklmnopqrstuvwxyz "
					      "0123456789") != strlen(s))
		return 0;
	if (sscanf(s, "%7s %llu %llu %u%n", kind, &b, &l, &runs, &end) != 4 ||
	    s[end] != '\0')
		return 0;
	return strcmp(kind, "learned") == 0 || strcmp(kind, "block") == 0;
}
