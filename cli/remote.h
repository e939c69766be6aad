/* remote.h: what 'commap jobs|apps|report' share: finding the service,
 * authenticated GET requests, and the terminal report (docs/cli.md). */
#ifndef COMMAP_CLI_REMOTE_H
#define COMMAP_CLI_REMOTE_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define REMOTE_DEFAULT_URL "http://127.0.0.1:7733"

/* The service URL: --service (given, may be NULL), else $COMMAP_SERVICE,
 * else the `service` key of the client configuration ($COMMAP_CONFIG or
 * SYSCONFDIR/commap/commap.conf; a missing default file is fine), else
 * REMOTE_DEFAULT_URL.  Returns a malloc'ed string, or NULL after printing
 * an error naming the file, line and key (a configuration error). */
char *remote_service_url(const char *given);

/* An answer from the service. */
struct remote_answer {
	long code;		/* HTTP status */
	char *body;		/* NUL-terminated, malloc'ed */
	size_t len;
};

/* GET base+path with a fresh munge credential of the calling user.
 * 0 with *ans filled (any HTTP status), or -1 after printing why (service
 * unreachable naming the URL, munge failure, built without libcurl or
 * libmunge). */
int remote_get(const char *base, const char *path, struct remote_answer *ans);
/* The same with another method ("DELETE"). */
int remote_request(const char *base, const char *method, const char *path,
		   struct remote_answer *ans);
void remote_answer_free(struct remote_answer *ans);

/* Print the error for a non-2xx answer ("what" names the object, e.g.
 * "job 42"), naming the status and the service's message.  Returns
 * CLI_EXIT_RUNTIME. */
int remote_http_error(const char *base, const char *what,
		      const struct remote_answer *ans);

/* Entries of a result's migrations list that move a placed thread
 * (moved = 1: the migrations) or place it for the first time (moved = 0,
 * "from": -1). */
size_t remote_count_pins(const json_t *migrations, int moved);

/* URL-escape s into a malloc'ed string (NULL on ENOMEM). */
char *remote_escape(const char *s);

/* A --since/--until time (remote_time.c, docs/cli.md): YYYY-MM-DD,
 * YYYY-MM-DDTHH:MM[:SS][Z] (UTC), now, today, yesterday (00:00 UTC), or
 * now-COUNT[UNIT] / now+COUNT[UNIT] (seconds, minutes, hours, days,
 * weeks; a bare count is seconds), relative to now.  Writes
 * "YYYY-MM-DDTHH:MM:SSZ" to out: 0; -1 with a message in why (an
 * impossible date such as 2026-02-31 is refused, not rolled over). */
#include <time.h>
int remote_parse_time(const char *s, time_t now, char *out, size_t size,
		      char *why, size_t wsize);

/* Terminal rendering of one commap-result document (the text report):
 * summary, heatmap, final mapping per core.  width: the terminal's
 * columns; color: use 24-bit colour escapes.  0 or -1 (write error). */
struct remote_text_opts {
	int width;
	int color;
};
int remote_text_report(FILE *out, const json_t *result_row,
		       const struct remote_text_opts *o);

#endif
