/* collect_test_util.h: what the collection tests share (test_collect.c,
 * test_collect_maps.c; collect_test_util.c).  Include after collect.h and
 * tap.h.
 */
#ifndef COMMAP_COLLECT_TEST_UTIL_H
#define COMMAP_COLLECT_TEST_UTIL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define BUF_WORDS (256 * 1024 / 8)
#define MAX_TIDS 16

/* Control page shared with a child (MAP_SHARED before fork). */
struct ctl {
	atomic_int tids[MAX_TIDS];	/* worker tids in creation order */
	atomic_int nworkers;
	atomic_int cmd;			/* CMD_*, reset to 0 when done */
};

enum { CMD_NONE = 0, CMD_THREAD, CMD_FORK };

/* Mapped MAP_SHARED by main() before any child is forked. */
extern struct ctl *ctl;

double now_s(void);
double cpu_s(void);		/* this thread's CPU seconds */
void sleep_ms(int ms);

/* The sampled loops: write or read BUF_WORDS words of b. */
void produce(volatile uint64_t *b, uint64_t v);
uint64_t consume(volatile const uint64_t *b);

/* Children (forever; the parent kills them): 4 producer/consumer
 * pairs; one spinning worker that obeys CMD_THREAD and CMD_FORK. */
void child_pairs(void);
void child_commands(void);
/* Fork a child running fn (ctl cleared); send it a command and wait
 * until it is done; kill and reap it. */
pid_t spawn(void (*fn)(void));
void command(int cmd);
void reap(pid_t pid);

/* A collector with the default options and this period (NULL: logged). */
struct cm_collector *new_collector(struct cm_tracker *t, uint64_t period);
/* Drain every 50 ms for secs (rescan and sync with resync); the CPU
 * seconds spent draining. */
double run_for(struct cm_collector *c, struct cm_tracker *t,
	       struct cm_matrix *m, double secs, int resync);
/* Drain until each of the n processes used cpu seconds, or max_secs. */
void run_for_cpu(struct cm_collector *c, struct cm_tracker *t,
		 struct cm_matrix *m, const pid_t *pids, int n, double cpu,
		 double max_secs);
/* Four checks that the collector's counters add up (here, not in
 * collect_test_util.c: the count of checks is each program's own). */
static inline void check_stats_add_up(const struct cm_collect_stats *st,
				      const char *what)
{
	uint64_t fails = 0;

	for (int r = 0; r < CM_DECODE_NREASONS; r++)
		fails += st->decode_fail[r];
	ok(st->foreign + st->unknown_tid + st->ours == st->samples,
	   "%s: foreign + unknown + ours == samples (%llu)", what,
	   (unsigned long long)st->samples);
	ok(st->decoded + fails + st->code_read_fail == st->ours,
	   "%s: decoded + failures == ours (%llu + %llu + %llu)", what,
	   (unsigned long long)st->decoded, (unsigned long long)fails,
	   (unsigned long long)st->code_read_fail);
	/* repeats: decoded, dropped before the table (spin on a line);
	 * run_refs: a run's continuation, kept from the table */
	ok(st->accesses + st->refs.refs[CM_REF_STACK] + st->repeats +
	   st->refs.run_refs >= st->decoded &&
	   st->accesses <= 2 * st->decoded,
	   "%s: one or two table accesses per decoded sample", what);
	ok(st->events == st->table.events && st->accesses ==
	   st->table.accesses, "%s: table counters agree", what);
}

#endif
