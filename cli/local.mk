# cli/: the commap command (docs/cli.md).  main.c dispatches to one file
# per subcommand; cli_common.c holds the shared option helpers and
# report.c the text/JSON output of a mapping.
bin_PROGRAMS += cli/commap
cli_commap_SOURCES = \
	cli/main.c cli/commands.h \
	cli/cli_common.c cli/cli_common.h \
	cli/report.c cli/report.h \
	cli/cmd_map.c cli/cmd_cost.c cli/cmd_matrix.c
cli_commap_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS)
cli_commap_LDADD = lib/libcommap.la $(HWLOC_LIBS) $(JANSSON_LIBS) -lm
