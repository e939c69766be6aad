#!/bin/sh
# A stand-in agent that never reads its input and ignores SIGTERM: the
# step must end in its normal time anyway (the plugin never waits).
trap '' TERM HUP
exec sleep 30
