/* test_shm_owner.c: owners of shared-memory segments and the evidence of
 * references into them (nodeagent/shm_owner.h).
 *
 * The naming rules on real names (Open MPI's vader segments, SysV
 * segments as /proc/PID/maps shows them, a sysvipc/shm table as the
 * kernel writes it); local ranks on one node and on the second node of a
 * job; the owner by references (a rank polling its own receive area, a
 * peer delivering into it); evidence only from other processes, the
 * owner's thread; a segment every rank visits weighed down; counts that
 * age; a bounded map; a process that exits.  Then the situation the
 * module is for: four ranks in a ring, each polling its own segment and
 * writing into the next one's, a few samples each, no two in one window:
 * the evidence is exactly the ring.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm_owner.h"
#include "tap.h"

#define MS 1000000ull

static void names(void)
{
	is_int(cm_shm_name_local_rank(
		"/dev/shm/vader_segment.node12.218c0001.3"), 3, "vader: rank 3");
	is_int(cm_shm_name_local_rank(
		"/dev/shm/vader_segment.vm.0.218c0001.0"), 0,
		"vader: host with a dot, rank 0");
	is_int(cm_shm_name_local_rank("vader_segment.h.j.17"), 17,
	       "vader: no directory");
	is_int(cm_shm_name_local_rank("/dev/shm/vader_segment.h.5"), -1,
	       "vader: a field missing");
	is_int(cm_shm_name_local_rank("/dev/shm/vader_segment.h.j."), -1,
	       "vader: no rank");
	is_int(cm_shm_name_local_rank("/dev/shm/vader_segment.h.j.3x"), -1,
	       "vader: rank not a number");
	is_int(cm_shm_name_local_rank("/dev/shm/ucx_shm_posix_5d36b06a"), -1,
	       "UCX POSIX: no rank in the name");
	is_int(cm_shm_name_local_rank(NULL), -1, "NULL");
	ok(cm_shm_is_sysv("/SYSV00000000"), "SysV: key 0");
	ok(cm_shm_is_sysv("/SYSV0001e240"), "SysV: a key");
	ok(!cm_shm_is_sysv("/SYSV0000"), "SysV: too short");
	ok(!cm_shm_is_sysv("/SYSV0000000g"), "SysV: not hex");
	ok(!cm_shm_is_sysv("/dev/shm/SYSV00000000"), "SysV: a file");
}

static void sysv(void)
{
	char dir[] = "/tmp/test_shm_owner.XXXXXX", path[256];
	FILE *f;
	pid_t cpid = 0;

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/sysvipc", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/sysvipc/shm", dir);
	f = fopen(path, "w");
	fprintf(f, "       key      shmid perms                  size  cpid  "
		"lpid nattch   uid   gid  cuid  cgid      atime      dtime      "
		"ctime                   rss                  swap\n");
	fprintf(f, "         0    2457621  1660                 12288 12762 "
		"12760      5     0     0     0     0 1795838070          0 "
		"1795838070                 12288                     0\n");
	fprintf(f, "         0    2457622  1660                 12288 12760 "
		"12760      5     0     0     0     0 1795838070          0 "
		"1795838070                 12288                     0\n");
	fclose(f);
	ok(cm_shm_sysv_creator(dir, 2457622, &cpid) == 0 && cpid == 12760,
	   "SysV creator of shmid 2457622: 12760");
	ok(cm_shm_sysv_creator(dir, 2457621, &cpid) == 0 && cpid == 12762,
	   "SysV creator of the first listed: 12762");
	errno = 0;
	ok(cm_shm_sysv_creator(dir, 99, &cpid) == -1 && errno == ENOENT,
	   "SysV shmid not listed: ENOENT");
	f = fopen(path, "w");
	fprintf(f, "header\n  0 2457621 garbage\n");
	fclose(f);
	errno = 0;
	ok(cm_shm_sysv_creator(dir, 2457621, &cpid) == -1 && errno == EIO,
	   "SysV table malformed: EIO");
	unlink(path);
	snprintf(path, sizeof(path), "%s/sysvipc", dir);
	rmdir(path);
	errno = 0;
	ok(cm_shm_sysv_creator(dir, 2457621, &cpid) == -1 && errno == EIO,
	   "SysV table unreadable: EIO");
	rmdir(dir);
}

/* Rule 2b on this process and a child: the file's one holder, deleted
 * or not; two holders; none. */
static void fd_holder(void)
{
	char path[] = "/tmp/test_shm_owner_fd.XXXXXX";
	int fd = mkstemp(path), pipefd[2];
	pid_t pid[2] = { 1, getpid() }, child;
	char c;

	if (fd < 0 || pipe(pipefd))
		abort();
	is_int(cm_shm_fd_holder(NULL, pid, 2, path), 1,
	       "the process holding the file open (index 1)");
	unlink(path);
	is_int(cm_shm_fd_holder(NULL, pid, 2, path), 1,
	       "... also once the file is deleted");
	is_int(cm_shm_fd_holder(NULL, pid, 2, "/tmp/no-such-file"), -1,
	       "a file nobody holds: -1");
	is_int(cm_shm_fd_holder(NULL, pid, 2, "relative"), -1,
	       "a path that is not absolute: -1");
	child = fork();
	if (child == 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	pid[0] = child;
	is_int(cm_shm_fd_holder(NULL, pid, 2, path), -2,
	       "two processes hold it (after a fork): -2");
	close(pipefd[1]);
	close(pipefd[0]);
	waitpid(child, NULL, 0);
	close(fd);
	is_int(cm_shm_fd_holder(NULL, pid, 2, path), -1,
	       "closed: no holder");
}

static void local_ranks(void)
{
	/* mpirun (no rank), then 4 ranks forked in any order */
	int r1[] = { -1, 2, 0, 3, 1 }, a1[] = { 1, 1, 1, 1, 1 };
	/* the second node of a job: global ranks 4..7 */
	int r2[] = { 5, 4, 7, 6 }, a2[] = { 1, 1, 1, 1 };
	/* rank 1 as a wrapper and the program it forked; rank 0 gone */
	int r3[] = { 0, 1, 1, 2 }, a3[] = { 0, 1, 1, 1 };

	is_int(cm_shm_local_rank_proc(r1, a1, 5, 0), 2, "one node: local 0");
	is_int(cm_shm_local_rank_proc(r1, a1, 5, 3), 3, "one node: local 3");
	is_int(cm_shm_local_rank_proc(r1, a1, 5, 4), -1, "one node: no 5th");
	is_int(cm_shm_local_rank_proc(r2, a2, 4, 0), 1,
	       "second node: local 0 is global rank 4");
	is_int(cm_shm_local_rank_proc(r2, a2, 4, 3), 2,
	       "second node: local 3 is global rank 7");
	is_int(cm_shm_local_rank_proc(r3, a3, 4, 0), 2,
	       "wrapper and program: the program (the last process)");
	is_int(cm_shm_local_rank_proc(r3, a3, 4, 1), 3,
	       "a gone process is not counted");
	is_int(cm_shm_local_rank_proc(r1, a1, 5, -1), -1, "negative rank");
}

/* proc (thread proc * 10) references s at t; the evidence's weight. */
static double ref(struct cm_shm_owners *o, struct cm_shm_seg *s, int proc,
		  uint64_t t, struct cm_shm_evidence *ev)
{
	int r = cm_shm_owners_ref(o, s, proc, proc * 10, t, ev);

	return r > 0 ? ev->weight : r < 0 ? -1 : 0;
}

static void by_samples(void)
{
	struct cm_shm_owners *o = cm_shm_owners_new();
	struct cm_shm_seg *s = cm_shm_owners_seg(o, 27, 7026, 0);
	struct cm_shm_evidence ev = { -1, -1, 0 };
	struct cm_shm_stats st;
	double w = 0;

	cm_shm_seg_set_owner(o, s, -1, 0);	/* no name, not SysV */
	w += ref(o, s, 1, 1 * MS, &ev);
	for (int k = 0; k < 4; k++)
		w += ref(o, s, 0, (2 + k) * MS, &ev);
	is_int(s->owner, 0, "the poller owns the segment (4 refs vs 1)");
	is_int(s->how, CM_SHM_BY_SAMPLES, "... by samples");
	ok(w == 0, "no evidence before the owner is known, none from it");
	is_double(ref(o, s, 1, 10 * MS, &ev), 1.0, 1e-12,
		  "the peer's reference: weight 1");
	is_int(ev.owner, 0, "... with the owner");
	is_int(ev.owner_thread, 0, "... its thread that touched it");
	is_double(ref(o, s, 0, 11 * MS, &ev), 0, 0, "the owner's: none");
	cm_shm_owners_stats(o, &st);
	ok(st.refs == 7 && st.own == 2 && st.undecided == 4 &&
	   st.evidence == 1 && st.by_samples == 1,
	   "counts: refs %llu own %llu undecided %llu evidence %llu",
	   (unsigned long long)st.refs, (unsigned long long)st.own,
	   (unsigned long long)st.undecided, (unsigned long long)st.evidence);

	/* two processes alike: no owner */
	s = cm_shm_owners_seg(o, 27, 7027, 0);
	cm_shm_seg_set_owner(o, s, -1, 0);
	for (int k = 0; k < 6; k++) {
		ref(o, s, 2, k * MS, &ev);
		ref(o, s, 3, k * MS, &ev);
	}
	is_int(s->owner, -1, "two processes alike: no owner by samples");
	/* a collective area: one rank leads at first, then all poll it */
	s = cm_shm_owners_seg(o, 27, 7029, 0);
	cm_shm_seg_set_owner(o, s, -1, 0);
	for (int k = 0; k < 5; k++)
		ref(o, s, 4, k * MS, &ev);
	is_int(s->owner, 4, "a collective area: an early lead owns it");
	w = 0;
	for (int k = 0; k < 5; k++)
		for (int q = 5; q < 8; q++)
			w += ref(o, s, q, (10 + k) * MS, &ev);
	is_int(s->owner, -1, "... until the others poll it as much: no owner");
	ok(w < 3, "... evidence only while the lead held (%.2f)", w);
	cm_shm_owners_stats(o, &st);
	ok(st.lost_dominance == 1, "... counted as lost dominance");
	/* not yet hinted: the naming rules come first */
	s = cm_shm_owners_seg(o, 27, 7028, 0);
	for (int k = 0; k < 6; k++)
		ref(o, s, 2, k * MS, &ev);
	is_int(s->owner, -1, "no owner by samples before the rules are tried");
	cm_shm_owners_free(o);
}

static void by_creator_and_visitors(void)
{
	struct cm_shm_owners *o = cm_shm_owners_new();
	struct cm_shm_seg *s = cm_shm_owners_seg(o, 1, 2457622, 0);
	struct cm_shm_evidence ev;
	struct cm_shm_stats st;

	cm_shm_seg_set_owner(o, s, 5, CM_SHM_BY_CREATOR);
	is_double(ref(o, s, 6, 1 * MS, &ev), 1.0, 0,
		  "creator known: the first visit is evidence");
	is_int(ev.owner_thread, -1, "... owner's thread unknown: -1");
	ref(o, s, 5, 2 * MS, &ev);
	ref(o, s, 6, 3 * MS, &ev);
	is_int(ev.owner_thread, 50, "... then the owner's thread seen");
	/* two visitors: full weight; four: a barrier-like spread */
	ref(o, s, 7, 4 * MS, &ev);
	is_double(ev.weight, 1.0, 0, "two visitors: weight 1");
	ref(o, s, 8, 5 * MS, &ev);
	is_double(ref(o, s, 9, 6 * MS, &ev), 0.5, 1e-12,
		  "four visitors: weight 2/4");
	/* seconds later the spread has aged out */
	ref(o, s, 6, 4000 * MS, &ev);
	is_double(ev.weight, 1.0, 0, "visitors age: weight 1 again");
	/* the owner exits */
	cm_shm_owners_drop_proc(o, 5);
	is_int(s->owner, -1, "owner exited: segment without owner");
	ok(!s->hinted, "... its rules to be tried again");
	is_double(ref(o, s, 6, 4001 * MS, &ev), 0, 0,
		  "... and no evidence meanwhile");
	cm_shm_owners_stats(o, &st);
	ok(st.by_creator == 1 && st.flattened == 2 && st.forgotten == 1,
	   "counts: by creator, flattened, forgotten");
	cm_shm_owners_free(o);
}

static void bounded(void)
{
	struct cm_shm_owners *o = cm_shm_owners_new();
	struct cm_shm_stats st;
	struct cm_shm_seg *a, *b;
	int same = 1;

	for (uint64_t k = 0; k < 5000; k++)
		cm_shm_owners_seg(o, 27, k, k);
	cm_shm_owners_stats(o, &st);
	ok(st.segments == 5000 && st.evictions >= 5000 - CM_SHM_SEGS,
	   "5000 segments in %d places: %llu evictions", CM_SHM_SEGS,
	   (unsigned long long)st.evictions);
	a = cm_shm_owners_seg(o, 27, 4999, 6000);
	b = cm_shm_owners_seg(o, 27, 4999, 6001);
	same = a == b && a->inode == 4999;
	ok(same, "the most recent segment is still there");
	ok(cm_shm_owners_seg(NULL, 1, 1, 0) == NULL, "NULL map: NULL");
	cm_shm_owners_free(o);
}

/* The scans of rule 2b: a burst, then a steady rate, and a scan of many
 * processes paid for by waiting. */
static void scan_budget(void)
{
	struct cm_shm_owners *o = cm_shm_owners_new();
	struct cm_shm_stats st;
	int n = 0, later = 0, big;

	while (n < 1000 && cm_shm_owners_may_scan(o, 5 * MS, 4))
		n++;
	is_int(n, CM_SHM_SCAN_BURST / 4, "a burst: 16 scans of 4 processes");
	for (int k = 0; k < 100; k++)
		later += cm_shm_owners_may_scan(o, 1005 * MS, 4);
	is_int(later, CM_SHM_SCAN_PROCS_PER_S / 4,
	       "one second later: 4 more");
	big = cm_shm_owners_may_scan(o, 3005 * MS, 100);
	ok(big, "a scan of 100 processes once the bucket is not empty");
	ok(!cm_shm_owners_may_scan(o, 6005 * MS, 1),
	   "... paid for: nothing 3 s later");
	ok(cm_shm_owners_may_scan(o, 8005 * MS, 1), "... something 5 s later");
	cm_shm_owners_stats(o, &st);
	ok(st.scans == 16 + 4 + 1 + 1 && st.scans_deferred >= 1,
	   "counts: %llu scans, %llu deferred",
	   (unsigned long long)st.scans, (unsigned long long)st.scans_deferred);
	cm_shm_owners_free(o);
}

/* Four ranks in a ring, owners by name: rank r polls its own segment and
 * delivers into rank r+1's, one sample in ten in the peer's.  Samples
 * are 10 ms apart, never two in one window. */
static void ring(void)
{
	struct cm_shm_owners *o = cm_shm_owners_new();
	struct cm_shm_seg *s[4];
	struct cm_shm_evidence ev;
	double m[4][4] = { { 0 } };
	uint64_t t = 0;
	int exact = 1;

	for (int r = 0; r < 4; r++) {
		s[r] = cm_shm_owners_seg(o, 27, 7014 + (uint64_t)r, 0);
		cm_shm_seg_set_owner(o, s[r], r, CM_SHM_BY_NAME);
	}
	for (int k = 0; k < 200; k++)
		for (int r = 0; r < 4; r++) {
			int seg = k % 10 == r ? (r + 1) % 4 : r;

			t += 10 * MS;
			if (cm_shm_owners_ref(o, s[seg], r, r * 10, t, &ev) > 0)
				m[r][ev.owner] += ev.weight;
		}
	for (int r = 0; r < 4; r++)
		for (int q = 0; q < 4; q++)
			exact &= m[r][q] == (q == (r + 1) % 4 ? 20.0 : 0.0);
	ok(exact, "ring: 20 units from each rank to the next, nothing else");
	cm_shm_owners_free(o);
}

int main(void)
{
	names();
	sysv();
	fd_holder();
	local_ranks();
	by_samples();
	by_creator_and_visitors();
	bounded();
	scan_budget();
	ring();
	return done_testing();
}
