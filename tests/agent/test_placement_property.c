/* test_placement_property.c: the placement invariant under random
 * sequences (commap/placement_check.h, nodeagent/placement.h).
 *
 * Each sequence takes a synthetic topology of 4 to 256 PUs, sometimes
 * restricted to a random cpuset, and drives the agent's placement
 * through waves: threads arrive (a wave of new ones), some exit, the
 * communication changes (threads that were placed fall silent and leave
 * the mapped set while still pinned: pins outside the matrix), learned
 * pins are asked for, and at each wave the dynamic step (set, plan,
 * repair: cm_place_plan) runs as the agent runs it at an interval's end.
 * After every step the pinned threads must satisfy cm_placement_check
 * over the live threads.  The same sequences driven the way the agent
 * placed threads before the invariant existed (the plan of the mapped
 * set applied alone) must show violations, or this test could not see
 * the failure it is about.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"
#include "commap/placement_check.h"
#include "commap/rand.h"
#include "commap/topology.h"
#include "placement.h"
#include "tap.h"

#define SEQUENCES 10000
#define WAVES 4

static const char *const specs[] = {
	"pack:1 core:4 pu:1",		/* 4, flat */
	"pack:2 core:2 pu:1",		/* 4 */
	"pack:1 core:4 pu:2",		/* 8, SMT */
	"pack:2 l3:2 core:4 pu:1",	/* 16 */
	"pack:1 core:16 pu:1",		/* 16, flat */
	"pack:2 core:4 pu:2",		/* 16 */
	"pack:2 numa:2 l3:2 core:2 pu:2",	/* 32 */
	"pack:2 numa:2 l3:2 core:4 pu:2",	/* 64 */
	"pack:4 l3:2 core:8 pu:2",	/* 128 */
	"pack:2 numa:2 l3:4 core:8 pu:2",	/* 256 */
};
#define NSPECS (int)(sizeof(specs) / sizeof(specs[0]))
/* Sequences per 40 on each machine: the large ones cost most (the
 * incremental placement is quadratic in the PUs), 250 sequences each of
 * 128 and 256 PUs. */
static const int weights[NSPECS] = { 6, 6, 5, 5, 5, 4, 4, 3, 1, 1 };

static const char *spec_of(uint64_t seed)
{
	int k = (int)(seed % 40), i = 0;

	while (k >= weights[i])
		k -= weights[i++];
	return specs[i];
}

struct seq {
	uint64_t rng;
	struct cm_topo *topo;
	int npus, n, cap;
	int *alive, *cur, *talk;	/* talk: communicates this wave */
	int old;			/* drive it the old way */
};

static int rnd(struct seq *q, int bound)
{
	return bound > 0 ? (int)cm_rand_below(&q->rng, (uint64_t)bound) : 0;
}

/* A random cpuset of the machine's PUs, at least one, as a list. */
static int restrict_random(struct seq *q)
{
	int npus = cm_topo_npus(q->topo), len = 0, any = 0;
	char *list = malloc((size_t)npus * 8 + 8);
	struct cm_error err;
	int keep = 1 + rnd(q, 4), rc;

	if (!list)
		return -1;
	list[0] = '\0';
	for (int p = 0; p < npus; p++) {
		/* keep ~keep/4 of the PUs, at least the last */
		if (rnd(q, 4) >= keep && (any || p < npus - 1))
			continue;
		len += sprintf(list + len, "%s%d", any ? "," : "",
			       cm_topo_pu_os_index(q->topo, p));
		any = 1;
	}
	rc = cm_topo_restrict(q->topo, list, &err);
	free(list);
	return rc;
}

static int seq_grow(struct seq *q, int n)
{
	int *a, *c, *t;

	if (n <= q->cap)
		return 0;
	a = realloc(q->alive, sizeof(int) * (size_t)n);
	if (a)
		q->alive = a;
	c = realloc(q->cur, sizeof(int) * (size_t)n);
	if (c)
		q->cur = c;
	t = realloc(q->talk, sizeof(int) * (size_t)n);
	if (t)
		q->talk = t;
	if (!a || !c || !t)
		return -1;
	q->cap = n;
	return 0;
}

/* A wave: k new threads, some exits, who talks now. */
static int wave(struct seq *q, int k)
{
	if (seq_grow(q, q->n + k) < 0)
		return -1;
	for (int t = q->n; t < q->n + k; t++) {
		q->alive[t] = 1;
		q->cur[t] = -1;
	}
	q->n += k;
	for (int t = 0; t < q->n; t++) {
		if (q->alive[t] && rnd(q, 10) == 0)
			q->alive[t] = 0;	/* exits */
		if (!q->alive[t])
			q->cur[t] = -1;
		/* most talk; some placed ones fall silent */
		q->talk[t] = q->alive[t] && rnd(q, 5) != 0;
	}
	return 0;
}

/* The communication of the talking threads: pairs and groups of
 * neighbours in thread order, random weights. */
static struct cm_matrix *matrix(struct seq *q)
{
	struct cm_matrix *m = cm_matrix_new(q->n);
	int group = 2 + rnd(q, 4);

	for (int i = 0; m && i < q->n; i++)
		for (int j = i + 1; j < q->n && j < i + group; j++)
			if (q->talk[i] && q->talk[j])
				cm_matrix_add(m, i, j, 10 + rnd(q, 200));
	return m;
}

/* Learned pins: a few live unpinned threads ask for random PUs, applied
 * within the invariant as the agent applies them. */
static int learned_pins(struct seq *q)
{
	int *want = malloc(sizeof(int) * (size_t)(q->n ? q->n : 1));
	int rc;

	if (!want)
		return -1;
	for (int t = 0; t < q->n; t++)
		want[t] = q->alive[t] && q->cur[t] < 0 && rnd(q, 6) == 0 ?
			  rnd(q, q->npus) : q->cur[t];
	if (q->old) {
		memcpy(q->cur, want, sizeof(int) * (size_t)q->n);
		free(want);
		return 0;
	}
	rc = cm_place_repair(q->topo, q->n, q->alive, q->cur, want);
	if (rc >= 0)
		memcpy(q->cur, want, sizeof(int) * (size_t)q->n);
	free(want);
	return rc < 0 ? -1 : 0;
}

/* Before the invariant: the set's plan applied alone. */
static void apply_set_only(struct seq *q, const struct cm_place_set *s,
			   const int *target)
{
	for (int k = 0; k < s->n; k++)
		q->cur[s->idx[k]] = target[s->idx[k]];
}

static int dynamic_step(struct seq *q)
{
	struct cm_matrix *m = matrix(q), *sub = NULL;
	struct cm_place_set s = { 0 };
	struct cm_remap_plan plan;
	struct cm_error err;
	int *target = malloc(sizeof(int) * (size_t)(q->n ? q->n : 1));
	int repaired, rc = -1;

	if (!m || !target || cm_place_set_build(m, q->n, q->alive, &s) < 0)
		goto out;
	sub = cm_place_sub_matrix(m, &s);
	if (!sub || cm_place_plan(q->topo, sub, &s, q->n, q->alive, q->cur,
				  NULL, 0.05, 1.0, target, &plan, &repaired,
				  &err) < 0)
		goto out;
	if (q->old) {
		/* the old agent: the plan of the set, unrepaired */
		int *spu = malloc(sizeof(int) * (size_t)(s.n ? s.n : 1));
		int *scur = malloc(sizeof(int) * (size_t)(s.n ? s.n : 1));

		for (int k = 0; spu && scur && k < s.n; k++)
			scur[k] = q->cur[s.idx[k]];
		if (spu && scur && cm_remap_plan(q->topo, sub, s.n, scur, NULL,
						 0.05, 1.0, spu, &plan,
						 &err) == 0)
			for (int k = 0; k < s.n; k++)
				target[s.idx[k]] = plan.kind == CM_REMAP_KEEP ?
						   scur[k] : spu[k];
		free(spu);
		free(scur);
		apply_set_only(q, &s, target);
	} else {
		memcpy(q->cur, target, sizeof(int) * (size_t)q->n);
	}
	rc = 0;
out:
	cm_matrix_free(m);
	cm_matrix_free(sub);
	cm_place_set_free(&s);
	free(target);
	return rc;
}

/* Does the placement break the invariant?  1 yes, 0 no. */
static int violates(struct seq *q, char *why, size_t len)
{
	struct cm_error err;
	int live = 0;

	for (int t = 0; t < q->n; t++)
		live += q->alive[t];
	if (cm_placement_check(q->npus, live, q->n, q->cur, &err) == 0)
		return 0;
	snprintf(why, len, "%s", err.text);
	return 1;
}

/* One sequence; returns its violations (steps that broke the
 * invariant), -1 on a setup error. */
static int run_sequence(uint64_t seed, int old, char *why, size_t len)
{
	struct seq q = { .rng = seed * 2654435761u + 1, .old = old };
	struct cm_error err;
	int bad = 0;

	if (cm_topo_load_synthetic(&q.topo, spec_of(seed), &err) < 0)
		return -1;
	if (rnd(&q, 3) == 0 && restrict_random(&q) < 0) {
		cm_topo_free(q.topo);
		return -1;
	}
	q.npus = cm_topo_npus(q.topo);
	for (int w = 0; w < WAVES && bad >= 0; w++) {
		/* waves of up to half the PUs (at most 24 threads: the
		 * incremental placement is quadratic in the PUs), so the
		 * small machines are oversubscribed at times */
		int k = 1 + rnd(&q, (q.npus < 48 ? q.npus : 48) / 2 + 1);

		/* learned pins of the old agent came from a valid model's
		 * mapping: its violations are counted without them */
		if (wave(&q, k) < 0 ||
		    (!old && rnd(&q, 3) == 0 && learned_pins(&q) < 0) ||
		    dynamic_step(&q) < 0)
			bad = -1;
		else if (violates(&q, why, len))
			bad++;
	}
	cm_topo_free(q.topo);
	free(q.alive);
	free(q.cur);
	free(q.talk);
	return bad;
}

static void test_property(void)
{
	int seqs = 0, bad_seqs = 0, errors = 0, old_bad = 0;
	char why[CM_ERROR_TEXT_MAX] = "", first[CM_ERROR_TEXT_MAX] = "";

	for (uint64_t seed = 1; seed <= SEQUENCES; seed++) {
		int v = run_sequence(seed, 0, why, sizeof(why));

		seqs++;
		if (v < 0)
			errors++;
		else if (v > 0 && bad_seqs++ == 0)
			snprintf(first, sizeof(first), "seed %llu: %s",
				 (unsigned long long)seed, why);
	}
	is_int(errors, 0, "every sequence ran");
	ok(bad_seqs == 0, "%d sequences of %d waves: no placement breaks the "
	   "invariant", seqs, WAVES);
	if (bad_seqs)
		diag("%d sequences broke it; first: %s", bad_seqs, first);
	for (uint64_t seed = 1; seed <= SEQUENCES / 10; seed++)
		old_bad += run_sequence(seed, 1, why, sizeof(why)) > 0;
	ok(old_bad > 0, "the plan of the mapped set alone (no repair) breaks "
	   "it in %d of %d sequences: the test sees the failure", old_bad,
	   SEQUENCES / 10);
}

int main(void)
{
	test_property();
	return done_testing();
}
