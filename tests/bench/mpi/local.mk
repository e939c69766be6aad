# tests/bench/mpi: message passing between MPI ranks (run by hand,
# docs/PERFORMANCE.md "Message passing"); included from
# tests/workloads/local.mk.  run-mpi.sh runs tests/workloads/wl-mpi-msg;
# bench-cma times what CMA tracing adds to a process_vm_readv call;
# bench-ompi-mon what reading a node's Open MPI monitoring files costs.
EXTRA_DIST += tests/bench/mpi/run-mpi.sh
if HAVE_CAPSTONE
check_PROGRAMS += tests/bench/mpi/bench-cma
endif
tests_bench_mpi_bench_cma_SOURCES = tests/bench/mpi/bench_cma.c
tests_bench_mpi_bench_cma_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/nodeagent
tests_bench_mpi_bench_cma_LDADD = nodeagent/libagent.la lib/libcommap.la \
	$(CAPSTONE_LIBS)
check_PROGRAMS += tests/bench/mpi/bench-ompi-mon
tests_bench_mpi_bench_ompi_mon_SOURCES = tests/bench/mpi/bench_ompi_mon.c
tests_bench_mpi_bench_ompi_mon_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/nodeagent
tests_bench_mpi_bench_ompi_mon_LDADD = nodeagent/libagentcore.la \
	lib/libcommap.la
