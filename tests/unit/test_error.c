/* test_error.c: cm_errorf fills the text, sets errno and returns -1. */
#include <errno.h>
#include <string.h>

#include "commap/error.h"
#include "tap.h"

int main(void)
{
	struct cm_error err;
	char longtext[600];

	errno = 0;
	is_int(cm_errorf(&err, EINVAL, "bad key '%s'", "foo"), -1,
	       "cm_errorf returns -1");
	is_int(errno, EINVAL, "cm_errorf sets errno");
	is_str(err.text, "bad key 'foo'", "cm_errorf formats the text");
	is_int(cm_errorf(NULL, ENOENT, "x"), -1, "NULL error is allowed");
	is_int(errno, ENOENT, "errno set with NULL error");
	memset(longtext, 'a', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	cm_errorf(&err, E2BIG, "%s", longtext);
	is_int((int)strlen(err.text), CM_ERROR_TEXT_MAX - 1,
	       "long text is truncated, not overflowed");
	cm_error_clear(&err);
	is_str(err.text, "", "cm_error_clear empties the text");
	return done_testing();
}
