/* error.c: the library's error text buffer (see commap/error.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "commap/error.h"

int cm_errorf(struct cm_error *err, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	errno = errnum;
	return -1;
}

void cm_error_clear(struct cm_error *err)
{
	if (err)
		err->text[0] = '\0';
}
