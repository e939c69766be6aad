/* matching_blossom.c: the exact solver of matching.c, a maximum-weight
 * matching of an integer-weight graph.
 *
 * SPCD §IV-B maps threads by "maximum weight perfect matching for complete
 * weighted graphs", solved by Edmonds' algorithm.  The exact solver below is
 * the primal-dual blossom method (Edmonds) in the O(n^3) formulation of
 * Z. Galil, "Efficient Algorithms for Finding Maximum Matching in Graphs",
 * ACM Computing Surveys 18(1), 1986.  Its structure (edge endpoints,
 * labels S = 1 / T = 2, breadcrumb label 5, least-slack edge bookkeeping
 * bestedge / blossombestedges, duals pre-multiplied by two, delta1..delta4)
 * follows Joris van Rantwijk's public mwmatching.py (2008), which we read as
 * a reference; this is our own C, with integer weights so that every slack
 * comparison is exact. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "matching_internal.h"

/* State of one run of the blossom algorithm.  Vertices are 0..nv-1,
 * non-trivial blossoms nv..2nv-1; edge k has endpoints 2k (u) and 2k+1 (v);
 * see Galil §§ 3-4 for the S/T vocabulary. */
struct blossom {
	int nv, ne;
	const struct iedge *e;
	int *endpoint;		/* [2ne] vertex of an endpoint */
	int *nb_start;		/* [nv+1] CSR into nb */
	int *nb;		/* [2ne] remote endpoints of v's edges */
	int *mate;		/* [nv] remote endpoint of v's matched edge */
	int *label;		/* [2nv] 0 free, 1 S, 2 T, 5 breadcrumb */
	int *labelend;		/* [2nv] endpoint labelled through */
	int *inblossom;		/* [nv] top-level blossom of a vertex */
	int *bparent;		/* [2nv] */
	int *bbase;		/* [2nv] base vertex, -1 when unused */
	int *bestedge;		/* [2nv] least-slack edge or -1 */
	int **childs;		/* [2nv] sub-blossoms, base first */
	int **endps;		/* [2nv] endpoints joining the childs */
	int *nchilds;		/* [2nv] */
	int **bbest;		/* [2nv] blossombestedges, NULL = none */
	int *nbbest;		/* [2nv] */
	int *unused;		/* stack of free blossom numbers */
	int nunused;
	int64_t *dual;		/* [2nv] 2u(v) vertices, z(b) blossoms */
	unsigned char *allow;	/* [ne] edge known to have zero slack */
	int *queue;		/* S vertices to scan */
	int qlen, qcap;
	int *scratch;		/* [2nv] path / leaves / rotation buffer */
	int *scratch2;		/* [2nv] */
	int *stack;		/* [2nv] for leaf enumeration */
	int *bestedgeto;	/* [2nv] used by add_blossom, kept all -1 */
	int *touched;		/* [2nv] entries of bestedgeto in use */
	int nomem;		/* an allocation inside the run failed */
};

static int64_t slack(const struct blossom *s, int k)
{
	const struct iedge *e = &s->e[k];

	return s->dual[e->u] + s->dual[e->v] - 2 * e->w;
}

/* Python-style index into a cyclic list of length len. */
static int wrap(int j, int len)
{
	j %= len;
	return j < 0 ? j + len : j;
}

/* The vertices inside blossom b, written to out; returns their number. */
static int leaves(struct blossom *s, int b, int *out)
{
	int top = 0, n = 0;

	s->stack[top++] = b;
	while (top > 0) {
		int x = s->stack[--top];

		if (x < s->nv) {
			out[n++] = x;
			continue;
		}
		for (int i = s->nchilds[x] - 1; i >= 0; i--)
			s->stack[top++] = s->childs[x][i];
	}
	return n;
}

static int queue_reserve(struct blossom *s, int extra)
{
	if (s->qlen + extra <= s->qcap)
		return 0;
	int cap = s->qcap * 2 > s->qlen + extra ? s->qcap * 2
						 : s->qlen + extra;
	int *q = realloc(s->queue, sizeof(*q) * (size_t)cap);

	if (!q) {
		s->nomem = 1;
		return -1;
	}
	s->queue = q;
	s->qcap = cap;
	return 0;
}

static void queue_push(struct blossom *s, int v)
{
	if (queue_reserve(s, 1) == 0)
		s->queue[s->qlen++] = v;
}

/* Label the top-level blossom of w with t, reached through endpoint p. */
static void assign_label(struct blossom *s, int w, int t, int p)
{
	int b = s->inblossom[w];

	s->label[w] = s->label[b] = t;
	s->labelend[w] = s->labelend[b] = p;
	s->bestedge[w] = s->bestedge[b] = -1;
	if (t == 1) {
		/* b became an S-blossom: scan all its vertices. */
		if (queue_reserve(s, s->nv) == 0)
			s->qlen += leaves(s, b, s->queue + s->qlen);
	} else if (t == 2) {
		/* A T-blossom's base is matched; its mate becomes S. */
		int base = s->bbase[b];

		assign_label(s, s->endpoint[s->mate[base]], 1,
			     s->mate[base] ^ 1);
	}
}

/* Trace back from v and w: the base of a new blossom, or -1 when the two
 * paths reach different single vertices (an augmenting path). */
static int scan_blossom(struct blossom *s, int v, int w)
{
	int *path = s->scratch, npath = 0, base = -1;

	while (v != -1 || w != -1) {
		int b = s->inblossom[v];

		if (s->label[b] & 4) {
			base = s->bbase[b];
			break;
		}
		path[npath++] = b;
		s->label[b] = 5;
		if (s->labelend[b] == -1) {
			v = -1;
		} else {
			v = s->endpoint[s->labelend[b]];
			b = s->inblossom[v];
			v = s->endpoint[s->labelend[b]];
		}
		if (w != -1) {
			int t = v;

			v = w;
			w = t;
		}
	}
	for (int i = 0; i < npath; i++)
		s->label[path[i]] = 1;
	return base;
}

/* Offer the edges of one sub-blossom bv of the new blossom b to
 * bestedgeto[] (least-slack edge to each neighbouring S-blossom). */
static void collect_best(struct blossom *s, int b, int bv, int *touched,
			 int *ntouched)
{
	int *lv = s->scratch2;
	int nl = 0;

	if (!s->bbest[bv])
		nl = leaves(s, bv, lv);
	for (int li = 0; li < (s->bbest[bv] ? 1 : nl); li++) {
		const int *list;
		int len;

		if (s->bbest[bv]) {
			list = s->bbest[bv];
			len = s->nbbest[bv];
		} else {
			list = s->nb + s->nb_start[lv[li]];
			len = s->nb_start[lv[li] + 1] - s->nb_start[lv[li]];
		}
		for (int x = 0; x < len; x++) {
			int k = s->bbest[bv] ? list[x] : list[x] / 2;
			int i = s->e[k].u, j = s->e[k].v;

			if (s->inblossom[j] == b) {
				int t = i;

				i = j;
				j = t;
			}
			int bj = s->inblossom[j];

			if (bj == b || s->label[bj] != 1)
				continue;
			if (s->bestedgeto[bj] == -1)
				touched[(*ntouched)++] = bj;
			if (s->bestedgeto[bj] == -1 ||
			    slack(s, k) < slack(s, s->bestedgeto[bj]))
				s->bestedgeto[bj] = k;
		}
	}
	free(s->bbest[bv]);
	s->bbest[bv] = NULL;
	s->nbbest[bv] = 0;
	s->bestedge[bv] = -1;
}

static void compute_blossom_best(struct blossom *s, int b)
{
	int *touched = s->touched;
	int nt = 0;

	for (int i = 0; i < s->nchilds[b]; i++)
		collect_best(s, b, s->childs[b][i], touched, &nt);
	s->bbest[b] = malloc(sizeof(int) * (size_t)(nt > 0 ? nt : 1));
	if (!s->bbest[b])
		s->nomem = 1;
	s->bestedge[b] = -1;
	for (int i = 0; i < nt; i++) {
		int k = s->bestedgeto[touched[i]];

		s->bestedgeto[touched[i]] = -1;
		if (!s->bbest[b])
			continue;
		s->bbest[b][i] = k;
		if (s->bestedge[b] == -1 ||
		    slack(s, k) < slack(s, s->bestedge[b]))
			s->bestedge[b] = k;
	}
	s->nbbest[b] = s->bbest[b] ? nt : 0;
}

/* New S-blossom with the given base, closed by edge k between two S
 * vertices (Galil's "shrink"). */
static void add_blossom(struct blossom *s, int base, int k)
{
	int v = s->e[k].u, w = s->e[k].v;
	int bb = s->inblossom[base], bv = s->inblossom[v];
	int bw = s->inblossom[w];
	int b = s->unused[--s->nunused];
	int *path = s->scratch, *ends = s->scratch2, len = 0;

	s->bbase[b] = base;
	s->bparent[b] = -1;
	s->bparent[bb] = b;
	while (bv != bb) {
		s->bparent[bv] = b;
		path[len] = bv;
		ends[len++] = s->labelend[bv];
		v = s->endpoint[s->labelend[bv]];
		bv = s->inblossom[v];
	}
	path[len++] = bb;
	for (int i = 0; i < len / 2; i++) {
		int t = path[i];

		path[i] = path[len - 1 - i];
		path[len - 1 - i] = t;
	}
	for (int i = 0; i < (len - 1) / 2; i++) {
		int t = ends[i];

		ends[i] = ends[len - 2 - i];
		ends[len - 2 - i] = t;
	}
	ends[len - 1] = 2 * k;
	while (bw != bb) {
		s->bparent[bw] = b;
		path[len] = bw;
		ends[len++] = s->labelend[bw] ^ 1;
		w = s->endpoint[s->labelend[bw]];
		bw = s->inblossom[w];
	}
	s->childs[b] = malloc(sizeof(int) * (size_t)len);
	s->endps[b] = malloc(sizeof(int) * (size_t)len);
	if (!s->childs[b] || !s->endps[b]) {
		s->nomem = 1;
		return;
	}
	memcpy(s->childs[b], path, sizeof(int) * (size_t)len);
	memcpy(s->endps[b], ends, sizeof(int) * (size_t)len);
	s->nchilds[b] = len;
	s->label[b] = 1;
	s->labelend[b] = s->labelend[bb];
	s->dual[b] = 0;

	int nl = leaves(s, b, s->scratch);

	if (queue_reserve(s, nl) < 0)
		return;
	for (int i = 0; i < nl; i++) {
		int x = s->scratch[i];

		/* T vertices inside an S-blossom become S: scan them. */
		if (s->label[s->inblossom[x]] == 2)
			s->queue[s->qlen++] = x;
		s->inblossom[x] = b;
	}
	compute_blossom_best(s, b);
}

static int child_index(const struct blossom *s, int b, int t)
{
	for (int i = 0; i < s->nchilds[b]; i++)
		if (s->childs[b][i] == t)
			return i;
	return -1;
}

static void recycle_blossom(struct blossom *s, int b)
{
	s->label[b] = s->labelend[b] = -1;
	free(s->childs[b]);
	free(s->endps[b]);
	free(s->bbest[b]);
	s->childs[b] = s->endps[b] = s->bbest[b] = NULL;
	s->nchilds[b] = s->nbbest[b] = 0;
	s->bbase[b] = -1;
	s->bestedge[b] = -1;
	s->unused[s->nunused++] = b;
}

/* Relabel the sub-blossoms of an expanding T-blossom b (mid-stage): the
 * path from the entry child to the base stays labelled T/S alternately,
 * the rest becomes free unless reached from outside. */
static void relabel_expanded_t(struct blossom *s, int b)
{
	int len = s->nchilds[b];
	int entry = s->inblossom[s->endpoint[s->labelend[b] ^ 1]];
	int j = child_index(s, b, entry), jstep, trick;
	int p = s->labelend[b];

	if (j & 1) {
		j -= len;
		jstep = 1;
		trick = 0;
	} else {
		jstep = -1;
		trick = 1;
	}
	while (j != 0) {
		int q = s->endps[b][wrap(j - trick, len)];

		s->label[s->endpoint[p ^ 1]] = 0;
		s->label[s->endpoint[q ^ trick ^ 1]] = 0;
		assign_label(s, s->endpoint[p ^ 1], 2, p);
		s->allow[q / 2] = 1;
		j += jstep;
		p = s->endps[b][wrap(j - trick, len)] ^ trick;
		s->allow[p / 2] = 1;
		j += jstep;
	}
	int bv = s->childs[b][wrap(j, len)];

	s->label[s->endpoint[p ^ 1]] = s->label[bv] = 2;
	s->labelend[s->endpoint[p ^ 1]] = s->labelend[bv] = p;
	s->bestedge[bv] = -1;
	j += jstep;
	while (s->childs[b][wrap(j, len)] != entry) {
		bv = s->childs[b][wrap(j, len)];
		j += jstep;
		if (s->label[bv] == 1)
			continue;
		int nl = leaves(s, bv, s->scratch), v = -1;

		for (int i = 0; i < nl; i++) {
			if (s->label[s->scratch[i]] != 0) {
				v = s->scratch[i];
				break;
			}
		}
		if (v >= 0) {
			s->label[v] = 0;
			s->label[s->endpoint[s->mate[s->bbase[bv]]]] = 0;
			assign_label(s, v, 2, s->labelend[v]);
		}
	}
}

/* Turn the sub-blossoms of top-level blossom b into top-level blossoms. */
static void expand_blossom(struct blossom *s, int b, int endstage)
{
	for (int i = 0; i < s->nchilds[b]; i++) {
		int c = s->childs[b][i];

		s->bparent[c] = -1;
		if (c < s->nv) {
			s->inblossom[c] = c;
		} else if (endstage && s->dual[c] == 0) {
			expand_blossom(s, c, endstage);
		} else {
			int nl = leaves(s, c, s->scratch);

			for (int x = 0; x < nl; x++)
				s->inblossom[s->scratch[x]] = c;
		}
	}
	if (!endstage && s->label[b] == 2)
		relabel_expanded_t(s, b);
	recycle_blossom(s, b);
}

static void rotate(int *a, int len, int i, int *tmp)
{
	memcpy(tmp, a + i, sizeof(int) * (size_t)(len - i));
	memcpy(tmp + len - i, a, sizeof(int) * (size_t)i);
	memcpy(a, tmp, sizeof(int) * (size_t)len);
}

/* Swap matched and unmatched edges along the even path inside blossom b
 * from vertex v to the base; v becomes the new base. */
static void augment_blossom(struct blossom *s, int b, int v)
{
	int t = v;

	while (s->bparent[t] != b)
		t = s->bparent[t];
	if (t >= s->nv)
		augment_blossom(s, t, v);

	int len = s->nchilds[b];
	int i = child_index(s, b, t), j = i, jstep, trick;

	if (i & 1) {
		j -= len;
		jstep = 1;
		trick = 0;
	} else {
		jstep = -1;
		trick = 1;
	}
	while (j != 0) {
		j += jstep;
		t = s->childs[b][wrap(j, len)];
		int p = s->endps[b][wrap(j - trick, len)] ^ trick;

		if (t >= s->nv)
			augment_blossom(s, t, s->endpoint[p]);
		j += jstep;
		t = s->childs[b][wrap(j, len)];
		if (t >= s->nv)
			augment_blossom(s, t, s->endpoint[p ^ 1]);
		s->mate[s->endpoint[p]] = p ^ 1;
		s->mate[s->endpoint[p ^ 1]] = p;
	}
	rotate(s->childs[b], len, i, s->scratch2);
	rotate(s->endps[b], len, i, s->scratch2);
	s->bbase[b] = s->bbase[s->childs[b][0]];
}

/* Augment along the path through edge k joining two S vertices whose
 * trees end at different single vertices. */
static void augment_matching(struct blossom *s, int k)
{
	int ends[2][2] = { { s->e[k].u, 2 * k + 1 }, { s->e[k].v, 2 * k } };

	for (int side = 0; side < 2; side++) {
		int v = ends[side][0], p = ends[side][1];

		for (;;) {
			int bs = s->inblossom[v];

			if (bs >= s->nv)
				augment_blossom(s, bs, v);
			s->mate[v] = p;
			if (s->labelend[bs] == -1)
				break;
			int t = s->endpoint[s->labelend[bs]];
			int bt = s->inblossom[t];

			v = s->endpoint[s->labelend[bt]];
			int j = s->endpoint[s->labelend[bt] ^ 1];

			if (bt >= s->nv)
				augment_blossom(s, bt, j);
			s->mate[j] = s->labelend[bt];
			p = s->labelend[bt] ^ 1;
		}
	}
}

/* Scan the edges of S vertex v.  Returns 1 when the matching augmented. */
static int scan_vertex(struct blossom *s, int v)
{
	for (int x = s->nb_start[v]; x < s->nb_start[v + 1]; x++) {
		int p = s->nb[x], k = p / 2, w = s->endpoint[p];
		int64_t ks = 0;

		if (s->inblossom[v] == s->inblossom[w])
			continue;
		if (!s->allow[k]) {
			ks = slack(s, k);
			if (ks <= 0)
				s->allow[k] = 1;
		}
		int bw = s->inblossom[w];

		if (s->allow[k]) {
			if (s->label[bw] == 0) {
				assign_label(s, w, 2, p ^ 1);
			} else if (s->label[bw] == 1) {
				int base = scan_blossom(s, v, w);

				if (base < 0) {
					augment_matching(s, k);
					return 1;
				}
				add_blossom(s, base, k);
			} else if (s->label[w] == 0) {
				/* w inside a T-blossom, reached now. */
				s->label[w] = 2;
				s->labelend[w] = p ^ 1;
			}
		} else if (s->label[bw] == 1) {
			int b = s->inblossom[v];

			if (s->bestedge[b] == -1 ||
			    ks < slack(s, s->bestedge[b]))
				s->bestedge[b] = k;
		} else if (s->label[w] == 0) {
			if (s->bestedge[w] == -1 ||
			    ks < slack(s, s->bestedge[w]))
				s->bestedge[w] = k;
		}
		if (s->nomem)
			return 0;
	}
	return 0;
}

/* No augmenting path among tight edges: change the duals by the largest
 * delta that keeps them feasible (Galil's delta1..delta4) and act on the
 * constraint that became tight.  Returns 1 when the optimum is reached. */
static int dual_step(struct blossom *s)
{
	int nv = s->nv, type = 1, dedge = -1, dblossom = -1;
	int64_t delta = s->dual[0];

	for (int v = 1; v < nv; v++)	/* delta1: a vertex dual hits 0 */
		if (s->dual[v] < delta)
			delta = s->dual[v];
	for (int v = 0; v < nv; v++) {	/* delta2: S to free vertex */
		if (s->label[s->inblossom[v]] == 0 && s->bestedge[v] != -1) {
			int64_t d = slack(s, s->bestedge[v]);

			if (d < delta) {
				delta = d;
				type = 2;
				dedge = s->bestedge[v];
			}
		}
	}
	for (int b = 0; b < 2 * nv; b++) {	/* delta3: S to S blossom */
		if (s->bparent[b] == -1 && s->label[b] == 1 &&
		    s->bestedge[b] != -1) {
			int64_t d = slack(s, s->bestedge[b]) / 2;

			if (d < delta) {
				delta = d;
				type = 3;
				dedge = s->bestedge[b];
			}
		}
	}
	for (int b = nv; b < 2 * nv; b++) {	/* delta4: T blossom z = 0 */
		if (s->bbase[b] >= 0 && s->bparent[b] == -1 &&
		    s->label[b] == 2 && s->dual[b] < delta) {
			delta = s->dual[b];
			type = 4;
			dblossom = b;
		}
	}
	for (int v = 0; v < nv; v++) {
		int l = s->label[s->inblossom[v]];

		if (l == 1)
			s->dual[v] -= delta;
		else if (l == 2)
			s->dual[v] += delta;
	}
	for (int b = nv; b < 2 * nv; b++) {
		if (s->bbase[b] < 0 || s->bparent[b] != -1)
			continue;
		if (s->label[b] == 1)
			s->dual[b] += delta;
		else if (s->label[b] == 2)
			s->dual[b] -= delta;
	}
	if (type == 1)
		return 1;
	if (type == 2 || type == 3) {
		int i = s->e[dedge].u;

		s->allow[dedge] = 1;
		if (type == 2 && s->label[s->inblossom[i]] == 0)
			i = s->e[dedge].v;
		queue_push(s, i);
	} else {
		expand_blossom(s, dblossom, 0);
	}
	return 0;
}

static void start_stage(struct blossom *s)
{
	int nv = s->nv;

	for (int b = 0; b < 2 * nv; b++) {
		s->label[b] = 0;
		s->bestedge[b] = -1;
	}
	for (int b = nv; b < 2 * nv; b++) {
		free(s->bbest[b]);
		s->bbest[b] = NULL;
		s->nbbest[b] = 0;
	}
	memset(s->allow, 0, (size_t)s->ne);
	s->qlen = 0;
	for (int v = 0; v < nv; v++)
		if (s->mate[v] == -1 && s->label[s->inblossom[v]] == 0)
			assign_label(s, v, 1, -1);
}

/* One stage: grow alternating trees until an augmentation (1) or the
 * optimum (0). */
static int run_stage(struct blossom *s)
{
	start_stage(s);
	for (;;) {
		while (s->qlen > 0 && !s->nomem) {
			int v = s->queue[--s->qlen];

			if (scan_vertex(s, v))
				return 1;
		}
		if (s->nomem || dual_step(s))
			return 0;
	}
}

static void end_stage(struct blossom *s)
{
	for (int b = s->nv; b < 2 * s->nv; b++)
		if (s->bparent[b] == -1 && s->bbase[b] >= 0 &&
		    s->label[b] == 1 && s->dual[b] == 0)
			expand_blossom(s, b, 1);
}

static void blossom_free(struct blossom *s)
{
	if (s->childs)
		for (int b = 0; b < 2 * s->nv; b++) {
			free(s->childs[b]);
			free(s->endps[b]);
			free(s->bbest[b]);
		}
	free(s->endpoint);
	free(s->nb_start);
	free(s->nb);
	free(s->mate);
	free(s->label);
	free(s->labelend);
	free(s->inblossom);
	free(s->bparent);
	free(s->bbase);
	free(s->bestedge);
	free(s->childs);
	free(s->endps);
	free(s->nchilds);
	free(s->bbest);
	free(s->nbbest);
	free(s->unused);
	free(s->dual);
	free(s->allow);
	free(s->queue);
	free(s->scratch);
	free(s->scratch2);
	free(s->stack);
	free(s->bestedgeto);
	free(s->touched);
}

static int blossom_alloc(struct blossom *s)
{
	size_t nv = (size_t)s->nv, ne = (size_t)s->ne, n2 = 2 * nv;

	s->endpoint = malloc(sizeof(int) * (2 * ne + 1));
	s->nb_start = calloc(nv + 1, sizeof(int));
	s->nb = malloc(sizeof(int) * (2 * ne + 1));
	s->mate = malloc(sizeof(int) * nv);
	s->label = calloc(n2, sizeof(int));
	s->labelend = malloc(sizeof(int) * n2);
	s->inblossom = malloc(sizeof(int) * nv);
	s->bparent = malloc(sizeof(int) * n2);
	s->bbase = malloc(sizeof(int) * n2);
	s->bestedge = malloc(sizeof(int) * n2);
	s->childs = calloc(n2, sizeof(int *));
	s->endps = calloc(n2, sizeof(int *));
	s->nchilds = calloc(n2, sizeof(int));
	s->bbest = calloc(n2, sizeof(int *));
	s->nbbest = calloc(n2, sizeof(int));
	s->unused = malloc(sizeof(int) * nv);
	s->dual = malloc(sizeof(int64_t) * n2);
	s->allow = malloc(ne + 1);
	s->qcap = (int)nv + 1;
	s->queue = malloc(sizeof(int) * (size_t)s->qcap);
	s->scratch = malloc(sizeof(int) * n2);
	s->scratch2 = malloc(sizeof(int) * n2);
	s->stack = malloc(sizeof(int) * n2);
	s->bestedgeto = malloc(sizeof(int) * n2);
	s->touched = malloc(sizeof(int) * n2);
	if (!s->endpoint || !s->nb_start || !s->nb || !s->mate ||
	    !s->label || !s->labelend || !s->inblossom || !s->bparent ||
	    !s->bbase || !s->bestedge || !s->childs || !s->endps ||
	    !s->nchilds || !s->bbest || !s->nbbest || !s->unused ||
	    !s->dual || !s->allow || !s->queue || !s->scratch ||
	    !s->scratch2 || !s->stack || !s->bestedgeto || !s->touched)
		return -1;
	return 0;
}

static void blossom_init(struct blossom *s)
{
	int nv = s->nv, ne = s->ne;
	int64_t maxw = 0;

	for (int k = 0; k < ne; k++) {
		s->endpoint[2 * k] = s->e[k].u;
		s->endpoint[2 * k + 1] = s->e[k].v;
		s->nb_start[s->e[k].u + 1]++;
		s->nb_start[s->e[k].v + 1]++;
		if (s->e[k].w > maxw)
			maxw = s->e[k].w;
	}
	for (int v = 0; v < nv; v++)
		s->nb_start[v + 1] += s->nb_start[v];
	/* Fill the adjacency with a moving cursor (mate as scratch). */
	for (int v = 0; v < nv; v++)
		s->mate[v] = s->nb_start[v];
	for (int k = 0; k < ne; k++) {
		s->nb[s->mate[s->e[k].u]++] = 2 * k + 1;
		s->nb[s->mate[s->e[k].v]++] = 2 * k;
	}
	for (int v = 0; v < nv; v++) {
		s->mate[v] = -1;
		s->inblossom[v] = v;
		s->bbase[v] = v;
		s->dual[v] = maxw;
	}
	for (int b = 0; b < 2 * nv; b++) {
		s->labelend[b] = -1;
		s->bparent[b] = -1;
		s->bestedge[b] = -1;
		s->bestedgeto[b] = -1;
		if (b >= nv) {
			s->bbase[b] = -1;
			s->dual[b] = 0;
		}
	}
	s->nunused = 0;
	for (int b = 2 * nv - 1; b >= nv; b--)
		s->unused[s->nunused++] = b;
}

/* Maximum-weight (not necessarily perfect) matching of the integer-weight
 * graph; mate_out[v] = partner or -1.  0, or -1/ENOMEM. */
int cm_match_blossom_run(int nv, const struct iedge *e, int ne, int *mate_out)
{
	struct blossom s = { .nv = nv, .ne = ne, .e = e };
	int rv = -1;

	if (blossom_alloc(&s) < 0)
		goto out;
	blossom_init(&s);
	for (int stage = 0; stage < nv; stage++) {
		int augmented = run_stage(&s);

		if (s.nomem)
			goto out;
		if (!augmented)
			break;
		end_stage(&s);
	}
	for (int v = 0; v < nv; v++)
		mate_out[v] = s.mate[v] >= 0 ? s.endpoint[s.mate[v]] : -1;
	rv = 0;
out:
	blossom_free(&s);
	if (rv < 0)
		errno = ENOMEM;
	return rv;
}
