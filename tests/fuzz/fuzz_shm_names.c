/* fuzz_shm_names.c: the agent's readers of shared-segment names and of the
 * kernel's SysV segment table (nodeagent/shm_owner.c): a path from
 * /proc/PID/maps (a user names files in /dev/shm as they like) and a line
 * of /proc/sysvipc/shm.
 *
 * Invariants: a local rank read from a name is 0..1000000 and is the
 * number the name ends with, after "vader_segment." and two more fields;
 * a SysV name is "/SYSV" and 8 hex digits; a table line either is
 * refused, is another segment's, or names a creator pid > 0 for the shmid
 * it lists (the same line asked about another shmid is not its).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "shm_owner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *text)
{
	int r = cm_shm_name_local_rank(text);
	const char *base = strrchr(text, '/'), *end;

	base = base ? base + 1 : text;
	if (r >= 0) {
		fuzz_require(r <= 1000000, "a local rank in range");
		fuzz_require(strncmp(base, "vader_segment.", 14) == 0,
			     "a rank only from a vader segment's name");
		end = strrchr(base, '.');
		fuzz_require(atoi(end + 1) == r, "the rank the name ends with");
	}
	if (cm_shm_is_sysv(text))
		fuzz_require(strlen(text) == 13 && !strncmp(text, "/SYSV", 5),
			     "a SysV name has its shape");
}

static void check_line(const char *text)
{
	unsigned long long id = 0;
	pid_t cpid = 0;
	int r;

	if (sscanf(text, "%*d %llu", &id) != 1)
		id = 42;
	r = cm_shm_sysv_parse_line(text, id, &cpid);
	fuzz_require(r >= -1 && r <= 1, "a known answer");
	if (r == 1) {
		fuzz_require(cpid > 0, "a creator pid > 0");
		fuzz_require(cm_shm_sysv_parse_line(text, id + 1, &cpid) == 0,
			     "another shmid's question: not this line");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);

	check_name(text);
	check_line(text);
	free(text);
	return 0;
}
