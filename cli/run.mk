# cli/run.mk: 'commap run' (cli/cmd_run.c).  Part of the node agent's
# work.  cmd_run.c is always compiled; with capstone the agent is
# built and 'commap run' starts it (COMMAP_HAVE_AGENT, its installed path
# in COMMAP_AGENT_PATH), without it 'commap run' says why and exits 1.
cli_commap_SOURCES += cli/cmd_run.c cli/cmd_replay.c
if HAVE_CAPSTONE
cli_commap_CFLAGS += -DCOMMAP_HAVE_AGENT=1 \
	-DCOMMAP_AGENT_PATH='"$(libexecdir)/commap/commap-agent"'
endif
