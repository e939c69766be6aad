/* fuzz_srun_line.c: the plugin's reading of srun's own command line and
 * of SLURM_TASKS_PER_NODE and COMMAP_PLACE_NODES
 * (spank/place_nodes_line.c) on arbitrary bytes:
 * the input's NUL-separated words are srun's argv, as /proc/self/cmdline
 * gives them, and its first word a SLURM_TASKS_PER_NODE value and a
 * COMMAP_PLACE_NODES note.
 *
 * Invariants: the program, when found, is one of the words after srun's
 * own; a layout option named is one the plugin knows; the slots are 0 or
 * the leading count of the value; a note accepted starts with its kind.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "place_nodes_line.h"

#define WORDS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const known[] = { "distribution", "nodelist",
		"exclude", "relative", "nodefile", "het-group", "multi-prog",
		"arbitrary", "a heterogeneous step" };
	char *text = fuzz_bytes(data, size), *argv[WORDS_MAX + 1], *line;
	struct cm_srun_line l;
	int argc = 0, named = 0;
	long slots;

	/* words: text up to each NUL; the last one NUL-terminated too */
	line = malloc(size + 1);
	fuzz_require(line != NULL, "out of memory");
	memcpy(line, text, size);
	line[size] = '\0';
	for (size_t i = 0; i <= size && argc < WORDS_MAX;) {
		argv[argc++] = line + i;
		i += strlen(line + i) + 1;
	}
	argv[argc] = NULL;
	cm_srun_line_scan(argc, argv, &l);
	fuzz_require(l.prog == 0 || (l.prog >= 1 && l.prog < argc),
		     "the program is one of the words");
	for (size_t k = 0; l.own && k < sizeof(known) / sizeof(known[0]); k++)
		named |= strcmp(l.own, known[k]) == 0;
	fuzz_require(!l.own || named, "a known layout option");
	slots = cm_srun_even_slots(line, (int)(size % 5));
	fuzz_require(slots == 0 || slots == strtol(line, NULL, 10),
		     "slots: 0 or the leading count");
	fuzz_require(!cm_place_nodes_note_valid(line) ||
		     strncmp(line, "learned ", 8) == 0 ||
		     strncmp(line, "block ", 6) == 0,
		     "a valid placement note starts with its kind");
	free(line);
	free(text);
	return 0;
}
