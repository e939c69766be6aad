/* svc_log.c: one line per message, to stderr or syslog.  The threshold
 * and destination are set once at start, before threads exist. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "svc_log.h"

static enum svc_log_level log_threshold = SVC_LOG_INFO;
static int log_to_syslog;

void svc_log_init(enum svc_log_level level, int use_syslog)
{
	log_threshold = level;
	log_to_syslog = use_syslog;
	if (use_syslog)
		openlog("commap-service", LOG_PID, LOG_DAEMON);
}

int svc_log_enabled(enum svc_log_level level)
{
	return level <= log_threshold;
}

void svc_log(enum svc_log_level level, const char *fmt, ...)
{
	static const int prio[] = {
		LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG,
	};
	char line[1024];
	va_list ap;

	if (!svc_log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_to_syslog) {
		syslog(prio[level], "%s", line);
	} else {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		/* One fprintf per line: lines of threads do not interleave. */
		fprintf(stderr, "%s.%03ldZ commap-service %s: %s\n", when,
			ts.tv_nsec / 1000000, svc_log_level_name(level), line);
	}
}
