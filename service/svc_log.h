/* svc_log.h: the daemon's log, to stderr (--foreground) or syslog. */
#ifndef COMMAP_SVC_LOG_H
#define COMMAP_SVC_LOG_H

#include "svc_config.h"

/* Set the threshold and the destination (use_syslog: 0 stderr, 1 syslog). */
void svc_log_init(enum svc_log_level level, int use_syslog);
int svc_log_enabled(enum svc_log_level level);
void svc_log(enum svc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
