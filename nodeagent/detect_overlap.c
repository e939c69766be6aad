/* detect_overlap.c: per-thread access distributions and their overlap
 * (see detect_overlap.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "detect_overlap.h"
#include "detect_overlap_internal.h"

/* Weights grow as 2^(age / half-life); rescaled before they reach 2^64. */
#define RESCALE_HALF_LIVES 64.0

static const unsigned level_slots[NLEVELS] = { CM_OVERLAP_FINE_SLOTS,
					       CM_OVERLAP_COARSE_SLOTS };
static const unsigned level_shift[NLEVELS] = { CM_OVERLAP_FINE_SHIFT,
					       CM_OVERLAP_COARSE_SHIFT };

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* A block's identity: the memory, the mapping and the block number, so
 * that a block never spans two mappings (neighbouring thread stacks, a
 * heap beside a library's data). */
static uint64_t block_key(uint64_t space, uint64_t inode, uint64_t region,
			  uint64_t addr, unsigned shift)
{
	uint64_t k = mix(space ^ mix(inode ^ mix(region ^
			 mix((addr >> shift) + shift))));

	return k ? k : 1;
}

struct cm_overlap *cm_overlap_new(uint64_t half_life_ns, uint64_t period_ns)
{
	struct cm_overlap *ov = calloc(1, sizeof(*ov));

	if (!ov) {
		errno = ENOMEM;
		return NULL;
	}
	ov->half_life = half_life_ns ? half_life_ns : CM_OVERLAP_HALF_LIFE_NS;
	ov->period = period_ns ? period_ns : CM_OVERLAP_PERIOD_NS;
	ov->seed = 0x636f6d6d61702121ull;
	return ov;
}

static void thread_release(struct othread *t)
{
	for (int l = 0; l < NLEVELS; l++)
		free(t->lv[l]);
	memset(t, 0, sizeof(*t));
}

void cm_overlap_free(struct cm_overlap *ov)
{
	if (!ov)
		return;
	for (int i = 0; i < ov->n; i++)
		thread_release(&ov->th[i]);
	free(ov->th);
	free(ov);
}

void cm_overlap_clear(struct cm_overlap *ov)
{
	if (!ov)
		return;
	for (int i = 0; i < ov->n; i++)
		thread_release(&ov->th[i]);
	ov->started = 0;
	ov->next = 0;
}

/* Thread i's tables, allocated at its first access.  NULL: ENOMEM. */
static struct othread *thread_get(struct cm_overlap *ov, int i)
{
	struct othread *t;

	if (i >= ov->cap) {
		int cap = ov->cap ? ov->cap : 16;

		while (cap <= i)
			cap *= 2;
		t = realloc(ov->th, (size_t)cap * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + ov->cap, 0, (size_t)(cap - ov->cap) * sizeof(*t));
		ov->th = t;
		ov->cap = cap;
	}
	if (i >= ov->n)
		ov->n = i + 1;
	t = &ov->th[i];
	for (int l = 0; l < NLEVELS; l++)
		if (!t->lv[l]) {
			t->lv[l] = calloc(level_slots[l], sizeof(struct slot));
			if (!t->lv[l])
				return NULL;
		}
	return t;
}

/* Multiply every count by f (the weights' rescaling). */
static void rescale(struct cm_overlap *ov, double f)
{
	for (int i = 0; i < ov->n; i++) {
		struct othread *t = &ov->th[i];

		t->tot_a *= f;
		t->tot_b *= f;
		t->ftot_a *= f;
		t->ftot_b *= f;
		for (int l = 0; l < NLEVELS; l++)
			for (unsigned s = 0; t->lv[l] && s < level_slots[l];
			     s++) {
				struct slot *e = &t->lv[l][s];

				e->a = (float)(e->a * f);
				e->b = (float)(e->b * f);
				e->fa = (float)(e->fa * f);
				e->fb = (float)(e->fb * f);
			}
	}
}

/* The weight of a sample at now: 2^(age / half-life) from t_ref. */
static double weight_at(struct cm_overlap *ov, uint64_t now)
{
	double h;

	if (!ov->started) {
		ov->started = 1;
		ov->t_ref = now;
		ov->next = now + ov->period;
	}
	h = ((double)now - (double)ov->t_ref) / (double)ov->half_life;
	if (h > RESCALE_HALF_LIVES) {
		rescale(ov, exp2(-h));
		ov->t_ref = now;
		h = 0;
	}
	return exp2(h);
}

/* Find or enter key in a table; a full probe window gives up its
 * smallest entry. */
static struct slot *slot_of(struct cm_overlap *ov, struct slot *tab,
			    unsigned nslots, uint64_t key)
{
	struct slot *victim = NULL;

	for (unsigned p = 0; p < CM_OVERLAP_PROBES; p++) {
		struct slot *s = &tab[(key + p) & (nslots - 1)];

		if (s->key == key)
			return s;
		if (!s->key) {
			s->key = key;
			return s;
		}
		if (!victim || s->a + s->b < victim->a + victim->b)
			victim = s;
	}
	ov->st.evictions++;
	*victim = (struct slot){ key, 0, 0, 0, 0, 0, 0 };
	return victim;
}

static const struct slot *slot_find(const struct slot *tab, unsigned nslots,
				    uint64_t key)
{
	for (unsigned p = 0; p < CM_OVERLAP_PROBES; p++) {
		const struct slot *s = &tab[(key + p) & (nslots - 1)];

		if (s->key == key)
			return s;
		if (!s->key)
			return NULL;
	}
	return NULL;
}

/* The time to the next compute: the period, or longer when computes got
 * expensive (many threads): CM_OVERLAP_NS_PER_PROBE of sample time per
 * slot the last one scanned, a bound counted in work, not measured, so a
 * replay computes at the same points. */
static uint64_t next_period(const struct cm_overlap *ov)
{
	uint64_t spread = ov->probes * CM_OVERLAP_NS_PER_PROBE;

	return spread > ov->period ? spread : ov->period;
}

int cm_overlap_add(struct cm_overlap *ov, struct cm_matrix *m, int thread,
		   uint64_t space, uint64_t inode, uint64_t region,
		   uint64_t addr, uint64_t now_ns)
{
	struct othread *t;
	double w;
	int half;

	if (!ov || !m || thread < 0) {
		errno = EINVAL;
		return -1;
	}
	if (thread >= CM_OVERLAP_MAX_THREADS) {
		ov->st.threads_over++;
		return 0;
	}
	if (ov->started && now_ns >= ov->next) {
		ov->probes = 0;
		if (cm_overlap_flush(ov, m) < 0)
			return -1;
		ov->next = now_ns + next_period(ov);
	}
	t = thread_get(ov, thread);
	if (!t) {
		errno = ENOMEM;
		return -1;
	}
	w = weight_at(ov, now_ns);
	half = (int)(t->seq++ & 1);
	t->fresh++;
	t->news++;
	if (half) {
		t->tot_b += w;
		t->ftot_b += w;
	} else {
		t->tot_a += w;
		t->ftot_a += w;
	}
	for (int l = 0; l < NLEVELS; l++) {
		struct slot *s = slot_of(ov, t->lv[l], level_slots[l],
					 block_key(space, inode, region, addr,
						   level_shift[l]));

		s->pages |= 1u << ((addr >> (l ? CM_OVERLAP_FINE_SHIFT : 12)) &
				   (l ? 31 : 15));
		if (s->n < UINT16_MAX)
			s->n++;
		if (half) {
			s->b = (float)(s->b + w);
			s->fb = (float)(s->fb + w);
		} else {
			s->a = (float)(s->a + w);
			s->fa = (float)(s->fa + w);
		}
	}
	ov->st.accesses++;
	return 0;
}

/* ---- the overlap ------------------------------------------------------ */

/* Make m hold every thread index the estimator has seen. */
static int fit(const struct cm_overlap *ov, struct cm_matrix *m)
{
	if (cm_matrix_nthreads(m) >= ov->n)
		return 0;
	if (cm_matrix_resize(m, ov->n) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* Which counts: both halves, A only or B only. */
enum which { BOTH, HALF_A, HALF_B };

static double share(const struct othread *t, const struct slot *s,
		    enum which h)
{
	switch (h) {
	case HALF_A:
		return t->tot_a > 0 ? s->a / t->tot_a : 0;
	case HALF_B:
		return t->tot_b > 0 ? s->b / t->tot_b : 0;
	default:
		return t->tot_a + t->tot_b > 0 ?
		       ((double)s->a + s->b) / (t->tot_a + t->tot_b) : 0;
	}
}

/* Two threads seen on several pages of one 64 KiB block each, never on
 * the same one, are neighbours in memory, not sharers: page-aligned
 * private buffers side by side in one mapping.  With fewer pages seen the
 * samples are too sparse to tell (a 64 MiB array sampled a few times per
 * block), and the block counts. */
static bool apart(uint32_t a, uint32_t b)
{
	return !(a & b) && __builtin_popcount(a) >= CM_OVERLAP_APART_PAGES &&
	       __builtin_popcount(b) >= CM_OVERLAP_APART_PAGES;
}

/* Whether the coarse level holds nothing of a pair: over the 2 MiB
 * blocks both touched, threads working on the same memory have samples in
 * the same 64 KiB blocks of it about as often as chance predicts when
 * they spread evenly over the 32 (|m_i| |m_j| / 32 per block; more when
 * they gather), threads on neighbouring memory in one mapping (private
 * buffers side by side) never.  Decided only once chance predicts
 * CM_OVERLAP_APART_EXPECT common 64 KiB blocks: sharers sampled that
 * sparsely are taken for apart in under 2% of pairs. */
static bool coarse_apart(long common, double expect)
{
	return expect >= CM_OVERLAP_APART_EXPECT &&
	       (double)common * 4 < expect;
}

/* The 64 KiB blocks two threads that share a 2 MiB block (x's entry and
 * y's) should have in common by chance: at least |m_x| |m_y| / 32 when
 * they spread evenly over it, and at least |m_y| (1 - |m_x| / n_x) when
 * x has sampled its part of the block n_x times: 1 - |m_x| / n_x bounds
 * from below the share of x's distribution its samples have seen (at
 * most |m_x| 64 KiB blocks were seen once), each of y's blocks lies in it
 * that often if y samples the same memory. */
static double chance(const struct slot *x, const struct slot *y)
{
	double a = __builtin_popcount(x->pages), b = __builtin_popcount(y->pages);
	double e = a * b / 32, ex = 0, ey = 0;

	if (x->n)
		ex = b * (1 - a / x->n);
	if (y->n)
		ey = a * (1 - b / y->n);
	if (ex > e)
		e = ex;
	return ey > e ? ey : e;
}

/* O_ij at a level; *hits counts the blocks both touched. */
static double pair_overlap(const struct othread *ti, const struct othread *tj,
			   int level, enum which h, long *hits)
{
	const struct slot *a = ti->lv[level];
	unsigned ns = level_slots[level];
	double o = 0, expect = 0;
	long common = 0, both = 0;

	for (unsigned s = 0; s < ns; s++) {
		const struct slot *b;
		double pi, pj;

		if (!a[s].key)
			continue;
		b = slot_find(tj->lv[level], ns, a[s].key);
		if (!b || (level == 0 && apart(a[s].pages, b->pages)))
			continue;
		pi = share(ti, &a[s], h);
		pj = share(tj, b, h);
		if (pi > 0 && pj > 0)
			both++;
		if (level == 1) {
			common += __builtin_popcount(a[s].pages & b->pages);
			expect += chance(&a[s], b);
		}
		o += pi < pj ? pi : pj;
	}
	if (level == 1 && coarse_apart(common, expect))
		return 0;
	if (hits)
		*hits += both;
	return o;
}

/* How well the fine distributions of the k active threads are sampled:
 * the share of their aged mass in 64 KiB blocks the thread sampled at
 * least twice (evicted mass counts as once).  Near 1 for a few small
 * buffers; near 0 for tens of MB sampled a few hundred times, where two
 * sharers rarely hit one 64 KiB block and the fine overlap is mostly
 * sampling noise below the truth.  One figure for all threads: a weight
 * per pair would be a structure of its own, the same in both halves of
 * the permutation test (threads sampled more cover more in both), and
 * noise would pass it. */
static double coverage(const struct cm_overlap *ov, const int *idx, int k)
{
	double tot = 0, seen = 0;

	for (int a = 0; a < k; a++) {
		const struct othread *t = &ov->th[idx[a]];
		const struct slot *e = t->lv[0];

		tot += t->tot_a + t->tot_b;
		for (unsigned s = 0; s < CM_OVERLAP_FINE_SLOTS; s++)
			if (e[s].key && e[s].n >= 2)
				seen += (double)e[s].a + e[s].b;
	}
	if (!(tot > 0))
		return 0;
	return seen >= tot ? 1 : seen / tot;
}

/* The threads with tables: their indexes into idx, their count. */
static int active(const struct cm_overlap *ov, int *idx)
{
	int k = 0;

	for (int i = 0; i < ov->n; i++)
		if (ov->th[i].lv[0] && ov->th[i].tot_a + ov->th[i].tot_b > 0)
			idx[k++] = i;
	return k;
}

/* o[a * k + b] = O between active threads a and b (a != b) at a level
 * (0, 1); the blocks both touched. */
static long level_of(struct cm_overlap *ov, const int *idx, int k,
		     int level, enum which h, double *o)
{
	long hits = 0;

	/* the cost: every slot of a table scanned, per pair */
	ov->probes += (uint64_t)k * (uint64_t)(k - 1) / 2 * level_slots[level];
	for (int a = 0; a < k; a++) {
		o[a * k + a] = 0;
		for (int b = a + 1; b < k; b++) {
			double v = pair_overlap(&ov->th[idx[a]],
						&ov->th[idx[b]], level, h,
						&hits);

			o[a * k + b] = o[b * k + a] = v;
		}
	}
	return hits;
}

/* The same at a level or blended (CM_OVERLAP_BLEND): with c the
 * threads' fine coverage,
 *     O = (1 - w) O_fine + w O_coarse,  w = max(0, 1 - c / CM_OVERLAP_DENSE)
 * so large arrays sampled thinly are seen at 2 MiB and small buffers at
 * 64 KiB only (once half the samples fall in blocks their thread sampled
 * before, the fine distributions are known well enough, and 2 MiB blocks
 * would merge neighbouring small buffers).  -1/ENOMEM. */
static long overlap_of(struct cm_overlap *ov, const int *idx, int k,
		       int level, enum which h, double *o)
{
	double *oc, c, w;
	long hits;

	if (level != CM_OVERLAP_BLEND)
		return level_of(ov, idx, k, level, h, o);
	hits = level_of(ov, idx, k, 0, h, o);
	c = coverage(ov, idx, k);
	w = c < CM_OVERLAP_DENSE ? 1 - c / CM_OVERLAP_DENSE : 0;
	if (h == BOTH)
		ov->thin = w;
	if (w <= 0)
		return hits;
	oc = malloc((size_t)(k * k + 1) * sizeof(*oc));
	if (!oc) {
		errno = ENOMEM;
		return -1;
	}
	level_of(ov, idx, k, 1, h, oc);
	for (int a = 0; a < k * k; a++)
		o[a] = (1 - w) * o[a] + w * oc[a];
	free(oc);
	return hits;
}

int cm_overlap_matrix(struct cm_overlap *ov, int level, struct cm_matrix *out)
{
	int *idx, k;
	double *o;

	if (!ov || !out || level < 0 || level > CM_OVERLAP_BLEND) {
		errno = EINVAL;
		return -1;
	}
	idx = malloc((size_t)(ov->n + 1) * sizeof(*idx));
	k = idx ? active(ov, idx) : 0;
	o = malloc((size_t)(k * k + 1) * sizeof(*o));
	if (!idx || !o || fit(ov, out) < 0) {
		free(idx);
		free(o);
		errno = ENOMEM;
		return -1;
	}
	if (overlap_of(ov, idx, k, level, BOTH, o) < 0) {
		free(idx);
		free(o);
		return -1;
	}
	for (int a = 0; a < k; a++)
		for (int b = a + 1; b < k; b++)
			if (cm_matrix_set(out, idx[a], idx[b],
					  o[a * k + b]) < 0) {
				free(idx);
				free(o);
				errno = ENOMEM;
				return -1;
			}
	free(idx);
	free(o);
	return 0;
}

/* ---- the permutation test --------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix(*s);
}

/* Pearson correlation of x[a][b] with y[perm a][perm b] over a < b. */
static double mantel_r(const double *x, const double *y, const int *perm,
		       int k)
{
	double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0, vx, vy;

	for (int a = 0; a < k; a++)
		for (int b = a + 1; b < k; b++) {
			double u = x[a * k + b], v = y[perm[a] * k + perm[b]];

			sx += u;
			sy += v;
			sxx += u * u;
			syy += v * v;
			sxy += u * v;
			n++;
		}
	if (n < 2)
		return 0;
	vx = sxx - sx * sx / n;
	vy = syy - sy * sy / n;
	if (vx <= 1e-18 || vy <= 1e-18)
		return 0;
	return (sxy - sx * sy / n) / sqrt(vx * vy);
}

/* Fisher-Yates with the estimator's own generator (deterministic). */
static void shuffle(int *perm, int k, uint64_t *seed)
{
	for (int a = k - 1; a > 0; a--) {
		int b = (int)(rng_next(seed) % (uint64_t)(a + 1)), t = perm[a];

		perm[a] = perm[b];
		perm[b] = t;
	}
}

/* Mantel test of O^A against O^B over k active threads. */
static int halves_agree(struct cm_overlap *ov, const int *idx, int k,
			int level, double *r, int *beaten)
{
	double *oa = malloc((size_t)(k * k) * sizeof(*oa));
	double *ob = malloc((size_t)(k * k) * sizeof(*ob));
	int *perm = malloc((size_t)k * sizeof(*perm)), rv = -1;

	*r = 0;
	*beaten = 0;
	if (!oa || !ob || !perm)
		goto out;
	if (overlap_of(ov, idx, k, level, HALF_A, oa) < 0 ||
	    overlap_of(ov, idx, k, level, HALF_B, ob) < 0)
		goto out;
	for (int a = 0; a < k; a++)
		perm[a] = a;
	*r = mantel_r(oa, ob, perm, k);
	for (int p = 0; p < CM_OVERLAP_PERMUTATIONS; p++) {
		shuffle(perm, k, &ov->seed);
		if (mantel_r(oa, ob, perm, k) >= *r)
			(*beaten)++;
	}
	rv = *r > 0 && *beaten == 0;
out:
	free(oa);
	free(ob);
	free(perm);
	if (rv < 0)
		errno = ENOMEM;
	return rv;
}

int cm_overlap_test(struct cm_overlap *ov, int level, double *r, int *beaten)
{
	int *idx, k, rv;

	if (!ov || !r || !beaten || level < 0 || level > CM_OVERLAP_BLEND) {
		errno = EINVAL;
		return -1;
	}
	idx = malloc((size_t)(ov->n + 1) * sizeof(*idx));
	if (!idx) {
		errno = ENOMEM;
		return -1;
	}
	k = active(ov, idx);
	if (k < CM_OVERLAP_TEST_THREADS) {
		*r = 0;
		*beaten = 0;
		free(idx);
		return 1;
	}
	rv = halves_agree(ov, idx, k, level, r, beaten);
	free(idx);
	return rv;
}

/* ---- into the matrix -------------------------------------------------- */

/* Add O_ij * (n_i + n_j) / 2 of the trusted overlap to m. */
static int add_weights(struct cm_overlap *ov, struct cm_matrix *m,
		       const int *idx, int k, const double *o)
{
	if (fit(ov, m) < 0)
		return -1;
	for (int a = 0; a < k; a++)
		for (int b = a + 1; b < k; b++) {
			double w = o[a * k + b] *
				   (double)(ov->th[idx[a]].news +
					    ov->th[idx[b]].news) / 2;

			if (w <= 0)
				continue;
			if (cm_matrix_add(m, idx[a], idx[b], w) < 0) {
				errno = ENOMEM;
				return -1;
			}
			ov->st.weight += w;
		}
	return 0;
}

/* How the off-diagonal overlaps spread: the share of pairs that overlap
 * at all, their mean and coefficient of variation (sd / mean, 0 when the
 * mean is 0). */
static void spread(const double *o, int k, double *some, double *mean,
		   double *cv)
{
	double sum = 0, sq = 0, pairs = (double)k * (k - 1) / 2, var;
	long n = 0;

	for (int a = 0; a < k; a++)
		for (int b = a + 1; b < k; b++) {
			sum += o[a * k + b];
			sq += o[a * k + b] * o[a * k + b];
			n += o[a * k + b] > 0;
		}
	*some = (double)n / pairs;
	*mean = sum / pairs;
	var = sq / pairs - *mean * *mean;
	*cv = *mean > 0 && var > 0 ? sqrt(var) / *mean : 0;
}

/* Whether an overlap is everyone sharing with everyone (all-to-all, FFTs,
 * sorts): nearly every pair overlaps (CM_OVERLAP_FLAT_PAIRS of them) by
 * CM_OVERLAP_FLAT_MIN on average.  Such an overlap is homogeneous
 * communication (SPCD, §V: "threads present a similar amount of
 * communication among each other"), also when the test trusts it, as
 * long as its pairs do not differ by more than CM_OVERLAP_FLAT_CV: on
 * arrays swept in passes longer than the half-life, the pairs on the
 * same buffer at the moment overlap most, a structure that repeats
 * between the halves but not over the run.  Private work (no overlap)
 * and patterns with pairs apart (the blocks of pairs, groups and
 * neighbours: at most 0.36 of the pairs overlap at 64 MiB) are not. */
static bool everyone(const double *o, int k, bool trusted, double *mean)
{
	double some, cv;

	spread(o, k, &some, mean, &cv);
	return some >= CM_OVERLAP_FLAT_PAIRS && *mean >= CM_OVERLAP_FLAT_MIN &&
	       (!trusted || cv <= CM_OVERLAP_FLAT_CV);
}

/* Every pair gets the mean, not its own noisy value: the matrix says
 * "homogeneous", and gives the mapping nothing to place by. */
static int add_flat(struct cm_overlap *ov, struct cm_matrix *m,
		    const int *idx, int k, double *o, double mean)
{
	for (int a = 0; a < k * k; a++)
		o[a] = mean;
	ov->st.flat++;
	return add_weights(ov, m, idx, k, o);
}

/* Compute over k active threads: the blended overlap, the test, the
 * weights. */
static int compute(struct cm_overlap *ov, struct cm_matrix *m, const int *idx,
		   int k, double *o)
{
	const int level = CM_OVERLAP_BLEND;
	int trusted = 1;
	double r = 0, mean;
	int beaten = 0;

	if (overlap_of(ov, idx, k, level, BOTH, o) < 0)
		return -1;
	if (ov->thin > 0.5)
		ov->st.coarse++;
	if (k >= CM_OVERLAP_TEST_THREADS) {
		trusted = halves_agree(ov, idx, k, level, &r, &beaten);
		if (trusted < 0)
			return -1;
	}
	ov->st.computes++;
	ov->st.last_r = r;
	ov->st.last_beaten = beaten;
	ov->st.last_threads = k;
	if (trusted)
		ov->st.trusted++;
	if (k >= CM_OVERLAP_TEST_THREADS && everyone(o, k, trusted, &mean))
		return add_flat(ov, m, idx, k, o, mean);
	return trusted ? add_weights(ov, m, idx, k, o) : 0;
}

int cm_overlap_flush(struct cm_overlap *ov, struct cm_matrix *m)
{
	int *idx, k, rv = -1;
	double *o = NULL;

	if (!ov || !m) {
		errno = EINVAL;
		return -1;
	}
	idx = malloc((size_t)(ov->n + 1) * sizeof(*idx));
	k = idx ? active(ov, idx) : 0;
	if (idx)
		o = malloc((size_t)(k * k + 1) * sizeof(*o));
	if (!idx || !o) {
		errno = ENOMEM;
		goto out;
	}
	rv = k;
	if (k >= 2 && compute(ov, m, idx, k, o) < 0)
		rv = -1;
	cm_overlap_phase_check(ov);
out:
	free(idx);
	free(o);
	return rv;
}

void cm_overlap_stats(const struct cm_overlap *ov, struct cm_overlap_stats *st)
{
	if (!ov) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = ov->st;
}

int cm_overlap_structure_clear(const struct cm_overlap_stats *st,
			       double min_r)
{
	return st && st->computes > 0 &&
	       st->last_threads >= CM_OVERLAP_TEST_THREADS &&
	       st->last_beaten == 0 && st->last_r > 0 && st->last_r >= min_r;
}

size_t cm_overlap_bytes(const struct cm_overlap *ov)
{
	size_t b;

	if (!ov)
		return 0;
	b = sizeof(*ov) + (size_t)ov->cap * sizeof(*ov->th);
	for (int i = 0; i < ov->n; i++)
		if (ov->th[i].lv[0])
			b += (CM_OVERLAP_FINE_SLOTS + CM_OVERLAP_COARSE_SLOTS) *
			     sizeof(struct slot);
	return b;
}
