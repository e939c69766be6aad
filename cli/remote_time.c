/* remote_time.c: the times 'commap jobs --since/--until' accepts, in the
 * forms sacct users know (docs/cli.md "Times"), turned into the UTC
 * stamp the service takes.  Impossible dates are refused here, naming
 * the field, instead of being rolled over (2026-02-31 is not March 3). */
#define _GNU_SOURCE	/* strptime, timegm */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote.h"

static const struct {
	const char *name;
	long seconds;
} units[] = {
	{ "seconds", 1 }, { "second", 1 }, { "sec", 1 }, { "s", 1 },
	{ "minutes", 60 }, { "minute", 60 }, { "min", 60 },
	{ "hours", 3600 }, { "hour", 3600 }, { "h", 3600 },
	{ "days", 86400 }, { "day", 86400 }, { "d", 86400 },
	{ "weeks", 604800 }, { "week", 604800 }, { "w", 604800 },
};

/* "now-COUNT[UNIT]" or "now+...": the offset in seconds, or -1 when s is
 * not of that form.  A bare count is seconds, as sacct reads it. */
static int relative_offset(const char *s, long long *off)
{
	char *end;
	long long n;
	size_t i;

	if (*s != '-' && *s != '+')
		return -1;
	if (s[1] < '0' || s[1] > '9')
		return -1;
	n = strtoll(s + 1, &end, 10);
	if (n > 100LL * 365 * 86400)
		return -1;
	if (!*end) {
		*off = *s == '-' ? -n : n;
		return 0;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].name)) {
			*off = (*s == '-' ? -n : n) * units[i].seconds;
			return 0;
		}
	return -1;
}

/* s has the digits and separators of one of the forms exactly ('d' a
 * digit): strptime alone would take "1-1-1" or leading blanks. */
static int has_shape(const char *s)
{
	static const char *const shapes[] = {
		"dddd-dd-dd", "dddd-dd-ddTdd:dd", "dddd-dd-ddTdd:dd:dd",
	};
	size_t i, k, n = strlen(s);

	if (n && s[n - 1] == 'Z' && n > 10)
		n--;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (strlen(shapes[i]) != n)
			continue;
		for (k = 0; k < n; k++)
			if (shapes[i][k] == 'd' ? s[k] < '0' || s[k] > '9' :
			    s[k] != shapes[i][k])
				break;
		if (k == n)
			return 1;
	}
	return 0;
}

/* An absolute date: YYYY-MM-DD, or with THH:MM[:SS][Z], in UTC.  The
 * fields are checked by converting back: timegm rolls a 31st of
 * February over, and the round trip catches it. */
static int absolute_time(const char *s, time_t *t)
{
	static const char *const forms[] = {
		"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d",
	};
	struct tm tm, back;
	const char *end;
	size_t i;

	if (!has_shape(s))
		return -1;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, forms[i], &tm);
		if (!end || (*end && strcmp(end, "Z")))
			continue;
		if (tm.tm_year < 70)
			return -3;	/* no result is that old */
		back = tm;
		*t = timegm(&back);
		if (*t == (time_t)-1 || back.tm_mday != tm.tm_mday ||
		    back.tm_mon != tm.tm_mon || back.tm_hour != tm.tm_hour ||
		    back.tm_min != tm.tm_min || back.tm_sec != tm.tm_sec)
			return -2;
		return 0;
	}
	return -1;
}

int remote_parse_time(const char *s, time_t now, char *out, size_t size,
		      char *why, size_t wsize)
{
	time_t t = now - now % 86400;	/* today, 00:00 UTC */
	long long off;
	struct tm tm;
	int rc;

	if (!strcmp(s, "now"))
		t = now;
	else if (!strcmp(s, "today"))
		;
	else if (!strcmp(s, "yesterday"))
		t -= 86400;
	else if (!strncmp(s, "now", 3) && relative_offset(s + 3, &off) == 0)
		t = now + (time_t)off;
	else if ((rc = absolute_time(s, &t)) != 0) {
		snprintf(why, wsize, rc == -2 ? "'%s' is not a date on the "
			 "calendar" : rc == -3 ? "'%s' is before 1970" :
			 "'%s' is not a time (YYYY-MM-DD, "
			 "YYYY-MM-DDTHH:MM[:SS], now, today, yesterday, "
			 "now-COUNT[seconds|minutes|hours|days|weeks])", s);
		return -1;
	}
	if (t < 0) {
		snprintf(why, wsize, "'%s' is before 1970", s);
		return -1;
	}
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 ||
	    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		snprintf(why, wsize, "'%s' is out of range", s);
		return -1;
	}
	return 0;
}
