/* matrix.c: sparse symmetric communication matrix (commap/matrix.h).
 *
 * Layout: every thread has a row, a contiguous array of its neighbours
 * (struct cm_matrix_entry), so cm_matrix_row is O(1) and mapping code scans
 * rows at memory speed.  An edge i < j is stored twice, once in each row.
 * An open-addressing hash table (linear probing) maps the pair (i, j) to the
 * positions of the edge in row i and in row j, so get/add/set are amortised
 * O(1).  Removing an edge swaps the last entry of each row into the hole and
 * fixes that entry's position in the index.  Memory is O(edges + threads).
 *
 * Overflow policy: every stored weight stays finite.  An add, set or merge
 * that would make a weight infinite fails with ERANGE and changes nothing.
 * Sums (row sums, total) are accumulated in long double and saturate at
 * DBL_MAX, so they never become inf; normalize first when weights are huge.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commap/matrix.h"

/* Aging drops an edge once it is below this fraction of the largest weight
 * (LHMapping §3.4.1 ages by alpha; the cut keeps memory bounded because
 * pairs that stopped communicating eventually disappear). */
#define AGE_DROP_FRACTION 1e-9

/* Index slot for the edge (i, j), i < j; i == -1 marks an empty slot. */
struct slot {
	int i, j;
	int pos_i, pos_j;	/* positions in row i and row j */
};

struct row {
	struct cm_matrix_entry *e;
	int len, cap;
};

struct cm_matrix {
	int n;
	struct row *rows;
	struct slot *slots;
	size_t mask;		/* number of slots - 1 (power of two) */
	size_t nedges;
};

/* ---- index ---------------------------------------------------------- */

static size_t slot_hash(int i, int j)
{
	uint64_t z = ((uint64_t)(uint32_t)i << 32) | (uint32_t)j;

	/* splitmix64 finaliser: good spread for grid-like pairs. */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (size_t)(z ^ (z >> 31));
}

/* Slot of (i, j), i < j: the matching slot or the empty one ending the
 * probe sequence. */
static struct slot *slot_find(const struct cm_matrix *m, int i, int j)
{
	size_t h = slot_hash(i, j) & m->mask;

	for (;;) {
		struct slot *s = &m->slots[h];

		if (s->i < 0 || (s->i == i && s->j == j))
			return s;
		h = (h + 1) & m->mask;
	}
}

static struct slot *slots_alloc(size_t nslots)
{
	struct slot *s = malloc(nslots * sizeof(*s));

	if (!s)
		return NULL;
	for (size_t k = 0; k < nslots; k++)
		s[k].i = -1;
	return s;
}

/* Rehash into a table of nslots (power of two, > nedges / load). */
static int index_rehash(struct cm_matrix *m, size_t nslots)
{
	struct slot *old = m->slots;
	size_t oldn = m->mask + 1;
	struct slot *s = slots_alloc(nslots);

	if (!s)
		return -1;
	m->slots = s;
	m->mask = nslots - 1;
	for (size_t k = 0; k < oldn; k++) {
		if (old[k].i >= 0)
			*slot_find(m, old[k].i, old[k].j) = old[k];
	}
	free(old);
	return 0;
}

/* Make room for one more edge: keep the load at most 3/4. */
static int index_reserve(struct cm_matrix *m)
{
	size_t nslots = m->mask + 1;

	if ((m->nedges + 1) * 4 <= nslots * 3)
		return 0;
	if (nslots > SIZE_MAX / 2 / sizeof(struct slot))
		return errno = ENOMEM, -1;
	return index_rehash(m, nslots * 2);
}

/* Remove slot s by backward-shift deletion (keeps probe chains intact). */
static void index_remove(struct cm_matrix *m, struct slot *s)
{
	size_t hole = (size_t)(s - m->slots);
	size_t k = hole;

	for (;;) {
		size_t home;

		k = (k + 1) & m->mask;
		if (m->slots[k].i < 0)
			break;
		home = slot_hash(m->slots[k].i, m->slots[k].j) & m->mask;
		/* Move k into the hole unless its home lies in (hole, k]. */
		if (((k - home) & m->mask) >= ((k - hole) & m->mask)) {
			m->slots[hole] = m->slots[k];
			hole = k;
		}
	}
	m->slots[hole].i = -1;
}

/* ---- rows ----------------------------------------------------------- */

static int row_reserve(struct row *r)
{
	struct cm_matrix_entry *e;
	int cap;

	if (r->len < r->cap)
		return 0;
	if (r->cap > INT_MAX / 2)
		return errno = ENOMEM, -1;
	cap = r->cap ? r->cap * 2 : 4;
	e = realloc(r->e, (size_t)cap * sizeof(*e));
	if (!e)
		return -1;
	r->e = e;
	r->cap = cap;
	return 0;
}

/* The index slot holding the edge between row r and column c. */
static struct slot *slot_of(const struct cm_matrix *m, int r, int c)
{
	return r < c ? slot_find(m, r, c) : slot_find(m, c, r);
}

static int *slot_pos(struct slot *s, int r)
{
	return s->i == r ? &s->pos_i : &s->pos_j;
}

/* Drop position p of row r: move the last entry there and record its new
 * position in the index. */
static void row_remove_at(struct cm_matrix *m, int r, int p)
{
	struct row *row = &m->rows[r];
	int last = --row->len;

	if (p != last) {
		row->e[p] = row->e[last];
		*slot_pos(slot_of(m, r, row->e[p].col), r) = p;
	}
}

/* ---- lifecycle ------------------------------------------------------ */

struct cm_matrix *cm_matrix_new(int n)
{
	struct cm_matrix *m;

	if (n < 0) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->n = n;
	m->rows = calloc(n ? (size_t)n : 1, sizeof(*m->rows));
	m->slots = slots_alloc(16);
	m->mask = 15;
	if (!m->rows || !m->slots) {
		cm_matrix_free(m);
		return NULL;
	}
	return m;
}

void cm_matrix_free(struct cm_matrix *m)
{
	if (!m)
		return;
	if (m->rows) {
		for (int i = 0; i < m->n; i++)
			free(m->rows[i].e);
	}
	free(m->rows);
	free(m->slots);
	free(m);
}

struct cm_matrix *cm_matrix_dup(const struct cm_matrix *m)
{
	struct cm_matrix *d;
	size_t nslots = m->mask + 1;

	d = cm_matrix_new(m->n);
	if (!d)
		return NULL;
	free(d->slots);
	d->slots = malloc(nslots * sizeof(*d->slots));
	if (!d->slots)
		goto fail;
	memcpy(d->slots, m->slots, nslots * sizeof(*d->slots));
	d->mask = m->mask;
	for (int i = 0; i < m->n; i++) {
		const struct row *src = &m->rows[i];
		struct row *dst = &d->rows[i];

		if (!src->len)
			continue;
		dst->e = malloc((size_t)src->len * sizeof(*dst->e));
		if (!dst->e)
			goto fail;
		memcpy(dst->e, src->e, (size_t)src->len * sizeof(*dst->e));
		dst->len = dst->cap = src->len;
	}
	d->nedges = m->nedges;
	return d;
fail:
	cm_matrix_free(d);
	return NULL;
}

int cm_matrix_nthreads(const struct cm_matrix *m)
{
	return m->n;
}

size_t cm_matrix_nedges(const struct cm_matrix *m)
{
	return m->nedges;
}

int cm_matrix_resize(struct cm_matrix *m, int n)
{
	struct row *rows;

	if (n < m->n)
		return errno = EINVAL, -1;
	if (n == m->n)
		return 0;
	rows = realloc(m->rows, (size_t)n * sizeof(*rows));
	if (!rows)
		return -1;
	memset(rows + m->n, 0, (size_t)(n - m->n) * sizeof(*rows));
	m->rows = rows;
	m->n = n;
	return 0;
}

/* ---- edges ---------------------------------------------------------- */

static int edge_args_ok(const struct cm_matrix *m, int i, int j, double w)
{
	return i != j && i >= 0 && j >= 0 && i < m->n && j < m->n &&
	       isfinite(w) && w >= 0;
}

/* Insert the new edge (i, j), i < j, known to be absent. */
static int edge_insert(struct cm_matrix *m, int i, int j, double w)
{
	struct row *ri = &m->rows[i], *rj = &m->rows[j];
	struct slot *s;

	if (index_reserve(m) < 0 || row_reserve(ri) < 0 ||
	    row_reserve(rj) < 0)
		return -1;
	s = slot_find(m, i, j);
	s->i = i;
	s->j = j;
	s->pos_i = ri->len;
	s->pos_j = rj->len;
	ri->e[ri->len++] = (struct cm_matrix_entry){ .col = j, .w = w };
	rj->e[rj->len++] = (struct cm_matrix_entry){ .col = i, .w = w };
	m->nedges++;
	return 0;
}

static void edge_remove(struct cm_matrix *m, struct slot *s)
{
	int i = s->i, j = s->j, pi = s->pos_i, pj = s->pos_j;

	index_remove(m, s);
	row_remove_at(m, i, pi);
	row_remove_at(m, j, pj);
	m->nedges--;
}

/* Set the weight of (i, j), i < j; w must be finite and >= 0. */
static int edge_store(struct cm_matrix *m, int i, int j, double w)
{
	struct slot *s = slot_find(m, i, j);

	if (s->i < 0)
		return w > 0 ? edge_insert(m, i, j, w) : 0;
	if (w > 0) {
		m->rows[i].e[s->pos_i].w = w;
		m->rows[j].e[s->pos_j].w = w;
	} else {
		edge_remove(m, s);
	}
	return 0;
}

int cm_matrix_set(struct cm_matrix *m, int i, int j, double w)
{
	if (!edge_args_ok(m, i, j, w))
		return errno = EINVAL, -1;
	return i < j ? edge_store(m, i, j, w) : edge_store(m, j, i, w);
}

/* The hot path of the node agent: one index probe for an existing edge. */
int cm_matrix_add(struct cm_matrix *m, int i, int j, double w)
{
	struct slot *s;
	double sum;

	if (!edge_args_ok(m, i, j, w))
		return errno = EINVAL, -1;
	if (w == 0)
		return 0;
	s = slot_of(m, i, j);
	if (s->i < 0)
		return i < j ? edge_insert(m, i, j, w) :
			       edge_insert(m, j, i, w);
	sum = m->rows[s->i].e[s->pos_i].w + w;
	if (!isfinite(sum))
		return errno = ERANGE, -1;
	m->rows[s->i].e[s->pos_i].w = sum;
	m->rows[s->j].e[s->pos_j].w = sum;
	return 0;
}

double cm_matrix_get(const struct cm_matrix *m, int i, int j)
{
	const struct slot *s;

	if (i == j || i < 0 || j < 0 || i >= m->n || j >= m->n)
		return 0;
	s = slot_of(m, i, j);
	if (s->i < 0)
		return 0;
	return m->rows[s->i].e[s->pos_i].w;
}

int cm_matrix_row(const struct cm_matrix *m, int i,
		  const struct cm_matrix_entry **out)
{
	if (i < 0 || i >= m->n) {
		*out = NULL;
		return 0;
	}
	*out = m->rows[i].e;
	return m->rows[i].len;
}

/* ---- reductions ----------------------------------------------------- */

static double saturate(long double x)
{
	return x > DBL_MAX ? DBL_MAX : (double)x;
}

double cm_matrix_row_sum(const struct cm_matrix *m, int i)
{
	long double s = 0;

	if (i < 0 || i >= m->n)
		return 0;
	for (int k = 0; k < m->rows[i].len; k++)
		s += m->rows[i].e[k].w;
	return saturate(s);
}

double cm_matrix_total(const struct cm_matrix *m)
{
	long double s = 0;

	for (int i = 0; i < m->n; i++) {
		const struct row *r = &m->rows[i];

		for (int k = 0; k < r->len; k++) {
			if (r->e[k].col > i)
				s += r->e[k].w;
		}
	}
	return saturate(s);
}

double cm_matrix_max(const struct cm_matrix *m)
{
	double mx = 0;

	for (int i = 0; i < m->n; i++) {
		const struct row *r = &m->rows[i];

		for (int k = 0; k < r->len; k++) {
			if (r->e[k].w > mx)
				mx = r->e[k].w;
		}
	}
	return mx;
}

/* ---- whole-matrix operations ---------------------------------------- */

/* Replace every weight w by w * mul / div (the result must stay finite) and
 * drop the edges at or below cut.  Both copies of an edge get the same
 * arithmetic, hence the same value, so the scaling needs no index lookups;
 * only dropped edges are looked up. */
static void scale_and_cut(struct cm_matrix *m, double mul, double div,
			  double cut)
{
	int dropped = 0;

	for (int i = 0; i < m->n; i++) {
		struct row *r = &m->rows[i];

		for (int k = 0; k < r->len; k++) {
			r->e[k].w = r->e[k].w * mul / div;
			dropped |= !(r->e[k].w > cut);
		}
	}
	for (int i = 0; dropped && i < m->n; i++) {
		struct row *r = &m->rows[i];
		int k = 0;

		while (k < r->len) {
			int j = r->e[k].col;

			/* Removal moves the last entry into k: stay. */
			if (r->e[k].w > cut)
				k++;
			else
				edge_remove(m, slot_of(m, i, j));
		}
	}
}

int cm_matrix_age(struct cm_matrix *m, double alpha)
{
	double mx;

	if (!(alpha >= 0 && alpha <= 1))
		return errno = EINVAL, -1;
	mx = cm_matrix_max(m) * alpha;
	/* LHMapping §3.4.1: a(i,j) *= alpha after each mapping round. */
	scale_and_cut(m, alpha, 1, mx * AGE_DROP_FRACTION);
	return 0;
}

void cm_matrix_normalize(struct cm_matrix *m)
{
	double mx = cm_matrix_max(m);

	if (mx > 0)
		scale_and_cut(m, 1, mx, 0);
}

/* Would dst += scale * src make any weight infinite? */
static int merge_overflows(const struct cm_matrix *dst,
			   const struct cm_matrix *src, double scale)
{
	for (int i = 0; i < src->n; i++) {
		const struct row *r = &src->rows[i];

		for (int k = 0; k < r->len; k++) {
			int j = r->e[k].col;

			if (j > i &&
			    !isfinite(cm_matrix_get(dst, i, j) +
				      scale * r->e[k].w))
				return 1;
		}
	}
	return 0;
}

int cm_matrix_merge(struct cm_matrix *dst, const struct cm_matrix *src,
		    double scale)
{
	if (!isfinite(scale) || scale < 0 || dst == src)
		return errno = EINVAL, -1;
	if (merge_overflows(dst, src, scale))
		return errno = ERANGE, -1;
	if (src->n > dst->n && cm_matrix_resize(dst, src->n) < 0)
		return -1;
	if (scale == 0)
		return 0;
	for (int i = 0; i < src->n; i++) {
		const struct row *r = &src->rows[i];

		for (int k = 0; k < r->len; k++) {
			int j = r->e[k].col;

			if (j > i &&
			    cm_matrix_add(dst, i, j, scale * r->e[k].w) < 0)
				return -1;
		}
	}
	return 0;
}

/* Does a come before b: heavier first, then lower column. */
static int partner_before(const struct cm_matrix_entry *a,
			  const struct cm_matrix_entry *b)
{
	return a->w > b->w || (a->w == b->w && a->col < b->col);
}

int cm_matrix_top_partners(const struct cm_matrix *m, int i, int k,
			   struct cm_matrix_entry *out)
{
	const struct cm_matrix_entry *e;
	int len = cm_matrix_row(m, i, &e);
	int cnt = 0;

	if (k <= 0)
		return 0;
	/* Insertion into the sorted prefix out[0..cnt): O(len * k) at worst,
	 * but most entries are rejected by one comparison with the last. */
	for (int p = 0; p < len; p++) {
		int q;

		if (cnt == k && !partner_before(&e[p], &out[cnt - 1]))
			continue;
		if (cnt < k)
			cnt++;
		q = cnt - 1;
		while (q > 0 && partner_before(&e[p], &out[q - 1])) {
			out[q] = out[q - 1];
			q--;
		}
		out[q] = e[p];
	}
	return cnt;
}

/* Dot product of a and b over pairs i < j, with weights divided by sa and
 * sb so the products cannot overflow. */
static long double dot_scaled(const struct cm_matrix *a, double sa,
			      const struct cm_matrix *b, double sb)
{
	long double s = 0;

	for (int i = 0; i < a->n; i++) {
		const struct row *r = &a->rows[i];

		for (int k = 0; k < r->len; k++) {
			int j = r->e[k].col;

			if (j > i)
				s += (long double)(r->e[k].w / sa) *
				     (cm_matrix_get(b, i, j) / sb);
		}
	}
	return s;
}

double cm_matrix_cosine(const struct cm_matrix *a, const struct cm_matrix *b)
{
	double ma = cm_matrix_max(a), mb = cm_matrix_max(b);
	long double ab, aa, bb, c;

	if (ma == 0 || mb == 0)
		return 0;
	ab = dot_scaled(a, ma, b, mb);
	aa = dot_scaled(a, ma, a, ma);
	bb = dot_scaled(b, mb, b, mb);
	c = ab / sqrtl(aa * bb);
	return c > 1 ? 1 : (double)c;
}
