/* svc_model_key.c: the shape of a command line and the model key of a
 * result (which model a result feeds), and the check that a result's key
 * is its model's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result_validate.h"
#include "svc_model_internal.h"
#include "svc_models.h"

/* ---- argv shape and key ------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Append s to buf (of size cap, length *len), digit runs as '#' when
 * hash_digits; -1 when it does not fit. */
static int shape_append(char *buf, size_t cap, size_t *len, const char *s,
			int hash_digits)
{
	for (; *s; s++) {
		if (hash_digits && *s >= '0' && *s <= '9') {
			while (s[1] >= '0' && s[1] <= '9')
				s++;
		}
		if (*len + 1 >= cap)
			return -1;
		buf[(*len)++] = hash_digits && *s >= '0' && *s <= '9' ?
				'#' : *s;
	}
	buf[*len] = '\0';
	return 0;
}

char *svc_model_argv_shape(const json_t *argv, const char *executable)
{
	size_t cap = SVC_MODEL_ARGV_SHAPE_MAX + 1, len = 0, i;
	char *buf = malloc(cap);
	const char *first;
	int bad = 0;

	if (!buf)
		return NULL;
	buf[0] = '\0';
	first = json_string_value(json_array_get(argv, 0));
	if (!first || !*first)
		first = executable ? executable : "";
	bad |= shape_append(buf, cap, &len, base_name(first), 0);
	for (i = 1; !bad && i < json_array_size(argv); i++) {
		const char *a = json_string_value(json_array_get(argv, i));

		bad |= shape_append(buf, cap, &len, " ", 0);
		bad |= shape_append(buf, cap, &len, a ? a : "", 1);
	}
	if (bad) {
		free(buf);
		errno = E2BIG;
		return NULL;
	}
	return buf;
}

/* Identities of a run's threads (rank default 0, index default the
 * position among the rank's threads).  Sets *tpr to the most threads of a
 * rank.  EINVAL when an identity repeats. */
int svc_result_idents(const struct run *r, struct side *s, int64_t *tpr,
		      struct cm_error *err)
{
	size_t n = r->n, k;
	struct ident *sorted;
	int64_t run = 0;

	s->n = n;
	s->id = calloc(n ? n : 1, sizeof(*s->id));
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (!s->id || !sorted) {
		free(sorted);
		return cm_errorf(err, ENOMEM, "model: out of memory");
	}
	for (k = 0; k < n; k++) {
		size_t j;

		s->id[k].rank = r->id[k].rank;
		if (r->id[k].has_index) {
			s->id[k].index = r->id[k].index;
		} else {	/* position among its rank's threads */
			s->id[k].index = 0;
			for (j = 0; j < k; j++)
				s->id[k].index += s->id[j].rank ==
						  s->id[k].rank;
		}
	}
	memcpy(sorted, s->id, n * sizeof(*sorted));
	svc_sort_unless_sorted(sorted, n, sizeof(*sorted), svc_ident_cmp);
	*tpr = 0;
	for (k = 0; k < n; k++) {
		if (k && svc_ident_cmp(&sorted[k - 1], &sorted[k]) == 0) {
			cm_errorf(err, EINVAL,
				  "threads: identity (rank %lld, index %lld) repeated",
				  (long long)sorted[k].rank,
				  (long long)sorted[k].index);
			free(sorted);
			return -1;
		}
		run = k && sorted[k - 1].rank == sorted[k].rank ? run + 1 : 1;
		if (run > *tpr)
			*tpr = run;
	}
	free(sorted);
	return 0;
}

json_t *svc_model_key_from(const json_t *result, const struct side *run,
			   int64_t tpr_seen, struct cm_error *err)
{
	const json_t *idn = json_object_get(result, "identity");
	const char *hash = json_string_value(json_object_get(idn, "exe_hash"));
	const json_t *r = json_object_get(idn, "ranks");
	const json_t *t = json_object_get(idn, "threads_per_rank");
	const json_t *shape = json_object_get(idn, "argv_shape");
	int64_t ranks = json_is_integer(r) ? json_integer_value(r) : 1;
	int64_t tpr = tpr_seen;
	char *computed = NULL;
	json_t *key;

	if (!hash || !*hash) {
		cm_errorf(err, ENOENT,
			  "identity.exe_hash: absent, the run feeds no model");
		return NULL;
	}
	if (run->n == 0) {
		cm_errorf(err, ENOENT, "threads: empty, the run feeds no model");
		return NULL;
	}
	if (t && !json_is_null(t)) {
		if (!json_is_integer(t) || json_integer_value(t) < 1) {
			cm_errorf(err, EINVAL,
				  "identity.threads_per_rank: expected an integer >= 1");
			return NULL;
		}
		tpr = json_integer_value(t);
	}
	if (shape && !json_is_null(shape)) {
		const char *s = json_string_value(shape);

		if (!s || !*s || strlen(s) > SVC_MODEL_ARGV_SHAPE_MAX) {
			cm_errorf(err, EINVAL,
				  "identity.argv_shape: expected a string of 1-%d bytes",
				  SVC_MODEL_ARGV_SHAPE_MAX);
			return NULL;
		}
	} else {
		computed = svc_model_argv_shape(json_object_get(idn, "argv"),
			json_string_value(json_object_get(idn, "executable")));
		if (!computed) {
			cm_errorf(err, errno, "identity.argv: %s",
				  errno == E2BIG ? "shape too long" :
				  "out of memory");
			return NULL;
		}
	}
	key = json_pack("{s:s, s:I, s:I, s:s}", "exe_hash", hash,
			"ranks", (json_int_t)(ranks < 1 ? 1 : ranks),
			"threads_per_rank", (json_int_t)tpr,
			"argv_shape", computed ? computed :
			json_string_value(shape));
	free(computed);
	if (!key)
		cm_errorf(err, ENOMEM, "model: out of memory");
	return key;
}

/* Slurm's id of the batch step (slurm.h: SLURM_BATCH_SCRIPT). */
#define BATCH_STEP 4294967291LL

json_t *svc_run_key(const struct run *r, struct cm_error *err)
{
	const json_t *step = json_object_get(json_object_get(r->head,
						"identity"), "step");
	struct side ids = { 0 };
	int64_t tpr = 0;
	json_t *key = NULL;

	/* An sbatch script whose threads shared nothing (a shell starting
	 * srun steps) has no mapping to learn; a batch step that
	 * communicates (mpirun inside the script) is the application. */
	if (json_integer_value(step) == BATCH_STEP && r->ne == 0) {
		cm_errorf(err, ENODATA, "the batch script shared no memory: "
			  "nothing to learn");
		return NULL;
	}
	if (svc_result_idents(r, &ids, &tpr, err) == 0)
		key = svc_model_key_from(r->head, &ids, tpr, err);
	svc_side_free(&ids);
	return key;
}

json_t *svc_model_key(const json_t *result, struct cm_error *err)
{
	struct run r;
	json_t *key;

	if (svc_run_from_json(result, &r, err) < 0)
		return NULL;
	key = svc_run_key(&r, err);
	svc_run_free(&r);
	return key;
}

/* "key.ranks: the result's 2 differs from the model's 1". */
int svc_model_key_check(const json_t *model_key, const json_t *key,
			struct cm_error *err)
{
	static const char *const fields[] = {
		"exe_hash", "ranks", "threads_per_rank", "argv_shape", NULL,
	};
	const char *const *f;

	for (f = fields; *f; f++) {
		const json_t *a = json_object_get(key, *f);
		const json_t *b = json_object_get(model_key, *f);
		char *as, *bs;

		if (b && json_equal(a, b))
			continue;
		as = json_dumps(a, JSON_ENCODE_ANY);
		bs = b ? json_dumps(b, JSON_ENCODE_ANY) : NULL;
		cm_errorf(err, EINVAL,
			  "key.%s: the result's %.80s differs from the model's %.80s",
			  *f, as ? as : "?", bs ? bs : "(none)");
		free(as);
		free(bs);
		return -1;
	}
	return 0;
}
