/* decode.c: data address of a software-sampled x86-64 instruction.
 *
 * Method (docs/decoder.md): find instruction boundaries before the sampled
 * IP by decoding the code window from every start offset (dynamic
 * programming over offsets; of the decodings that land exactly on IP the one
 * starting earliest wins), then walk from the instruction at IP back over
 * at most `lookback` instructions and take the nearest memory operand that is
 * a real data access and whose base/index registers were not written between
 * it and IP.  The operand descriptor is cached per (code id, IP); evaluating
 * it against a sample's registers gives base + index * scale + disp.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <asm/perf_regs.h>
#include <capstone/capstone.h>
#include <linux/perf_event.h>

#include "decode.h"

_Static_assert(CM_REGS_MAX == PERF_REG_X86_64_MAX, "cm_regs size");

/* A memory operand reduced to what evaluation needs. */
/* The cache: CACHE_SETS sets of CACHE_WAYS slots. */
#define CACHE_WAYS 4
#define CACHE_SETS (CM_DECODE_CACHE_SLOTS / CACHE_WAYS)

struct ref_desc {
	int64_t disp;		/* absolute address when base == index == -1 */
	int8_t base;		/* PERF_REG_X86_* or -1 */
	int8_t index;		/* PERF_REG_X86_* or -1 */
	uint8_t scale;
	uint8_t addr32;		/* 0x67 prefix: address wraps at 32 bits */
	uint8_t rw;
	uint16_t size;
};

/* What decoding one IP gave; also a cache slot. */
struct ip_desc {
	uint64_t code_id;
	uint64_t ip;
	uint64_t insn_addr;
	uint64_t stamp;		/* insertion order, for replacement */
	uint8_t used;
	uint8_t reason;
	uint8_t back;
	uint8_t nref;
	struct ref_desc ref[CM_DECODE_MAX_REFS];
};

struct cm_decoder {
	csh h_len;		/* no detail: instruction lengths only */
	csh h_det;		/* detail: operands, registers written */
	cs_insn *in_len;
	cs_insn *in_det;
	int lookback;
	unsigned flags;
	struct cm_decode_stats st;
	uint64_t inserted;	/* cache insertions so far */
	/* Instructions from offset o to IP along the decoding starting at o,
	 * -1 when that decoding does not land on IP. */
	int16_t chain[CM_DECODE_MAX_WINDOW + 1];
	uint8_t step[CM_DECODE_MAX_WINDOW + 1];	/* length at offset o */
	struct ip_desc cache[CM_DECODE_CACHE_SLOTS];
};

static const char *const reason_names[CM_DECODE_NREASONS] = {
	[CM_DECODE_OK] = "ok",
	[CM_DECODE_NO_MEM] = "no_mem",
	[CM_DECODE_CLOBBERED] = "clobbered",
	[CM_DECODE_RIP_RELATIVE] = "rip_relative",
	[CM_DECODE_STACK] = "stack",
	[CM_DECODE_SEGMENT] = "segment",
	[CM_DECODE_VSIB] = "vsib",
	[CM_DECODE_SYNC_FAILED] = "sync_failed",
	[CM_DECODE_NO_REGS] = "no_regs",
	[CM_DECODE_SPIN] = "spin",
	[CM_DECODE_SYSCALL] = "syscall",
};

const char *cm_decode_reason_name(enum cm_decode_reason r)
{
	if ((unsigned)r >= CM_DECODE_NREASONS)
		return "?";
	return reason_names[r];
}

int cm_regs_from_sample(struct cm_regs *regs, uint64_t abi, uint64_t mask,
			const uint64_t *vals, size_t nvals,
			struct cm_error *err)
{
	size_t k = 0;

	if (!regs || (mask && !vals))
		return cm_errorf(err, EINVAL, "regs: NULL argument");
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return cm_errorf(err, ENODATA, "regs: sample has no user "
				 "registers (abi none)");
	if (abi != PERF_SAMPLE_REGS_ABI_64)
		return cm_errorf(err, EINVAL, "regs: abi %llu is not 64-bit",
				 (unsigned long long)abi);
	if ((size_t)__builtin_popcountll(mask) > nvals)
		return cm_errorf(err, EINVAL, "regs: mask 0x%llx needs %d "
				 "values, sample has %zu",
				 (unsigned long long)mask,
				 __builtin_popcountll(mask), nvals);
	memset(regs, 0, sizeof(*regs));
	for (int bit = 0; bit < 64; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		if (bit < CM_REGS_MAX) {
			regs->v[bit] = vals[k];
			regs->valid |= 1u << bit;
		}
		k++;
	}
	return 0;
}

/* PERF_REG_X86_* holding a Capstone register (any width), -1 if none. */
static int perf_reg_of(x86_reg r)
{
	switch (r) {
	case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX:
	case X86_REG_AL: case X86_REG_AH:
		return PERF_REG_X86_AX;
	case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX:
	case X86_REG_BL: case X86_REG_BH:
		return PERF_REG_X86_BX;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX:
	case X86_REG_CL: case X86_REG_CH:
		return PERF_REG_X86_CX;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX:
	case X86_REG_DL: case X86_REG_DH:
		return PERF_REG_X86_DX;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI:
	case X86_REG_SIL:
		return PERF_REG_X86_SI;
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI:
	case X86_REG_DIL:
		return PERF_REG_X86_DI;
	case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP:
	case X86_REG_BPL:
		return PERF_REG_X86_BP;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP:
	case X86_REG_SPL:
		return PERF_REG_X86_SP;
	case X86_REG_RIP: case X86_REG_EIP: case X86_REG_IP:
		return PERF_REG_X86_IP;
	default:
		break;
	}
	/* r8..r15 in their four widths; each family is contiguous in x86.h. */
	if (r >= X86_REG_R8 && r <= X86_REG_R15)
		return PERF_REG_X86_R8 + (r - X86_REG_R8);
	if (r >= X86_REG_R8D && r <= X86_REG_R15D)
		return PERF_REG_X86_R8 + (r - X86_REG_R8D);
	if (r >= X86_REG_R8W && r <= X86_REG_R15W)
		return PERF_REG_X86_R8 + (r - X86_REG_R8W);
	if (r >= X86_REG_R8B && r <= X86_REG_R15B)
		return PERF_REG_X86_R8 + (r - X86_REG_R8B);
	return -1;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Mnemonic without the prefix words Capstone prepends ("lock xadd",
 * "rep movsb", "repe cmpsb", "notrack jmp"). */
static const char *bare_mnemonic(const char *m)
{
	static const char *const words[] = {
		"lock ", "rep ", "repe ", "repne ", "notrack ", "bnd ",
		"xacquire ", "xrelease ", NULL,
	};

	for (const char *const *w = words; *w;) {
		if (has_prefix(m, *w)) {
			m += strlen(*w);
			w = words;	/* several may stack */
		} else {
			w++;
		}
	}
	return m;
}

static bool any_prefix(const char *s, const char *const *list)
{
	s = bare_mnemonic(s);
	for (; *list; list++)
		if (has_prefix(s, *list))
			return true;
	return false;
}

/* Memory operands that are not data accesses: address arithmetic, hints,
 * padding and cache maintenance. */
static bool touches_no_data(const cs_insn *in)
{
	static const char *const hints[] = {
		"prefetch", "clflush", "clwb", "cldemote", "bndc", "bndm",
		"bndl", "bnds", NULL,
	};

	if (in->id == X86_INS_LEA || in->id == X86_INS_NOP)
		return true;
	return any_prefix(in->mnemonic, hints);
}

/* Gathers and scatters address a vector of elements (VSIB).  Matched by name
 * because Capstone 4 reports a general register as the index of some EVEX
 * scatters. */
static bool is_vsib(const cs_insn *in)
{
	return strstr(in->mnemonic, "gather") ||
	       strstr(in->mnemonic, "scatter");
}

/* Instructions after which the next one in memory order is reached only by a
 * jump (or after a callee ran): the look-back cannot cross them. */
static bool is_barrier(csh h, const cs_insn *in)
{
	return in->id == X86_INS_JMP || in->id == X86_INS_LJMP ||
	       in->id == X86_INS_SYSCALL || in->id == X86_INS_SYSENTER ||
	       in->id == X86_INS_UD2 || in->id == X86_INS_HLT ||
	       cs_insn_group(h, in, CS_GRP_CALL) ||
	       cs_insn_group(h, in, CS_GRP_RET) ||
	       cs_insn_group(h, in, CS_GRP_INT) ||
	       cs_insn_group(h, in, CS_GRP_IRET);
}

/* Read/write kind of memory operand opi.  Capstone 4.0.2 marks the memory
 * destination of many stores (movups, vmovdqu, movnti, pextrd, fstp ...) as
 * READ and cmpxchg as READ only; correct those: a memory first operand of a
 * two-or-more operand instruction is its destination unless the
 * instruction only compares. */
static unsigned mem_rw(const cs_insn *in, int opi)
{
	static const char *const stores[] = {
		"fst", "fist", "fbstp", "fnst", "fnsave", "fxsave", "xsave",
		"stmxcsr", "vstmxcsr", "sgdt", "sidt", "sldt", "str", "smsw",
		NULL,
	};
	static const char *const compares[] = {
		"cmp", "test", "bt", "cmps", "scas", "push", "call", "jmp",
		NULL,
	};
	const cs_x86 *x = &in->detail->x86;
	unsigned ac = x->operands[opi].access & (CS_AC_READ | CS_AC_WRITE);

	if (has_prefix(bare_mnemonic(in->mnemonic), "cmpxchg"))
		return CM_ACCESS_READ | CM_ACCESS_WRITE;
	if (ac & CS_AC_WRITE)
		return ac;
	if (any_prefix(in->mnemonic, stores))
		return CM_ACCESS_WRITE;
	if (opi == 0 && x->op_count >= 2 && !any_prefix(in->mnemonic, compares))
		return CM_ACCESS_WRITE;
	return CM_ACCESS_READ;
}

/* Bit set of PERF_REG_X86_* written by an instruction (any width). */
static uint32_t regs_written(csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	uint32_t mask = 0;

	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return ~0u;	/* unknown: treat everything as written */
	for (int i = 0; i < nwr; i++) {
		int p = perf_reg_of(wr[i]);

		if (p >= 0)
			mask |= 1u << p;
	}
	return mask;
}

/* What the instructions between a candidate and IP did to the registers:
 * overwritten (value lost), or moved by a known constant (value at the
 * candidate = sampled value - delta). */
struct reg_track {
	uint32_t clobbered;
	int64_t delta[CM_REGS_MAX];
};

/* "reg += constant" on a full 64-bit register: add/sub reg, imm; inc/dec
 * reg; lea reg, [reg + disp].  Loops advance their pointer or index this way
 * right after the access, so undoing it keeps the access usable.  32-bit
 * forms are not undone: they also clear the upper half. */
static bool is_bump(const cs_insn *in, int *reg, int64_t *by)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *op = x->operands;
	bool is64 = x->op_count >= 1 && op[0].type == X86_OP_REG &&
		    op[0].size == 8;

	if (!is64 || (*reg = perf_reg_of(op[0].reg)) < 0 ||
	    *reg == PERF_REG_X86_IP)
		return false;
	switch (in->id) {
	case X86_INS_INC:
	case X86_INS_DEC:
		*by = in->id == X86_INS_INC ? 1 : -1;
		return x->op_count == 1;
	case X86_INS_ADD:
	case X86_INS_SUB:
		if (x->op_count != 2 || op[1].type != X86_OP_IMM)
			return false;
		*by = in->id == X86_INS_ADD ? op[1].imm : -op[1].imm;
		return true;
	case X86_INS_LEA:
		*by = op[1].mem.disp;
		return x->op_count == 2 && op[1].mem.base == op[0].reg &&
		       op[1].mem.index == X86_REG_INVALID &&
		       op[1].mem.segment == X86_REG_INVALID;
	default:
		return false;
	}
}

/* Account for instruction in (which ran before IP) in t. */
static void track_writes(csh h, const cs_insn *in, struct reg_track *t)
{
	uint32_t w = regs_written(h, in);
	int64_t by;
	int reg;

	if (w != ~0u && is_bump(in, &reg, &by)) {
		w &= ~(1u << reg);
		if (!(t->clobbered & (1u << reg)))
			t->delta[reg] += by;
	}
	t->clobbered |= w;
}

/* Outcome of looking at one memory operand. */
static enum cm_decode_reason describe_mem(const struct cm_decoder *dec,
					  const cs_insn *in, int opi,
					  const struct reg_track *t,
					  struct ref_desc *rd)
{
	const cs_x86_op *op = &in->detail->x86.operands[opi];
	const x86_op_mem *m = &op->mem;
	int base = m->base == X86_REG_INVALID ? -1 : perf_reg_of(m->base);
	int index = m->index == X86_REG_INVALID ? -1 : perf_reg_of(m->index);

	if (m->segment == X86_REG_FS || m->segment == X86_REG_GS)
		return CM_DECODE_SEGMENT;
	if ((m->index != X86_REG_INVALID && index < 0) || is_vsib(in))
		return CM_DECODE_VSIB;
	if (m->base != X86_REG_INVALID && base < 0)
		return CM_DECODE_NO_MEM;	/* not a general register */
	memset(rd, 0, sizeof(*rd));
	rd->size = op->size;
	rd->rw = mem_rw(in, opi);
	rd->addr32 = in->detail->x86.addr_size == 4;
	if (base == PERF_REG_X86_IP) {
		if (!(dec->flags & CM_DECODE_KEEP_RIP))
			return CM_DECODE_RIP_RELATIVE;
		/* Relative to the next instruction: known now, no register. */
		rd->base = rd->index = -1;
		rd->disp = (int64_t)(in->address + in->size) + m->disp;
		return CM_DECODE_OK;
	}
	if ((base == PERF_REG_X86_SP || base == PERF_REG_X86_BP) &&
	    !(dec->flags & CM_DECODE_KEEP_STACK))
		return CM_DECODE_STACK;
	if ((base >= 0 && (t->clobbered & (1u << base))) ||
	    (index >= 0 && (t->clobbered & (1u << index))))
		return CM_DECODE_CLOBBERED;
	rd->base = base;
	rd->index = index;
	rd->scale = index >= 0 ? m->scale : 0;
	/* registers moved since: fold the undo into the displacement */
	rd->disp = m->disp;
	if (base >= 0)
		rd->disp -= t->delta[base];
	if (index >= 0)
		rd->disp -= t->delta[index] * rd->scale;
	return CM_DECODE_OK;
}

/* Fill d from instruction in if it has usable memory operands; otherwise
 * record in *first the reason of its first rejected operand (if *first
 * is still unset).  Returns true when d now holds references. */
static bool describe_insn(const struct cm_decoder *dec, const cs_insn *in,
			  const struct reg_track *t, unsigned back,
			  struct ip_desc *d, enum cm_decode_reason *first)
{
	const cs_x86 *x = &in->detail->x86;

	if (touches_no_data(in))
		return false;
	d->nref = 0;
	for (int i = 0; i < x->op_count; i++) {
		struct ref_desc rd;
		enum cm_decode_reason r;

		if (x->operands[i].type != X86_OP_MEM)
			continue;
		r = describe_mem(dec, in, i, t, &rd);
		if (r == CM_DECODE_OK && d->nref < CM_DECODE_MAX_REFS)
			d->ref[d->nref++] = rd;
		else if (r != CM_DECODE_OK && *first == CM_DECODE_OK)
			*first = r;
	}
	if (!d->nref)
		return false;
	d->reason = CM_DECODE_OK;
	d->back = back;
	d->insn_addr = in->address;
	return true;
}

/* Decode one instruction with handle h into in; its length or 0. */
static int decode_one(csh h, cs_insn *in, const uint8_t *p, size_t avail,
		      uint64_t addr)
{
	const uint8_t *code = p;
	size_t size = avail;

	if (!avail || !cs_disasm_iter(h, &code, &size, &addr, in))
		return 0;
	return in->size;
}

/* Fill dec->chain and dec->step for the window; return the earliest start
 * offset whose decoding lands exactly on ipo, or -1 when none does.
 * The earliest start, not the one with the most instructions: decodings from
 * inside an instruction's displacement or immediate bytes tend to produce
 * several short bogus instructions ("00 00" is add [rax],al), while x86
 * decodings that start early converge on the true boundaries a few
 * instructions later (self-synchronisation), so the longest byte run ending
 * on IP is the one to trust for the instructions nearest IP. */
static int sync_on_ip(struct cm_decoder *dec, const uint8_t *code,
		      size_t len, uint64_t code_addr, size_t ipo)
{
	int best = -1;

	dec->chain[ipo] = 0;
	for (size_t o = ipo; o-- > 0;) {
		int n = decode_one(dec->h_len, dec->in_len, code + o, len - o,
				   code_addr + o);

		dec->step[o] = n;
		if (n > 0 && o + n <= ipo && dec->chain[o + n] >= 0)
			dec->chain[o] = dec->chain[o + n] + 1;
		else
			dec->chain[o] = -1;
		if (dec->chain[o] > 0)
			best = o;
	}
	return best;
}

/* Offsets of the last (up to) want instructions before IP on the chain that
 * starts at start, nearest first.  Returns how many. */
static int last_offsets(const struct cm_decoder *dec, int start, int want,
			size_t *offs)
{
	int count = dec->chain[start];
	int skip = count > want ? count - want : 0;
	int n = count - skip;
	size_t o = start;

	for (int i = 0; i < skip; i++)
		o += dec->step[o];
	for (int i = n - 1; i >= 0; i--) {
		offs[i] = o;
		o += dec->step[o];
	}
	return n;
}

/* Samples that say nothing about sharing: a `pause` at IP or among the
 * instructions before it up to a barrier (a spin-wait: libgomp's barrier
 * and lock waits, glibc's spin locks pause in their loop; the load of
 * the flag they spin on would read as sharing), or IP just after a
 * system call (the timer fired as the thread came back from the kernel:
 * sched_yield, futex).  n instructions before IP at offs, nearest first.
 * True with d->reason set. */
static bool idle_sample(struct cm_decoder *dec, const uint8_t *code,
			size_t len, uint64_t code_addr, size_t ipo,
			const size_t *offs, int n, struct ip_desc *d)
{
	cs_insn *in = dec->in_det;

	if (decode_one(dec->h_det, in, code + ipo, len - ipo,
		       code_addr + ipo) && in->id == X86_INS_PAUSE) {
		d->reason = CM_DECODE_SPIN;
		return true;
	}
	for (int k = 0; k < n; k++) {
		if (!decode_one(dec->h_det, in, code + offs[k], len - offs[k],
				code_addr + offs[k]))
			return false;
		if (in->id == X86_INS_PAUSE) {
			d->reason = CM_DECODE_SPIN;
			return true;
		}
		if (k == 0 && (in->id == X86_INS_SYSCALL ||
			       in->id == X86_INS_SYSENTER)) {
			d->reason = CM_DECODE_SYSCALL;
			return true;
		}
		if (is_barrier(dec->h_det, in))
			return false;
	}
	return false;
}

/* Decode the window around ip into d (not yet keyed). */
static void decode_window(struct cm_decoder *dec, const uint8_t *code,
			  size_t len, uint64_t code_addr, uint64_t ip,
			  struct ip_desc *d)
{
	size_t ipo = ip - code_addr;
	size_t offs[CM_DECODE_MAX_LOOKBACK];
	enum cm_decode_reason first = CM_DECODE_OK;
	struct reg_track track = { .clobbered = 0 };
	int start, n = 0, nidle = 0;

	memset(d, 0, sizeof(*d));
	dec->st.decodes++;
	if (ipo > CM_DECODE_MAX_WINDOW) {	/* keep the bytes nearest IP */
		size_t cut = ipo - CM_DECODE_MAX_WINDOW;

		code += cut;
		len -= cut;
		code_addr += cut;
		ipo -= cut;
	}
	start = ipo ? sync_on_ip(dec, code, len, code_addr, ipo) : -1;
	/* At least the instruction before IP, for idle_sample. */
	if (start >= 0)
		nidle = last_offsets(dec, start, dec->lookback > 0 ?
				     dec->lookback : 1, offs);
	n = nidle < dec->lookback ? nidle : dec->lookback;
	if (idle_sample(dec, code, len, code_addr, ipo, offs, nidle, d))
		return;
	/* The instruction at IP has not run yet: its registers are exact. */
	if (decode_one(dec->h_det, dec->in_det, code + ipo, len - ipo, ip) &&
	    describe_insn(dec, dec->in_det, &track, 0, d, &first))
		return;
	for (int k = 0; k < n; k++) {
		cs_insn *in = dec->in_det;

		if (!decode_one(dec->h_det, in, code + offs[k], len - offs[k],
				code_addr + offs[k]) || is_barrier(dec->h_det, in))
			break;
		/* Its own writes count: "mov rax,[rax]" loses its base. */
		track_writes(dec->h_det, in, &track);
		if (describe_insn(dec, in, &track, k + 1, d, &first))
			return;
	}
	if (first != CM_DECODE_OK)
		d->reason = first;
	else if (ipo && start < 0)
		d->reason = CM_DECODE_SYNC_FAILED;
	else
		d->reason = CM_DECODE_NO_MEM;
}

/* Evaluate a descriptor against registers into out; returns 1 or 0. */
static int evaluate(const struct ip_desc *d, const struct cm_regs *regs,
		    struct cm_access *out)
{
	memset(out, 0, sizeof(*out));
	out->reason = d->reason;
	out->back = d->back;
	out->insn_addr = d->insn_addr;
	if (d->reason != CM_DECODE_OK)
		return 0;
	for (unsigned i = 0; i < d->nref; i++) {
		const struct ref_desc *r = &d->ref[i];
		uint64_t a = (uint64_t)r->disp;

		if ((r->base >= 0 && !(regs->valid & (1u << r->base))) ||
		    (r->index >= 0 && !(regs->valid & (1u << r->index)))) {
			out->reason = CM_DECODE_NO_REGS;
			return 0;
		}
		if (r->base >= 0)
			a += regs->v[r->base];
		if (r->index >= 0)
			a += regs->v[r->index] * r->scale;
		if (r->addr32)
			a &= 0xffffffffu;
		out->ref[i].addr = a;
		out->ref[i].size = r->size;
		out->ref[i].rw = r->rw;
	}
	out->nref = d->nref;
	return 1;
}

/* First slot of the set of (code_id, ip). */
static struct ip_desc *cache_set(struct cm_decoder *dec, uint64_t code_id,
				 uint64_t ip)
{
	uint64_t h = ip ^ (code_id * 0x9e3779b97f4a7c15ull);

	/* splitmix64 finaliser: spreads nearby IPs over the table */
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	h ^= h >> 31;
	return &dec->cache[(h & (CACHE_SETS - 1)) * CACHE_WAYS];
}

/* The slot holding (code_id, ip), or NULL. */
static struct ip_desc *cache_find(struct cm_decoder *dec, uint64_t code_id,
				  uint64_t ip)
{
	struct ip_desc *set = cache_set(dec, code_id, ip);

	for (int w = 0; w < CACHE_WAYS; w++) {
		struct ip_desc *d = &set[w];

		if (d->used && d->ip == ip && d->code_id == code_id) {
			dec->st.cache_hits++;
			return d;
		}
	}
	return NULL;
}

/* The slot to fill for (code_id, ip): a free one, else the oldest of the
 * set (first in, first out). */
static struct ip_desc *cache_victim(struct cm_decoder *dec, uint64_t code_id,
				    uint64_t ip)
{
	struct ip_desc *set = cache_set(dec, code_id, ip), *old = set;

	for (int w = 0; w < CACHE_WAYS; w++) {
		if (!set[w].used)
			return &set[w];
		if (set[w].stamp < old->stamp)
			old = &set[w];
	}
	return old;
}

static int finish(struct cm_decoder *dec, const struct ip_desc *d,
		  const struct cm_regs *regs, struct cm_access *out)
{
	int rc = evaluate(d, regs, out);

	dec->st.samples++;
	dec->st.reason[out->reason]++;
	return rc;
}

int cm_decode_cached(struct cm_decoder *dec, uint64_t code_id, uint64_t ip,
		     const struct cm_regs *regs, struct cm_access *out,
		     struct cm_error *err)
{
	struct ip_desc *d;

	if (!dec || !regs || !out)
		return cm_errorf(err, EINVAL, "decode: NULL argument");
	d = cache_find(dec, code_id, ip);
	if (!d)
		return cm_errorf(err, ENOENT, "decode: ip 0x%llx not cached",
				 (unsigned long long)ip);
	return finish(dec, d, regs, out);
}

int cm_decode_address(struct cm_decoder *dec, uint64_t code_id,
		      const uint8_t *code, size_t len, uint64_t code_addr,
		      uint64_t ip, const struct cm_regs *regs,
		      struct cm_access *out, struct cm_error *err)
{
	struct ip_desc *d;

	if (!dec || !regs || !out)
		return cm_errorf(err, EINVAL, "decode: NULL argument");
	d = cache_find(dec, code_id, ip);
	if (d)
		return finish(dec, d, regs, out);
	if (!code || ip < code_addr || ip - code_addr > len)
		return cm_errorf(err, EINVAL, "decode: ip 0x%llx outside the "
				 "code window 0x%llx+%zu",
				 (unsigned long long)ip,
				 (unsigned long long)code_addr, len);
	d = cache_victim(dec, code_id, ip);
	decode_window(dec, code, len, code_addr, ip, d);
	d->stamp = ++dec->inserted;
	d->code_id = code_id;
	d->ip = ip;
	d->used = 1;
	return finish(dec, d, regs, out);
}

void cm_decoder_stats(const struct cm_decoder *dec,
		      struct cm_decode_stats *stats)
{
	if (dec)
		*stats = dec->st;
	else
		memset(stats, 0, sizeof(*stats));
}

static int open_handle(csh *h, cs_insn **in, bool detail,
		       struct cm_error *err)
{
	cs_err e = cs_open(CS_ARCH_X86, CS_MODE_64, h);

	if (e == CS_ERR_OK && detail)
		e = cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	if (e != CS_ERR_OK) {
		if (*h)
			cs_close(h);
		*h = 0;
		return cm_errorf(err, EIO, "capstone x86-64: %s",
				 cs_strerror(e));
	}
	*in = cs_malloc(*h);
	if (!*in)
		return cm_errorf(err, ENOMEM, "capstone: no memory");
	return 0;
}

struct cm_decoder *cm_decoder_new(int lookback, unsigned flags,
				  struct cm_error *err)
{
	const unsigned known = CM_DECODE_KEEP_RIP | CM_DECODE_KEEP_STACK;
	struct cm_decoder *dec;

	if (lookback < 0 || lookback > CM_DECODE_MAX_LOOKBACK) {
		cm_errorf(err, EINVAL, "decoder: lookback %d outside 0..%d",
			  lookback, CM_DECODE_MAX_LOOKBACK);
		return NULL;
	}
	if (flags & ~known) {
		cm_errorf(err, EINVAL, "decoder: unknown flags 0x%x",
			  flags & ~known);
		return NULL;
	}
	dec = calloc(1, sizeof(*dec));
	if (!dec) {
		cm_errorf(err, ENOMEM, "decoder: no memory");
		return NULL;
	}
	dec->lookback = lookback;
	dec->flags = flags;
	if (open_handle(&dec->h_len, &dec->in_len, false, err) < 0 ||
	    open_handle(&dec->h_det, &dec->in_det, true, err) < 0) {
		int e = errno;

		cm_decoder_free(dec);
		errno = e;
		return NULL;
	}
	return dec;
}

void cm_decoder_free(struct cm_decoder *dec)
{
	if (!dec)
		return;
	if (dec->in_len)
		cs_free(dec->in_len, 1);
	if (dec->in_det)
		cs_free(dec->in_det, 1);
	if (dec->h_len)
		cs_close(&dec->h_len);
	if (dec->h_det)
		cs_close(&dec->h_det);
	free(dec);
}
