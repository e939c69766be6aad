/* fuzz_plugstack.c: 'commap check's readers of plugstack.conf lines and
 * slurm.conf keys (cli/plugstack.c) on arbitrary bytes: each line of the
 * input is a plugstack.conf line, the whole input a slurm.conf.
 *
 * Invariants: a refusal carries a message; an accepted plugin line has a
 * non-empty path and at most PLUGSTACK_MAX_ARGS non-empty arguments
 * without blanks; an include has a non-empty pattern; a slurm.conf value
 * is non-empty, blank-free and shorter than the buffer.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "plugstack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int word_ok(const char *w)
{
	size_t i;

	if (!w || !*w)
		return 0;
	for (i = 0; w[i]; i++)
		if (isspace((unsigned char)w[i]))
			return 0;
	return 1;
}

static void fuzz_line(char *line)
{
	struct plugstack_line pl;
	char why[160] = "";
	int i;

	if (plugstack_parse_line(line, &pl, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', "line refused silently");
		return;
	}
	if (pl.kind == PLUGSTACK_INCLUDE)
		fuzz_require(pl.path && pl.path[0] &&
			     !isspace((unsigned char)pl.path[0]),
			     "include pattern");
	if (pl.kind != PLUGSTACK_PLUGIN)
		return;
	fuzz_require(word_ok(pl.path), "plugin path is a word");
	fuzz_require(pl.argc >= 0 && pl.argc <= PLUGSTACK_MAX_ARGS,
		     "argument count");
	for (i = 0; i < pl.argc; i++)
		fuzz_require(word_ok(pl.argv[i]), "arguments are words");
	(void)plugstack_is_plugin(pl.path, "commap_spank.so");
}

static void fuzz_conf(const char *text)
{
	static const char *const keys[] = { "PlugStackConfig", "PluginDir" };
	char out[16];
	size_t i;

	for (i = 0; i < 2; i++)
		if (plugstack_slurm_conf_value(text, keys[i], out,
					       sizeof(out)) == 0)
			fuzz_require(word_ok(out) && strlen(out) < sizeof(out)
				     && !strchr(out, '#'), "conf value");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), *line, *save = NULL;
	char *copy;

	fuzz_conf(text);
	copy = fuzz_text(data, size);
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *exact = fuzz_text((const uint8_t *)line, strlen(line));

		fuzz_line(exact);
		free(exact);
	}
	free(copy);
	free(text);
	return 0;
}
