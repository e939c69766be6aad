/* tap.h: a minimal Test Anything Protocol emitter for unit tests, read by
 * automake's tap-driver.sh.  Header-only, one per test program.
 *
 *   ok(cond, "what is checked %d", x);
 *   is_int(got, want, "name");  is_double(got, want, tol, "name");
 *   is_str(got, want, "name");  diag("free text");
 *   return done_testing();      (prints the plan, exit status 0/1)
 */
#ifndef COMMAP_TAP_H
#define COMMAP_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count_;
static int tap_failed_;

static inline int __attribute__((format(printf, 2, 3), unused))
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_count_++;
	if (!cond)
		tap_failed_++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count_);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

static inline void __attribute__((format(printf, 1, 2), unused))
diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define is_int(got, want, name) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (!ok(g_ == w_, "%s", (name))) \
		diag("  got %lld, want %lld", g_, w_); \
} while (0)

#define is_double(got, want, tol, name) do { \
	double g_ = (got), w_ = (want); \
	if (!ok(fabs(g_ - w_) <= (tol), "%s", (name))) \
		diag("  got %.9g, want %.9g (tol %g)", g_, w_, (double)(tol)); \
} while (0)

#define is_str(got, want, name) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!ok(g_ && w_ && strcmp(g_, w_) == 0, "%s", (name))) \
		diag("  got \"%s\", want \"%s\"", g_ ? g_ : "(null)", w_); \
} while (0)

/* buf = SRCDIR/rel: SRCDIR is make check's $top_srcdir, else found from
 * the test's own source path (self: __FILE__, under tests/unit/), else ".".
 * Use TAP_SRCDIR_PATH. */
static inline void __attribute__((unused))
tap_srcdir_path(char *buf, size_t len, const char *self, const char *rel)
{
	const char *top = getenv("top_srcdir");
	const char *tail = strstr(self, "tests/unit/");

	if (top && *top)
		snprintf(buf, len, "%s/%s", top, rel);
	else if (tail && tail > self)
		snprintf(buf, len, "%.*s/%s", (int)(tail - self - 1), self, rel);
	else
		snprintf(buf, len, "./%s", rel);
}
#define TAP_SRCDIR_PATH(buf, len, rel) \
	tap_srcdir_path((buf), (len), __FILE__, (rel))

static inline int __attribute__((unused)) done_testing(void)
{
	printf("1..%d\n", tap_count_);
	return tap_failed_ ? 1 : 0;
}

#endif
