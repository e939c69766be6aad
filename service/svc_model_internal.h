/* svc_model_internal.h (internal): what the parts of the pure model code
 * (svc_models.h, "pure part") share.
 *
 *  svc_model_scan.c    a stored result's text read in one pass (a run)
 *  svc_model_key.c     the argv shape and the model key
 *  svc_model_sparse.c  identities and sparse edges over their union
 *  svc_model_merge.c   the model being folded, and the entry points */
#ifndef COMMAP_SVC_MODEL_INTERNAL_H
#define COMMAP_SVC_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "commap/error.h"

struct ident {
	int64_t rank, index;
};

struct wedge {
	size_t a, b;		/* a < b, indices into the identity union */
	double w;
};

/* A run or a model seen as identities and sparse edges. */
struct side {
	size_t n;
	struct ident *id;	/* per thread of the document */
	size_t ne;
	struct wedge *e;	/* over union indices after mapping */
};

/* A stored result is read without building jansson values for its
 * threads, edges and timeline (~4,000 values at 256 threads, most of the
 * cost of a fold): one pass over the text picks the thread identities,
 * the edges and the last placement; only the small identity and topology
 * objects become jansson values.  The text is a validated document, but
 * every token is still checked: anything unexpected is EINVAL. */
struct raw_edge {
	int64_t i, j;
	double w;
	int ok;			/* integers i, j and a number w */
};

struct run_thread {
	int64_t rank, index;	/* rank 0 when absent */
	int has_index;
};

struct run {
	json_t *head;		/* {"identity", "started_at", "topology"} */
	size_t n, ncap;
	struct run_thread *id;	/* in document order */
	size_t ne, ecap;
	struct raw_edge *e;
	size_t npu, pcap;
	int64_t *pu;		/* the last timeline entry's pu_of_thread;
				 * INT64_MIN: not an integer */
};

/* ---- sparse matrices over the identity union (svc_model_sparse.c) ------ */

int svc_ident_cmp(const void *x, const void *y);
int svc_wedge_cmp(const void *x, const void *y);
/* qsort unless already sorted: identities and edges usually arrive in
 * order (agents write them so, and the model keeps them so), and glibc's
 * merge sort does not notice. */
void svc_sort_unless_sorted(void *base, size_t n, size_t size,
			    int (*cmp)(const void *, const void *));
void svc_side_free(struct side *s);
/* The identities of a stored model's threads into s. */
int svc_model_idents(const json_t *model, struct side *s,
		     struct cm_error *err);
/* Sorted union of two identity lists: each sorted (usually already),
 * then merged in one pass. */
struct ident *svc_ident_union(const struct side *x, const struct side *y,
			      size_t *n);
/* Index of id in the sorted union u[n]. */
size_t svc_union_index(const struct ident *u, size_t n,
		       const struct ident *id);
/* Read raw edges (over s's thread positions) into s->e over union
 * indices, sorted, duplicates summed; normalise to a maximum of 1 when
 * normalise. */
int svc_side_edges(const struct raw_edge *re, size_t ne, const char *what,
		   struct side *s, const struct ident *u, size_t nu,
		   int normalise, struct cm_error *err);
/* Cosine similarity of two sparse vectors over the same pair space; both
 * empty: 1 (nothing differs), one empty: 0. */
double svc_model_cosine(const struct side *x, const struct side *y);
/* (1 - alpha) * old + alpha * run, small weights dropped. */
struct wedge *svc_model_blend(const struct side *old, const struct side *run,
			      double alpha, size_t *n);

/* ---- the run (svc_model_scan.c) ------------------------------------------ */

void svc_run_free(struct run *r);
/* Read a result's text into r. */
int svc_run_read(const char *text, size_t len, struct run *r,
		 struct cm_error *err);
/* The same from a jansson document (the pure API and its tests): its
 * compact text, so the tests exercise the reader the service uses. */
int svc_run_from_json(const json_t *result, struct run *r,
		      struct cm_error *err);

/* ---- the key (svc_model_key.c) ------------------------------------------- */

/* Identities of a run's threads (rank default 0, index default the
 * position among the rank's threads).  Sets *tpr to the most threads of a
 * rank.  EINVAL when an identity repeats. */
int svc_result_idents(const struct run *r, struct side *s, int64_t *tpr,
		      struct cm_error *err);
/* The key of a result whose identities are run, tpr_seen the most threads
 * of a rank. */
json_t *svc_model_key_from(const json_t *result, const struct side *run,
			   int64_t tpr_seen, struct cm_error *err);
/* The key of a run. */
json_t *svc_run_key(const struct run *r, struct cm_error *err);
/* "key.ranks: the result's 2 differs from the model's 1". */
int svc_model_key_check(const json_t *model_key, const json_t *key,
			struct cm_error *err);

#endif
