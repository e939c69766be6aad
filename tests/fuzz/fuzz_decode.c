/* fuzz_decode.c: the sample decoder (nodeagent/decode.c) on arbitrary
 * instruction bytes, sampled IPs and register sets.
 *
 * Byte 0 places the IP in the code, bytes 1-3 say which registers the
 * sample holds, byte 4 the decoder's flags; the rest is the code.
 * Invariants: a sample gives an address (1, one or two references, reason
 * ok) or none (0, a reason); the chosen instruction is at or before the IP
 * and at most the look-back before it; the same sample answered from the
 * cache gives the same result.
 */
#include <stdint.h>
#include <string.h>

#include "decode.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LOOKBACK 4
#define CODE_ADDR 0x400000ull

/* One decoder per flag set for the whole run, as the agent keeps one; the
 * code id is a hash of the bytes so that different code never shares a
 * cache entry. */
static struct cm_decoder *decoder(unsigned flags)
{
	static struct cm_decoder *dec[4];
	struct cm_error err = { "" };

	if (!dec[flags]) {
		dec[flags] = cm_decoder_new(LOOKBACK, flags, &err);
		fuzz_require(dec[flags] != NULL, "decoder");
	}
	return dec[flags];
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static int same_access(const struct cm_access *a, const struct cm_access *b)
{
	if (a->reason != b->reason || a->nref != b->nref ||
	    a->back != b->back || a->insn_addr != b->insn_addr)
		return 0;
	for (unsigned i = 0; i < a->nref; i++)
		if (a->ref[i].addr != b->ref[i].addr ||
		    a->ref[i].size != b->ref[i].size ||
		    a->ref[i].rw != b->ref[i].rw)
			return 0;
	return 1;
}

static void check_access(int rc, const struct cm_access *a, uint64_t ip)
{
	fuzz_require(rc == 0 || rc == 1, "a result, not an error");
	fuzz_require(rc == 1 ? a->reason == CM_DECODE_OK && a->nref >= 1 &&
		     a->nref <= CM_DECODE_MAX_REFS :
		     a->reason != CM_DECODE_OK && a->nref == 0 &&
		     a->reason < CM_DECODE_NREASONS, "reason and references");
	if (rc == 1)
		fuzz_require(a->insn_addr >= CODE_ADDR && a->insn_addr <= ip &&
			     a->back <= LOOKBACK,
			     "the instruction is at or before the IP");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_access a, b;
	struct cm_regs regs;
	struct cm_error err = { "" };
	struct cm_decoder *dec;
	uint8_t *code;
	uint64_t ip, id;
	size_t len;
	int rc;

	if (size < 5)
		return 0;
	len = size - 5;
	code = fuzz_bytes(data + 5, len);
	ip = CODE_ADDR + (len ? data[0] % (len + 1) : 0);
	memset(&regs, 0, sizeof(regs));
	for (int i = 0; i < CM_REGS_MAX; i++)
		regs.v[i] = 0x10000000ull * (uint64_t)(i + 1) + 8 * (uint64_t)i;
	regs.valid = (uint32_t)data[1] | (uint32_t)data[2] << 8 |
		     (uint32_t)data[3] << 16;
	dec = decoder(data[4] & 3u);
	id = fnv1a(data, size);
	rc = cm_decode_address(dec, id, code, len, CODE_ADDR, ip, &regs, &a,
			       &err);
	check_access(rc, &a, ip);
	fuzz_require(cm_decode_address(dec, id, code, len, CODE_ADDR, ip, &regs,
				       &b, &err) == rc && same_access(&a, &b),
		     "a second sample at the same IP gives the same result");
	fuzz_require(cm_decode_cached(dec, id, ip, &regs, &b, &err) == rc &&
		     same_access(&a, &b), "the cache gives the same result");
	free(code);
	return 0;
}
