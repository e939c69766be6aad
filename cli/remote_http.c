/* remote_http.c: the service client of 'commap jobs|apps|report': where
 * the service is, and GET requests authenticated with munge as the
 * calling user (docs/cli.md, docs/service.md). */
#define _GNU_SOURCE	/* asprintf, strptime, timegm */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(HAVE_CURL) && defined(HAVE_MUNGE)
#define REMOTE_NET 1
#include <curl/curl.h>
#include <munge.h>
#endif

#include "cli_common.h"
#include "remote.h"

#ifndef COMMAP_SYSCONFDIR
#define COMMAP_SYSCONFDIR "/etc"
#endif

#define REMOTE_TIMEOUT_MS 15000L
#define REMOTE_CONNECT_TIMEOUT_MS 5000L
#define REMOTE_MAX_ANSWER ((size_t)256 << 20)

/* ---- configuration ------------------------------------------------------- */

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One line of the client configuration: 0, or -1 after an error. */
static int config_line(const char *path, int lineno, char *line,
		       char **service)
{
	char *eq, *key, *val;

	line = trim(line);
	if (!*line || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		cli_error("%s:%d: expected 'key = value'", path, lineno);
		return -1;
	}
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	if (strcmp(key, "service")) {
		cli_error("%s:%d: unknown key '%s' (known: service)", path,
			  lineno, key);
		return -1;
	}
	if (*service) {
		cli_error("%s:%d: service: given twice", path, lineno);
		return -1;
	}
	if (strncmp(val, "http://", 7) && strncmp(val, "https://", 8)) {
		cli_error("%s:%d: service: '%s' is not an http:// or https:// "
			  "URL", path, lineno, val);
		return -1;
	}
	*service = strdup(val);
	return *service ? 0 : -1;
}

/* The service URL from the configuration file: 0 (with *service or NULL
 * if the file does not say), -1 after an error. */
static int config_service(char **service)
{
	const char *env = getenv("COMMAP_CONFIG");
	const char *path = env && *env ? env :
				COMMAP_SYSCONFDIR "/commap/commap.conf";
	char line[4096];
	int lineno = 0, rv = 0;
	FILE *f;

	*service = NULL;
	f = fopen(path, "r");
	if (!f && errno == ENOENT && !(env && *env))
		return 0;	/* no default file: defaults */
	if (!f) {
		cli_error("cannot read configuration '%s': %s", path,
			  strerror(errno));
		return -1;
	}
	while (rv == 0 && fgets(line, sizeof(line), f))
		rv = config_line(path, ++lineno, line, service);
	fclose(f);
	if (rv) {
		free(*service);
		*service = NULL;
	}
	return rv;
}

char *remote_service_url(const char *given)
{
	const char *env = getenv("COMMAP_SERVICE");
	char *url = NULL;

	if (given)
		return strdup(given);
	if (env && *env)
		return strdup(env);
	if (config_service(&url))
		return NULL;
	return url ? url : strdup(REMOTE_DEFAULT_URL);
}

void remote_answer_free(struct remote_answer *ans)
{
	free(ans->body);
	ans->body = NULL;
	ans->len = 0;
}

/* ---- requests ------------------------------------------------------------ */

#ifdef REMOTE_NET

static size_t answer_write(char *p, size_t size, size_t n, void *arg)
{
	struct remote_answer *a = arg;
	size_t len = size * n;
	char *t;

	if (a->len + len > REMOTE_MAX_ANSWER)
		return 0;	/* aborts the transfer */
	t = realloc(a->body, a->len + len + 1);
	if (!t)
		return 0;
	memcpy(t + a->len, p, len);
	a->body = t;
	a->len += len;
	a->body[a->len] = '\0';
	return len;
}

static char *munge_credential(void)
{
	char *cred = NULL;
	munge_err_t e = munge_encode(&cred, NULL, NULL, 0);

	if (e != EMUNGE_SUCCESS) {
		cli_error("cannot make a munge credential: %s (is munged "
			  "running?)", munge_strerror(e));
		free(cred);
		return NULL;
	}
	return cred;
}

char *remote_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *copy;

	if (!e)
		return NULL;
	copy = strdup(e);
	curl_free(e);
	return copy;
}

static int perform(CURL *c, const char *url, struct remote_answer *ans)
{
	char *ctype = NULL;
	CURLcode cc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, REMOTE_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 REMOTE_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, answer_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		cli_error("cannot reach the service at %s: %s", url,
			  curl_easy_strerror(cc));
		return -1;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ans->code);
	if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK &&
	    ctype)
		snprintf(ans->content_type, sizeof(ans->content_type), "%s",
			 ctype);
	if (!ans->body && !(ans->body = calloc(1, 1)))
		return -1;
	return 0;
}

int remote_get(const char *base, const char *path, struct remote_answer *ans)
{
	return remote_request(base, "GET", path, ans);
}

int remote_request(const char *base, const char *method, const char *path,
		   struct remote_answer *ans)
{
	size_t bl = strlen(base);
	char *url = NULL, *cred = NULL, *hline = NULL;
	struct curl_slist *hdr = NULL;
	CURL *c = NULL;
	int rv = -1;

	memset(ans, 0, sizeof(*ans));
	while (bl && base[bl - 1] == '/')
		bl--;
	cred = munge_credential();
	if (!cred)
		return -1;
	if (asprintf(&url, "%.*s%s", (int)bl, base, path) < 0 ||
	    asprintf(&hline, "X-Munge-Credential: %s", cred) < 0) {
		url = hline = NULL;
		cli_error("out of memory");
		goto out;
	}
	c = curl_easy_init();
	hdr = curl_slist_append(NULL, hline);
	if (!c || !hdr) {
		cli_error("libcurl: out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	if (strcmp(method, "POST") == 0)	/* with Content-Length: 0 */
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	rv = perform(c, url, ans);
out:
	if (rv)
		remote_answer_free(ans);
	curl_slist_free_all(hdr);
	if (c)
		curl_easy_cleanup(c);
	free(hline);
	free(url);
	free(cred);
	return rv;
}

#else	/* built without libcurl or libmunge */

char *remote_escape(const char *s)
{
	return strdup(s);
}

int remote_get(const char *base, const char *path, struct remote_answer *ans)
{
	return remote_request(base, "GET", path, ans);
}

int remote_request(const char *base, const char *method, const char *path,
		   struct remote_answer *ans)
{
	(void)method, (void)path;
	memset(ans, 0, sizeof(*ans));
	cli_error("this commap was built without libcurl or libmunge "
		  "(libcurl4-openssl-dev, libmunge-dev): it cannot talk to "
		  "the service at %s", base);
	return -1;
}

#endif

int remote_answer_is_json(const struct remote_answer *ans)
{
	json_t *j = ans->body ? json_loadb(ans->body, ans->len, 0, NULL) :
				NULL;
	int is = json_is_object(j);

	json_decref(j);
	return is;
}

/* "an HTML page", "a text/plain body": the kind, from the content type
 * or, when there is none, a look at the first byte. */
static const char *body_kind(const struct remote_answer *ans)
{
	const char *t = ans->content_type;
	const char *b = ans->body ? ans->body : "";

	while (*b == ' ' || *b == '\t' || *b == '\r' || *b == '\n')
		b++;
	if (ans->len == 0)
		return "an empty body";
	if (!strncasecmp(t, "application/json", 16))
		return "JSON that is not the service's";
	if (!strncasecmp(t, "text/html", 9) || *b == '<')
		return "an HTML page";
	return "a body that is not JSON";
}

void remote_describe_answer(const struct remote_answer *ans, char *out,
			    size_t size)
{
	char ctype[64];
	size_t n;

	/* The type without its "; charset=..." and never a control byte:
	 * it is the other server's text. */
	n = strcspn(ans->content_type, "; \t\r\n");
	snprintf(ctype, sizeof(ctype), "%.*s", (int)n, ans->content_type);
	for (n = 0; ctype[n]; n++)
		if ((unsigned char)ctype[n] < 0x20 || ctype[n] == 0x7f)
			ctype[n] = '?';
	if (ans->len == 0)
		snprintf(out, size, "HTTP %ld with an empty body", ans->code);
	else
		snprintf(out, size, "HTTP %ld with %s (%s%s%zu bytes)",
			 ans->code, body_kind(ans), ctype, *ctype ? ", " : "",
			 ans->len);
}

int remote_not_service(const char *base, const struct remote_answer *ans)
{
	char what[160];

	remote_describe_answer(ans, what, sizeof(what));
	cli_error("%s answered %s: it is not a commap service (give its URL "
		  "with --service, $COMMAP_SERVICE or the 'service' key of "
		  "commap.conf)", base, what);
	return CLI_EXIT_RUNTIME;
}

char *remote_answer_error(const struct remote_answer *ans)
{
	json_t *j = json_loadb(ans->body ? ans->body : "", ans->len, 0, NULL);
	const char *e = json_string_value(json_object_get(j, "error"));
	char *m = e ? strdup(e) : NULL;
	size_t i;

	for (i = 0; m && m[i]; i++)
		if ((unsigned char)m[i] < 0x20 || m[i] == 0x7f)
			m[i] = '?';
	json_decref(j);
	return m;
}

/* What a refusal means for the object named: a model is forgotten (its
 * owner's or by an admin), jobs and results are read. */
static const char *forbidden_hint(const char *what)
{
	if (!strncmp(what, "model", 5))
		return "you may forget only your own models, unless you are "
		       "an admin of the service";
	return "you may read only your own jobs, unless you are an admin of "
	       "the service";
}

int remote_http_error(const char *base, const char *what,
		      const struct remote_answer *ans)
{
	char *msg = remote_answer_error(ans);

	if (!msg)
		return remote_not_service(base, ans);
	switch (ans->code) {
	case 401:
		cli_error("the service at %s refused the munge credential "
			  "(401): %s", base, msg);
		break;
	case 403:
		cli_error("%s: permission denied (403): %s; %s", what, msg,
			  forbidden_hint(what));
		break;
	case 404:
		cli_error("%s not found at %s (404): %s", what, base, msg);
		break;
	case 400:
		cli_error("the service at %s refused the request (400): %s",
			  base, msg);
		break;
	default:
		cli_error("the service at %s answered %ld: %s", base,
			  ans->code, msg);
	}
	free(msg);
	return CLI_EXIT_RUNTIME;
}
