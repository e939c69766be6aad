/* fuzz_fault_format.c: the agent's reader of the page-fault tracepoint's
 * format file (cm_fault_format_parse in nodeagent/fault_sample.c).
 *
 * Invariants: a refusal says why; an accepted format gives each field room
 * inside the raw entry (min_size covers pid's 4 bytes and the 8 of address,
 * ip and error_code), and a record built with those offsets parses back
 * to the values put in.
 */
#include <stdint.h>
#include <string.h>

#include "fault_sample.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A PERF_RECORD_SAMPLE of layout TID|TIME|RAW around a raw entry with the
 * fields at f's offsets. */
static void check_round_trip(const struct cm_fault_format *f)
{
	size_t raw = f->min_size, len = 8 + 8 + 8 + 4 + raw;
	uint8_t *rec;
	uint32_t u32;
	uint64_t u64;
	uint16_t u16;
	struct cm_fault out;
	struct cm_error err = { "" };

	if (raw > 4096)
		return;
	len = (len + 7) & ~(size_t)7;
	rec = calloc(1, len);
	fuzz_require(rec != NULL, "out of memory");
	u32 = 9;			/* PERF_RECORD_SAMPLE */
	memcpy(rec, &u32, 4);
	u16 = (uint16_t)len;
	memcpy(rec + 6, &u16, 2);
	u32 = 77;			/* pid, tid */
	memcpy(rec + 8, &u32, 4);
	u32 = 78;
	memcpy(rec + 12, &u32, 4);
	u64 = 123456789;		/* time */
	memcpy(rec + 16, &u64, 8);
	u32 = (uint32_t)raw;
	memcpy(rec + 24, &u32, 4);
	/* Written in this order, a later field overwrites an earlier one
	 * where a format makes them overlap: compare only the last. */
	u64 = 0x1111;
	memcpy(rec + 28 + f->ip_off, &u64, 8);
	u64 = 0x7f0000001000ull;
	memcpy(rec + 28 + f->addr_off, &u64, 8);
	fuzz_require(cm_fault_parse_sample(f, rec, len, &out, &err) == 0,
		     "a record built from an accepted format parses");
	fuzz_require(out.addr == 0x7f0000001000ull && out.tid == 78,
		     "the address and thread come back");
	free(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	struct cm_fault_format f;
	struct cm_error err = { "" };

	if (cm_fault_format_parse(text, &f, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "refused silently");
	} else {
		fuzz_require(f.pid_off + 4 <= f.min_size &&
			     f.addr_off + 8 <= f.min_size &&
			     f.ip_off + 8 <= f.min_size &&
			     f.err_off + 8 <= f.min_size,
			     "every field inside the raw entry");
		check_round_trip(&f);
	}
	free(text);
	return 0;
}
