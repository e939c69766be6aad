/* fuzz_perf_record.c: the agent's readers of kernel sample records
 * (nodeagent/perf_record.c, nodeagent/fault_sample.c) on arbitrary bytes:
 * one record in the software-sampling or hardware-sampling layout, the same
 * bytes as a page-fault tracepoint sample, and the bytes as a perf ring
 * walked record by record.
 *
 * Byte 0 picks the layout, byte 1 where the ring reader starts; the rest is
 * the record (in an allocation of its exact size, so that AddressSanitizer
 * catches a read past it).  Invariants: a refusal says why; an accepted
 * record lies inside the bytes given; the ring reader never moves past the
 * kernel's head and every record it returns lies in the ring.
 */
#include <stdint.h>
#include <string.h>

#include "fault_sample.h"
#include "fuzz_input.h"
#include "perf_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_record(const struct cm_perf_layout *lay, const uint8_t *rec,
			size_t len)
{
	struct cm_perf_record r;
	struct cm_error err = { "" };

	if (cm_perf_parse_record(lay, rec, len, &r, &err) < 0) {
		fuzz_require(err.text[0] != '\0', "record refused silently");
		return;
	}
	fuzz_require(r.size >= 8 && r.size <= len, "record inside the bytes");
	fuzz_require(r.kind >= CM_PERF_REC_SAMPLE &&
		     r.kind <= CM_PERF_REC_OTHER, "record kind");
	fuzz_require(r.kind != CM_PERF_REC_SAMPLE ||
		     r.sample.regs.valid == 0 || r.sample.has_regs_block,
		     "registers only from a register block");
}

static void fuzz_fault(const uint8_t *rec, size_t len)
{
	struct cm_fault_format f;
	struct cm_fault out;
	struct cm_error err = { "" };

	cm_fault_format_default(&f);
	if (cm_fault_parse_sample(&f, rec, len, &out, &err) < 0)
		fuzz_require(err.text[0] != '\0', "fault refused silently");
}

/* The bytes as a full ring of the largest power-of-two size they hold. */
static void fuzz_ring(const struct cm_perf_layout *lay, const uint8_t *data,
		      size_t len, uint8_t start)
{
	static uint8_t buf[65536];
	uint64_t size = 8, tail = start, head;

	if (len < 8)
		return;
	while (size * 2 <= len)
		size *= 2;
	head = tail + size;
	for (int i = 0; i < 4096; i++) {
		struct cm_error err = { "" };
		const uint8_t *rec;
		uint64_t before = tail;
		size_t rlen;
		int rc = cm_perf_ring_next(data, size, head, &tail, buf,
					   sizeof(buf), &rec, &rlen, &err);

		if (rc <= 0) {
			fuzz_require(rc == 0 ? tail == head : err.text[0] != '\0',
				     "an empty ring is at its head; an error "
				     "says why");
			return;
		}
		fuzz_require(rlen >= 8 && tail == before + rlen && tail <= head,
			     "the reader moves by one record, not past head");
		fuzz_require((rec >= data && rec + rlen <= data + size) ||
			     rec == buf, "the record is in the ring or copied");
		fuzz_record(lay, rec, rlen);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_perf_layout lay;
	uint8_t *rec;

	if (size < 2)
		return 0;
	lay.sample_type = (data[0] & 1) ? CM_PERF_SAMPLE_TYPE_HW
					: CM_PERF_SAMPLE_TYPE_SW;
	/* The user registers the sample backend asks for (ax..r15, no
	 * segment registers), or none. */
	lay.regs_mask = (data[0] & 1) ? 0 : CM_PERF_REGS_MASK;
	rec = fuzz_bytes(data + 2, size - 2);
	fuzz_record(&lay, rec, size - 2);
	fuzz_fault(rec, size - 2);
	fuzz_ring(&lay, rec, size - 2, data[1]);
	free(rec);
	return 0;
}
