/* fuzz_report_args.c: the report commands' small parsers on every line of
 * an arbitrary input: --since/--until times (cli/remote_time.c) and step
 * names (cm_report_step_parse, report/render_outcome.c).
 *
 * Invariants: a refused time says why; an accepted one is written as
 * "YYYY-MM-DDTHH:MM:SSZ" and reads back to itself (so no impossible date
 * gets through rolled over); a step is -1 or 0..2^32-1, and its name
 * reads back to the same step.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fuzz_input.h"
#include "remote.h"
#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_time(const char *s)
{
	char out[32], again[32], why[256] = "";
	time_t now = 1795000000;	/* 2026-11-18 */

	if (remote_parse_time(s, now, out, sizeof(out), why, sizeof(why))) {
		fuzz_require(why[0] != '\0', "time refused silently");
		return;
	}
	fuzz_require(strlen(out) == 20 && out[4] == '-' && out[10] == 'T' &&
		     out[19] == 'Z', "accepted time in UTC form");
	fuzz_require(remote_parse_time(out, now, again, sizeof(again), why,
				       sizeof(why)) == 0 &&
		     strcmp(out, again) == 0, "a written time reads back");
}

static void fuzz_step(const char *s)
{
	long long v = cm_report_step_parse(s);
	char buf[24];

	if (v < 0) {
		fuzz_require(v == -1, "a refused step is -1");
		return;
	}
	fuzz_require(v <= 4294967295LL, "a step fits Slurm's 32 bits");
	fuzz_require(cm_report_step_parse(cm_report_step_name(v, buf,
				sizeof(buf))) == v, "a step's name reads back");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size), *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		fuzz_time(line);
		fuzz_step(line);
	}
	free(text);
	return 0;
}
