/* fuzz_task_line.c: the agent's line protocol on stdin ("task PID RANK
 * [CPULIST]", nodeagent/agent_opts.c) and its --pid PID[:RANK] values, on
 * every line of an arbitrary input.
 *
 * Invariants: a refused line says why; an accepted line has exactly three
 * or four blank-separated words, "task", a PID > 0, a rank >= 0 and, when
 * the fourth word is there, that word as the CPU list (digits, ',' and '-',
 * starting with a digit) — never a piece of a longer word.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "agent_opts.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BLANKS " \t\n\v\f\r"

/* The words of line, split as a reader of the protocol would. */
static int count_words(const char *line, const char **fourth, size_t *len4)
{
	int n = 0;

	for (const char *p = line + strspn(line, BLANKS); *p;
	     p += strspn(p, BLANKS)) {
		size_t w = strcspn(p, BLANKS);

		if (++n == 4) {
			*fourth = p;
			*len4 = w;
		}
		p += w;
	}
	return n;
}

static void fuzz_line(const char *line)
{
	char cpus[CM_AGENT_CPULIST_MAX];
	struct cm_error err = { "" };
	const char *fourth = NULL;
	size_t len4 = 0;
	int rank, rc, words;
	pid_t pid;

	rc = cm_agent_parse_task_line(line, &pid, &rank, cpus, &err);
	words = count_words(line, &fourth, &len4);
	if (rc < 0) {
		fuzz_require(err.text[0] != '\0', "refused silently");
		return;
	}
	if (rc == 0) {
		fuzz_require(pid == 0 && words == 0,
			     "only a blank line is nothing to do");
		return;
	}
	fuzz_require(rc == 1 && pid > 0 && rank >= 0, "accepted fields");
	fuzz_require(words == 3 || words == 4, "three or four words");
	fuzz_require(words == 4 ? strlen(cpus) == len4 &&
		     memcmp(cpus, fourth, len4) == 0 : cpus[0] == '\0',
		     "the CPU list is the fourth word");
	fuzz_require(cpus[0] == '\0' || (isdigit((unsigned char)cpus[0]) &&
		     strspn(cpus, "0123456789,-") == strlen(cpus)),
		     "the CPU list has only digits, ',' and '-'");
}

static void fuzz_pid(const char *s)
{
	struct cm_agent_root r;
	struct cm_error err = { "" };

	if (cm_agent_parse_pid(s, &r, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "refused silently");
		return;
	}
	fuzz_require(r.pid > 0 && r.rank >= -1, "accepted pid and rank");
	fuzz_require((strchr(s, ':') != NULL) == (r.rank >= 0),
		     "a rank exactly when one was given");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), *save = NULL, *line;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		fuzz_line(line);
		fuzz_pid(line);
	}
	free(text);
	return 0;
}
