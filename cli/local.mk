# cli/: the commap command.
bin_PROGRAMS += cli/commap
cli_commap_SOURCES = cli/commap.c
cli_commap_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(JANSSON_CFLAGS)
cli_commap_LDADD = lib/libcommap.la $(HWLOC_LIBS) $(JANSSON_LIBS) -lm
