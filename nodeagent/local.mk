# nodeagent/: the per-node agent (needs capstone).
if HAVE_CAPSTONE
endif
