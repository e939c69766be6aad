# End-to-end tests: a real Slurm cluster started by the tests themselves
# (tests/e2e/e2e-lib.sh); skipped with a reason when not root or Slurm is
# missing.  t0520 and up run the real agent and the workloads
# (tests/e2e/e2e-agent-lib.sh).  Each test searches free ports from a
# base of its own, under a lock held until its daemons have taken them
# (e2e_cluster_start), so tests of this list and of other build trees can
# run at the same time.
E2E_TESTS = \
	tests/e2e/t0500-spank-plugin.sh \
	tests/e2e/t0520-threads-pairs.sh \
	tests/e2e/t0530-mpi-ranks.sh \
	tests/e2e/t0510-agent.sh \
	tests/e2e/t0540-sbatch-mpirun.sh \
	tests/e2e/t0550-agent-failures.sh \
	tests/e2e/t0560-two-steps.sh \
	tests/e2e/t0570-learned-mpi.sh \
	tests/e2e/t0580-cgroup.sh \
	tests/e2e/t0590-mpi-messages.sh \
	tests/e2e/t0595-hostile-user.sh \
	tests/e2e/t0597-multinode.sh \
	tests/e2e/t0598-place-nodes.sh
TESTS += $(E2E_TESTS)
EXTRA_DIST += $(E2E_TESTS) tests/e2e/e2e-lib.sh \
	tests/e2e/recording-agent.sh tests/e2e/stuck-agent.sh \
	tests/e2e/e2e-agent-lib.sh tests/e2e/result-check

# The plugin's cost at step launch: run by hand (docs/PERFORMANCE.md,
# "SPANK plugin"), never by make check: run-launch.sh times srun on a
# private cluster; tests/bench/spank/launch (built by make check) times the
# plugin's agent start alone.
EXTRA_DIST += tests/bench/spank/run-launch.sh tests/bench/spank/null-agent.sh

# Learned pin latency of MPI and hybrid jobs (docs/PERFORMANCE.md,
# "Learned mappings"): by hand, it runs t0570 several times.
EXTRA_DIST += tests/bench/learned/run-pin-latency-mpi.sh

# tests/bench/spank/launch: the time the plugin's agent start holds
# slurmstepd (cm_agent_launch + one task line), without Slurm.
check_PROGRAMS += tests/bench/spank/launch
tests_bench_spank_launch_SOURCES = tests/bench/spank/bench_launch.c \
	spank/agent_launch.c spank/agent_launch.h lib/error.c
tests_bench_spank_launch_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/spank
