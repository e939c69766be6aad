/* commap/error.h: human-readable error text, filled by the library.
 *
 * Library functions return -1 (or NULL) with errno set and, when the caller
 * passes a struct cm_error, a message naming the problem (the file, line,
 * field, key or value).  The library never prints and never exits.
 * Passing NULL for the error is always allowed.
 */
#ifndef COMMAP_ERROR_H
#define COMMAP_ERROR_H

#define CM_ERROR_TEXT_MAX 256

struct cm_error {
	char text[CM_ERROR_TEXT_MAX];
};

/* Format a message into err (if not NULL), set errno to errnum and return -1,
 * so that "return cm_errorf(err, EINVAL, "...");" is one line. */
int cm_errorf(struct cm_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Clear the message. */
void cm_error_clear(struct cm_error *err);

#endif
