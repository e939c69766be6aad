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
	char content_type[64];	/* "" when the server sent none */
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
 * "job 42" or "model 7"), naming the status and the service's message;
 * an answer without the service's JSON error is remote_not_service's.
 * Returns CLI_EXIT_RUNTIME. */
int remote_http_error(const char *base, const char *what,
		      const struct remote_answer *ans);

/* The service's {"error": "..."} of an answer, malloc'ed, control bytes
 * replaced by '?' (a foreign server's text reaches a terminal); NULL
 * when the answer has none. */
char *remote_answer_error(const struct remote_answer *ans);

/* Is the answer a JSON object, as every answer of the service is? */
int remote_answer_is_json(const struct remote_answer *ans);

/* What answered at base, in a few words, for an answer that is not the
 * service's JSON: "HTTP 404 with an HTML page (text/html, 469 bytes)".
 * The body itself is never shown (another server's whole page). */
void remote_describe_answer(const struct remote_answer *ans, char *out,
			    size_t size);

/* Print that base answered but is not a commap service (another web
 * server, a proxy's error page): the status and the kind of body, never
 * the body.  Returns CLI_EXIT_RUNTIME. */
int remote_not_service(const char *base, const struct remote_answer *ans);

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
