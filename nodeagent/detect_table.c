/* detect_table.c: sharer table of memory blocks (SPCD §III-B, §III-C) and
 * the /proc/PID/maps lookups that give a block its key. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "detect_table.h"

/* One block and its recent sharers (SPCD Fig. 4: address, sharers, the
 * time stamp of each sharer's last access), the line (1/64 of the block)
 * of each sharer's last access, and the lines marked as waited on. */
struct entry {
	uint64_t space, inode, block;
	uint8_t used, shared, n;
	uint8_t line[CM_DETECT_SHARERS];
	int32_t thr[CM_DETECT_SHARERS];
	uint64_t when[CM_DETECT_SHARERS];
	uint64_t spin;		/* bit l: line l is waited on */
};

struct cm_detect_table {
	struct cm_detect_config cfg;
	unsigned shift;			/* log2(block_size) */
	unsigned line_shift;		/* log2 of a line's bytes: 64 B, or
					 * block_size / 64 above 4 KiB */
	uint64_t mask;			/* slots - 1 */
	struct cm_detect_stats st;
	struct entry *e;
};

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

void cm_detect_config_default(struct cm_detect_config *cfg)
{
	cfg->block_size = CM_DETECT_DEFAULT_BLOCK;
	cfg->slots = CM_DETECT_DEFAULT_SLOTS;
	cfg->window_ns = CM_DETECT_DEFAULT_WINDOW_NS;
}

void cm_block_key_private(struct cm_block_key *key, uint64_t proc,
			  uint64_t vaddr)
{
	key->space = proc;
	key->inode = 0;
	key->addr = vaddr;
	key->shared = 0;
}

void cm_block_key_shared(struct cm_block_key *key, uint64_t dev,
			 uint64_t inode, uint64_t file_off)
{
	key->space = dev;
	key->inode = inode;
	key->addr = file_off;
	key->shared = 1;
}

struct cm_detect_table *cm_detect_table_new(const struct cm_detect_config *c,
					    struct cm_error *err)
{
	struct cm_detect_table *t;

	if (!c) {
		cm_errorf(err, EINVAL, "detect table: NULL config");
		return NULL;
	}
	if (!is_pow2(c->block_size) || c->block_size < CM_DETECT_MIN_BLOCK ||
	    c->block_size > CM_DETECT_MAX_BLOCK) {
		cm_errorf(err, EINVAL, "detect table: block size %u is not a "
			  "power of two in [%u, %u]", c->block_size,
			  CM_DETECT_MIN_BLOCK, CM_DETECT_MAX_BLOCK);
		return NULL;
	}
	if (!is_pow2(c->slots) || c->slots > CM_DETECT_MAX_SLOTS) {
		cm_errorf(err, EINVAL, "detect table: %u slots is not a power "
			  "of two in [1, %u]", c->slots, CM_DETECT_MAX_SLOTS);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t)
		t->e = calloc(c->slots, sizeof(*t->e));
	if (!t || !t->e) {
		free(t);
		cm_errorf(err, ENOMEM, "detect table: cannot allocate %u "
			  "slots", c->slots);
		return NULL;
	}
	t->cfg = *c;
	t->shift = (unsigned)__builtin_ctz(c->block_size);
	t->line_shift = t->shift > 12 ? t->shift - 6 : 6;
	t->mask = c->slots - 1;
	return t;
}

void cm_detect_table_free(struct cm_detect_table *t)
{
	if (!t)
		return;
	free(t->e);
	free(t);
}

void cm_detect_table_clear(struct cm_detect_table *t)
{
	if (t)
		memset(t->e, 0, (t->mask + 1) * sizeof(*t->e));
}

void cm_detect_table_config(const struct cm_detect_table *t,
			    struct cm_detect_config *cfg)
{
	*cfg = t->cfg;
}

size_t cm_detect_table_bytes(const struct cm_detect_table *t)
{
	return t ? sizeof(*t) + (t->mask + 1) * sizeof(*t->e) : 0;
}

void cm_detect_stats(const struct cm_detect_table *t,
		     struct cm_detect_stats *st)
{
	if (t)
		*st = t->st;
	else
		memset(st, 0, sizeof(*st));
}

/* splitmix64's finaliser: every key bit reaches every slot bit. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t key_hash(const struct cm_block_key *k, uint64_t block)
{
	uint64_t h = mix64(block + 0x9e3779b97f4a7c15ull);

	h = mix64(h ^ k->space ^ ((uint64_t)k->shared << 63));
	return mix64(h ^ k->inode);
}

static int same_block(const struct entry *e, const struct cm_block_key *k,
		      uint64_t block)
{
	return e->block == block && e->space == k->space &&
	       e->inode == k->inode && e->shared == (uint8_t)!!k->shared;
}

/* The block's entry for key: its own, or the one it would take. */
static struct entry *slot_of(const struct cm_detect_table *t,
			     const struct cm_block_key *k, uint64_t block)
{
	return &t->e[key_hash(k, block) & t->mask];
}

/* Which of the entry's 64 lines addr is on. */
static unsigned line_of(const struct cm_detect_table *t, uint64_t addr)
{
	return (unsigned)(addr >> t->line_shift) & 63u;
}

/* Give slot e to the block (no sharer, no mark), counting what it
 * replaced. */
static void entry_take(struct cm_detect_table *t, struct entry *e,
		       const struct cm_block_key *k, uint64_t block)
{
	if (e->used)
		t->st.overwrites++;
	else
		t->st.inserts++;
	memset(e, 0, sizeof(*e));
	e->space = k->space;
	e->inode = k->inode;
	e->block = block;
	e->shared = (uint8_t)!!k->shared;
	e->used = 1;
}

static uint64_t time_diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* Grow m so that every sharer of e and thread fit (a new thread, or a
 * fresh matrix handed in for a new interval). */
static int fit_matrix(struct cm_matrix *m, const struct entry *e, int thread)
{
	int need = thread;

	for (int i = 0; i < e->n; i++)
		if (e->thr[i] > need)
			need = e->thr[i];
	if (need < cm_matrix_nthreads(m))
		return 0;
	return cm_matrix_resize(m, need + 1);
}

/* Remember thread's access on line l: refresh its stamp and line, take a
 * free place, or replace the sharer seen longest ago. */
static void remember(struct cm_detect_table *t, struct entry *e, int thread,
		     uint64_t now, unsigned l)
{
	int at = 0;

	for (int i = 0; i < e->n; i++) {
		if (e->thr[i] == thread) {
			if (now > e->when[i])
				e->when[i] = now;
			e->line[i] = (uint8_t)l;
			return;
		}
		if (e->when[i] < e->when[at])
			at = i;
	}
	if (e->n < CM_DETECT_SHARERS)
		at = e->n++;
	else
		t->st.sharer_evictions++;
	e->thr[at] = thread;
	e->when[at] = now;
	e->line[at] = (uint8_t)l;
}

int cm_detect_mark_spin(struct cm_detect_table *t,
			const struct cm_block_key *key)
{
	uint64_t block, bit;
	struct entry *e;

	if (!t || !key)
		return cm_errorf(NULL, EINVAL, "detect mark: bad argument");
	block = key->addr >> t->shift;
	e = slot_of(t, key, block);
	if (!e->used || !same_block(e, key, block))
		entry_take(t, e, key, block);
	bit = 1ull << line_of(t, key->addr);
	if (!(e->spin & bit))
		t->st.spin_marks++;
	e->spin |= bit;
	return 0;
}

int cm_detect_spin_line(const struct cm_detect_table *t,
			const struct cm_block_key *key)
{
	uint64_t block;
	const struct entry *e;

	if (!t || !key)
		return 0;
	block = key->addr >> t->shift;
	e = slot_of(t, key, block);
	if (!e->used || !same_block(e, key, block) || !e->spin)
		return 0;
	return e->spin >> line_of(t, key->addr) & 1u ? CM_DETECT_SPIN_LINE
						    : CM_DETECT_SPIN_BLOCK;
}

static int in_window(const struct cm_detect_table *t, uint64_t now,
		     uint64_t then)
{
	return !t->cfg.window_ns || time_diff(now, then) <= t->cfg.window_ns;
}

/* In a block holding waited-on lines (synchronisation state, one object
 * per line), is line l crowded: do two or more other recent sharers
 * touch it?  Such a line is a word every thread touches (a barrier's
 * counter), not a pair's. */
static int crowded(const struct cm_detect_table *t, const struct entry *e,
		   int thread, unsigned l, uint64_t now)
{
	int others = 0;

	for (int i = 0; e->spin && i < e->n; i++)
		if (e->thr[i] != thread && e->line[i] == l &&
		    in_window(t, now, e->when[i]))
			others++;
	return others > 1;
}

/* Does sharer i of e count as a partner of an access on line l?  In a
 * block holding waited-on lines, only a sharer on the same line, and
 * only if the line is not crowded. */
static int same_object(struct cm_detect_table *t, const struct entry *e,
		       int i, unsigned l, int crowd)
{
	if (!e->spin || (e->line[i] == l && !crowd))
		return 1;
	t->st.line_skips++;
	return 0;
}

int cm_detect_access(struct cm_detect_table *t, struct cm_matrix *m,
		     int thread, const struct cm_block_key *key,
		     uint64_t now_ns)
{
	uint64_t block;
	struct entry *e;
	int events = 0, crowd;
	unsigned l;

	if (!t || !m || !key || thread < 0)
		return cm_errorf(NULL, EINVAL, "detect access: bad argument");
	block = key->addr >> t->shift;
	e = slot_of(t, key, block);
	l = line_of(t, key->addr);
	if (!e->used || !same_block(e, key, block)) {
		entry_take(t, e, key, block);
		remember(t, e, thread, now_ns, l);
		t->st.accesses++;
		return 0;
	}
	if (e->spin >> l & 1u) {
		t->st.accesses++;
		t->st.spin_refs++;
		return 0;
	}
	if (fit_matrix(m, e, thread))
		return cm_errorf(NULL, ENOMEM, "detect access: matrix");
	crowd = crowded(t, e, thread, l, now_ns);
	for (int i = 0; i < e->n; i++) {
		if (e->thr[i] == thread)
			continue;
		if (!in_window(t, now_ns, e->when[i])) {
			t->st.out_of_window++;
			continue;
		}
		if (!same_object(t, e, i, l, crowd))
			continue;
		if (cm_matrix_add(m, thread, e->thr[i], 1.0))
			return -1;
		events++;
	}
	remember(t, e, thread, now_ns, l);
	t->st.accesses++;
	t->st.events += (uint64_t)events;
	return events;
}

/* ---- /proc/PID/maps --------------------------------------------------- */

static int parse_hex(const char **p, uint64_t *v, char stop)
{
	char *end;

	errno = 0;
	*v = strtoull(*p, &end, 16);
	if (errno || end == *p || **p == '-' || **p == '+' || *end != stop)
		return -1;
	*p = end + (stop ? 1 : 0);
	return 0;
}

int cm_maps_parse_line(const char *line, struct cm_map_region *out,
		       size_t *pathlen, struct cm_error *err)
{
	const char *p = line, *path;
	uint64_t maj, min;
	size_t len;
	char *end;

	if (!line || !out || !pathlen)
		return cm_errorf(err, EINVAL, "maps: NULL argument");
	memset(out, 0, sizeof(*out));
	if (parse_hex(&p, &out->start, '-') || parse_hex(&p, &out->end, ' ') ||
	    out->end < out->start)
		return cm_errorf(err, EINVAL, "maps: bad address range");
	if (strlen(p) < 5 || p[4] != ' ' || !strchr("r-", p[0]) ||
	    !strchr("w-", p[1]) || !strchr("x-", p[2]) || !strchr("sp", p[3]))
		return cm_errorf(err, EINVAL, "maps: bad permissions");
	memcpy(out->perms, p, 4);
	out->shared = p[3] == 's';
	p += 5;
	if (parse_hex(&p, &out->offset, ' '))
		return cm_errorf(err, EINVAL, "maps: bad offset");
	if (parse_hex(&p, &maj, ':') || parse_hex(&p, &min, ' ') ||
	    maj > 0xfff || min > 0xfffff)
		return cm_errorf(err, EINVAL, "maps: bad device");
	out->dev = makedev((unsigned)maj, (unsigned)min);
	errno = 0;
	out->inode = strtoull(p, &end, 10);
	if (errno || end == p || *p == '-' || *p == '+' ||
	    (*end != ' ' && *end != '\n' && *end != '\0'))
		return cm_errorf(err, EINVAL, "maps: bad inode");
	path = end + strspn(end, " ");
	len = strcspn(path, "\n");
	if (len >= 10 && memcmp(path + len - 10, " (deleted)", 10) == 0)
		len -= 10;
	out->path = path;
	*pathlen = len;
	return 0;
}

void cm_maps_free(struct cm_maps *maps)
{
	if (!maps)
		return;
	free(maps->r);
	free(maps->strings);
	memset(maps, 0, sizeof(*maps));
}

static int region_cmp(const void *a, const void *b)
{
	const struct cm_map_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Append a parsed region; its path goes into maps->strings, which was
 * sized for the whole text so it never moves. */
static int maps_push(struct cm_maps *maps, const struct cm_map_region *reg,
		     size_t pathlen)
{
	if (maps->n == maps->cap) {
		size_t ncap = maps->cap ? 2 * maps->cap : 64;
		void *p = realloc(maps->r, ncap * sizeof(*maps->r));

		if (!p)
			return -1;
		maps->r = p;
		maps->cap = ncap;
	}
	maps->r[maps->n] = *reg;
	memcpy(maps->strings + maps->slen, reg->path, pathlen);
	maps->strings[maps->slen + pathlen] = '\0';
	maps->r[maps->n].path = maps->strings + maps->slen;
	maps->slen += pathlen + 1;
	maps->n++;
	return 0;
}

/* Parse one line of text (len bytes, no newline) and append it. */
static int maps_add_line(struct cm_maps *maps, const char *line, size_t len,
			 int lineno, struct cm_error *err)
{
	struct cm_map_region reg;
	char buf[8192];
	size_t pathlen;

	if (len >= sizeof(buf))
		return cm_errorf(err, EINVAL, "maps: line %d is longer than "
				 "%zu bytes", lineno, sizeof(buf) - 1);
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (cm_maps_parse_line(buf, &reg, &pathlen, err)) {
		char msg[CM_ERROR_TEXT_MAX];

		snprintf(msg, sizeof(msg), "%s", err ? err->text : "maps");
		return cm_errorf(err, EINVAL, "%s (line %d)", msg, lineno);
	}
	if (maps_push(maps, &reg, pathlen))
		return cm_errorf(err, ENOMEM, "maps: out of memory");
	return 0;
}

int cm_maps_parse(struct cm_maps *maps, const char *text,
		  struct cm_error *err)
{
	const char *line;
	int lineno = 0;

	if (!maps || !text)
		return cm_errorf(err, EINVAL, "maps: NULL argument");
	cm_maps_free(maps);
	maps->scap = strlen(text) + 1;
	maps->strings = malloc(maps->scap);
	if (!maps->strings)
		return cm_errorf(err, ENOMEM, "maps: out of memory");
	for (line = text; *line;) {
		size_t len = strcspn(line, "\n");

		lineno++;
		if (len && maps_add_line(maps, line, len, lineno, err)) {
			cm_maps_free(maps);
			return -1;
		}
		line += len + (line[len] ? 1 : 0);
	}
	if (maps->n > 1)
		qsort(maps->r, maps->n, sizeof(*maps->r), region_cmp);
	return 0;
}

int cm_maps_load(struct cm_maps *maps, const char *proc_root, pid_t pid,
		 struct cm_error *err)
{
	char path[4096], *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int rv;

	snprintf(path, sizeof(path), "%s/%d/maps",
		 proc_root ? proc_root : "/proc", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return cm_errorf(err, errno, "maps: %s: %s", path,
				 strerror(errno));
	for (;;) {
		if (cap - len < 4096) {
			char *p = realloc(text, cap ? 2 * cap : 16384);

			if (!p) {
				fclose(f);
				free(text);
				return cm_errorf(err, ENOMEM, "maps: out of "
						 "memory");
			}
			text = p;
			cap = cap ? 2 * cap : 16384;
		}
		size_t got = fread(text + len, 1, cap - len - 1, f);

		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	text[len] = '\0';
	rv = cm_maps_parse(maps, text, err);
	free(text);
	return rv;
}

const struct cm_map_region *cm_maps_find(const struct cm_maps *maps,
					 uint64_t addr)
{
	size_t lo = 0, hi;

	if (!maps)
		return NULL;
	hi = maps->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < maps->r[mid].start)
			hi = mid;
		else if (addr >= maps->r[mid].end)
			lo = mid + 1;
		else
			return &maps->r[mid];
	}
	return NULL;
}

int cm_maps_key(const struct cm_maps *maps, uint64_t proc, uint64_t addr,
		struct cm_block_key *key)
{
	const struct cm_map_region *r = cm_maps_find(maps, addr);

	if (r && r->shared && r->inode) {
		cm_block_key_shared(key, r->dev, r->inode,
				    addr - r->start + r->offset);
		return 0;
	}
	cm_block_key_private(key, proc, addr);
	if (!r)
		return cm_errorf(NULL, ENOENT, "maps: address not mapped");
	return 0;
}
