/* agent_interval.c: the agent's interval clock (LHMapping §3.4.2,
 * remap_policy.h): the events of an interval folded into the live (aged)
 * and total matrices, checkpoints inside a long interval, and at each
 * interval's end the decision to remap.
 */
#define _GNU_SOURCE	/* sched_getaffinity, CPU_COUNT */
#include <config.h>

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "progress_guard.h"
#include "record.h"

/* An interval ends after its length in the step's progress, but at the
 * latest after this many times its length in wall time: a blocked or
 * starved program still gets its decisions (new threads, exits), and
 * aging follows its progress whatever the interval. */
#define INTERVAL_WALL_FACTOR 5
/* While an interval waits for the step's progress, look again after the
 * progress still missing (it cannot come faster than wall time), and no
 * sooner than this: each look reads every thread's schedstat. */
#define INTERVAL_LOOK_MIN_NS (CM_REMAP_INTERVAL_MS_MIN * 1000000ull)
/* The progress clock is read at most this often: the kernel accounts a
 * running thread's CPU time at its ticks (up to 10 ms late), so a
 * reading over 100 ms or more tells full speed (CM_REMAP_FULL_SPEED)
 * from starved, a shorter one may not.  Between readings the clock
 * stands; what it missed is counted at the next one. */
#define APP_READ_MIN_NS 100000000ull

void ag_read_thread_cpu(struct agent *a)
{
	long tck = sysconf(_SC_CLK_TCK);

	for (int i = 0; i < cm_tracker_nthreads(a->tr); i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(a->tr,
								       i);
		const struct cm_tracked_proc *p = cm_tracker_proc(a->tr,
								  th->proc);
		char path[96], buf[1024], *q;
		unsigned long ut, st;
		int fd;
		ssize_t n;

		if (!th->alive)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat",
			 (int)p->pid, (int)th->tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		q = strrchr(buf, ')');
		/* after "pid (comm)": state, then fields 4..13, utime 14 */
		if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				"%*u %*u %lu %lu", &ut, &st) == 2)
			a->cpu_s[i] = (double)(ut + st) / (double)tck;
	}
}

/* The events since the last fold, corrected for co-location, into the
 * live (aged) and total matrices. */
static void fold_fresh(struct agent *a)
{
	ag_correct_colocation(a);
	cm_matrix_merge(a->live, a->fresh, 1.0);
	cm_matrix_merge(a->total, a->fresh, 1.0);
	cm_matrix_free(a->fresh);
	a->fresh = cm_matrix_new(0);
}

/* The CPUs the step may use: its allowed set, or in a dry run ours
 * (commap run's workload inherits it). */
static int step_cpus(const struct agent *a)
{
	cpu_set_t set;

	if (a->allowed)
		return hwloc_bitmap_weight(a->allowed);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return 0;
}

void ag_app_clock(struct agent *a, uint64_t now)
{
	int n = a->tr ? cm_tracker_nthreads(a->tr) : 0, read = 0, ran = 0;
	uint64_t sum = 0, max = 0, d;

	if (now < a->app_read_ns + APP_READ_MIN_NS)
		return;
	for (int i = 0; i < n && i < a->cap; i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(a->tr,
								       i);
		double cpu, wait, prev;

		if (!th->alive || cm_guard_read_schedstat(NULL,
				cm_tracker_proc(a->tr, th->proc)->pid,
				th->tid, &cpu, &wait) < 0)
			continue;
		read++;
		/* a thread seen for the first time (-1): all its CPU time
		 * is new (more than wall time is full speed: capped) */
		prev = a->app_cpu[i] > 0 ? a->app_cpu[i] : 0;
		d = cpu > prev ? (uint64_t)((cpu - prev) * 1e9) : 0;
		a->app_cpu[i] = cpu;
		sum += d;
		ran += d > 0;
		if (d > max)
			max = d;
	}
	a->app_ns += cm_remap_progress(now - a->app_read_ns, sum,
				       read ? ran : -1, step_cpus(a), max,
				       &a->app_credit_ns);
	a->app_read_ns = now;
}

/* Age the live matrix for the step's progress since it was last aged
 * (cm_remap_aging: alpha per 200 ms of it; the caller read the clock at
 * the decision's time): a starved program keeps its evidence as long as
 * it would at full speed, in its own CPU time. */
void ag_age_live(struct agent *a)
{
	cm_decide_age(&a->dec, a->live, a->app_ns);
}

int ag_interval_due(struct agent *a, uint64_t now)
{
	uint64_t want = (uint64_t)a->dec.interval_ms * 1000000ull, done, next;
	uint64_t bound = a->interval_start_ns + INTERVAL_WALL_FACTOR * want;

	if (a->end_early || a->mode != CM_AGENT_MODE_DYNAMIC || !a->col ||
	    now >= bound)
		return 1;
	ag_app_clock(a, now);
	/* since the last reading (a recent one stands): as at full speed,
	 * so that a program at full speed ends its intervals on time */
	done = a->app_ns - a->interval_app_ns + (now - a->app_read_ns);
	if (done >= want)
		return 1;
	next = now + (want - done > INTERVAL_LOOK_MIN_NS ? want - done :
		      INTERVAL_LOOK_MIN_NS);
	a->next_interval_ns = next < bound ? next : bound;
	return 0;
}

/* Inside an interval longer than CHECKPOINT_MIN_INTERVAL_MS (LHMapping
 * §3.4.2 grows it to 1 s while the pattern is stable), every
 * CM_REMAP_INTERVAL_MS_START: age the live matrix, fold the events so far
 * into it, and end the interval now when the heaviest partners of
 * CM_REMAP_PARTNER_THRESHOLD threads have changed (SPCD §IV-A's filter,
 * as at an interval's end) or a change is waiting for its recheck.  The
 * matrix is then as current as with 200 ms intervals, so a change after a
 * long stable phase is decided on at the next checkpoint that sees it
 * rather than at the end of a 1 s interval.  Nothing is decided here:
 * ag_interval_end() does it. */
void ag_checkpoint(struct agent *a)
{
	int changed;

	if (a->mode != CM_AGENT_MODE_DYNAMIC || !a->topo ||
	    (!a->pin_ok && !a->dry_run) || !a->fresh ||
	    a->dec.interval_ms <= CHECKPOINT_MIN_INTERVAL_MS)
		return;
	a->decide_ns = now_ns();
	ag_app_clock(a, a->decide_ns);
	cm_record_clock(a->rec, a->decide_ns, 0, a->app_ns);
	ag_age_live(a);
	fold_fresh(a);
	a->decide_ns = 0;
	changed = cm_decide_partners(&a->dec, a->live,
				     cm_tracker_nthreads(a->tr), 0);
	/* A change seen but not yet worth a remap (recheck) is looked at
	 * again at each checkpoint, not a long interval later. */
	if (changed >= CM_REMAP_PARTNER_THRESHOLD || a->dec.recheck > 0) {
		agent_debug("checkpoint: %d partners changed%s, interval ended "
			    "early", changed, a->dec.recheck > 0 ? " (recheck)" :
			    "");
		a->next_interval_ns = now_ns();
		a->end_early = 1;
	}
}

/* What a replay needs of this interval's end (record.h): every thread
 * of the step known by then, those that exited, and the time. */
static void record_interval(struct agent *a)
{
	if (!a->rec)
		return;
	/* once, at the first interval end: the machine is known by then */
	cm_record_options(a->rec, a->t0_ns, a->o->alpha, a->o->gain,
			  ag_near_seen(a), a->res.mode);
	for (int i = 0; i < cm_tracker_nthreads(a->tr); i++) {
		const struct cm_tracked_thread *th = cm_tracker_thread(a->tr,
								       i);
		const struct cm_tracked_proc *p = cm_tracker_proc(a->tr,
								  th->proc);

		cm_record_thread(a->rec, i, p->pid, th->tid, p->rank,
				 th->index);
		if (!th->alive)
			cm_record_exit(a->rec, i);
	}
	cm_record_clock(a->rec, a->decide_ns, a->dec.interval_ms, a->app_ns);
}

/* End of an interval: merge, decide, map, age. */
static void interval_decide(struct agent *a)
{
	a->res.stats.intervals++;
	fold_fresh(a);
	ag_read_thread_cpu(a);
	/* The overhead knob (sample_rate.h): rarely changes the period. */
	if (cm_collect_adapt_period(a->col, a->cpu_s, a->cap, a->fresh,
				    NULL) > 0 && !a->cost_logged) {
		struct cm_collect_stats st;

		cm_collect_stats(a->col, &st);
		ag_log_sampling(a, &st);
	}
	ag_refresh_identity(a);
	if (a->mode == CM_AGENT_MODE_LEARNED && a->topo && a->fresh &&
	    (a->pin_ok || a->dry_run) && !ag_learned_interval(a))
		return;
	if (a->mode != CM_AGENT_MODE_DYNAMIC || !a->topo ||
	    (!a->pin_ok && !a->dry_run) || !a->fresh)
		return;
	ag_remap(a);
	/* the progress guard's window before the next mapping starts now */
	ag_guard_mark(a);
	/* LHMapping §3.4.1: age after each grouping computation (for the
	 * time since the last aging: checkpoints age too). */
	ag_age_live(a);
}

/* One time for the whole interval end: recorded, then decided on. */
void ag_interval_end(struct agent *a)
{
	a->decide_ns = now_ns();
	ag_app_clock(a, a->decide_ns);
	record_interval(a);
	interval_decide(a);
	a->interval_app_ns = a->app_ns;
	a->end_early = 0;
	a->decide_ns = 0;
}
