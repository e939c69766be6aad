# nodeagent/record.mk: recordings of what detection consumes (record.h,
# written by the agent with --record) and their offline replay
# (replay.h: commap-agent --replay, `commap replay`).
if HAVE_CAPSTONE
nodeagent_libagent_la_SOURCES += nodeagent/record.h nodeagent/record.c \
	nodeagent/replay.h nodeagent/record_read.c
nodeagent_commap_agent_SOURCES += nodeagent/remap_decide.h \
	nodeagent/remap_decide.c nodeagent/replay.c \
	nodeagent/replay_clock.h nodeagent/replay_clock.c
endif
