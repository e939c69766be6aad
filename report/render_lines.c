/* render_lines.c: the lines of a report's "what happened" and "did it
 * help" lists (render_outcome.c, render_benefit.c): each a kind (how it
 * is shown) and a text, read from a result's fields. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "render_internal.h"

double rd_jnum(const json_t *o, const char *k, double dflt)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

int rd_line(json_t *a, const char *kind, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return json_array_append_new(a, json_pack("{s:s, s:s}", "kind", kind,
						  "text", text));
}
