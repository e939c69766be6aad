/* decode.h: data address of a software-sampled x86-64 instruction.
 *
 * The "sample" backend of the node agent samples each thread with a CPU-time
 * clock perf event (PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER).  The timer
 * interrupt lands just after the instruction that stalled, so the data
 * address touched is the memory operand of the instruction at or just before
 * the sampled IP, computed from the sampled registers.  This module finds
 * that instruction with Capstone and evaluates base + index * scale + disp.
 * The method, its limits and measured speed are in docs/decoder.md.
 *
 * A decoder owns two Capstone handles and a fixed-size cache keyed by
 * (code id, IP): every IP is decoded once; later samples at the same IP only
 * evaluate the cached operand descriptor against their registers.  A decoder
 * is not thread-safe; use one per thread.
 *
 * Every function returns -1 with errno set on error (EINVAL bad argument,
 * ENOMEM, ENOENT cache miss, ENODATA no user registers in the sample) and
 * fills the optional struct cm_error with a message.
 */
#ifndef COMMAP_NODEAGENT_DECODE_H
#define COMMAP_NODEAGENT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "commap/error.h"

/* Registers of a sample, indexed by PERF_REG_X86_* (asm/perf_regs.h):
 * v[PERF_REG_X86_AX] ... v[PERF_REG_X86_R15].  Bit i of valid says that
 * v[i] was sampled; an operand needing a missing register is not computed. */
#define CM_REGS_MAX 24		/* PERF_REG_X86_64_MAX */

struct cm_regs {
	uint64_t v[CM_REGS_MAX];
	uint32_t valid;
};

/* Fill regs from the PERF_SAMPLE_REGS_USER part of a sample: abi (the
 * record's u64 abi field), the event's sample_regs_user mask and the nvals
 * u64 values that follow, one per set bit of mask in increasing bit order.
 * Bits above the 64-bit general registers (XMM) are skipped.
 * -1/ENODATA when abi is PERF_SAMPLE_REGS_ABI_NONE (no user registers, e.g.
 * the thread was in the kernel), -1/EINVAL for a 32-bit ABI or when nvals
 * is smaller than the number of bits in mask. */
int cm_regs_from_sample(struct cm_regs *regs, uint64_t abi, uint64_t mask,
			const uint64_t *vals, size_t nvals,
			struct cm_error *err);

/* Decoder options (flags of cm_decoder_new). */
enum {
	/* Keep RIP-relative operands (globals, constants in .rodata): their
	 * address is the next instruction's address + disp. */
	CM_DECODE_KEEP_RIP = 1u << 0,
	/* Keep accesses whose base register is rsp or rbp (stack). */
	CM_DECODE_KEEP_STACK = 1u << 1,
};

/* Why a sample gave an address or not (statistics). */
enum cm_decode_reason {
	CM_DECODE_OK = 0,	/* address computed */
	CM_DECODE_NO_MEM,	/* no instruction in reach accesses memory */
	CM_DECODE_CLOBBERED,	/* operand registers overwritten before IP */
	CM_DECODE_RIP_RELATIVE,	/* RIP-relative operand discarded */
	CM_DECODE_STACK,	/* rsp/rbp-based operand discarded */
	CM_DECODE_SEGMENT,	/* fs:/gs:-relative (TLS) operand discarded */
	CM_DECODE_VSIB,		/* gather/scatter (vector index) discarded */
	CM_DECODE_SYNC_FAILED,	/* no decoding of the window lands on IP */
	CM_DECODE_NO_REGS,	/* a needed register is not in the sample */
	CM_DECODE_SPIN,		/* a `pause` at IP or in the look-back: a
				 * spin-wait, nothing about sharing */
	CM_DECODE_SYSCALL,	/* just after a system call instruction:
				 * the thread was in the kernel */
	CM_DECODE_NREASONS
};

/* Name of a reason ("ok", "no_mem", "clobbered", ...); "?" if out of range. */
const char *cm_decode_reason_name(enum cm_decode_reason r);

/* Access kinds (bit set). */
enum {
	CM_ACCESS_READ = 1u << 0,
	CM_ACCESS_WRITE = 1u << 1,
};

/* Most memory operands one instruction has (movs, cmps: two). */
#define CM_DECODE_MAX_REFS 2
/* Largest look-back accepted by cm_decoder_new. */
#define CM_DECODE_MAX_LOOKBACK 16
/* Code bytes before IP looked at; a longer window is trimmed at its start. */
#define CM_DECODE_MAX_WINDOW 512
/* Slots of the per-IP cache (4-way set-associative; a full set drops its
 * oldest entry). */
#define CM_DECODE_CACHE_SLOTS 8192

/* One memory reference of the chosen instruction. */
struct cm_mem_ref {
	uint64_t addr;		/* effective address of its first byte */
	uint32_t size;		/* bytes (per element for rep string ops) */
	uint32_t rw;		/* CM_ACCESS_READ | CM_ACCESS_WRITE */
};

/* Result of one sample. */
struct cm_access {
	enum cm_decode_reason reason;	/* CM_DECODE_OK when nref > 0 */
	unsigned nref;			/* references in ref[] (0..2) */
	unsigned back;			/* 0: instruction at IP, k: k-th before */
	uint64_t insn_addr;		/* address of the chosen instruction */
	struct cm_mem_ref ref[CM_DECODE_MAX_REFS];
};

/* Decoder counters (reset only by cm_decoder_new). */
struct cm_decode_stats {
	uint64_t samples;		/* calls that returned 0 or 1 */
	uint64_t decodes;		/* windows decoded (cache misses) */
	uint64_t cache_hits;
	uint64_t reason[CM_DECODE_NREASONS];	/* per outcome */
};

struct cm_decoder;

/* New decoder (Capstone x86-64 with detail).  lookback: how many
 * instructions before the one at IP may be used, 0..CM_DECODE_MAX_LOOKBACK
 * (4 is the tested default); flags: CM_DECODE_KEEP_*.  NULL with errno
 * (EINVAL bad lookback or unknown flag, ENOMEM, EIO Capstone failure). */
struct cm_decoder *cm_decoder_new(int lookback, unsigned flags,
				  struct cm_error *err);
void cm_decoder_free(struct cm_decoder *dec);

/* Data address of a sample at ip with registers regs.  code[0..len) are the
 * bytes of the process's memory at code_addr, covering ip (code_addr <= ip
 * <= code_addr + len); a window of 64-128 bytes before ip plus 16 after it
 * is enough.  code_id names the code (e.g. the mapping's device and inode
 * mixed with the load address) so that the same ip in another process with
 * other code does not hit a cache entry of the first.
 * The result is cached; a cached (code_id, ip) is answered without looking
 * at code (which may then be NULL).
 * Returns 1 with out->nref > 0 when an address was computed, 0 when the
 * sample gives none (out->reason says why), -1 on bad arguments. */
int cm_decode_address(struct cm_decoder *dec, uint64_t code_id,
		      const uint8_t *code, size_t len, uint64_t code_addr,
		      uint64_t ip, const struct cm_regs *regs,
		      struct cm_access *out, struct cm_error *err);

/* Same from the cache only, so the caller can skip reading the code bytes:
 * 1 or 0 as above, -1/ENOENT when (code_id, ip) is not cached. */
int cm_decode_cached(struct cm_decoder *dec, uint64_t code_id, uint64_t ip,
		     const struct cm_regs *regs, struct cm_access *out,
		     struct cm_error *err);

/* Counters since cm_decoder_new (all zero for a NULL decoder). */
void cm_decoder_stats(const struct cm_decoder *dec,
		      struct cm_decode_stats *stats);

#endif
