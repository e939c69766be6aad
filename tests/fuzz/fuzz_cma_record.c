/* fuzz_cma_record.c: the agent's readers of the CMA syscall tracepoints
 * (nodeagent/cma_trace.c): the format-file reader (cm_cma_format_field),
 * the record parser (cm_cma_parse_sample) and the pairer fed what the
 * parser accepts.
 *
 * Input: byte 0 even, the rest is a format file's text; odd, the rest is
 * a run of records, each a 2-byte length then that many bytes.
 * Invariants: a refusal says why; an accepted field lies in one page; an
 * accepted record has one of the four kinds; the pairer never reports
 * more bytes than the exits it was fed returned, and never more calls
 * than exits.
 */
#include <stdint.h>
#include <string.h>

#include "cma_trace.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_format(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	static const char *const names[] = { "pid", "ret" };
	struct cm_error err = { "" };
	unsigned off;

	for (int k = 0; k < 2; k++) {
		err.text[0] = '\0';
		if (cm_cma_format_field(text, names[k], 8, &off, &err) < 0)
			fuzz_require(err.text[0] != '\0', "refused silently");
		else
			fuzz_require(off <= 65535, "field within a page");
	}
	free(text);
}

static void fuzz_records(const uint8_t *data, size_t size)
{
	struct cm_cma_pairer *p = cm_cma_pairer_new();
	struct cm_cma_pair_stats st;
	struct cm_cma_format f;
	uint64_t exit_bytes = 0, exits = 0;

	fuzz_require(p != NULL, "out of memory");
	cm_cma_format_default(&f);
	for (int k = 0; k < CM_CMA_NKINDS; k++)
		f.id[k] = 720 - (uint64_t)k;
	while (size >= 2) {
		size_t len = (size_t)data[0] | (size_t)data[1] << 8;
		struct cm_cma_event ev;
		struct cm_cma_transfer x;
		struct cm_error err = { "" };
		void *rec;
		int rc;

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		rec = fuzz_bytes(data, len);
		rc = cm_cma_parse_sample(&f, rec, len, &ev, &err);
		if (rc < 0)
			fuzz_require(err.text[0] != '\0', "refused silently");
		if (rc == 0) {
			fuzz_require(ev.kind < CM_CMA_NKINDS, "a known kind");
			if (ev.kind >= CM_CMA_EXIT_READ) {
				exits++;
				if (ev.value > 0)
					exit_bytes += (uint64_t)ev.value;
			}
			cm_cma_pairer_feed(p, &ev, &x);
		}
		free(rec);
		data += len;
		size -= len;
	}
	cm_cma_pairer_stats(p, &st);
	fuzz_require(st.bytes <= exit_bytes, "no more bytes than returned");
	fuzz_require(st.calls <= exits, "no more calls than exits");
	cm_cma_pairer_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_format(data + 1, size - 1);
	else
		fuzz_records(data + 1, size - 1);
	return 0;
}
