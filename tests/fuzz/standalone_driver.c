/* standalone_driver.c: runs a libFuzzer target without libFuzzer, as a TAP
 * test for 'make check'.
 *
 * It feeds the target every file of its seed corpus
 * ($top_srcdir/tests/fuzz/corpus/<target>/, or the directory given as the
 * first argument), then a fixed number of deterministic mutations of those
 * seeds: bit flips, truncations, deleted bytes, inserted digits, commas,
 * brackets and quotes, duplicated chunks, splices of two seeds.  A crash,
 * a sanitizer report or a broken invariant aborts the program, which the
 * TAP driver reports as a failure.  FUZZ_MUTATIONS overrides the count.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commap/rand.h"

#ifndef FUZZ_TARGET
#error "define FUZZ_TARGET to the target's name"
#endif

#define DEFAULT_MUTATIONS 2000
#define FUZZ_MAX_INPUT 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seed {
	char *name;
	uint8_t *data;
	size_t len;
};

static int load_file(const char *path, struct seed *s)
{
	FILE *f = fopen(path, "rb");
	size_t cap = FUZZ_MAX_INPUT;

	if (!f)
		return -1;
	s->data = malloc(cap);
	s->len = s->data ? fread(s->data, 1, cap, f) : 0;
	fclose(f);
	return s->data ? 0 : -1;
}

static int seed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct seed *)a)->name,
		      ((const struct seed *)b)->name);
}

/* Every regular file in dir, sorted by name so runs are reproducible. */
static struct seed *load_corpus(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	struct seed *seeds = NULL;
	struct dirent *de;
	int n = 0;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		char path[4096 + 256 + 2];
		struct seed *p;

		if (de->d_name[0] == '.')
			continue;
		p = realloc(seeds, (size_t)(n + 1) * sizeof(*seeds));
		if (!p)
			break;
		seeds = p;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		seeds[n].name = strdup(de->d_name);
		if (load_file(path, &seeds[n]) == 0)
			n++;
		else
			free(seeds[n].name);
	}
	closedir(d);
	qsort(seeds, (size_t)n, sizeof(*seeds), seed_cmp);
	*count = n;
	return seeds;
}

/* Apply one random edit to buf[0..*len) (capacity FUZZ_MAX_INPUT). */
static void mutate_once(uint64_t *st, uint8_t *buf, size_t *len,
			const struct seed *other)
{
	static const char inserts[] = "0123456789,,[]{}\"-.e#\n";
	size_t pos = *len ? (size_t)cm_rand_below(st, *len + 1) : 0;

	switch (cm_rand_below(st, 7)) {
	case 0:		/* flip a bit */
		if (*len) {
			pos = (size_t)cm_rand_below(st, *len);
			buf[pos] ^= (uint8_t)(1u << cm_rand_below(st, 8));
		}
		break;
	case 1:		/* truncate */
		*len = pos;
		break;
	case 2:		/* delete a byte */
		if (pos < *len) {
			memmove(buf + pos, buf + pos + 1, *len - pos - 1);
			(*len)--;
		}
		break;
	case 3:		/* insert a digit or a delimiter */
	case 4:
		if (*len < FUZZ_MAX_INPUT) {
			memmove(buf + pos + 1, buf + pos, *len - pos);
			buf[pos] = (uint8_t)inserts[cm_rand_below(
				st, sizeof(inserts) - 1)];
			(*len)++;
		}
		break;
	case 5: {	/* duplicate a chunk */
		size_t n = (size_t)cm_rand_below(st, 16) + 1;

		if (pos + n <= *len && *len + n <= FUZZ_MAX_INPUT) {
			memmove(buf + pos + n, buf + pos, *len - pos);
			*len += n;
		}
		break;
	}
	default: {	/* splice: our prefix, the other seed's suffix */
		size_t from = other->len ?
			(size_t)cm_rand_below(st, other->len) : 0;
		size_t n = other->len - from;

		if (pos + n > FUZZ_MAX_INPUT)
			n = FUZZ_MAX_INPUT - pos;
		memcpy(buf + pos, other->data + from, n);
		*len = pos + n;
		break;
	}
	}
}

static void run_mutations(const struct seed *seeds, int nseeds, long count)
{
	uint8_t *buf = malloc(FUZZ_MAX_INPUT);
	uint64_t st = 0xc0ffee;

	for (long k = 0; buf && k < count; k++) {
		const struct seed *s = &seeds[cm_rand_below(&st, nseeds)];
		size_t len = s->len;
		int edits = (int)cm_rand_below(&st, 4) + 1;

		memcpy(buf, s->data, len);
		for (int e = 0; e < edits; e++)
			mutate_once(&st, buf, &len,
				    &seeds[cm_rand_below(&st, nseeds)]);
		LLVMFuzzerTestOneInput(buf, len);
	}
	free(buf);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	const char *env = getenv("FUZZ_MUTATIONS");
	long mutations = env ? atol(env) : DEFAULT_MUTATIONS;
	char dir[4096];
	struct seed *seeds;
	int nseeds = 0;

	if (argc > 1)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s",
			 top ? top : ".", FUZZ_TARGET);
	seeds = load_corpus(dir, &nseeds);
	if (nseeds == 0) {
		printf("not ok 1 - seed corpus %s is empty or missing\n1..1\n",
		       dir);
		return 1;
	}
	for (int k = 0; k < nseeds; k++)
		LLVMFuzzerTestOneInput(seeds[k].data, seeds[k].len);
	printf("ok 1 - %s: %d seed files from %s\n", FUZZ_TARGET, nseeds,
	       dir);
	fflush(stdout);
	run_mutations(seeds, nseeds, mutations);
	printf("ok 2 - %s: %ld deterministic mutations\n", FUZZ_TARGET,
	       mutations);
	printf("1..2\n");
	for (int k = 0; k < nseeds; k++) {
		free(seeds[k].name);
		free(seeds[k].data);
	}
	free(seeds);
	return 0;
}
