/* fuzz_input.h: helpers shared by the fuzz targets of the small parsers.
 *
 * The standalone driver (and libFuzzer) hand a target a buffer that may be
 * larger than the input; a target copies it into an allocation of exactly
 * its size (plus the NUL of a text) so that AddressSanitizer sees a read
 * past the end.
 */
#ifndef COMMAP_FUZZ_INPUT_H
#define COMMAP_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz invariant violated: %s\n", what);
		abort();
	}
}

/* data[0..size) as a NUL-terminated string of exactly size + 1 bytes. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	fuzz_require(s != NULL, "out of memory");
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* data[0..size) in an allocation of exactly size bytes (1 when empty). */
static inline void *fuzz_bytes(const uint8_t *data, size_t size)
{
	void *p = malloc(size ? size : 1);

	fuzz_require(p != NULL, "out of memory");
	memcpy(p, data, size);
	return p;
}

/* A string field ends inside its array. */
static inline int fuzz_terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

#endif
