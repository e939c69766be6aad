# tests/workloads: programs with a known communication pattern, for the
# node agent's accuracy test (t0730-accuracy.sh) and the detection overhead
# benchmark (tests/bench/detect).  See tests/workloads/README.md.
WL_COMMON = tests/workloads/wl_common.c tests/workloads/wl_common.h

check_PROGRAMS += tests/workloads/wl-threads
tests_workloads_wl_threads_SOURCES = tests/workloads/wl_threads.c $(WL_COMMON)
tests_workloads_wl_threads_LDADD = -lpthread -lm

# Progress every second, for the detection budget benchmark
# (tests/bench/detect/run-budget.sh).
check_PROGRAMS += tests/workloads/wl-progress
tests_workloads_wl_progress_SOURCES = tests/workloads/wl_progress.c
tests_workloads_wl_progress_LDADD = -lpthread

# MPI and hybrid MPI+OpenMP.  configure does not look for MPI, so the
# compile and link flags come from mpicc at build time; without mpicc the
# program is a stub that exits 77 (skip).  Never built with sanitizers:
# Open MPI's own allocations would fail the leak checker.
WL_MPICC = mpicc
check_PROGRAMS += tests/workloads/wl-mpi
tests_workloads_wl_mpi_SOURCES = tests/workloads/wl_mpi.c $(WL_COMMON)
tests_workloads_wl_mpi_CFLAGS = -std=gnu11 $(WARN_CFLAGS) -fopenmp \
	$$($(WL_MPICC) --showme:compile 2>/dev/null || echo -DWL_NO_MPI)
tests_workloads_wl_mpi_LDFLAGS = -fopenmp \
	$$($(WL_MPICC) --showme:link 2>/dev/null)
tests_workloads_wl_mpi_LDADD = -lm

# Message passing between ranks (wl_mpi_msg.c), and a PMPI library that
# counts the bytes of point-to-point calls (ground truth, wl_pmpi.c).
check_PROGRAMS += tests/workloads/wl-mpi-msg
tests_workloads_wl_mpi_msg_SOURCES = tests/workloads/wl_mpi_msg.c
tests_workloads_wl_mpi_msg_CFLAGS = $(tests_workloads_wl_mpi_CFLAGS)
tests_workloads_wl_mpi_msg_LDFLAGS = $(tests_workloads_wl_mpi_LDFLAGS)
check_LTLIBRARIES = tests/workloads/libwlpmpi.la
tests_workloads_libwlpmpi_la_SOURCES = tests/workloads/wl_pmpi.c
tests_workloads_libwlpmpi_la_CFLAGS = -std=gnu11 $(WARN_CFLAGS) \
	$$($(WL_MPICC) --showme:compile 2>/dev/null || echo -DWL_NO_MPI)
tests_workloads_libwlpmpi_la_LDFLAGS = -module -avoid-version \
	-rpath /nowhere $$($(WL_MPICC) --showme:link 2>/dev/null)

WORKLOAD_TESTS = tests/workloads/t0730-accuracy.sh
TESTS += $(WORKLOAD_TESTS)
EXTRA_DIST += $(WORKLOAD_TESTS) tests/workloads/compare-matrix \
	tests/workloads/rank-matrix \
	tests/workloads/README.md

include tests/bench/detect/local.mk
include tests/bench/mpi/local.mk
