# deploy/: what a site installs besides the binaries — the service's
# systemd unit and example configuration files (docs/slurm.md).

# The unit names installed paths, so it is made at build time from
# deploy/systemd/commap-service.service.in (configure's @sbindir@ would
# still hold ${exec_prefix}).
if INSTALL_SYSTEMD_UNIT
systemdsystemunit_DATA = deploy/systemd/commap-service.service
endif
deploy/systemd/commap-service.service: $(srcdir)/deploy/systemd/commap-service.service.in Makefile
	$(AM_V_GEN)mkdir -p deploy/systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' \
	    -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	    -e 's|@docdir[@]|$(docdir)|g' \
	    -e 's|@systemdsystemunitdir[@]|$(systemdsystemunitdir)|g' \
	    $(srcdir)/deploy/systemd/commap-service.service.in >$@.tmp && \
	mv $@.tmp $@
CLEANFILES += deploy/systemd/commap-service.service
# Built for the tests even when it is not installed.
check_DATA = deploy/systemd/commap-service.service

# Examples for a site: plugstack.conf line, plugin and service settings.
examplesdir = $(docdir)/examples
dist_examples_DATA = \
	deploy/config/plugstack.conf \
	deploy/config/commap.conf \
	deploy/config/service.conf
dist_doc_DATA = docs/slurm.md docs/service.md docs/agent.md docs/cli.md \
	docs/reports.md docs/result-format.md
EXTRA_DIST += deploy/systemd/commap-service.service.in

# bash completion for the commap command (tests/integration/t0170).
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = deploy/completion/commap.bash
install-data-hook:
	cd $(DESTDIR)$(bashcompletiondir) && mv -f commap.bash commap
uninstall-hook:
	rm -f $(DESTDIR)$(bashcompletiondir)/commap
