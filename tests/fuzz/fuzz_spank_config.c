/* fuzz_spank_config.c: the SPANK plugin's parsers (spank/spank_config.c) on
 * arbitrary bytes: the first line is a --commap value, the rest a config
 * file (conf=PATH) and, split at blanks, plugstack.conf arguments.
 *
 * Invariants: a refusal carries a message; an accepted setting is one the
 * plugin can act on (a known mode, a static mode with a file, absolute
 * agent and spool paths, an empty or http(s) service URL, a non-empty allow
 * set, every string terminated inside its field).  conf= words are skipped:
 * they read files, which a fuzzer must not choose.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "spank_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_config(const struct cm_spank_config *c)
{
	fuzz_require(c->default_mode.mode < CM_MODE_COUNT, "default mode");
	fuzz_require(c->allowed != 0 && c->allowed < (1u << CM_MODE_COUNT),
		     "allow set");
	fuzz_require(fuzz_terminated(c->agent, sizeof(c->agent)) &&
		     fuzz_terminated(c->spool, sizeof(c->spool)) &&
		     fuzz_terminated(c->service, sizeof(c->service)) &&
		     fuzz_terminated(c->default_mode.static_file,
				     sizeof(c->default_mode.static_file)),
		     "string fields terminated");
	fuzz_require(c->agent[0] == '/' && c->spool[0] == '/',
		     "agent and spool are absolute paths");
	fuzz_require(c->service[0] == '\0' ||
		     strncmp(c->service, "http://", 7) == 0 ||
		     strncmp(c->service, "https://", 8) == 0,
		     "service is empty or an http(s) URL");
	fuzz_require(c->default_mode.mode != CM_MODE_STATIC ||
		     c->default_mode.static_file[0] != '\0',
		     "static mode has a file");
}

static void fuzz_mode(const char *text)
{
	struct cm_spank_mode_value v;
	struct cm_error err = { "" };

	if (cm_spank_mode_parse(text, &v, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "mode refused silently");
		return;
	}
	fuzz_require(v.mode < CM_MODE_COUNT, "parsed mode in range");
	fuzz_require(v.mode != CM_MODE_STATIC || v.static_file[0] != '\0',
		     "static mode has a file");
	fuzz_require(strcmp(cm_spank_mode_name(v.mode), "?") != 0,
		     "parsed mode has a name");
}

static void fuzz_file(const char *text)
{
	struct cm_spank_config c;
	struct cm_error err = { "" };

	cm_spank_config_defaults(&c, "/usr/libexec/commap/commap-agent",
				 "/var/spool/commap");
	if (cm_spank_config_parse_text(&c, text, "fuzz.conf", &err) < 0) {
		fuzz_require(strncmp(err.text, "fuzz.conf:", 10) == 0,
			     "a file error names the file and line");
		return;
	}
	check_config(&c);
}

static void fuzz_args(char *text)
{
	struct cm_spank_config c;
	struct cm_error err = { "" };
	char *av[64], *save = NULL, *w;
	int ac = 0;

	for (w = strtok_r(text, " \t\n", &save); w && ac < 64;
	     w = strtok_r(NULL, " \t\n", &save))
		if (strncmp(w, "conf=", 5) != 0)
			av[ac++] = w;
	cm_spank_config_defaults(&c, "/usr/libexec/commap/commap-agent",
				 "/var/spool/commap");
	if (cm_spank_config_parse_args(&c, ac, av, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "argument refused silently");
		return;
	}
	check_config(&c);
	fuzz_require(c.default_mode.mode == CM_MODE_OFF ||
		     cm_spank_mode_allowed(&c, c.default_mode.mode),
		     "the default is an allowed mode");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	char *nl = strchr(text, '\n');
	char *rest = nl ? nl + 1 : text + strlen(text);

	if (nl)
		*nl = '\0';
	fuzz_mode(text);
	fuzz_file(rest);
	fuzz_args(rest);
	free(text);
	return 0;
}
