#include "plan/sites.h"
#include "util/util.h"

#include <Zydis/Zydis.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* How many instructions from the start we look at for a cheap entry site. */
#define ENTRY_LOOKAHEAD 4

struct insn {
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t addr;
	const uint8_t *bytes;
};

/* The decoders: full, and minimal -- lengths, raw fields (immediates,
 * displacement, ModRM) and the category only, for the scan of a whole
 * binary's code (a quarter faster).  Set up once, read by any thread
 * (callers.c scans on two). */
static ZydisDecoder full_dec, minimal_dec;
static pthread_once_t decoders_once = PTHREAD_ONCE_INIT;

static void init_decoders(void)
{
	ZydisDecoderInit(&full_dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecoderInit(&minimal_dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecoderEnableMode(&minimal_dec, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
}

static ZydisDecoder *decoder(void)
{
	pthread_once(&decoders_once, init_decoders);
	return &full_dec;
}

static ZydisDecoder *minimal_decoder(void)
{
	pthread_once(&decoders_once, init_decoders);
	return &minimal_dec;
}

static bool decode(const uint8_t *p, size_t n, uint64_t addr, struct insn *out)
{
	out->addr = addr;
	out->bytes = p;
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder(), p, n, &out->in, out->ops));
}

/* decode() in two steps, for a walk over every instruction of a function
 * that looks at the operands of few of them (half the decoding time). */
static bool decode_insn(const uint8_t *p, size_t n, uint64_t addr, struct insn *out, ZydisDecoderContext *ctx)
{
	out->addr = addr;
	out->bytes = p;
	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder(), ctx, p, n, &out->in));
}

static bool decode_operands(struct insn *x, const ZydisDecoderContext *ctx)
{
	memset(x->ops, 0, sizeof(x->ops));
	return ZYAN_SUCCESS(ZydisDecoderDecodeOperands(decoder(), ctx, &x->in, x->ops, x->in.operand_count));
}

/* Direct (relative) branch target, or 0. */
static uint64_t branch_target(const struct insn *x)
{
	for (int i = 0; i < x->in.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];
		if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op->imm.is_relative) {
			ZyanU64 t;
			if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&x->in, op, x->addr, &t)))
				return t;
		}
	}
	return 0;
}

/* jmp *slot(%rip): a jump through a GOT slot, which rustc (-Z plt=no) and
 * gcc -fno-plt emit for calls into other crates or libraries; at the end of
 * a function it is a tail call.  (A jump table indexes a register.) */
static bool got_jump(const struct insn *x)
{
	const ZydisDecodedOperand *op = &x->ops[0];
	return x->in.meta.category == ZYDIS_CATEGORY_UNCOND_BR && x->in.operand_count_visible == 1 &&
	       op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == ZYDIS_REGISTER_RIP &&
	       op->mem.index == ZYDIS_REGISTER_NONE;
}

/* The nops the x86 uprobe code emulates: exactly the kernel's own
 * (x86_nops[len] of arch/x86/kernel/alternative.c, len 1..8), compared byte
 * for byte.  Measured on 6.18 with tracefs probes: these cost ~5.5 us a hit,
 * another encoding of a nop (`0f 1f 04 00`, gas's `nopl 0x0(%rax,%rax,1)`,
 * or a 9-byte one) ~19 us, single-stepped. */
static const uint8_t kernel_nops[9][8] = {
	[1] = {0x90},
	[2] = {0x66, 0x90},
	[3] = {0x0f, 0x1f, 0x00},
	[4] = {0x0f, 0x1f, 0x40, 0x00},
	[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00},
	[6] = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
	[7] = {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
	[8] = {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

static bool kernel_nop(const struct insn *x)
{
	return x->in.length >= 1 && x->in.length <= 8 && !memcmp(x->bytes, kernel_nops[x->in.length], x->in.length);
}

/* Instructions the x86 uprobe code emulates instead of single-stepping
 * (arch/x86/kernel/uprobes.c: relative jmp/jcc/call, push reg, nop).  The
 * kernel refuses to emulate branches with prefixes, so demand the plain
 * encodings.  Emulated hits cost ~1 us here, single-stepped ~10 us. */
static bool kernel_emulates(const struct insn *x)
{
	const uint8_t *b = x->bytes;
	switch (x->in.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		return (b[0] >= 0x70 && b[0] <= 0x7f) || (b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f);
	case ZYDIS_CATEGORY_UNCOND_BR:
		return b[0] == 0xeb || b[0] == 0xe9;
	case ZYDIS_CATEGORY_CALL:
		return b[0] == 0xe8;
	case ZYDIS_CATEGORY_PUSH:
		return (b[0] >= 0x50 && b[0] <= 0x57) || (b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57);
	case ZYDIS_CATEGORY_NOP:
	case ZYDIS_CATEGORY_WIDENOP: /* Zydis's name for the 0f 1f (multi-byte) nops */
		return kernel_nop(x);
	default:
		return false;
	}
}

/* The kernel's 5-byte nop, not crossing a page: from Linux 6.18 the kernel
 * rewrites a uprobe there, after its first hit, into a call to a trampoline
 * that enters the kernel by the uprobe syscall -- no trap
 * (arch/x86/kernel/uprobes.c, arch_uprobe_optimize).  Measured here with
 * tracefs probes: ~0.7-1.3 us a hit, against ~5.5 us emulated and ~19 us
 * single-stepped.  gcc -pg -mfentry -mnop-mcount and loop alignment put
 * such nops in code.  (6.18 optimizes any 5-byte nop, but emulates only
 * this one when it cannot: the one to count on.  The call writes below SP:
 * harmless at a function's entry and after a call, where no red zone is
 * live.)  Older kernels emulate it. */
static bool kernel_optimizes(const struct insn *x)
{
	return x->in.length == 5 && kernel_nop(x) && (x->addr & 4095) <= 4096 - 5;
}

/* May this register be written before the entry site without changing what
 * the entry site sees (arguments, goroutine, SP)? */
static bool clobber_ok(ZydisRegister r, enum ct_callconv cc)
{
	if (r == ZYDIS_REGISTER_RFLAGS || r == ZYDIS_REGISTER_EFLAGS || r == ZYDIS_REGISTER_FLAGS ||
	    r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP || r == ZYDIS_REGISTER_IP)
		return true;
	/* Vector and mask registers: BPF cannot read them, so arguments in
	 * them are shown unavailable whether written or not. */
	switch (ZydisRegisterGetClass(r)) {
	case ZYDIS_REGCLASS_XMM:
	case ZYDIS_REGCLASS_YMM:
	case ZYDIS_REGCLASS_ZMM:
	case ZYDIS_REGCLASS_MASK:
		return true;
	default:
		break;
	}
	r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	switch (cc) {
	case CT_CC_GO_REG: /* R12, R13 are scratch in ABIInternal */
		return r == ZYDIS_REGISTER_R12 || r == ZYDIS_REGISTER_R13;
	case CT_CC_GO_STACK: /* args live on the stack: only SP matters */
		return r != ZYDIS_REGISTER_RSP && r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15;
	default: /* SysV, Rust: R10, R11 are scratch */
		return r == ZYDIS_REGISTER_R10 || r == ZYDIS_REGISTER_R11;
	}
}

/* An instruction that may run before the entry site: it writes no memory,
 * no register that matters, and does not branch. */
static bool harmless_before_entry(const struct insn *x, enum ct_callconv cc)
{
	if (x->in.meta.category == ZYDIS_CATEGORY_COND_BR || x->in.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	    x->in.meta.category == ZYDIS_CATEGORY_CALL || x->in.meta.category == ZYDIS_CATEGORY_RET ||
	    x->in.meta.category == ZYDIS_CATEGORY_INTERRUPT || x->in.meta.category == ZYDIS_CATEGORY_SYSCALL)
		return false;
	for (int i = 0; i < x->in.operand_count; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];
		if (!(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY)
			return false;
		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && !clobber_ok(op->reg.value, cc))
			return false;
	}
	return true;
}

/* Opcodes the kernel's x86 uprobe code refuses in 64-bit code: the zeros of
 * good_insns_64 in arch/x86/kernel/uprobes.c (Linux 6.x; checked on 6.18 by
 * putting a probe on each).  The kernel looks up the first opcode byte after
 * the legacy and REX prefixes (0F-escaped opcodes are all accepted); for
 * VEX/EVEX instructions the byte after that prefix, whatever its map. */
static const uint8_t refused_opcodes[] = {
	0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60, 0x61, 0x62,
	0x6c, 0x6d, 0x6e, 0x6f, 0x82, 0x9a, 0xcc, 0xcd, 0xce, 0xcf, 0xd4, 0xd5, 0xd6, 0xe4,
	0xe5, 0xe6, 0xe7, 0xea, 0xec, 0xed, 0xee, 0xef, 0xf1, 0xf4, 0xfa, 0xfb,
};

static bool opcode_refused(uint8_t op)
{
	for (size_t i = 0; i < sizeof(refused_opcodes); i++)
		if (refused_opcodes[i] == op)
			return true;
	return false;
}

/* Why no probe may go on X, or NULL.  Mostly the kernel's own rules: it
 * refuses the probe (and, in a uprobe_multi link, the whole link, with
 * ENOTSUPP: "Unknown error 524").  Plus one of ours: VEX/EVEX instructions
 * the kernel accepts are single-stepped wrongly (measured on 6.18 in a KVM
 * guest: vpbroadcastb, vpcmpeqb and vmovq %xmm,%r64 gave wrong results when
 * probed; legacy SSE ones were all right), so none is ever probed. */
static const char *uprobe_refusal(const struct insn *x)
{
	for (int i = 0; i < x->in.raw.prefix_count; i++)
		switch (x->in.raw.prefixes[i].value) {
		case 0xf0:
			return "lock prefix, refused by the kernel";
		case 0x26:
		case 0x2e:
		case 0x36:
		case 0x3e: /* also notrack */
			return "segment prefix, refused by the kernel";
		}
	uint8_t op = x->in.opcode;
	switch (x->in.encoding) {
	case ZYDIS_INSTRUCTION_ENCODING_LEGACY:
	case ZYDIS_INSTRUCTION_ENCODING_3DNOW:
		break;
	case ZYDIS_INSTRUCTION_ENCODING_VEX:
	case ZYDIS_INSTRUCTION_ENCODING_EVEX:
		return opcode_refused(op) ? "VEX/EVEX opcode refused by the kernel"
					  : "VEX/EVEX instruction, single-stepped wrongly by the kernel";
	default:
		return "XOP/MVEX instruction, not known to the kernel";
	}
	if (x->in.opcode_map != ZYDIS_OPCODE_MAP_DEFAULT)
		return NULL; /* 0F-escaped: accepted */
	if (opcode_refused(op))
		return "opcode refused by the kernel";
	/* mov to %ss masks the next instruction's exceptions */
	if (op == 0x8e && x->in.raw.modrm.reg == 2)
		return "mov to %ss, refused by the kernel";
	return NULL;
}

/* relative branches with an operand-size prefix: refused by the kernel */
static bool refused_branch(const struct insn *x)
{
	if (!(x->in.attributes & ZYDIS_ATTRIB_HAS_OPERANDSIZE) || x->in.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return false;
	uint8_t b = x->in.opcode;
	return x->in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT ? (b == 0xe8 || b == 0xe9 || b == 0xeb || (b >= 0x70 && b <= 0x7f))
							    : x->in.opcode_map == ZYDIS_OPCODE_MAP_0F && b >= 0x80 && b <= 0x8f;
}

static const char *probe_refusal(const struct insn *x)
{
	const char *r = uprobe_refusal(x);
	return r ? r : refused_branch(x) ? "branch with a 0x66 prefix, refused by the kernel" : NULL;
}

const char *ct_uprobe_refuses(const uint8_t *code, size_t len, uint64_t addr)
{
	struct insn x;
	if (!decode(code, len, addr, &x))
		return "undecodable instruction";
	return probe_refusal(&x);
}

static bool only_padding(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xcc && p[i] != 0x00)
			return false;
	return true;
}

/* ---- indirect jumps: tail jump or jump table (ct_indirect_jumps) ---- */

static ZydisRegister gpr64(ZydisRegister r)
{
	return r == ZYDIS_REGISTER_NONE ? r : ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

/* What an instruction does to SP and RBP, as the SP walk follows them. */
enum sp_op {
	SP_KEEP = 0,
	SP_ADD,      /* SP += imm (push, pop, add/sub $imm, lea imm(%rsp)) */
	SP_FROM_RBP, /* SP = RBP + imm (mov %rbp,%rsp; lea imm(%rbp),%rsp; leave) */
	SP_LOST,     /* anything else that writes SP (and $-16,%rsp) */
};
enum rbp_op { RBP_KEEP = 0, RBP_FROM_SP, RBP_LOST };

#define IJ_BRANCH_TARGET 0x1 /* a direct branch of the function lands here */
#define IJ_END 0x2           /* no fall-through: ret, jmp, ud2, hlt, int3 */
#define IJ_CALL 0x4
#define IJ_IJUMP 0x8         /* an indirect jmp */
#define IJ_NOP 0x10          /* a nop (alignment padding) */

struct ij_insn {
	uint64_t addr;
	uint64_t target; /* a direct branch's target inside the function, else 0 */
	int32_t sp_imm, rbp_imm;
	uint8_t sp_op, rbp_op, flags;
	/* the SP walk: SP and RBP as bytes from SP at the entry */
	bool seen, sp_known, rbp_known;
	int32_t sp, rbp;
};

static void ij_effect(const struct insn *x, struct ij_insn *o)
{
	const ZydisDecodedOperand *op = x->ops;
	ZydisMnemonic m = x->in.mnemonic;
	int width = x->in.operand_width / 8;
	bool to_sp = x->in.operand_count_visible >= 1 && op[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		     gpr64(op[0].reg.value) == ZYDIS_REGISTER_RSP;
	bool to_bp = x->in.operand_count_visible >= 1 && op[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		     gpr64(op[0].reg.value) == ZYDIS_REGISTER_RBP && op[0].size == 64;
	switch (m) {
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_PUSHFQ:
		o->sp_op = SP_ADD, o->sp_imm = -width;
		return;
	case ZYDIS_MNEMONIC_POP:
	case ZYDIS_MNEMONIC_POPFQ:
		o->sp_op = to_sp ? SP_LOST : SP_ADD, o->sp_imm = width;
		if (m == ZYDIS_MNEMONIC_POP && gpr64(op[0].reg.value) == ZYDIS_REGISTER_RBP)
			o->rbp_op = RBP_LOST;
		return;
	case ZYDIS_MNEMONIC_CALL: /* SP is back where it was when it returns */
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_JMP:
		return;
	case ZYDIS_MNEMONIC_LEAVE:
		o->sp_op = SP_FROM_RBP, o->sp_imm = 8, o->rbp_op = RBP_LOST;
		return;
	case ZYDIS_MNEMONIC_ADD:
	case ZYDIS_MNEMONIC_SUB:
		if (to_sp && op[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
			int64_t v = op[1].imm.value.s;
			o->sp_op = SP_ADD, o->sp_imm = (int32_t)(m == ZYDIS_MNEMONIC_ADD ? v : -v);
			return;
		}
		break;
	case ZYDIS_MNEMONIC_LEA:
		if ((to_sp || to_bp) && op[1].mem.index == ZYDIS_REGISTER_NONE) {
			ZydisRegister b = gpr64(op[1].mem.base);
			int32_t d = (int32_t)op[1].mem.disp.value;
			if (to_sp && b == ZYDIS_REGISTER_RSP)
				o->sp_op = SP_ADD, o->sp_imm = d;
			else if (to_sp && b == ZYDIS_REGISTER_RBP)
				o->sp_op = SP_FROM_RBP, o->sp_imm = d;
			else if (to_bp && b == ZYDIS_REGISTER_RSP)
				o->rbp_op = RBP_FROM_SP, o->rbp_imm = d;
			else
				break;
			return;
		}
		break;
	case ZYDIS_MNEMONIC_MOV:
		if ((to_sp || to_bp) && op[1].type == ZYDIS_OPERAND_TYPE_REGISTER && op[1].size == 64) {
			ZydisRegister s = gpr64(op[1].reg.value);
			if (to_sp && s == ZYDIS_REGISTER_RBP) {
				o->sp_op = SP_FROM_RBP;
				return;
			}
			if (to_bp && s == ZYDIS_REGISTER_RSP) {
				o->rbp_op = RBP_FROM_SP;
				return;
			}
		}
		break;
	default:
		break;
	}
	for (int i = 0; i < x->in.operand_count; i++) {
		if (op[i].type != ZYDIS_OPERAND_TYPE_REGISTER || !(op[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		ZydisRegister r = gpr64(op[i].reg.value);
		if (r == ZYDIS_REGISTER_RSP)
			o->sp_op = SP_LOST;
		else if (r == ZYDIS_REGISTER_RBP)
			o->rbp_op = RBP_LOST;
	}
}

static long ij_index(const struct ij_insn *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].addr == addr ? (long)lo : -1;
}

/* Merges state (SP, RBP) into instruction I: a value seen two ways is not known. */
static bool ij_join(struct ij_insn *d, bool spk, int32_t sp, bool bpk, int32_t bp)
{
	if (!d->seen) {
		d->seen = true;
		d->sp_known = spk, d->sp = sp, d->rbp_known = bpk, d->rbp = bp;
		return true;
	}
	bool changed = false;
	if (d->sp_known && (!spk || sp != d->sp))
		d->sp_known = false, changed = true;
	if (d->rbp_known && (!bpk || bp != d->rbp))
		d->rbp_known = false, changed = true;
	return changed;
}

/* How the register a `jmp *%reg` at V[I] goes to got its value, on the
 * straight line before it: true for a tail jump (a pointer loaded from
 * memory, returned by a call, or there before that line), false with *WHY
 * for a target computed from a table (a frameless function's jump table)
 * or made some other way, and with *KONST for a constant address (lea
 * f(%rip) or an immediate), which the caller places. */
static bool ij_pointer_target(const uint8_t *code, size_t len, uint64_t addr, const struct ij_insn *v, long i,
			      ZydisRegister reg, const char **why, uint64_t *konst)
{
	for (long k = i - 1; k >= 0 && !(v[k + 1].flags & IJ_BRANCH_TARGET) && !(v[k].flags & IJ_END); k--) {
		struct insn x;
		size_t off = v[k].addr - addr;
		if (!decode(code + off, len - off, v[k].addr, &x))
			break;
		if (v[k].flags & IJ_CALL) {
			if (reg == ZYDIS_REGISTER_RAX)
				return true; /* a pointer the call returned */
			continue;
		}
		bool writes = false;
		for (int o = 0; o < x.in.operand_count && !writes; o++)
			writes = x.ops[o].type == ZYDIS_OPERAND_TYPE_REGISTER &&
				 (x.ops[o].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) && gpr64(x.ops[o].reg.value) == reg;
		if (!writes)
			continue;
		const ZydisDecodedOperand *src = &x.ops[1];
		switch (x.in.mnemonic) {
		case ZYDIS_MNEMONIC_MOV:
			if (src->type == ZYDIS_OPERAND_TYPE_MEMORY)
				return true; /* loaded: a function pointer */
			if (src->type == ZYDIS_OPERAND_TYPE_REGISTER && src->size == 64) {
				reg = gpr64(src->reg.value); /* a copy: where from */
				continue;
			}
			if (src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && src->size == 64)
				*konst = src->imm.value.u;
			*why = src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE ? "its target is a constant"
									 : "its target is computed some other way";
			return false;
		case ZYDIS_MNEMONIC_LEA:
			if (src->mem.base == ZYDIS_REGISTER_RIP && src->mem.index == ZYDIS_REGISTER_NONE &&
			    x.ops[0].size == 64) {
				*konst = x.addr + x.in.length + (uint64_t)src->mem.disp.value;
				*why = "its target is a constant";
				return false;
			}
			/* fall through */
		case ZYDIS_MNEMONIC_ADD:
		case ZYDIS_MNEMONIC_SUB:
		case ZYDIS_MNEMONIC_MOVSXD:
		case ZYDIS_MNEMONIC_MOVSX:
			*why = "its target is computed (a table's offset added to its base): a frameless "
			       "function's jump table";
			return false;
		default:
			*why = "its target is computed some other way";
			return false;
		}
	}
	return true; /* there before the straight line to the jump: passed in */
}

static void ij_classify(const uint8_t *code, size_t len, uint64_t addr, const struct ij_insn *v, long i,
			struct ct_ijump *o)
{
	struct insn x;
	size_t off = v[i].addr - addr;
	o->addr = v[i].addr;
	o->sp_known = v[i].seen && v[i].sp_known;
	o->sp_below = o->sp_known ? -v[i].sp : 0;
	o->kind = CT_IJUMP_UNDECIDED;
	o->target = 0;
	if (!decode(code + off, len - off, v[i].addr, &x)) {
		o->why = "it does not decode";
		return;
	}
	const ZydisDecodedOperand *op = &x.ops[0];
	if (got_jump(&x)) {
		o->kind = CT_IJUMP_GOT;
		o->why = "through a GOT slot: a call into another module";
		return;
	}
	if (x.in.attributes & ZYDIS_ATTRIB_HAS_NOTRACK) {
		o->kind = CT_IJUMP_INSIDE;
		o->why = "notrack: a jump table's jump (CET)";
		return;
	}
	if (probe_refusal(&x)) {
		o->why = "the kernel refuses a probe on it";
		return;
	}
	if (!v[i].seen) {
		o->why = "not reached from the entry by direct branches (a case of a jump table?): SP there is unknown";
		return;
	}
	if (!v[i].sp_known) {
		o->why = "SP there is not known (changed in a way not followed, or different on two paths)";
		return;
	}
	if (v[i].sp != 0) {
		o->kind = CT_IJUMP_INSIDE;
		o->why = "its frame is still allocated: a jump table's jump inside the function";
		return;
	}
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		if (op->mem.index != ZYDIS_REGISTER_NONE && op->mem.base == ZYDIS_REGISTER_NONE) {
			o->why = "SP is at its entry level, but through an absolute table (a frameless function's jump "
				 "table, or an array of function pointers): cannot tell which";
			return;
		}
		o->kind = CT_IJUMP_TAIL;
		o->why = "SP is back at its entry level, the target a pointer in memory: a tail jump";
		return;
	}
	ZydisRegister r = op->type == ZYDIS_OPERAND_TYPE_REGISTER ? gpr64(op->reg.value) : ZYDIS_REGISTER_NONE;
	if (r == ZYDIS_REGISTER_NONE || r == ZYDIS_REGISTER_RSP) {
		o->why = "an operand not followed";
		return;
	}
	const char *why = NULL;
	uint64_t konst = 0;
	if (ij_pointer_target(code, len, addr, v, i, r, &why, &konst)) {
		o->kind = CT_IJUMP_TAIL;
		o->why = "SP is back at its entry level, the target a pointer (loaded, returned or passed in): a tail "
			 "jump";
	} else if (konst && (konst < addr || konst >= addr + len)) {
		o->kind = CT_IJUMP_TAIL;
		o->target = konst;
		o->why = "SP is back at its entry level, the target a constant address outside the function: a tail "
			 "jump to it";
	} else if (konst) {
		o->kind = CT_IJUMP_INSIDE;
		o->why = "its target is a constant address inside the function";
	} else {
		o->kind = why && strstr(why, "jump table") ? CT_IJUMP_INSIDE : CT_IJUMP_UNDECIDED;
		o->why = why;
	}
}

typedef CT_VEC(long) ij_worklist;

/* Does the instruction after call I fall through into a branch target,
 * maybe over alignment padding? */
static bool ij_call_before_target(const struct ij_insn *v, size_t n, size_t i)
{
	size_t k = i + 1;
	while (k < n && (v[k].flags & (IJ_NOP | IJ_BRANCH_TARGET)) == IJ_NOP)
		k++;
	return k < n && (v[k].flags & IJ_BRANCH_TARGET);
}

/* The state of SP and RBP after C. */
static void ij_after(const struct ij_insn *c, bool *spk, int32_t *sp, bool *bpk, int32_t *bp)
{
	*spk = c->sp_known, *bpk = c->rbp_known;
	*sp = c->sp, *bp = c->rbp;
	switch (c->sp_op) {
	case SP_ADD:
		*sp += c->sp_imm;
		break;
	case SP_FROM_RBP:
		*spk = c->rbp_known, *sp = c->rbp + c->sp_imm;
		break;
	case SP_LOST:
		*spk = false;
		break;
	}
	if (c->rbp_op == RBP_FROM_SP)
		*bpk = c->sp_known, *bp = c->sp + c->rbp_imm;
	else if (c->rbp_op == RBP_LOST)
		*bpk = false;
}

/* SP (and RBP) along the direct branches from the instructions in WORK,
 * whose state is set (ij_join).  A call's fall-through into a branch
 * target, or into padding before one, is left to the branch: after a
 * call that never returns (abort; V8's V8_Fatal after a push) comes
 * another block, whose SP may differ (ij_walk_weak follows it where
 * nothing else reaches). */
static void ij_walk_as(struct ij_insn *v, size_t n, ij_worklist *work, bool weak)
{
	while (work->n) {
		long i = work->v[--work->n];
		struct ij_insn *c = &v[i];
		bool spk, bpk;
		int32_t sp, bp;
		ij_after(c, &spk, &sp, &bpk, &bp);
		if (c->target) {
			long j = ij_index(v, n, c->target);
			if ((!weak || !v[j].seen) && ij_join(&v[j], spk, sp, bpk, bp))
				CT_VEC_PUSH(*work, j);
		}
		if ((c->flags & IJ_END) || (size_t)i + 1 >= n ||
		    ((c->flags & IJ_CALL) && ij_call_before_target(v, n, (size_t)i)))
			continue;
		if ((!weak || !v[i + 1].seen) && ij_join(&v[i + 1], spk, sp, bpk, bp))
			CT_VEC_PUSH(*work, i + 1);
	}
}

static void ij_walk(struct ij_insn *v, size_t n, ij_worklist *work)
{
	ij_walk_as(v, n, work, false);
}

/* ... then those fall-throughs, into what nothing else reached (a loop
 * aligned after a call that returns), and on from there only into what
 * nothing else reached either: where they meet, the other path's state
 * holds. */
static void ij_walk_weak(struct ij_insn *v, size_t n, ij_worklist *work)
{
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i + 1 < n; i++) {
			if (!v[i].seen || !(v[i].flags & IJ_CALL) || v[i + 1].seen || !ij_call_before_target(v, n, i))
				continue;
			bool spk, bpk;
			int32_t sp, bp;
			ij_after(&v[i], &spk, &sp, &bpk, &bp);
			if (ij_join(&v[i + 1], spk, sp, bpk, bp)) {
				CT_VEC_PUSH(*work, (long)i + 1);
				ij_walk_as(v, n, work, true);
				more = true;
			}
		}
	}
}

size_t ct_indirect_jumps(const uint8_t *code, size_t len, uint64_t addr, struct ct_ijump *out, size_t max)
{
	CT_VEC(struct ij_insn) v = {0};
	struct insn x;
	size_t njumps = 0;
	for (size_t off = 0; off < len;) {
		if (!decode(code + off, len - off, addr + off, &x)) {
			if (off && only_padding(code + off, len - off))
				break;
			CT_VEC_FREE(v);
			return 0; /* not code we can follow: no jump is a tail jump */
		}
		struct ij_insn o = {0};
		o.addr = x.addr;
		ZydisInstructionCategory cat = x.in.meta.category;
		uint64_t t = cat == ZYDIS_CATEGORY_COND_BR || cat == ZYDIS_CATEGORY_UNCOND_BR ? branch_target(&x) : 0;
		if (t >= addr && t < addr + len)
			o.target = t;
		if (cat == ZYDIS_CATEGORY_RET || cat == ZYDIS_CATEGORY_UNCOND_BR || x.in.mnemonic == ZYDIS_MNEMONIC_UD2 ||
		    x.in.mnemonic == ZYDIS_MNEMONIC_HLT || x.in.mnemonic == ZYDIS_MNEMONIC_INT3)
			o.flags |= IJ_END;
		if (cat == ZYDIS_CATEGORY_CALL)
			o.flags |= IJ_CALL;
		if (cat == ZYDIS_CATEGORY_NOP || cat == ZYDIS_CATEGORY_WIDENOP)
			o.flags |= IJ_NOP;
		if (cat == ZYDIS_CATEGORY_UNCOND_BR && !t) {
			o.flags |= IJ_IJUMP;
			njumps++;
		}
		ij_effect(&x, &o);
		CT_VEC_PUSH(v, o);
		off += x.in.length;
	}
	if (!njumps) {
		CT_VEC_FREE(v);
		return 0;
	}
	bool irregular = false; /* a branch into an instruction: nothing is decided */
	for (size_t i = 0; i < v.n; i++) {
		long j = v.v[i].target ? ij_index(v.v, v.n, v.v[i].target) : -1;
		if (j >= 0)
			v.v[j].flags |= IJ_BRANCH_TARGET;
		else if (v.v[i].target)
			irregular = true;
	}
	/* SP from the entry along the direct branches. */
	ij_worklist work = {0};
	if (!irregular && v.n) {
		ij_join(&v.v[0], true, 0, false, 0);
		CT_VEC_PUSH(work, 0);
	}
	ij_walk(v.v, v.n, &work);
	/* The blocks no direct branch reaches are a switch's cases, which
	 * run in the frame that chose them: where every jump table's jump
	 * has one SP (and RBP), they start there.  A case that pops the
	 * frame and jumps through a pointer is a tail jump (OpenSSL's
	 * ossl_asn1_item_embed_free, toml_parser's ws_comment_newline: their
	 * callees' entries unwound them). */
	struct ij_insn *table = NULL;
	bool agree = !irregular;
	for (size_t i = 0; agree && i < v.n; i++) {
		struct ct_ijump c;
		if (!(v.v[i].flags & IJ_IJUMP) || !v.v[i].seen || !v.v[i].sp_known)
			continue;
		ij_classify(code, len, addr, v.v, (long)i, &c);
		if (c.kind != CT_IJUMP_INSIDE)
			continue;
		if (table && (table->sp != v.v[i].sp || table->rbp_known != v.v[i].rbp_known ||
			      (table->rbp_known && table->rbp != v.v[i].rbp)))
			agree = false;
		table = &v.v[i];
	}
	for (size_t i = 1; table && agree && i < v.n; i++)
		if (!v.v[i].seen && (v.v[i - 1].flags & IJ_END) &&
		    ij_join(&v.v[i], true, table->sp, table->rbp_known, table->rbp))
			CT_VEC_PUSH(work, (long)i);
	ij_walk(v.v, v.n, &work);
	ij_walk_weak(v.v, v.n, &work);
	CT_VEC_FREE(work);
	size_t n = 0;
	for (size_t i = 0; i < v.n; i++) {
		if (!(v.v[i].flags & IJ_IJUMP))
			continue;
		if (n < max) {
			ij_classify(code, len, addr, v.v, (long)i, &out[n]);
			if (irregular && out[n].kind != CT_IJUMP_GOT) {
				out[n].kind = CT_IJUMP_UNDECIDED;
				out[n].why = "a branch lands inside an instruction: the function's code is not followed";
			}
		}
		n++;
	}
	CT_VEC_FREE(v);
	return n;
}

/* The tail jumps among a function's indirect jumps (ct_indirect_jumps),
 * added to its exits as TAIL sites, to their target where it is a constant
 * (only those with KNOWN_ONLY).  Were any? */
static bool add_pointer_tails(const uint8_t *code, size_t len, uint64_t addr, bool known_only,
			      struct ct_exit_site **v, size_t *n, size_t *cap)
{
	size_t nj = ct_indirect_jumps(code, len, addr, NULL, 0), added = 0;
	struct ct_ijump *j = xcalloc(nj ? nj : 1, sizeof(*j));
	nj = ct_indirect_jumps(code, len, addr, j, nj);
	struct {
		struct ct_exit_site *v;
		size_t n, cap;
	} exits = {*v, *n, *cap};
	for (size_t k = 0; k < nj; k++)
		if (j[k].kind == CT_IJUMP_TAIL && (j[k].target || !known_only)) {
			struct ct_exit_site e = {j[k].addr, CT_SITE_TAIL, j[k].target, 0};
			CT_VEC_PUSH(exits, e);
			added++;
		}
	*v = exits.v, *n = exits.n, *cap = exits.cap;
	free(j);
	return added > 0;
}

static int cmp_exit_addr(const void *x, const void *y)
{
	const struct ct_exit_site *a = x, *b = y;
	return (a->addr > b->addr) - (a->addr < b->addr);
}

static bool leaves_line(const struct insn *x);

/* A conditional jump on the flags (jcc rel8/rel32): its condition code
 * (the opcode's low 4 bits, event.h ct_jcc_taken) + 1; else 0 (and for
 * jrcxz and loop, which test RCX). */
static uint8_t jcc_cond(const ZydisDecodedInstruction *in)
{
	if (in->meta.category != ZYDIS_CATEGORY_COND_BR)
		return 0;
	if ((in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (in->opcode & 0xf0) == 0x70) ||
	    (in->opcode_map == ZYDIS_OPCODE_MAP_0F && (in->opcode & 0xf0) == 0x80))
		return (uint8_t)((in->opcode & 15) + 1);
	return 0;
}

int ct_find_sites(const uint8_t *code, size_t len, uint64_t addr, enum ct_callconv cc,
		  ct_is_morestack_fn is_morestack, ct_is_tail_fn is_tail, void *ctx, struct ct_fn_sites *out)
{
	memset(out, 0, sizeof(*out));
	CT_VEC(struct ct_exit_site) exits = {0};
	CT_VEC(uint64_t) targets = {0}; /* intra-function branch targets */
	struct insn x;
	size_t off = 0;
	/* Entry candidates: the first instructions, as long as everything
	 * before each is harmless (it may run before the probe). */
	struct {
		uint64_t addr;
		bool emulated, optimized;
		bool jcc_out; /* a conditional tail jump: its probe is no entry's */
		const char *refused;
	} pre[ENTRY_LOOKAHEAD];
	size_t npre = 0;
	bool prefix_clean = true; /* all instructions so far harmless */
	char why[256] = "";
	size_t ijumps = 0; /* indirect jumps not through a GOT slot */
	bool jumps_out = false; /* a branch out of it (a part of it elsewhere too) */
	CT_VEC(struct ct_icall_at) icalls = {0};
	size_t call_end = 0; /* after the last call */

	while (off < len) {
		ZydisDecoderContext dctx;
		bool ok = decode_insn(code + off, len - off, addr + off, &x, &dctx);
		/* the operands: of the first instructions (what they write) and
		 * of branches (where to) */
		bool branch = ok && (x.in.meta.category == ZYDIS_CATEGORY_COND_BR ||
				     x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
				     x.in.meta.category == ZYDIS_CATEGORY_CALL);
		if (ok && (branch || (prefix_clean && npre < ENTRY_LOOKAHEAD)))
			ok = decode_operands(&x, &dctx);
		if (!ok) {
			if (off && only_padding(code + off, len - off))
				break;
			CT_VEC_FREE(exits);
			CT_VEC_FREE(targets);
			CT_VEC_FREE(icalls);
			return ct_fail("undecodable instruction at +0x%zx (byte 0x%02x)", off, code[off]);
		}
		if (prefix_clean && npre < ENTRY_LOOKAHEAD) {
			pre[npre].addr = x.addr;
			pre[npre].emulated = kernel_emulates(&x);
			pre[npre].optimized = kernel_optimizes(&x);
			pre[npre].refused = probe_refusal(&x);
			pre[npre].jcc_out = false;
			npre++;
			prefix_clean = harmless_before_entry(&x, cc);
		}
		uint64_t t = branch ? branch_target(&x) : 0;
		bool inside = t >= addr && t < addr + len;
		jumps_out |= t && !inside && x.in.meta.category != ZYDIS_CATEGORY_CALL;
		uint8_t cond = t && !inside ? jcc_cond(&x.in) : 0;
		if (cond && is_tail && !is_tail(ctx, t))
			cond = 0; /* (into a part of the function: it goes on there) */
		if (cond && npre && pre[npre - 1].addr == x.addr)
			pre[npre - 1].jcc_out = true;
		switch (x.in.meta.category) {
		case ZYDIS_CATEGORY_RET: {
			struct ct_exit_site e = {x.addr, CT_SITE_RET, 0, 0};
			CT_VEC_PUSH(exits, e);
			break;
		}
		case ZYDIS_CATEGORY_UNCOND_BR:
		case ZYDIS_CATEGORY_COND_BR:
			if (t == addr && !ct_callconv_is_go(cc)) {
				/* Self-recursion made a loop (gcc -Os, LLVM): the
				 * entry runs again for the same call, as after Go's
				 * morestack, and is told apart the same way. */
				struct ct_exit_site e = {x.addr, CT_SITE_RESTART, t, 0};
				CT_VEC_PUSH(exits, e);
			} else if ((t && !inside && x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) ||
				   (!t && !ct_callconv_is_go(cc) && got_jump(&x))) {
				/* a GOT slot's target is not known here: the frame
				 * ends at the jump, as for an untraced target */
				struct ct_exit_site e = {x.addr, CT_SITE_TAIL, t, 0};
				CT_VEC_PUSH(exits, e);
			} else if (cond) {
				/* a tail call when it jumps (the probe says which
				 * way it goes) */
				struct ct_exit_site e = {x.addr, CT_SITE_TAIL, t, cond};
				CT_VEC_PUSH(exits, e);
			} else if (t && inside) {
				CT_VEC_PUSH(targets, t);
			} else if (!t && x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
				ijumps++;
			}
			break;
		case ZYDIS_CATEGORY_CALL:
			if (t && is_morestack && is_morestack(ctx, t)) {
				struct ct_exit_site e = {x.addr, CT_SITE_RESTART, t, 0};
				CT_VEC_PUSH(exits, e);
			}
			if (!t) {
				struct ct_icall_at ic = {(uint32_t)off, (uint32_t)call_end, x.in.length};
				CT_VEC_PUSH(icalls, ic);
			}
			call_end = off + x.in.length;
			break;
		default:
			break;
		}
		const char *r;
		if (!why[0] && (x.in.meta.category == ZYDIS_CATEGORY_RET ||
				(exits.n && exits.v[exits.n - 1].addr == x.addr)) && (r = probe_refusal(&x))) {
			char text[96];
			ct_disasm_one(code + off, len - off, x.addr, text, sizeof(text));
			snprintf(why, sizeof(why), "the kernel refuses a uprobe on its exit at +0x%zx (%s: %s)", off, text, r);
		}
		off += x.in.length;
		out->ninsns++;
		/* (a conditional branch's other way runs on) */
		out->falls_through = off == len && (!leaves_line(&x) || x.in.meta.category == ZYDIS_CATEGORY_COND_BR);
	}
	if (!out->ninsns) {
		CT_VEC_FREE(exits);
		CT_VEC_FREE(targets);
		CT_VEC_FREE(icalls);
		return ct_fail("empty function body");
	}
	/* Go's compiler jumps through a pointer only inside a function (its
	 * jump tables, `jmp *(%rcx,%rax,8)`, which in a frameless function
	 * would pass for a tail jump): there only the runtime's assembly's
	 * jumps to a constant address count (reflectcall's `lea
	 * runtime.call16(%rip),%rax; jmp *%rax`, a tail jump as `jmp f` is). */
	if (ijumps && add_pointer_tails(code, len, addr, ct_callconv_is_go(cc), &exits.v, &exits.n, &exits.cap))
		qsort(exits.v, exits.n, sizeof(*exits.v), cmp_exit_addr);

	/* The entry site must run exactly once per call: no branch may land
	 * between the function start and it (a jump to the start itself is
	 * Go's morestack restart or a loop made of self-recursion, which
	 * reconstruction expects).  Prefer a nop the kernel turns into a
	 * call (an -mfentry nop), then the first instruction it emulates; else
	 * the first it accepts (a refused one at +0 -- a VEX vpxor in glibc --
	 * is passed over when it only writes vector registers, which BPF
	 * cannot read anyway). */
	int pick = -1;
	for (int pass = 0; pass < 3 && pick < 0; pass++)
		for (size_t i = 0; i < npre && pick < 0; i++) {
			if (pre[i].refused || pre[i].jcc_out || (pass == 0 && !pre[i].optimized) ||
			    (pass == 1 && !pre[i].emulated))
				continue;
			bool reentered = false;
			for (size_t k = 0; k < targets.n && i; k++)
				if (targets.v[k] > addr && targets.v[k] <= pre[i].addr)
					reentered = true;
			if (!reentered)
				pick = (int)i;
		}
	if (pick < 0 && !why[0]) {
		char text[96];
		ct_disasm_one(code, len, addr, text, sizeof(text));
		snprintf(why, sizeof(why), "the kernel refuses a uprobe on its first instruction (%s: %s)", text,
			 pre[0].refused ? pre[0].refused : "?");
	}
	if (why[0]) {
		CT_VEC_FREE(exits);
		CT_VEC_FREE(targets);
		CT_VEC_FREE(icalls);
		return ct_fail("%s", why);
	}
	out->entry_site = pre[pick].addr;
	out->entry_emulated = pre[pick].emulated;
	out->entry_optimized = pre[pick].optimized;
	/* (as many as there are: the plan keeps every traced function's until
	 * its sites are placed, restic's 17,609, most with a few) */
	out->exits = exits.n ? xrealloc(exits.v, exits.n * sizeof(*exits.v)) : NULL;
	out->nexits = exits.n;
	out->icalls = icalls.n ? xrealloc(icalls.v, icalls.n * sizeof(*icalls.v)) : NULL;
	out->nicalls = icalls.n;
	out->never_leaves = !exits.n && !ijumps && !jumps_out && !out->falls_through;
	if (!exits.n)
		CT_VEC_FREE(exits);
	if (!icalls.n)
		CT_VEC_FREE(icalls);
	CT_VEC_FREE(targets);
	return 0;
}

void ct_fn_sites_free(struct ct_fn_sites *s)
{
	free(s->exits);
	free(s->icalls);
	memset(s, 0, sizeof(*s));
}

int ct_disasm_one(const uint8_t *code, size_t len, uint64_t addr, char *out, size_t outlen)
{
	ZydisDisassembledInstruction d;
	if (!ZYAN_SUCCESS(ZydisDisassembleATT(ZYDIS_MACHINE_MODE_LONG_64, addr, code, len, &d))) {
		snprintf(out, outlen, "(bad)");
		return -1;
	}
	snprintf(out, outlen, "%s", d.text);
	return (int)d.info.length;
}

/* ---- calls seen from the caller ---- */

size_t ct_scan_refs(const uint8_t *code, size_t len, uint64_t addr, ct_ref_fn fn, void *ctx)
{
	size_t off = 0, bad = 0;
	ZydisDecodedInstruction in;
	while (off < len) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(minimal_decoder(), NULL, code + off, len - off, &in))) {
			off++;
			bad++;
			continue;
		}
		uint64_t at = addr + off, next = at + in.length;
		struct ct_code_ref r = {0, at, in.length, false, 0, 0, false, 0, 0};
		for (int i = 0; i < 2; i++) {
			if (!in.raw.imm[i].size)
				continue;
			if (in.raw.imm[i].is_relative) {
				r.target = next + (uint64_t)in.raw.imm[i].value.s;
				r.kind = in.meta.category == ZYDIS_CATEGORY_CALL ? CT_REF_CALL : CT_REF_JUMP;
				r.plain = r.kind == CT_REF_CALL && code[off] == 0xe8;
				fn(ctx, &r);
			} else if (in.raw.imm[i].size >= 32) {
				r.kind = CT_REF_ADDR;
				r.target = in.raw.imm[i].value.u;
				fn(ctx, &r);
			}
		}
		if ((in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.disp.size >= 32) {
			r.kind = CT_REF_ADDR;
			bool riprel = in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5;
			r.target = riprel ? next + (uint64_t)in.raw.disp.value : (uint64_t)in.raw.disp.value;
			if (riprel && in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && in.opcode == 0xff)
				r.through = in.raw.modrm.reg == 2 ? CT_THROUGH_CALL : in.raw.modrm.reg == 4 ? CT_THROUGH_JUMP : 0;
			fn(ctx, &r);
			r.through = 0;
		} else if (in.raw.disp.size >= 32) { /* moffs: mov 0x4c1000,%eax */
			r.kind = CT_REF_ADDR;
			r.target = (uint64_t)in.raw.disp.value;
			fn(ctx, &r);
		}
		off += in.length;
	}
	return bad;
}

const char *ct_reg_name(unsigned r)
{
	static const char *const names[] = {"R15", "R14", "R13", "R12", "RBP", "RBX", "R11", "R10",
					    "R9",  "R8",  "RAX", "RCX", "RDX", "RSI", "RDI"};
	return r < 15 ? names[r] : "?";
}

/* enum ct_reg of a general register (any width), or -1 (RSP, RIP, others) */
static int gpr_index(ZydisRegister r)
{
	static const ZydisRegister order[] = {
		ZYDIS_REGISTER_R15, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R12, ZYDIS_REGISTER_RBP,
		ZYDIS_REGISTER_RBX, ZYDIS_REGISTER_R11, ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R9,  ZYDIS_REGISTER_R8,
		ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI,
	};
	if (r == ZYDIS_REGISTER_NONE)
		return -1;
	r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	for (int i = 0; i < 15; i++)
		if (order[i] == r)
			return i;
	return -1;
}

static bool is_rsp(ZydisRegister r)
{
	return r != ZYDIS_REGISTER_NONE &&
	       ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r) == ZYDIS_REGISTER_RSP;
}

#define EXIT_LOOKAHEAD 48 /* straight-line instructions walked from a return address */
#define MAX_SLOTS 8
#define MAX_MEM_SLOTS 4
#define MAX_ADDEND (1 << 20) /* constants followed: what a result plus a small offset needs */

/* What a register holds, as far as the walk can tell: the return-time value
 * of register `orig`, plus the word at `woff` in the stack (from SP right
 * after the return, as it is while nothing writes it) or, `wbase` k + 1, at
 * `woff` from register k (a struct field: while nothing writes k or any
 * memory), plus `c` -- exact in
 * its low `width` bytes (a 32-bit copy keeps 4; sums modulo 2^(8*width) stay
 * exact).  Copies, loads, spills, add/sub/inc/dec and lea are followed;
 * anything else makes the register unknown.  `left`: the word was loaded
 * while in place, but SP has since left it behind (it may be overwritten
 * any time): the sum still holds, the word is just no longer there to read. */
struct expr {
	bool known;
	int8_t orig; /* -1: none */
	bool word;
	uint8_t width;
	int32_t woff;
	int32_t c;
	bool left;
	uint8_t wbase; /* word: 0 in the stack, else through register wbase - 1 */
};

/* What the straight line from a return address has done so far. */
struct walk_state {
	int32_t d;           /* SP minus SP right after the return */
	bool sp_known;
	struct expr val[15]; /* per register (enum ct_reg) */
	struct {
		int32_t off;     /* from SP right after the return */
		int8_t orig;     /* whose return-time value (its low `width` bytes) */
		uint8_t width;
	} slots[MAX_SLOTS];
	int nslots;
	/* Results stored through another register (`mov %al,0x78(%rdx)`: a
	 * field of a struct): the `width` bytes at base + disp hold the low
	 * bytes of register `orig`'s return-time value, as long as no store
	 * through another register may have written them (one clears these; a
	 * store to the stack may write them too, if the struct is there: the
	 * exit site's read checks that, as for what results point to).  `holders`:
	 * the registers (enum ct_reg bits) that held the base at the store and
	 * have not been written since. */
	struct {
		uint32_t holders;
		int32_t disp;
		int8_t orig;
		uint8_t width;
	} mem[MAX_MEM_SLOTS];
	int nmem;
	uint32_t written;
	bool stack_written, mem_written;
	int32_t stack_lo, stack_hi; /* stack_written: the bytes, from SP right after the return */
};

static const struct expr unknown_expr = {false, -1, false, 0, 0, 0, false, 0};

static bool expr_plain(const struct expr *e)
{
	return e->known && e->orig >= 0 && !e->word && !e->c;
}

/* A + B if the walk can say it (one register value and one word at most). */
static struct expr expr_sum(struct expr a, struct expr b)
{
	if (!a.known || !b.known || (a.orig >= 0 && b.orig >= 0) || (a.word && b.word))
		return unknown_expr;
	int64_t c = (int64_t)a.c + b.c;
	if (c > MAX_ADDEND || c < -MAX_ADDEND)
		return unknown_expr;
	struct expr s = {true, a.orig >= 0 ? a.orig : b.orig, a.word || b.word, a.width < b.width ? a.width : b.width,
			 a.word ? a.woff : b.woff, (int32_t)c, a.left || b.left, a.word ? a.wbase : b.wbase};
	return s;
}

/* Do A and B say a register holds the same known value? */
static bool expr_same(const struct expr *a, const struct expr *b)
{
	return a->known && b->known && a->orig == b->orig && a->word == b->word && a->width == b->width &&
	       a->c == b->c && a->left == b->left && (!a->word || (a->woff == b->woff && a->wbase == b->wbase));
}

static struct expr expr_const(int64_t c)
{
	if (c > MAX_ADDEND || c < -MAX_ADDEND)
		return unknown_expr;
	struct expr e = {true, -1, false, 8, 0, (int32_t)c, false, 0};
	return e;
}

/* The stack bytes [LO, HI) (from SP right after the return) change: saved
 * values there are gone, and so are register values that include a word
 * there. */
static void kill_stack(struct walk_state *w, int32_t lo, int32_t hi)
{
	for (int i = 0; i < w->nslots;)
		if (w->slots[i].off < hi && w->slots[i].off + w->slots[i].width > lo)
			w->slots[i] = w->slots[--w->nslots];
		else
			i++;
	for (int r = 0; r < 15; r++)
		if (w->val[r].word && (w->val[r].wbase || (w->val[r].woff < hi && w->val[r].woff + 8 > lo)))
			w->val[r] = unknown_expr; /* (a word through a register may lie in the stack) */
}

/* The registers WRITTEN (enum ct_reg bits) changed: sums with a word read
 * through one of them can no longer be read back. */
static void kill_words_through(struct walk_state *w, uint32_t written)
{
	for (int r = 0; r < 15; r++)
		if (w->val[r].word && w->val[r].wbase && (written >> (w->val[r].wbase - 1) & 1))
			w->val[r] = unknown_expr;
}

/* The walk writes the stack bytes [LO, HI): remembered for the exit site's
 * fetch program, which must not trust what results point to there. */
static void stack_write(struct walk_state *w, int32_t lo, int32_t hi)
{
	kill_stack(w, lo, hi);
	if (!w->stack_written || lo < w->stack_lo)
		w->stack_lo = lo;
	if (!w->stack_written || hi > w->stack_hi)
		w->stack_hi = hi;
	w->stack_written = true;
}

/* Memory that may alias the stack changes. */
static void kill_all_stack(struct walk_state *w)
{
	w->nslots = 0;
	w->nmem = 0;
	for (int r = 0; r < 15; r++)
		if (w->val[r].word)
			w->val[r] = unknown_expr;
}

/* [SP + disp] of 1, 2, 4 or 8 bytes, no index, no segment override: its
 * offset from SP right after the return. */
static bool sp_mem(const struct walk_state *w, const ZydisDecodedOperand *o, int32_t *at)
{
	if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.base != ZYDIS_REGISTER_RSP ||
	    o->mem.index != ZYDIS_REGISTER_NONE || o->mem.segment != ZYDIS_REGISTER_SS ||
	    (o->size != 8 && o->size != 16 && o->size != 32 && o->size != 64))
		return false;
	*at = w->d + (int32_t)o->mem.disp.value;
	return true;
}

/* A general register of SIZE bits holding its register's low bits (not
 * AH/BH/CH/DH): its enum ct_reg, or -1. */
static int reg_low(const ZydisDecodedOperand *o, unsigned size)
{
	if (o->type != ZYDIS_OPERAND_TYPE_REGISTER || o->size != size)
		return -1;
	ZydisRegister r = o->reg.value;
	if (r == ZYDIS_REGISTER_AH || r == ZYDIS_REGISTER_BH || r == ZYDIS_REGISTER_CH || r == ZYDIS_REGISTER_DH)
		return -1;
	return gpr_index(r);
}

static int reg64(const ZydisDecodedOperand *o)
{
	return reg_low(o, 64);
}

/* The value of a register operand of any width, exact in its low bytes. */
static struct expr narrowed(struct expr e, unsigned bits)
{
	if (e.known && e.width > bits / 8)
		e.width = (uint8_t)(bits / 8);
	return e;
}

/* The value of a plain 64-bit register/immediate/stack-word source operand. */
static struct expr operand_value(const struct walk_state *w, const ZydisDecodedOperand *o)
{
	int32_t at;
	int r = reg64(o);
	if (r >= 0)
		return w->val[r];
	if (o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return expr_const(o->imm.value.s);
	if ((o->size == 32 || o->size == 64) && sp_mem(w, o, &at) && at >= w->d) {
		for (int i = 0; i < w->nslots; i++)
			if (w->slots[i].off == at) {
				struct expr e = {true, w->slots[i].orig, false, w->slots[i].width, 0, 0, false, 0};
				return narrowed(e, o->size);
			}
		struct expr e = {true, -1, true, 8, at, 0, false, 0};
		return o->size == 64 ? e : unknown_expr;
	}
	int base = o->type == ZYDIS_OPERAND_TYPE_MEMORY ? gpr_index(o->mem.base) : -1;
	if (base >= 0 && o->size == 64 && o->mem.index == ZYDIS_REGISTER_NONE && o->mem.segment == ZYDIS_REGISTER_DS &&
	    o->mem.disp.value <= MAX_ADDEND && o->mem.disp.value >= -MAX_ADDEND) {
		struct expr e = {true, -1, true, 8, (int32_t)o->mem.disp.value, 0, false, (uint8_t)(base + 1)};
		return e; /* a field of a struct a register points to */
	}
	return unknown_expr;
}

/* `mov %reg,disp(%base)` with a base other than SP (a store into a struct
 * the caller points to): true if X is one, applied to W.  It may write any
 * memory, the stack too, so every slot known so far is gone; if the value
 * stored is a return-time register's and the base's value is known, the
 * bytes stored are a new slot. */
static bool store_through_reg(struct walk_state *w, const struct insn *x)
{
	const ZydisDecodedOperand *o = x->ops;
	int base = o[0].type == ZYDIS_OPERAND_TYPE_MEMORY ? gpr_index(o[0].mem.base) : -1;
	int src = reg_low(&o[1], o[0].size);
	if (base < 0 || src < 0 || o[0].mem.index != ZYDIS_REGISTER_NONE || x->in.address_width != 64 ||
	    (o[0].mem.segment != ZYDIS_REGISTER_DS && o[0].mem.segment != ZYDIS_REGISTER_SS))
		return false;
	struct expr v = narrowed(w->val[src], o[0].size), b = w->val[base];
	uint32_t holders = 1u << base;
	for (int q = 0; q < 15; q++)
		if (b.width == 8 && expr_same(&w->val[q], &b))
			holders |= 1u << q;
	kill_all_stack(w);
	w->mem_written = true;
	if (expr_plain(&v)) {
		w->mem[0].holders = holders;
		w->mem[0].disp = (int32_t)o[0].mem.disp.value;
		w->mem[0].orig = v.orig;
		w->mem[0].width = v.width;
		w->nmem = 1;
	}
	return true;
}

/* A register still holding MEM's base: its enum ct_reg, -1 if none. */
static int mem_base_reg(const __typeof__(((struct walk_state *)0)->mem[0]) *m)
{
	return m->holders ? __builtin_ctz(m->holders) : -1;
}

/* The instructions whose result the walk follows (copies, spills, loads,
 * add/sub/inc/dec, lea): true if X was one, applied to W.  Each writes only
 * its destination (and flags, which do not matter here). */
static bool follow_value(struct walk_state *w, const struct insn *x)
{
	const ZydisDecodedOperand *o = x->ops;
	ZydisMnemonic m = x->in.mnemonic;
	int32_t at;
	int dst = reg64(&o[0]);
	switch (m) {
	case ZYDIS_MNEMONIC_MOV:
		if (sp_mem(w, &o[0], &at) && reg_low(&o[1], o[0].size) >= 0) { /* a spill, maybe of the low bytes */
			struct expr v = narrowed(w->val[reg_low(&o[1], o[0].size)], o[0].size);
			stack_write(w, at, at + o[0].size / 8);
			if (expr_plain(&v) && at >= w->d && w->nslots < MAX_SLOTS) {
				w->slots[w->nslots].off = at;
				w->slots[w->nslots].width = v.width;
				w->slots[w->nslots++].orig = v.orig;
			}
			return true;
		}
		if (store_through_reg(w, x))
			return true;
		if (reg_low(&o[0], 32) >= 0 && reg_low(&o[1], 32) >= 0) { /* zero-extends: the low 4 bytes */
			dst = reg_low(&o[0], 32);
			w->val[dst] = narrowed(w->val[reg_low(&o[1], 32)], 32);
			break;
		}
		if (reg_low(&o[0], 32) >= 0 && o[1].size == 32 && o[1].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			dst = reg_low(&o[0], 32); /* a 32-bit load from a saved slot */
			w->val[dst] = operand_value(w, &o[1]);
			break;
		}
		if (dst < 0 || o[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
			return false;
		w->val[dst] = operand_value(w, &o[1]);
		break;
	case ZYDIS_MNEMONIC_ADD:
	case ZYDIS_MNEMONIC_SUB: {
		if (dst < 0)
			return false;
		struct expr v = operand_value(w, &o[1]);
		if (m == ZYDIS_MNEMONIC_SUB) /* only a constant can be negated */
			v = v.known && v.orig < 0 && !v.word ? expr_const(-(int64_t)v.c) : unknown_expr;
		w->val[dst] = expr_sum(w->val[dst], v);
		break;
	}
	case ZYDIS_MNEMONIC_MOVSX:
	case ZYDIS_MNEMONIC_MOVSXD:
	case ZYDIS_MNEMONIC_MOVZX: { /* widened: its low bytes are the source's */
		int src = reg_low(&o[1], o[1].size);
		dst = o[0].type == ZYDIS_OPERAND_TYPE_REGISTER ? gpr_index(o[0].reg.value) : -1;
		if (dst < 0 || src < 0 || o[1].size > o[0].size)
			return false;
		w->val[dst] = narrowed(w->val[src], o[1].size);
		break;
	}
	case ZYDIS_MNEMONIC_INC:
	case ZYDIS_MNEMONIC_DEC:
		if (dst < 0)
			return false;
		w->val[dst] = expr_sum(w->val[dst], expr_const(m == ZYDIS_MNEMONIC_INC ? 1 : -1));
		break;
	case ZYDIS_MNEMONIC_LEA: {
		if (dst < 0)
			return false;
		const ZydisDecodedOperand *a = &o[1];
		int base = gpr_index(a->mem.base), index = gpr_index(a->mem.index);
		struct expr v = expr_const(a->mem.disp.value);
		if (x->in.address_width != 64 || (a->mem.base != ZYDIS_REGISTER_NONE && base < 0) ||
		    (a->mem.index != ZYDIS_REGISTER_NONE && (index < 0 || a->mem.scale > 1)))
			v = unknown_expr; /* SP- or RIP-relative, scaled, 32-bit */
		if (base >= 0)
			v = expr_sum(v, w->val[base]);
		if (index >= 0)
			v = expr_sum(v, w->val[index]);
		w->val[dst] = v;
		break;
	}
	default:
		return false;
	}
	w->written |= 1u << dst;
	return true;
}

/* Applies X to W; false if SP changed in a way the walk cannot follow. */
static bool walk_step(struct walk_state *w, const struct insn *x)
{
	const ZydisDecodedOperand *o = x->ops;
	ZydisMnemonic m = x->in.mnemonic;
	/* SP arithmetic first. */
	bool writes_sp = false;
	for (int i = 0; i < x->in.operand_count; i++)
		if (o[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (o[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    is_rsp(o[i].reg.value))
			writes_sp = true;
	int32_t dd = 0;
	if (writes_sp) {
		if (m == ZYDIS_MNEMONIC_PUSH)
			dd = -8;
		else if (m == ZYDIS_MNEMONIC_POP)
			dd = 8;
		else if ((m == ZYDIS_MNEMONIC_ADD || m == ZYDIS_MNEMONIC_SUB) && o[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
			 o[0].reg.value == ZYDIS_REGISTER_RSP && o[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
			dd = (int32_t)(m == ZYDIS_MNEMONIC_ADD ? o[1].imm.value.s : -o[1].imm.value.s);
		else if (m == ZYDIS_MNEMONIC_LEA && o[0].reg.value == ZYDIS_REGISTER_RSP &&
			 o[1].mem.base == ZYDIS_REGISTER_RSP && o[1].mem.index == ZYDIS_REGISTER_NONE)
			dd = (int32_t)o[1].mem.disp.value;
		else
			return false;
		if (dd % 8)
			return false;
	} else if (follow_value(w, x)) {
		return true;
	}
	if (m == ZYDIS_MNEMONIC_PUSH) {
		stack_write(w, w->d - 8, w->d);
	}
	for (int i = 0; i < x->in.operand_count; i++) {
		if (!(o[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (o[i].type == ZYDIS_OPERAND_TYPE_REGISTER) {
			int r = gpr_index(o[i].reg.value);
			if (r >= 0) {
				w->val[r] = unknown_expr;
				w->written |= 1u << r;
			}
		} else if (o[i].type == ZYDIS_OPERAND_TYPE_MEMORY && m != ZYDIS_MNEMONIC_PUSH) {
			if (is_rsp(o[i].mem.base) && o[i].mem.index == ZYDIS_REGISTER_NONE) {
				int32_t at = w->d + (int32_t)o[i].mem.disp.value;
				stack_write(w, at, at + (int32_t)(o[i].size / 8 ? o[i].size / 8 : 64));
			} else {
				kill_all_stack(w); /* it may alias the stack */
				w->mem_written = true;
			}
		}
	}
	w->d += dd;
	/* What SP leaves behind may be overwritten at any time (a signal
	 * handler, Go's asynchronous preemption): not a place to read from. */
	if (dd > 0) {
		for (int i = 0; i < w->nslots;)
			if (w->slots[i].off < w->d)
				w->slots[i] = w->slots[--w->nslots];
			else
				i++;
		for (int r = 0; r < 15; r++) /* what was loaded from there is still what it was */
			if (w->val[r].word && w->val[r].wbase)
				w->val[r] = unknown_expr; /* (what the register points to may lie there) */
			else if (w->val[r].word && w->val[r].woff < w->d)
				w->val[r].left = true;
		w->nmem = 0; /* a struct stored into may lie there */
	}
	return true;
}

/* Can the instruction fault in code that runs (a signal for a bad address,
 * a division by zero)?  A Go program makes a panic of it, as if a call
 * were made there.  The frame's own slots and the program's globals are
 * mapped: memory through any other register, or indexed, may not be. */
static bool may_fault(const struct insn *x)
{
	ZydisMnemonic m = x->in.mnemonic;
	if (m == ZYDIS_MNEMONIC_DIV || m == ZYDIS_MNEMONIC_IDIV)
		return true;
	if (m == ZYDIS_MNEMONIC_LEA || x->in.meta.category == ZYDIS_CATEGORY_NOP ||
	    x->in.meta.category == ZYDIS_CATEGORY_WIDENOP)
		return false; /* (an address, no access) */
	for (int i = 0; i < x->in.operand_count; i++) {
		const ZydisDecodedOperand *o = &x->ops[i];
		if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && o->mem.type == ZYDIS_MEMOP_TYPE_MEM &&
		    ((!is_rsp(o->mem.base) && o->mem.base != ZYDIS_REGISTER_RIP) || o->mem.index != ZYDIS_REGISTER_NONE))
			return true;
	}
	return false;
}

/* Anything that leaves the straight line (other than the ones the kernel
 * emulates, which end the walk first). */
/* ud0/ud1/ud2, hlt: the instruction raises a fault in user code. */
static bool traps(const struct insn *x)
{
	return x->in.mnemonic == ZYDIS_MNEMONIC_UD0 || x->in.mnemonic == ZYDIS_MNEMONIC_UD1 ||
	       x->in.mnemonic == ZYDIS_MNEMONIC_UD2 || x->in.mnemonic == ZYDIS_MNEMONIC_HLT;
}

static bool leaves_line(const struct insn *x)
{
	switch (x->in.meta.category) {
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSTEM:
		return true;
	default:
		return traps(x);
	}
}


/* Is register R's return-time value still somewhere the walk knows of? */
static bool still_held(const struct walk_state *w, int r)
{
	for (int q = 0; q < 15; q++)
		if (w->val[q].known && w->val[q].orig == r && !w->val[q].left)
			return true;
	for (int k = 0; k < w->nslots; k++)
		if (w->slots[k].orig == r)
			return true;
	for (int k = 0; k < w->nmem; k++)
		if (w->mem[k].orig == r && mem_base_reg(&w->mem[k]) >= 0)
			return true;
	return false;
}

/* Where register R's return-time value is at the site: the register itself,
 * a copy, a saved slot, a register holding it plus a constant, or one
 * holding it plus a word of the stack that is still there -- the one that
 * keeps most of its bytes, the simplest of those. */
static void locate(const struct walk_state *w, int r, struct ct_exit_walk *out)
{
	__typeof__(out->loc[0]) *l = &out->loc[r], best = {CT_LOC_LOST, false, 0, 0, 0, 0, 0};
	for (int i = -1; i < 15; i++) { /* itself first, then the other registers */
		int q = i < 0 ? r : i;
		const struct expr *e = &w->val[q];
		if (expr_plain(e) && e->orig == r && e->width > best.width)
			best = (__typeof__(best)){(int8_t)q, false, 0, 0, e->width, 0, 0};
	}
	for (int k = 0; k < w->nslots; k++)
		if (w->slots[k].orig == r && w->slots[k].off >= w->d && w->slots[k].width > best.width)
			best = (__typeof__(best)){CT_LOC_STACK, false, w->slots[k].off - w->d, 0, w->slots[k].width, 0, 0};
	for (int q = 0; q < 15; q++) {
		const struct expr *e = &w->val[q];
		if (!e->known || e->orig != r || expr_plain(e) || e->left ||
		    (e->word && (e->c || (!e->wbase && e->woff < w->d))) || e->width <= best.width)
			continue;
		best = (__typeof__(best)){(int8_t)q, e->word, e->word && !e->wbase ? e->woff - w->d : e->woff, -e->c,
					  e->width, 0, e->wbase};
	}
	for (int k = 0; k < w->nmem; k++) { /* stored through a register that still holds the address */
		int base = mem_base_reg(&w->mem[k]);
		if (w->mem[k].orig == r && base >= 0 && w->mem[k].width > best.width)
			best = (__typeof__(best)){CT_LOC_MEM, false, 0, w->mem[k].disp, w->mem[k].width, (int8_t)base, 0};
	}
	*l = best;
}

/* OUT's picture of where the walk W has reached (SP, what was written,
 * where each register's value is). */
static void walk_state_at(const struct walk_state *w, struct ct_exit_walk *out)
{
	out->sp_delta = w->d;
	out->written = w->written;
	out->stack_written = w->stack_written;
	out->stack_lo = w->stack_lo - w->d;
	out->stack_hi = w->stack_hi - w->d;
	out->mem_written = w->mem_written;
	for (int r = 0; r < 15; r++)
		locate(w, r, out);
	for (int q = 0; q < 15; q++) {
		const struct expr *e = &w->val[q];
		__typeof__(out->held[0]) *h = &out->held[q];
		memset(h, 0, sizeof(*h));
		if (!e->known || e->left)
			continue;
		h->width = e->width;
		h->c = e->c;
		if (!e->word && e->orig >= 0) {
			h->kind = CT_HELD_REG;
			h->reg = e->orig;
		} else if (e->word && e->orig < 0 && !e->c) {
			h->kind = e->wbase ? CT_HELD_MEM : CT_HELD_STACK;
			h->reg = (int8_t)(e->wbase ? e->wbase - 1 : -1);
			h->off = e->woff;
		}
	}
	out->left_regs = 0;
	for (int r = 0; r < 15; r++)
		for (int q = 0; q < 15 && !(out->left_regs >> r & 1); q++) {
			const struct expr *e = &w->val[q];
			if (e->known && e->orig == r && e->word && e->left && !e->c && e->width == 8) {
				out->left_regs |= (uint16_t)(1u << r);
				out->left_in[r] = (int8_t)q;
				out->left_off[r] = e->woff;
			}
		}
}

bool ct_kernel_emulates_at(const uint8_t *code, size_t len, uint64_t addr)
{
	/* without the operands, which it does not look at: asked of every
	 * site of the plan (ct_plan_file_tables) */
	struct insn x;
	x.addr = addr;
	x.bytes = code;
	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder(), NULL, code, len, &x.in)) && kernel_emulates(&x);
}

uint64_t ct_warm_up_site(uint64_t entry, const uint8_t *(*bytes_at)(void *ctx, uint64_t addr, size_t *len),
			 void *ctx)
{
	uint64_t at = entry;
	for (int k = 0; k < 32; k++) {
		size_t len = 0;
		const uint8_t *code = bytes_at(ctx, at, &len);
		struct insn x;
		if (!code || !decode(code, len, at, &x) || probe_refusal(&x))
			return 0;
		bool jump = x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR && branch_target(&x);
		/* (endbr64: the kernel may take it for a nop) */
		if (!jump && !kernel_emulates(&x) && x.in.mnemonic != ZYDIS_MNEMONIC_ENDBR64)
			return leaves_line(&x) ? 0 : at;
		if (!jump && leaves_line(&x))
			return 0;
		at = jump ? branch_target(&x) : at + x.in.length;
	}
	return 0;
}

/* Is R (any width) SP or RBP? */
static bool is_frame_reg(ZydisRegister r)
{
	return is_rsp(r) || gpr_index(r) == CT_RBP;
}

bool ct_frame_address_taken(const uint8_t *code, size_t len, uint64_t addr)
{
	struct insn x;
	for (size_t at = 0; at < len; at += x.in.length) {
		if (!decode(code + at, len - at, addr + at, &x))
			return true;
		const ZydisDecodedOperand *o = x.ops;
		ZydisMnemonic m = x.in.mnemonic;
		bool to_frame_reg = o[0].type == ZYDIS_OPERAND_TYPE_REGISTER && is_frame_reg(o[0].reg.value);
		if (m == ZYDIS_MNEMONIC_LEA) {
			/* `lea 0x10(%rsp),%rbp`, `lea -8(%rbp),%rsp`: the frame itself */
			if ((is_frame_reg(o[1].mem.base) || is_frame_reg(o[1].mem.index)) && !to_frame_reg)
				return true;
			continue;
		}
		/* SP or RBP read as a value (not as an address's base, not by
		 * push/pop/call/ret): only into SP or RBP, or RBP saved to the
		 * stack (the caller's, at the prologue), or SP adjusted/compared */
		for (int i = 0; i < x.in.operand_count_visible; i++) {
			if (o[i].type != ZYDIS_OPERAND_TYPE_REGISTER || !(o[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ) ||
			    !is_frame_reg(o[i].reg.value))
				continue;
			bool sp = is_rsp(o[i].reg.value);
			if (m == ZYDIS_MNEMONIC_PUSH || m == ZYDIS_MNEMONIC_CMP || (m == ZYDIS_MNEMONIC_MOV && to_frame_reg))
				continue;
			if (m == ZYDIS_MNEMONIC_MOV && !sp && o[0].type == ZYDIS_OPERAND_TYPE_MEMORY && is_rsp(o[0].mem.base))
				continue;
			if ((m == ZYDIS_MNEMONIC_ADD || m == ZYDIS_MNEMONIC_SUB || m == ZYDIS_MNEMONIC_AND) && i == 0 &&
			    to_frame_reg && o[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
				continue; /* SP arithmetic, alignment */
			return true;
		}
	}
	return false;
}

uint8_t ct_hit_flags_at(const uint8_t *code, size_t len, uint64_t addr)
{
	struct insn x;
	if (!decode(code, len, addr, &x))
		return 0;
	if (kernel_optimizes(&x))
		return CT_SITEF_NOTRAP;
	if (kernel_emulates(&x))
		return x.in.meta.category == ZYDIS_CATEGORY_CALL ? CT_SITEF_CALLINSN : 0;
	return CT_SITEF_STEPPED | (x.in.meta.category == ZYDIS_CATEGORY_RET ? CT_SITEF_RETINSN : 0);
}

/* ---- arguments passed in SSE registers: where they are stored ---- */

#define SPILL_LOOKAHEAD 64  /* straight-line instructions walked from the entry */
#define SPILL_EMULATED_NEAR 6 /* how far past the first point an emulated site may be */
#define SPILL_SLOTS 16

/* What the straight line from its start has done so far: the entry (where
 * the SSE registers hold the arguments) or, in the other direction, a call's
 * return address (where they hold the results).  Registers are numbered
 * 0..15 (general, Zydis ids: rax rcx rdx rbx rsp rbp rsi rdi r8..r15) and
 * 16..31 (xmm0..15); each holds the low `n` bytes of start register xmm`k`,
 * or nothing known (k < 0).  Frame addresses are bytes from SP at the start
 * (E).
 *
 * From a return address (`from_ret`) the caller's frame is an old one, whose
 * address other registers may hold: a store through any other base may
 * write a slot (at the entry, nothing can point into the frame being made,
 * as long as its address does not escape).  And RBP, the caller's frame
 * pointer or any register it keeps, is not known relative to SP: its slots
 * are a second space, at `RBP + off` while RBP is not written, which any
 * store through SP may alias, and the reverse. */
struct spill_state {
	struct {
		int8_t k;
		uint8_t n;
	} r[32];
	int32_t d;          /* SP = E - d */
	bool rbp_known;
	int32_t rbp;        /* RBP = E + rbp (after `mov %rsp,%rbp`) */
	bool from_ret;
	bool rbp_kept;      /* from_ret: RBP not written since the start */
	struct {
		int32_t off;    /* from E, or from RBP (in_rbp) */
		uint8_t n, k;   /* the low n bytes of start xmm k */
		bool in_rbp;
	} slots[SPILL_SLOTS];
	int nslots;
	uint64_t out_at[16]; /* from_ret: where xmm k was stored somewhere not followed */
};

/* W at the start of a walk: from the entry, xmm0-7 carry the arguments;
 * from a return address (FROM_RET), xmm0-15 may carry results. */
static void xmm_walk_start(struct spill_state *w, bool from_ret)
{
	memset(w, 0, sizeof(*w));
	for (int r = 0; r < 32; r++) {
		w->r[r].k = r >= 16 && r < (from_ret ? 32 : 24) ? (int8_t)(r - 16) : -1;
		w->r[r].n = 16;
	}
	w->from_ret = w->rbp_kept = from_ret;
}

static int spill_reg(ZydisRegister r, unsigned *bytes)
{
	switch (ZydisRegisterGetClass(r)) {
	case ZYDIS_REGCLASS_GPR64:
	case ZYDIS_REGCLASS_GPR32:
		*bytes = ZydisRegisterGetClass(r) == ZYDIS_REGCLASS_GPR64 ? 8 : 4;
		return ZydisRegisterGetId(r);
	case ZYDIS_REGCLASS_GPR16:
	case ZYDIS_REGCLASS_GPR8:
		*bytes = 0; /* a partial write: what it holds is not tracked */
		r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
		return r == ZYDIS_REGISTER_NONE ? -1 : ZydisRegisterGetId(r);
	case ZYDIS_REGCLASS_XMM:
	case ZYDIS_REGCLASS_YMM:
	case ZYDIS_REGCLASS_ZMM:
		*bytes = 16;
		return ZydisRegisterGetId(r) < 16 ? 16 + ZydisRegisterGetId(r) : -1;
	default:
		return -1;
	}
}

/* The frame address an operand names, if its base is SP or a known RBP (from
 * E) or, from a return address, the start's RBP (*IN_RBP: from RBP), and it
 * has no index. */
static bool spill_frame_addr(const struct spill_state *w, const ZydisDecodedOperand *o, int32_t *at, bool *in_rbp)
{
	*in_rbp = false;
	if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.index != ZYDIS_REGISTER_NONE)
		return false;
	if (o->mem.base == ZYDIS_REGISTER_RSP)
		*at = -w->d + (int32_t)o->mem.disp.value;
	else if (o->mem.base == ZYDIS_REGISTER_RBP && w->rbp_known)
		*at = w->rbp + (int32_t)o->mem.disp.value;
	else if (o->mem.base == ZYDIS_REGISTER_RBP && w->from_ret && w->rbp_kept)
		*at = (int32_t)o->mem.disp.value, *in_rbp = true;
	else
		return false;
	return true;
}

/* Bytes [LO, HI) of one space are written: its slots there are gone, and
 * from a return address every slot of the other space (it may alias). */
static void spill_kill(struct spill_state *w, bool in_rbp, int32_t lo, int32_t hi)
{
	for (int i = 0; i < w->nslots;)
		if (w->slots[i].in_rbp == in_rbp ? w->slots[i].off < hi && w->slots[i].off + w->slots[i].n > lo
						 : w->from_ret)
			w->slots[i] = w->slots[--w->nslots];
		else
			i++;
}

/* Memory written through another base: at the entry it cannot be the new
 * frame (its address has not escaped); from a return address it may be any
 * slot. */
static void spill_kill_elsewhere(struct spill_state *w)
{
	if (w->from_ret)
		w->nslots = 0;
}

/* Bytes a plain move copies (the low ones of its source), 0 if X is not one. */
static unsigned spill_move_bytes(const struct insn *x)
{
	if (x->in.operand_count_visible != 2 || x->in.meta.category == ZYDIS_CATEGORY_STRINGOP ||
	    x->in.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return 0;
	switch (x->in.mnemonic) {
	case ZYDIS_MNEMONIC_MOV:
		return x->ops[0].size / 8;
	case ZYDIS_MNEMONIC_MOVQ:
	case ZYDIS_MNEMONIC_MOVSD:
	case ZYDIS_MNEMONIC_MOVLPD:
	case ZYDIS_MNEMONIC_MOVLPS:
		return 8;
	case ZYDIS_MNEMONIC_MOVD:
	case ZYDIS_MNEMONIC_MOVSS:
		return 4;
	case ZYDIS_MNEMONIC_MOVAPS:
	case ZYDIS_MNEMONIC_MOVAPD:
	case ZYDIS_MNEMONIC_MOVUPS:
	case ZYDIS_MNEMONIC_MOVUPD:
	case ZYDIS_MNEMONIC_MOVDQA:
	case ZYDIS_MNEMONIC_MOVDQU:
		return 16;
	default:
		return 0;
	}
}

/* RBP is written: its known value, and from a return address the slots at
 * the start's RBP (no register names them any more), are gone. */
static void spill_rbp_written(struct spill_state *w)
{
	w->rbp_known = false;
	if (!w->from_ret || !w->rbp_kept)
		return;
	w->rbp_kept = false;
	for (int i = 0; i < w->nslots;)
		if (w->slots[i].in_rbp)
			w->slots[i] = w->slots[--w->nslots];
		else
			i++;
}

/* Applies X to W; false when the walk cannot follow it (SP or the frame
 * pointer change in a way it does not know, or, at the entry, the address
 * of the frame goes into a register, through which the slots could be
 * written). */
static bool spill_step(struct spill_state *w, const struct insn *x)
{
	const ZydisDecodedOperand *o = x->ops;
	ZydisMnemonic m = x->in.mnemonic;
	unsigned bytes;
	/* At the entry, the frame's address must not escape into another
	 * register (from a return address, a store through one kills every
	 * slot instead). */
	if (!w->from_ret && m == ZYDIS_MNEMONIC_LEA &&
	    (o[1].mem.base == ZYDIS_REGISTER_RSP || o[1].mem.base == ZYDIS_REGISTER_RBP) && !is_rsp(o[0].reg.value))
		return false;
	for (int i = 0; i < x->in.operand_count_visible && !w->from_ret; i++)
		if (o[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (o[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ) &&
		    (is_rsp(o[i].reg.value) || (w->rbp_known && ZydisRegisterGetLargestEnclosing(
					ZYDIS_MACHINE_MODE_LONG_64, o[i].reg.value) == ZYDIS_REGISTER_RBP))) {
			bool frame_setup = m == ZYDIS_MNEMONIC_MOV && i == 1 && o[0].reg.value == ZYDIS_REGISTER_RBP &&
					   o[1].reg.value == ZYDIS_REGISTER_RSP;
			bool sp_arith = (m == ZYDIS_MNEMONIC_ADD || m == ZYDIS_MNEMONIC_SUB) && i == 0 && is_rsp(o[0].reg.value);
			bool pushed = m == ZYDIS_MNEMONIC_PUSH; /* its value goes below SP, not into a register */
			if (!frame_setup && !sp_arith && !pushed)
				return false;
		}
	if (m == ZYDIS_MNEMONIC_MOV && o[0].type == ZYDIS_OPERAND_TYPE_REGISTER && o[0].reg.value == ZYDIS_REGISTER_RBP &&
	    o[1].type == ZYDIS_OPERAND_TYPE_REGISTER && o[1].reg.value == ZYDIS_REGISTER_RSP) {
		spill_rbp_written(w);
		w->rbp_known = true; /* the frame pointer: RBP = SP */
		w->rbp = -w->d;
		w->r[5].k = -1;
		return true;
	}
	unsigned mv = spill_move_bytes(x);
	if (mv) {
		int src = o[1].type == ZYDIS_OPERAND_TYPE_REGISTER ? spill_reg(o[1].reg.value, &bytes) : -1;
		int8_t k = src >= 0 ? w->r[src].k : -1;
		uint8_t n = src >= 0 && w->r[src].n < mv ? w->r[src].n : (uint8_t)mv;
		int32_t at;
		bool in_rbp, kept = false;
		if (o[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			if (spill_frame_addr(w, &o[0], &at, &in_rbp)) {
				spill_kill(w, in_rbp, at, at + (int32_t)mv);
				if (k >= 0 && n == mv && w->nslots < SPILL_SLOTS) {
					w->slots[w->nslots].off = at;
					w->slots[w->nslots].n = n;
					w->slots[w->nslots].in_rbp = in_rbp;
					w->slots[w->nslots++].k = (uint8_t)k;
					kept = true;
				}
			} else if (is_rsp(o[0].mem.base) || o[0].mem.base == ZYDIS_REGISTER_RBP) {
				w->nslots = 0; /* somewhere in the frame */
			} else {
				spill_kill_elsewhere(w);
			}
			if (w->from_ret && k >= 0 && k < 16 && !kept && !w->out_at[k])
				w->out_at[k] = x->addr;
			return true;
		}
		if (o[0].type == ZYDIS_OPERAND_TYPE_REGISTER && !is_rsp(o[0].reg.value)) {
			int dst = spill_reg(o[0].reg.value, &bytes);
			if (dst == 5 /* rbp */)
				spill_rbp_written(w);
			if (dst >= 0) {
				w->r[dst].k = bytes >= n ? k : -1;
				w->r[dst].n = n;
			}
			return true;
		}
	}
	/* Anything else: what it writes is unknown from now on. */
	int32_t dd = 0;
	for (int i = 0; i < x->in.operand_count; i++) {
		if (!(o[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (o[i].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			int32_t at;
			bool in_rbp;
			if (m == ZYDIS_MNEMONIC_PUSH)
				spill_kill(w, false, -w->d - 8, -w->d);
			else if (spill_frame_addr(w, &o[i], &at, &in_rbp))
				spill_kill(w, in_rbp, at, at + (int32_t)(o[i].size ? o[i].size / 8 : 64));
			else if (is_rsp(o[i].mem.base) || o[i].mem.base == ZYDIS_REGISTER_RBP)
				w->nslots = 0;
			else
				spill_kill_elsewhere(w);
			continue;
		}
		if (o[i].type != ZYDIS_OPERAND_TYPE_REGISTER)
			continue;
		if (is_rsp(o[i].reg.value)) {
			if (m == ZYDIS_MNEMONIC_PUSH)
				dd = 8;
			else if (m == ZYDIS_MNEMONIC_POP)
				dd = -8;
			else if ((m == ZYDIS_MNEMONIC_ADD || m == ZYDIS_MNEMONIC_SUB) && o[0].reg.value == ZYDIS_REGISTER_RSP &&
				 o[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
				dd = (int32_t)(m == ZYDIS_MNEMONIC_SUB ? o[1].imm.value.s : -o[1].imm.value.s);
			else if (m == ZYDIS_MNEMONIC_LEA && i == 0 && o[1].mem.base == ZYDIS_REGISTER_RSP &&
				 o[1].mem.index == ZYDIS_REGISTER_NONE)
				dd = (int32_t)-o[1].mem.disp.value;
			else
				return false;
			continue;
		}
		int r = spill_reg(o[i].reg.value, &bytes);
		if (r == 5)
			spill_rbp_written(w);
		if (r >= 0)
			w->r[r].k = -1;
	}
	w->d += dd;
	/* From a return address: what SP leaves behind may be overwritten at
	 * any time (a signal handler, Go's asynchronous preemption). */
	if (w->from_ret && dd < 0) {
		for (int i = 0; i < w->nslots;)
			if (!w->slots[i].in_rbp && w->slots[i].off < -w->d)
				w->slots[i] = w->slots[--w->nslots];
			else
				i++;
	}
	return true;
}

/* Are all NEEDS in slots now?  Fills their SP offsets. */
static bool spill_met(const struct spill_state *w, struct ct_spill_need *needs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int s = 0;
		while (s < w->nslots && !(w->slots[s].k == needs[i].xmm && w->slots[s].n >= needs[i].size))
			s++;
		if (s == w->nslots)
			return false;
		needs[i].sp_off = w->slots[s].off + w->d;
	}
	return true;
}

bool ct_spill_walk(const uint8_t *code, size_t len, uint64_t entry, uint64_t limit, struct ct_spill_need *needs,
		   size_t nneeds, ct_addr_ok_fn ok, void *ctx, struct ct_spill_site *out)
{
	struct spill_state w;
	xmm_walk_start(&w, false);
	struct ct_spill_need first_needs[16];
	bool have_first = false;
	int first_at = -1;
	size_t off = 0;
	struct insn x;
	if (!nneeds || nneeds > 16)
		return false;
	for (int n = 0; n < SPILL_LOOKAHEAD && off < len; n++) {
		if (!decode(code + off, len - off, entry + off, &x) || x.addr >= limit)
			break;
		if (first_at >= 0 && n - first_at > SPILL_EMULATED_NEAR && have_first)
			break;
		if (spill_met(&w, needs, nneeds)) {
			if (first_at < 0)
				first_at = n;
			/* (not a nop the kernel turns into a call: that call
			 * writes below SP, where a leaf's stores may be) */
			bool can = !probe_refusal(&x) && !kernel_optimizes(&x) && (!ok || ok(ctx, x.addr));
			if (can && (kernel_emulates(&x) || !have_first)) {
				out->addr = x.addr;
				out->emulated = kernel_emulates(&x);
				out->sp_drop = w.d;
				out->ninsns = (uint32_t)n;
				memcpy(first_needs, needs, nneeds * sizeof(*needs));
				have_first = true;
				if (out->emulated)
					return true;
			}
		} else if (first_at >= 0) {
			break; /* a slot was overwritten: later points lose it */
		}
		if (leaves_line(&x) || !spill_step(&w, &x))
			break;
		off += x.in.length;
	}
	if (have_first)
		memcpy(needs, first_needs, nneeds * sizeof(*needs));
	return have_first;
}

/* ---- float results: where the caller stores them (the same walk) ---- */

/* Is xmm K's start value still in a register or a slot? */
static bool xmm_held(const struct spill_state *w, int k)
{
	for (int r = 0; r < 32; r++)
		if (w->r[r].k == k && w->r[r].n)
			return true;
	for (int i = 0; i < w->nslots; i++)
		if (w->slots[i].k == k)
			return true;
	return false;
}

/* OUT->xloc at the site W has reached: the slot keeping most of each
 * register's bytes, else a general register holding them (`movq %xmm0,%rbx`
 * keeps a double in a callee-saved register across a call). */
static void xmm_locate(const struct spill_state *w, struct ct_exit_walk *out)
{
	for (int r = 0; r < 16; r++) {
		int q = gpr_index(ZydisRegisterEncode(ZYDIS_REGCLASS_GPR64, (ZyanU8)r));
		if (q < 0 || w->r[r].k < 0 || w->r[r].k >= 16 || w->r[r].n > 8 || w->r[r].n <= out->xloc[w->r[r].k].width)
			continue;
		__typeof__(out->xloc[0]) *l = &out->xloc[w->r[r].k];
		l->width = w->r[r].n;
		l->base = CT_XLOC_REG;
		l->off = q;
	}
	for (int i = 0; i < w->nslots; i++) {
		__typeof__(out->xloc[0]) *l = &out->xloc[w->slots[i].k];
		if (w->slots[i].n < l->width || (w->slots[i].n == l->width && l->base != CT_XLOC_REG))
			continue;
		l->width = w->slots[i].n;
		l->base = w->slots[i].in_rbp ? CT_XLOC_RBP : CT_XLOC_SP;
		l->off = w->slots[i].in_rbp ? w->slots[i].off : w->slots[i].off + w->d; /* from SP there: E - d */
	}
}

static bool is_indirect_call(const struct insn *x)
{
	return x->in.meta.category == ZYDIS_CATEGORY_CALL && !x->in.raw.imm[0].is_relative;
}

/* ct_exit_walk, and ct_exit_walk_to's STOP (0: none) */
static void exit_walk(const uint8_t *code, size_t len, uint64_t ret_addr, uint64_t stop, bool past_nops,
		      struct ct_exit_walk *out)
{
	memset(out, 0, sizeof(*out));
	struct walk_state w = {0};
	w.sp_known = true;
	for (int r = 0; r < 15; r++) {
		struct expr e = {true, (int8_t)r, false, 8, 0, 0, false, 0};
		w.val[r] = e;
	}
	struct spill_state xs; /* where the SSE registers' values go */
	bool xs_ok = true;
	xmm_walk_start(&xs, true);
	out->how = CT_EXIT_NONE;
	size_t off = 0;
	struct insn x;
	for (int n = 0; n < EXIT_LOOKAHEAD && off < len; n++) {
		if (!decode(code + off, len - off, ret_addr + off, &x))
			break;
		out->ninsns++;
		bool ok = probe_refusal(&x) == NULL;
		if (n == 0 && ok) {
			out->first_site = x.addr;
			out->first_emulated = kernel_emulates(&x);
		}
		if (x.in.meta.category == ZYDIS_CATEGORY_RET) {
			out->how = CT_EXIT_TAILPOS;
			if (w.sp_known) {
				out->at_ret = true;
				out->ret_at = x.addr;
				walk_state_at(&w, out);
			}
			return;
		}
		bool nop = x.in.meta.category == ZYDIS_CATEGORY_NOP || x.in.meta.category == ZYDIS_CATEGORY_WIDENOP;
		if (w.sp_known && ok && ((kernel_emulates(&x) && !(past_nops && nop)) || x.addr == stop)) {
			out->how = CT_EXIT_EMULATED;
			out->site = x.addr;
			walk_state_at(&w, out);
			if (xs_ok)
				xmm_locate(&xs, out);
			return;
		}
		if (leaves_line(&x)) {
			/* (rustc and clang put a ud2 after a call that does not
			 * return: _Unwind_Resume, a panic; a return would trap) */
			out->traps = traps(&x);
			if (is_indirect_call(&x) && w.sp_known && ok) {
				out->icall_at = x.addr;
				out->icall_len = x.in.length;
			}
			break;
		}
		out->may_fault |= may_fault(&x);
		if (w.sp_known) {
			bool held[15];
			for (int r = 0; r < 15; r++)
				held[r] = still_held(&w, r);
			uint32_t before = w.written;
			w.written = 0; /* this instruction's writes, which end what stores' bases held */
			if (!walk_step(&w, &x))
				w.sp_known = false; /* only a ret ahead can still say something */
			for (int k = 0; k < w.nmem; k++)
				w.mem[k].holders &= ~w.written;
			kill_words_through(&w, w.written);
			w.written |= before;
			for (int r = 0; r < 15; r++)
				if (held[r] && (!w.sp_known || !still_held(&w, r)) && !out->lost_at[r])
					out->lost_at[r] = x.addr;
		}
		if (xs_ok) {
			bool held[16];
			for (int k = 0; k < 16; k++)
				held[k] = xmm_held(&xs, k);
			xs_ok = spill_step(&xs, &x);
			for (int k = 0; k < 16; k++) {
				if (held[k] && (!xs_ok || !xmm_held(&xs, k)) && !out->xloc[k].lost)
					out->xloc[k].lost = (uint16_t)(x.addr - ret_addr + 1);
				if (xs.out_at[k] && !out->xloc[k].out)
					out->xloc[k].out = (uint16_t)(xs.out_at[k] - ret_addr + 1);
			}
		}
		off += x.in.length;
	}
	/* No emulated instruction on the straight line: the return address
	 * itself, single-stepped (or emulated: then the loop took it). */
	if (out->first_site) {
		out->how = CT_EXIT_STEPPED;
		out->site = out->first_site;
		for (int r = 0; r < 15; r++) {
			out->loc[r].reg = (int8_t)r;
			out->loc[r].width = 8;
		}
	}
}

/* (NAME, "@" or its end after LEN bytes, among the N in LIST) */
static bool named(const char *name, size_t len, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len && !strncmp(name, list[i], len))
			return true;
	return false;
}

enum ct_noreturn ct_noreturn_name(const char *name)
{
	static const char *const ends[] = {
		"abort", "exit", "_exit", "_Exit", "quick_exit", "__stack_chk_fail", "__chk_fail", "__fortify_fail",
		"__assert_fail", "__assert_perror_fail", "__assert", "__libc_fatal", "pthread_exit", "thrd_exit",
		"_ZSt9terminatev", "__cxa_call_terminate", "__cxa_call_unexpected", "__clang_call_terminate",
		"__cxa_pure_virtual", "__cxa_deleted_virtual"};
	static const char *const unwinds[] = {"_Unwind_Resume", "_Unwind_Resume_or_Rethrow", "__cxa_rethrow",
					      "__cxa_throw", "__cxa_bad_cast", "__cxa_bad_typeid",
					      "__cxa_throw_bad_array_new_length", "longjmp", "_longjmp", "siglongjmp",
					      "__longjmp_chk"};
	/* by prefix: Rust's core::panicking functions all diverge
	 * (panic_in_cleanup, panic_cannot_unwind: a pad's own failure), as
	 * do Option::expect's and Result::unwrap's failures; libstdc++'s
	 * std::rethrow_exception */
	static const char *const unwinds_prefix[] = {"_ZN4core9panicking", "_ZN4core6option13expect_failed",
						     "_ZN4core6result13unwrap_failed", "_ZSt17rethrow_exception"};
	for (size_t i = 0; i < sizeof(unwinds_prefix) / sizeof(*unwinds_prefix); i++)
		if (!strncmp(name, unwinds_prefix[i], strlen(unwinds_prefix[i])))
			return CT_NORETURN_UNWINDS;
	if (!strncmp(name, "_ZSt21__glibcxx_assert_fail", 27))
		return CT_NORETURN_ENDS;
	/* libstdc++'s std::__throw_* (_ZSt20__throw_length_errorPKc) */
	if (!strncmp(name, "_ZSt", 4)) {
		const char *p = name + 4;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p > name + 4 && !strncmp(p, "__throw_", 8))
			return CT_NORETURN_UNWINDS;
	}
	size_t len = strcspn(name, "@");
	if (named(name, len, ends, sizeof(ends) / sizeof(*ends)))
		return CT_NORETURN_ENDS;
	if (named(name, len, unwinds, sizeof(unwinds) / sizeof(*unwinds)))
		return CT_NORETURN_UNWINDS;
	return CT_NORETURN_NO;
}

void ct_exit_walk(const uint8_t *code, size_t len, uint64_t ret_addr, struct ct_exit_walk *out)
{
	exit_walk(code, len, ret_addr, 0, false, out);
}

void ct_walk_past_nops(const uint8_t *code, size_t len, uint64_t from, struct ct_exit_walk *out)
{
	exit_walk(code, len, from, 0, true, out);
}

void ct_exit_walk_to(const uint8_t *code, size_t len, uint64_t ret_addr, uint64_t stop, struct ct_exit_walk *out)
{
	exit_walk(code, len, ret_addr, stop, false, out);
}

void ct_exit_brief_of(const struct ct_exit_walk *w, struct ct_exit_brief *out)
{
	*out = (struct ct_exit_brief){.site = w->site, .first_site = w->first_site, .icall_at = w->icall_at,
				      .sp_delta = w->sp_delta, .how = (uint8_t)w->how,
				      .first_emulated = w->first_emulated, .at_ret = w->at_ret,
				      .icall_len = w->icall_len, .traps = w->traps};
}

uint64_t ct_call_before(const uint8_t *code, size_t len, uint64_t addr, uint64_t ret)
{
	ZydisDecodedInstruction in;
	for (size_t off = 0; off < len && addr + off < ret;) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder(), NULL, code + off, len - off, &in)))
			return 0; /* not code we can follow: no guess */
		if (addr + off + in.length == ret)
			return in.meta.category == ZYDIS_CATEGORY_CALL ? addr + off : 0;
		off += in.length;
	}
	return 0;
}

bool ct_check_after_entry(const uint8_t *code, size_t len, uint64_t entry, struct ct_exit_walk *w)
{
	ct_exit_walk(code, len, entry, w);
	if (w->how != CT_EXIT_EMULATED || w->site <= entry || w->sp_delta > 0)
		return false;
	struct insn x;
	size_t at = (size_t)(w->site - entry);
	/* not a call: its probe may be the callee's CALL site too; not a nop
	 * the kernel turns into a call, which writes below SP (a C leaf's
	 * red zone may hold what it stored there) */
	if (!decode(code + at, len - at, w->site, &x) || x.in.meta.category == ZYDIS_CATEGORY_CALL ||
	    kernel_optimizes(&x))
		return false;
	/* it must run once a call: no branch of the function lands between the
	 * entry and it, and no jump through a table might */
	return !ct_branch_lands(code, len, entry, entry + 1, w->site);
}

bool ct_branch_lands(const uint8_t *code, size_t len, uint64_t entry, uint64_t lo, uint64_t hi)
{
	struct insn x;
	for (size_t off = 0; off < len; off += x.in.length) {
		if (!decode(code + off, len - off, entry + off, &x))
			return !only_padding(code + off, len - off);
		bool jump = x.in.meta.category == ZYDIS_CATEGORY_COND_BR || x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
		uint64_t t = jump ? branch_target(&x) : 0;
		if ((jump && !t) || (t >= lo && t <= hi))
			return true;
	}
	return false;
}

size_t ct_call_ends_at(const uint8_t *code, size_t len)
{
	ZydisDecodedInstruction in;
	for (size_t k = 2; k <= len && k <= ZYDIS_MAX_INSTRUCTION_LENGTH; k++)
		if (ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder(), NULL, code + len - k, k, &in)) &&
		    in.length == k && in.meta.category == ZYDIS_CATEGORY_CALL)
			return k;
	return 0;
}

size_t ct_indirect_calls(const uint8_t *code, size_t len, uint64_t addr, uint64_t *at, uint8_t *lens, size_t max)
{
	struct ct_icall v[64];
	size_t n = ct_indirect_call_shapes(code, len, addr, v, max < 64 ? max : 64);
	for (size_t k = 0; k < n && k < max && k < 64; k++) {
		at[k] = v[k].at;
		lens[k] = v[k].len;
	}
	return n;
}

/* Can CODE hold an indirect call at all?  Each one (FF /2, FF /3) has the
 * opcode byte 0xFF right before its ModRM: without such a pair there is none
 * to find, and the plan looks in every traced function and most have none
 * (bench/http: a fifth of the plan was the decoding of those). */
static bool may_call_indirect(const uint8_t *code, size_t len)
{
	for (const uint8_t *p = code, *end = code + len; p + 1 < end && (p = memchr(p, 0xff, end - p - 1)); p++) {
		unsigned reg = (p[1] >> 3) & 7;
		if (reg == 2 || reg == 3)
			return true;
	}
	return false;
}

/* Is memory operand OP a field of an object a register points to (an itab,
 * a funcval), not a global (RIP), an element of a table (an index), or a
 * slot of the frame (RSP: a spilled code pointer, whose offset in the frame
 * says nothing of the itab slot or funcval it came from; seen on restic as
 * an itab slot)? */
static bool through_object(const ZydisDecodedOperand *op)
{
	return op->mem.base != ZYDIS_REGISTER_RIP && op->mem.base != ZYDIS_REGISTER_NONE &&
	       op->mem.base != ZYDIS_REGISTER_RSP && op->mem.index == ZYDIS_REGISTER_NONE;
}

/* The register state of ct_indirect_call_shapes after X: which registers
 * hold a word loaded through another register, and its displacement. */
static void track_loads(const struct insn *x, bool loaded[15], int32_t disp[15])
{
	for (int i = 0; i < x->in.operand_count; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];
		int r = op->type == ZYDIS_OPERAND_TYPE_REGISTER && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
				? gpr_index(op->reg.value)
				: -1;
		if (r < 0)
			continue;
		const ZydisDecodedOperand *src = &x->ops[1];
		bool mov = x->in.mnemonic == ZYDIS_MNEMONIC_MOV && i == 0 && x->in.operand_count_visible == 2 &&
			   op->size == 64;
		int from = mov && src->type == ZYDIS_OPERAND_TYPE_REGISTER ? gpr_index(src->reg.value) : -1;
		if (from >= 0) { /* a copy: what it holds goes along */
			loaded[r] = loaded[from];
			disp[r] = disp[from];
			continue;
		}
		loaded[r] = mov && src->type == ZYDIS_OPERAND_TYPE_MEMORY && through_object(src);
		disp[r] = loaded[r] ? (int32_t)src->mem.disp.value : 0;
	}
}

struct ct_icall ct_indirect_call_shape(const uint8_t *code, size_t len, uint64_t addr, const struct ct_icall_at *at)
{
	/* per register: the displacement of the load that last set it from
	 * memory through another register (`mov 0x18(%rcx),%rdx`), if nothing
	 * wrote it since on the way down the code */
	bool loaded[15] = {0};
	int32_t disp[15] = {0};
	struct insn x;
	for (size_t o = at->from; o < at->off && decode(code + o, len - o, addr + o, &x); o += x.in.length)
		track_loads(&x, loaded, disp);
	struct ct_icall c = {addr + at->off, at->len, CT_ICALL_OTHER, 0};
	if (!decode(code + at->off, len - at->off, addr + at->off, &x))
		return c;
	const ZydisDecodedOperand *op = &x.ops[0];
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == ZYDIS_REGISTER_RIP) {
		c.via = CT_ICALL_RIP;
		c.disp = (int32_t)op->mem.disp.value;
	} else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && through_object(op)) {
		c.via = CT_ICALL_MEM;
		c.disp = (int32_t)op->mem.disp.value;
	} else if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		int r = gpr_index(op->reg.value);
		if (r >= 0 && loaded[r]) {
			c.via = CT_ICALL_LOADED;
			c.disp = disp[r];
		}
	}
	return c;
}

size_t ct_indirect_call_shapes(const uint8_t *code, size_t len, uint64_t addr, struct ct_icall *out, size_t max)
{
	size_t n = 0;
	if (!may_call_indirect(code, len))
		return 0;
	/* Instructions first, without their operands (half the decoding); an
	 * indirect call's shape is in the straight run since the call before
	 * it, decoded in full again only then. */
	struct insn x;
	ZydisDecoderContext ctx;
	size_t from = 0;
	for (size_t off = 0; off < len && decode_insn(code + off, len - off, addr + off, &x, &ctx); off += x.in.length) {
		if (x.in.meta.category != ZYDIS_CATEGORY_CALL)
			continue;
		if (!x.in.raw.imm[0].is_relative) { /* not a call rel32 */
			struct ct_icall_at at = {(uint32_t)off, (uint32_t)from, x.in.length};
			if (n < max)
				out[n] = ct_indirect_call_shape(code, len, addr, &at);
			n++;
		}
		from = off + x.in.length;
	}
	return n;
}

/* ---- Go's open-coded defers: the closure an indirect call calls ---- */

/* Does X write RSP? */
static bool writes_rsp(const struct insn *x)
{
	for (int i = 0; i < x->in.operand_count; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];
		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    gpr64(op->reg.value) == ZYDIS_REGISTER_RSP)
			return true;
	}
	return false;
}

static bool is_mem_at(const ZydisDecodedOperand *op, ZydisRegister base)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == base && op->mem.index == ZYDIS_REGISTER_NONE;
}

/* What a store X puts in memory, PREV (NULL: none) the instruction before
 * it: zero (X15 is zero in Go's register ABI), an address in the frame or
 * in the code (a `lea` into the register just before), or something else. */
enum stored { STORED_OTHER, STORED_ZERO, STORED_FRAME, STORED_CODE };
static enum stored stored_value(const struct insn *prev, const struct insn *x, int64_t *val)
{
	const ZydisDecodedOperand *src = &x->ops[1];
	if (x->in.operand_count_visible != 2)
		return STORED_OTHER;
	if (src->type == ZYDIS_OPERAND_TYPE_REGISTER && src->reg.value == ZYDIS_REGISTER_XMM15 &&
	    (x->in.mnemonic == ZYDIS_MNEMONIC_MOVUPS || x->in.mnemonic == ZYDIS_MNEMONIC_MOVAPS))
		return STORED_ZERO;
	if (x->in.mnemonic != ZYDIS_MNEMONIC_MOV)
		return STORED_OTHER;
	if (src->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return src->imm.value.u ? STORED_OTHER : STORED_ZERO;
	if (src->type != ZYDIS_OPERAND_TYPE_REGISTER || src->size != 64 || !prev || prev->in.operand_count_visible != 2 ||
	    prev->ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || gpr64(prev->ops[0].reg.value) != src->reg.value)
		return STORED_OTHER;
	const ZydisDecodedOperand *p1 = &prev->ops[1];
	if (prev->in.mnemonic == ZYDIS_MNEMONIC_MOV && p1->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && !p1->imm.value.u)
		return STORED_ZERO;
	if (prev->in.mnemonic == ZYDIS_MNEMONIC_LEA && is_mem_at(p1, ZYDIS_REGISTER_RSP)) {
		*val = p1->mem.disp.value;
		return STORED_FRAME;
	}
	ZyanU64 a;
	if (prev->in.mnemonic == ZYDIS_MNEMONIC_LEA && is_mem_at(p1, ZYDIS_REGISTER_RIP) &&
	    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&prev->in, p1, prev->addr, &a))) {
		*val = (int64_t)a;
		return STORED_CODE;
	}
	return STORED_OTHER;
}

static bool overlaps(int64_t a, int64_t alen, int64_t b, int64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Are the stores into the frame's 8 bytes at SLOT (from SP after the
 * prologue) in CODE, a whole function, each one of WANT (STORED_FRAME or
 * STORED_CODE, 8 bytes exactly there, *VAL the same value for all) or a
 * zero, and one at least of WANT?  The addresses of those that store a
 * register the instruction before set go to AT (up to MAX, *N of them).
 * False too if SP moves but by one size (the prologue's `sub`, the
 * epilogues' `add`), or an address in the slot is taken (`lea`): for a
 * closure's code (STORED_CODE), but the closure's own, which goes to the
 * slot that holds it. */
/* Go's stack check's slow path: the code its branch at the entry, before
 * the prologue moves SP, jumps to, up to its jump back to the entry
 * ([*LO, *HI)), where the arguments are spilled above the return address,
 * outside the frame, around the call of morestack.  False if none. */
static bool morestack_path(const uint8_t *code, size_t len, uint64_t entry, uint64_t *lo, uint64_t *hi)
{
	struct insn x;
	uint64_t to = 0;
	for (size_t off = 0, k = 0; off < len && k < 4 && !to; off += x.in.length, k++) {
		if (!decode(code + off, len - off, entry + off, &x) || writes_rsp(&x))
			return false;
		if (x.in.meta.category == ZYDIS_CATEGORY_COND_BR)
			to = branch_target(&x);
		else if (leaves_line(&x))
			return false;
	}
	if (!to || to <= entry || to >= entry + len)
		return false;
	for (size_t off = to - entry; off < len; off += x.in.length) {
		if (!decode(code + off, len - off, entry + off, &x))
			return false;
		if (x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR && branch_target(&x) == entry) {
			*lo = to;
			*hi = x.addr + x.in.length;
			return true;
		}
		if (leaves_line(&x) && x.in.meta.category != ZYDIS_CATEGORY_CALL)
			return false;
	}
	return false;
}

static bool slot_stores(const uint8_t *code, size_t len, uint64_t entry, int64_t slot, enum stored want, int64_t *val,
			uint64_t *at, size_t max, size_t *n)
{
	struct insn x, prev;
	bool have_prev = false;
	int64_t frame = -1;
	*val = 0;
	uint64_t slow_lo = 0, slow_hi = 0; /* (its stores are not into the frame) */
	morestack_path(code, len, entry, &slow_lo, &slow_hi);
	for (size_t off = 0; off < len; off += x.in.length, prev = x, have_prev = true) {
		if (!decode(code + off, len - off, entry + off, &x))
			return only_padding(code + off, len - off);
		if (x.addr >= slow_lo && x.addr < slow_hi)
			continue;
		if (writes_rsp(&x) && x.in.meta.category != ZYDIS_CATEGORY_CALL && x.in.meta.category != ZYDIS_CATEGORY_RET) {
			bool subadd = (x.in.mnemonic == ZYDIS_MNEMONIC_SUB || x.in.mnemonic == ZYDIS_MNEMONIC_ADD) &&
				      x.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && x.ops[0].reg.value == ZYDIS_REGISTER_RSP &&
				      x.ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
			if (!subadd || (frame >= 0 && (int64_t)x.ops[1].imm.value.s != frame))
				return false;
			frame = x.ops[1].imm.value.s;
		}
		if (x.in.mnemonic == ZYDIS_MNEMONIC_LEA && x.ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    x.ops[1].mem.base == ZYDIS_REGISTER_RSP &&
		    (x.ops[1].mem.index != ZYDIS_REGISTER_NONE ||
		     (overlaps(x.ops[1].mem.disp.value, 1, slot, 8) && (want == STORED_FRAME || x.ops[1].mem.disp.value != slot))))
			return false;
		for (int i = 0; i < x.in.operand_count; i++) {
			const ZydisDecodedOperand *op = &x.ops[i];
			if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || !(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) ||
			    op->mem.base != ZYDIS_REGISTER_RSP)
				continue;
			int64_t d = op->mem.disp.value, size = op->size ? op->size / 8 : 8;
			if (op->mem.index != ZYDIS_REGISTER_NONE)
				return false;
			if (!overlaps(d, size, slot, 8))
				continue;
			int64_t v = 0;
			enum stored k = i == 0 ? stored_value(have_prev ? &prev : NULL, &x, &v) : STORED_OTHER;
			if (k == STORED_OTHER || (k == want && (d != slot || size != 8 || (*val && v != *val))))
				return false;
			if (k == want)
				*val = v;
			else if (k != STORED_ZERO)
				return false;
			/* (a register's: set by the instruction before) */
			if (x.ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && x.ops[1].reg.value != ZYDIS_REGISTER_XMM15) {
				if (*n >= max)
					return false;
				at[(*n)++] = x.addr;
			}
		}
	}
	return *val != 0;
}

uint64_t ct_go_deferred_closure(const uint8_t *code, size_t len, uint64_t entry, uint64_t from, uint64_t icall)
{
	if (from < entry || icall < from || icall >= entry + len)
		return 0;
	/* The straight line to the call: which registers hold the word at a
	 * frame slot (the closure's address), which the word that points to
	 * (its code). */
	enum { HOLD_NONE, HOLD_SLOT, HOLD_CODE };
	uint8_t hold[15] = {0};
	int64_t held[15] = {0}, slot = 0;
	struct insn x;
	for (size_t off = from - entry;; off += x.in.length) {
		if (off >= len || !decode(code + off, len - off, entry + off, &x) || x.addr > icall)
			return 0;
		if (x.addr == icall) {
			const ZydisDecodedOperand *op = &x.ops[0];
			int r = op->type == ZYDIS_OPERAND_TYPE_REGISTER ? gpr_index(op->reg.value)
				: op->type == ZYDIS_OPERAND_TYPE_MEMORY && !op->mem.disp.value &&
						op->mem.index == ZYDIS_REGISTER_NONE
					? gpr_index(op->mem.base)
					: -1;
			if (!is_indirect_call(&x) || r < 0 ||
			    hold[r] != (op->type == ZYDIS_OPERAND_TYPE_REGISTER ? HOLD_CODE : HOLD_SLOT))
				return 0;
			slot = held[r];
			break;
		}
		if (writes_rsp(&x) || leaves_line(&x))
			return 0;
		int dst = -1, h = HOLD_NONE;
		int64_t v = 0;
		const ZydisDecodedOperand *m = &x.ops[1];
		if (x.in.mnemonic == ZYDIS_MNEMONIC_MOV && x.in.operand_count_visible == 2 &&
		    x.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && x.ops[0].size == 64 &&
		    m->type == ZYDIS_OPERAND_TYPE_MEMORY && m->mem.index == ZYDIS_REGISTER_NONE) {
			dst = gpr_index(x.ops[0].reg.value);
			int b = gpr_index(m->mem.base);
			if (m->mem.base == ZYDIS_REGISTER_RSP) {
				h = HOLD_SLOT;
				v = m->mem.disp.value;
			} else if (b >= 0 && hold[b] == HOLD_SLOT && !m->mem.disp.value) {
				h = HOLD_CODE;
				v = held[b];
			}
		}
		for (int i = 0; i < x.in.operand_count; i++) {
			const ZydisDecodedOperand *op = &x.ops[i];
			int r = op->type == ZYDIS_OPERAND_TYPE_REGISTER && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
					? gpr_index(op->reg.value)
					: -1;
			if (r >= 0)
				hold[r] = HOLD_NONE;
		}
		if (dst >= 0 && h != HOLD_NONE) {
			hold[dst] = (uint8_t)h;
			held[dst] = v;
		}
	}
	/* Every closure the slot is given is one in the frame, the same, and
	 * every code address that closure is given is the same function: the
	 * call calls it (or nothing, a nil closure: the program faults). */
	uint64_t at[32];
	size_t n = 0;
	int64_t closure, fn;
	if (!slot_stores(code, len, entry, slot, STORED_FRAME, &closure, at, 32, &n) ||
	    !slot_stores(code, len, entry, closure, STORED_CODE, &fn, at, 32, &n))
		return 0;
	/* each of those stores runs right after its `lea`: no branch lands on it */
	for (size_t off = 0; off < len; off += x.in.length) {
		if (!decode(code + off, len - off, entry + off, &x))
			break;
		bool jump = x.in.meta.category == ZYDIS_CATEGORY_COND_BR || x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
		uint64_t t = jump ? branch_target(&x) : 0;
		if (jump && !t)
			return 0; /* through a table: anywhere */
		for (size_t k = 0; t && k < n; k++)
			if (at[k] == t)
				return 0;
	}
	return (uint64_t)fn;
}

size_t ct_go_deferred_calls(const uint8_t *code, size_t len, uint64_t entry, uint64_t fn, uint64_t *at, uint8_t *lens,
			    size_t max)
{
	if (!may_call_indirect(code, len))
		return 0;
	size_t n = 0;
	uint64_t line = entry; /* where the straight line to the next instruction starts */
	struct insn x;
	for (size_t off = 0; off < len; off += x.in.length) {
		if (!decode(code + off, len - off, entry + off, &x))
			break;
		if (is_indirect_call(&x) && ct_go_deferred_closure(code, len, entry, line, x.addr) == fn) {
			if (n < max) {
				at[n] = x.addr;
				lens[n] = x.in.length;
			}
			n++;
		}
		if (leaves_line(&x) || writes_rsp(&x))
			line = x.addr + x.in.length;
	}
	return n;
}

enum ct_pad_end ct_pad_walk(uint64_t pad, uint64_t cut, ct_code_at_fn code_at, ct_noreturn_fn noreturn, void *ctx,
			    size_t max, struct ct_map *seen)
{
	CT_VEC(uint64_t) todo = {0};
	enum ct_pad_end how = CT_PAD_RESUMES;
	size_t steps = 0;
	CT_VEC_PUSH(todo, pad);
	while (todo.n && how != CT_PAD_UNKNOWN) {
		uint64_t at = todo.v[--todo.n];
		for (;;) {
			if ((cut && at == cut) || map_get(seen, at + 1))
				break;
			if (++steps > max) {
				how = CT_PAD_UNKNOWN; /* (too long to follow: in doubt) */
				break;
			}
			size_t avail = 0;
			const uint8_t *p = code_at(ctx, at, &avail);
			struct insn x;
			if (!p || !decode(p, avail < ZYDIS_MAX_INSTRUCTION_LENGTH ? avail : ZYDIS_MAX_INSTRUCTION_LENGTH, at,
					  &x)) {
				how = CT_PAD_UNKNOWN;
				break;
			}
			map_put(seen, at + 1, (void *)(uintptr_t)x.in.length);
			uint64_t next = at + x.in.length, t;
			ZydisInstructionCategory cat = x.in.meta.category;
			if (cat == ZYDIS_CATEGORY_RET) {
				if (how < CT_PAD_LEAVES)
					how = CT_PAD_LEAVES; /* the function returns */
				break;
			}
			if (x.in.mnemonic == ZYDIS_MNEMONIC_UD2 || x.in.mnemonic == ZYDIS_MNEMONIC_INT3 ||
			    x.in.mnemonic == ZYDIS_MNEMONIC_HLT)
				break;
			if (cat == ZYDIS_CATEGORY_CALL) {
				t = branch_target(&x);
				if (t && noreturn(ctx, t))
					break; /* _Unwind_Resume: the exception goes on up */
				at = next;     /* (an indirect call returns too) */
				continue;
			}
			if (cat == ZYDIS_CATEGORY_COND_BR || cat == ZYDIS_CATEGORY_UNCOND_BR) {
				if (!(t = branch_target(&x))) {
					how = CT_PAD_UNKNOWN; /* a jump table, a tail jump through a pointer */
					break;
				}
				if (cat == ZYDIS_CATEGORY_COND_BR)
					CT_VEC_PUSH(todo, next);
				at = t;
				continue;
			}
			if (cat == ZYDIS_CATEGORY_SYSTEM || cat == ZYDIS_CATEGORY_INTERRUPT) {
				how = CT_PAD_UNKNOWN;
				break;
			}
			at = next;
		}
	}
	CT_VEC_FREE(todo);
	return how;
}

/* ---- registers loaded from GOT slots (ct_scan_slot_refs) ----
 *
 * rustc hoists the load of a GOT slot out of a loop that calls through it
 * (`mov slot(%rip),%rbx` ... `call *%rbx`).  Which value each register
 * holds is followed forward through the function's branches, as one of:
 * unreached (0), something else (SF_OTHER), exactly the word of slot S
 * (S, 8-aligned), maybe S's word or something else (S | SF_IMPURE), or
 * words of several slots (SF_MIXED).  A slot's word escapes (the load is
 * an address taken, as before) where a register that may hold it is read
 * by anything but `call *%reg`/`jmp *%reg` with exactly that word, is
 * live at a call in a register the callee may read, at a return or a
 * jump out of the code, at an indirect jump, or meets another slot's. */

#define SF_OTHER 1u
#define SF_IMPURE 2u
#define SF_MIXED 3u
#define SF_MAX_INSNS 65536

/* SF_OUT: an indirect jump (not through a register, or a jcc's other forms) */
enum sf_kind { SF_NORMAL, SF_LOAD, SF_CALL_REG, SF_CALL, SF_JMP_REG, SF_JMP, SF_JCC, SF_OUT, SF_RET, SF_STOP, SF_BAD };

enum {
	SF_WHY_USED = 1, /* read otherwise */
	SF_WHY_ARG,      /* live at a call in a register the callee may read */
	SF_WHY_OUT,      /* live where the code returns or jumps out */
	SF_WHY_IJUMP,    /* live at an indirect jump */
	SF_WHY_MIXED,    /* another value on some path */
	SF_WHY_ARGREG,   /* called through an argument register */
	SF_WHY_LONG,     /* the code is too long to follow */
	SF_WHY_END,      /* live where the code runs past its end */
};

const char *ct_slot_load_why(uint8_t why)
{
	static const char *const text[] = {
		NULL,
		"the register it is loaded into is read otherwise",
		"the register it is loaded into is live at a call that may read it",
		"the register it is loaded into is live where the code returns or jumps out",
		"the register it is loaded into is live at an indirect jump",
		"the register it is loaded into may hold another value where it is called through",
		"it is called through an argument register",
		"the code is too long to follow",
		"the register it is loaded into is live where the code runs past its end",
	};
	return why < sizeof(text) / sizeof(*text) ? text[why] : NULL;
}

struct sf_insn {
	uint32_t off;
	uint8_t len, kind;
	int8_t reg;             /* LOAD: the destination; CALL_REG, JMP_REG: the target */
	uint16_t reads, writes; /* general registers (not RSP) read (any part), written whole */
	uint64_t target;        /* JMP, JCC: the destination; LOAD: the slot */
};

struct sf_escape {
	uint64_t slot, at;
	uint8_t why;
};

struct sf {
	const struct sf_insn *x;
	size_t n;
	uint64_t addr;
	uint64_t *st;     /* n x 16 values at each instruction's start */
	bool *reached;
	uint64_t *plan;   /* CALL_REG, JMP_REG: the slot called through, or 0 */
	CT_VEC(struct sf_escape) esc;
	int32_t *at_off;  /* code offset -> instruction index, or -1 */
	size_t len;
};

/* caller-saved (SysV): RAX RCX RDX RSI RDI R8-R11; arguments: RCX RDX RSI
 * RDI R8 R9, R10 (a static chain) */
#define SF_CLOBBERED ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 6) | (1u << 7) | (0xfu << 8))
#define SF_ARGREGS ((1u << 1) | (1u << 2) | (1u << 6) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10))

static int sf_gpr(ZydisRegister r)
{
	if (r == ZYDIS_REGISTER_NONE)
		return -1;
	r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	if (r < ZYDIS_REGISTER_RAX || r > ZYDIS_REGISTER_R15 || r == ZYDIS_REGISTER_RSP)
		return -1;
	return (int)(r - ZYDIS_REGISTER_RAX);
}

static uint64_t sf_slot(uint64_t v)
{
	return v > SF_MIXED ? v & ~(uint64_t)3 : 0;
}

static void sf_escape(struct sf *s, uint64_t v, uint8_t why, uint64_t at)
{
	uint64_t slot = sf_slot(v);
	if (!slot)
		return;
	for (size_t k = 0; k < s->esc.n; k++)
		if (s->esc.v[k].slot == slot)
			return;
	CT_VEC_PUSH(s->esc, ((struct sf_escape){slot, at, why}));
}

static bool sf_escaped(const struct sf *s, uint64_t slot, const struct sf_escape **e)
{
	for (size_t k = 0; k < s->esc.n; k++)
		if (s->esc.v[k].slot == slot) {
			if (e)
				*e = &s->esc.v[k];
			return true;
		}
	return false;
}

/* One instruction, decoded for the walk. */
static void sf_decode(const uint8_t *code, size_t len, size_t off, uint64_t addr, struct sf_insn *x,
		      bool (*is_slot)(void *ctx, uint64_t addr), void *ctx)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	memset(x, 0, sizeof(*x));
	x->off = (uint32_t)off;
	x->reg = -1;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder(), code + off, len - off, &in, op))) {
		x->len = 1;
		x->kind = SF_BAD;
		return;
	}
	x->len = in.length;
	uint64_t next = addr + off + in.length;
	int skip = -1; /* the operand a call or jump goes through */
	switch (in.meta.category) {
	case ZYDIS_CATEGORY_CALL:
		x->kind = SF_CALL;
		if (op[0].type == ZYDIS_OPERAND_TYPE_REGISTER && (x->reg = (int8_t)sf_gpr(op[0].reg.value)) >= 0) {
			x->kind = SF_CALL_REG;
			skip = 0;
		}
		break;
	case ZYDIS_CATEGORY_UNCOND_BR:
		if (op[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op[0].imm.is_relative) {
			x->kind = SF_JMP;
			x->target = next + (uint64_t)op[0].imm.value.s;
		} else if (op[0].type == ZYDIS_OPERAND_TYPE_REGISTER && (x->reg = (int8_t)sf_gpr(op[0].reg.value)) >= 0) {
			x->kind = SF_JMP_REG;
			skip = 0;
		} else {
			x->kind = SF_OUT;
		}
		break;
	case ZYDIS_CATEGORY_COND_BR:
		x->kind = SF_JCC;
		if (op[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op[0].imm.is_relative)
			x->target = next + (uint64_t)op[0].imm.value.s;
		else
			x->kind = SF_OUT;
		break;
	case ZYDIS_CATEGORY_RET:
		x->kind = SF_RET;
		break;
	default:
		if (in.mnemonic == ZYDIS_MNEMONIC_INT3 || in.mnemonic == ZYDIS_MNEMONIC_UD2 ||
		    in.mnemonic == ZYDIS_MNEMONIC_HLT || in.mnemonic == ZYDIS_MNEMONIC_UD0 ||
		    in.mnemonic == ZYDIS_MNEMONIC_UD1) {
			x->kind = SF_STOP;
			return;
		}
		if (in.meta.category == ZYDIS_CATEGORY_SYSCALL || in.meta.category == ZYDIS_CATEGORY_INTERRUPT ||
		    in.meta.category == ZYDIS_CATEGORY_SYSTEM) {
			x->reads = 0xffef; /* (its arguments: everything but RSP) */
			x->writes = SF_CLOBBERED;
			return;
		}
		break;
	}
	/* mov slot(%rip),%r64 */
	if (x->kind == SF_NORMAL && in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2 &&
	    op[0].type == ZYDIS_OPERAND_TYPE_REGISTER && op[0].size == 64 && sf_gpr(op[0].reg.value) >= 0 &&
	    op[1].type == ZYDIS_OPERAND_TYPE_MEMORY && op[1].mem.base == ZYDIS_REGISTER_RIP &&
	    op[1].mem.index == ZYDIS_REGISTER_NONE && op[1].mem.segment != ZYDIS_REGISTER_FS &&
	    op[1].mem.segment != ZYDIS_REGISTER_GS) {
		uint64_t slot = next + (uint64_t)op[1].mem.disp.value;
		if (!(slot & 7) && sf_slot(slot) && is_slot(ctx, slot)) {
			x->kind = SF_LOAD;
			x->reg = (int8_t)sf_gpr(op[0].reg.value);
			x->target = slot;
			x->writes = (uint16_t)(1u << x->reg);
			return;
		}
	}
	/* padding: nop, `xchg %ax,%ax` (66 90) */
	if (in.mnemonic == ZYDIS_MNEMONIC_NOP ||
	    (in.mnemonic == ZYDIS_MNEMONIC_XCHG && in.operand_count_visible == 2 && op[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
	     op[1].type == ZYDIS_OPERAND_TYPE_REGISTER && op[0].reg.value == op[1].reg.value && op[0].size != 32 &&
	     op[0].size != 8))
		return;
	/* xor %ebx,%ebx: reads nothing */
	bool zero = (in.mnemonic == ZYDIS_MNEMONIC_XOR || in.mnemonic == ZYDIS_MNEMONIC_SUB) &&
		    in.operand_count_visible == 2 && op[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    op[1].type == ZYDIS_OPERAND_TYPE_REGISTER && op[0].reg.value == op[1].reg.value;
	for (int i = 0; i < in.operand_count; i++) {
		const ZydisDecodedOperand *o = &op[i];
		if (i == skip)
			continue;
		if (o->type == ZYDIS_OPERAND_TYPE_MEMORY) {
			int b = sf_gpr(o->mem.base), ix = sf_gpr(o->mem.index);
			if (b >= 0)
				x->reads |= (uint16_t)(1u << b);
			if (ix >= 0)
				x->reads |= (uint16_t)(1u << ix);
			continue;
		}
		int g;
		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER || (g = sf_gpr(o->reg.value)) < 0)
			continue;
		uint16_t bit = (uint16_t)(1u << g);
		if ((o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && !zero)
			x->reads |= bit;
		if (!(o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		x->writes |= bit;
		bool whole = (o->actions & ZYDIS_OPERAND_ACTION_WRITE) && !(o->actions & ZYDIS_OPERAND_ACTION_CONDWRITE) &&
			     (o->size == 64 || (o->size == 32 && ZydisRegisterGetClass(o->reg.value) == ZYDIS_REGCLASS_GPR32));
		if (!whole) /* (what it keeps of the old value is a use of it) */
			x->reads |= bit;
	}
}

static uint64_t sf_join(struct sf *s, uint64_t a, uint64_t b, uint64_t at)
{
	if (a == b || !b)
		return a;
	if (!a)
		return b;
	uint64_t sa = sf_slot(a), sb = sf_slot(b);
	if (a == SF_MIXED || b == SF_MIXED || (sa && sb && sa != sb)) {
		sf_escape(s, a, SF_WHY_MIXED, at);
		sf_escape(s, b, SF_WHY_MIXED, at);
		return SF_MIXED;
	}
	return (sa ? sa : sb) | SF_IMPURE;
}

static void sf_escape_all(struct sf *s, const uint64_t *v, uint16_t mask, uint8_t why, uint64_t at)
{
	for (int r = 0; r < 16; r++)
		if (mask >> r & 1)
			sf_escape(s, v[r], why, at);
}

/* Into instruction K (from the one at AT): V joined with what it had. */
static bool sf_flow(struct sf *s, size_t k, const uint64_t *v, uint64_t at)
{
	uint64_t *d = s->st + 16 * k;
	bool changed = !s->reached[k];
	s->reached[k] = true;
	for (int r = 0; r < 16; r++) {
		uint64_t j = sf_join(s, d[r], v[r], at);
		changed |= j != d[r];
		d[r] = j;
	}
	return changed;
}

/* Instruction I, from its state: where it goes (*SUCC, up to 2, -1 for
 * none) and with what (OUT); FINAL: the uses and plans it makes. */
static void sf_step(struct sf *s, size_t i, uint64_t *out, long succ[2], bool final)
{
	const struct sf_insn *x = &s->x[i];
	const uint64_t *in = s->st + 16 * i;
	uint64_t at = s->addr + x->off;
	memcpy(out, in, 16 * sizeof(*out));
	succ[0] = succ[1] = -1;
	if (final)
		sf_escape_all(s, in, x->reads, SF_WHY_USED, at);
	for (int r = 0; r < 16; r++)
		if (x->writes >> r & 1)
			out[r] = SF_OTHER;
	bool falls = true;
	switch (x->kind) {
	case SF_LOAD:
		out[x->reg] = x->target;
		break;
	case SF_CALL_REG:
	case SF_JMP_REG: {
		uint64_t v = in[x->reg];
		if (final && v == sf_slot(v) && v && !(x->kind == SF_CALL_REG && (SF_ARGREGS >> x->reg & 1)))
			s->plan[i] = v;
		else if (final)
			sf_escape(s, v, x->kind == SF_CALL_REG && (SF_ARGREGS >> x->reg & 1) ? SF_WHY_ARGREG : SF_WHY_MIXED, at);
		if (x->kind == SF_JMP_REG) {
			if (final)
				sf_escape_all(s, in, (uint16_t)(0xffef & ~(1u << x->reg)), SF_WHY_OUT, at);
			falls = false;
			break;
		}
	}
		/* fall through */
	case SF_CALL:
		if (final)
			sf_escape_all(s, in, (uint16_t)(SF_CLOBBERED & ~(x->kind == SF_CALL_REG ? 1u << x->reg : 0)),
				      SF_WHY_ARG, at);
		for (int r = 0; r < 16; r++)
			if (SF_CLOBBERED >> r & 1)
				out[r] = SF_OTHER;
		break;
	case SF_JMP:
	case SF_JCC: {
		uint64_t t = x->target - s->addr;
		int32_t k = x->target >= s->addr && t < s->len ? s->at_off[t] : -1;
		if (k >= 0)
			succ[1] = k;
		else if (final)
			sf_escape_all(s, out, 0xffef, SF_WHY_OUT, at);
		falls = x->kind == SF_JCC;
		break;
	}
	case SF_OUT:
	case SF_RET:
	case SF_BAD:
		if (final)
			sf_escape_all(s, out, 0xffef, x->kind == SF_OUT ? SF_WHY_IJUMP : SF_WHY_OUT, at);
		/* fall through */
	case SF_STOP:
		falls = false;
		break;
	default:
		break;
	}
	if (!falls)
		return;
	if (i + 1 < s->n) {
		succ[0] = (long)i + 1;
	} else if (final && x->kind != SF_CALL && x->kind != SF_CALL_REG) {
		/* (a call last: one that does not return) */
		sf_escape_all(s, out, 0xffef, SF_WHY_END, at);
	}
}

static void sf_run(struct sf *s, size_t *work, size_t nwork, bool *queued)
{
	uint64_t out[16];
	while (nwork) {
		size_t i = work[--nwork];
		queued[i] = false;
		long succ[2];
		sf_step(s, i, out, succ, false);
		for (int k = 0; k < 2; k++)
			if (succ[k] >= 0 && sf_flow(s, (size_t)succ[k], out, s->addr + s->x[i].off) && !queued[succ[k]]) {
				queued[succ[k]] = true;
				work[nwork++] = (size_t)succ[k];
			}
	}
}

/* The refs a function's scan gave, held back until the walk is done. */
struct sf_refs {
	CT_VEC(struct ct_code_ref) v;
	bool (*is_slot)(void *ctx, uint64_t addr);
	void *ctx;
	const uint8_t *code;
	uint64_t addr;
	size_t len;
	bool loads;
};

static void sf_keep(void *ctx, const struct ct_code_ref *r)
{
	struct sf_refs *h = ctx;
	CT_VEC_PUSH(h->v, *r);
	/* REX.W 8b /r, mod 0 rm 5: mov slot(%rip),%r64 */
	const uint8_t *b = h->code + (r->at - h->addr);
	if (r->kind == CT_REF_ADDR && r->len == 7 && (b[0] & 0xf8) == 0x48 && b[1] == 0x8b && (b[2] & 0xc7) == 0x05 &&
	    !(r->target & 7) && h->is_slot(h->ctx, r->target))
		h->loads = true;
}

size_t ct_scan_slot_refs(const uint8_t *code, size_t len, uint64_t addr, ct_ref_fn fn, void *ctx,
			 bool (*is_slot)(void *ctx, uint64_t addr))
{
	if (!is_slot)
		return ct_scan_refs(code, len, addr, fn, ctx);
	struct sf_refs h = {.is_slot = is_slot, .ctx = ctx, .code = code, .addr = addr, .len = len};
	size_t bad = ct_scan_refs(code, len, addr, sf_keep, &h);
	if (!h.loads) {
		for (size_t k = 0; k < h.v.n; k++)
			fn(ctx, &h.v.v[k]);
		CT_VEC_FREE(h.v);
		return bad;
	}
	struct sf s = {.addr = addr, .len = len};
	CT_VEC(struct sf_insn) xs = {0};
	bool too_long = false;
	for (size_t off = 0; off < len && !too_long; off += xs.v[xs.n - 1].len) {
		struct sf_insn x;
		sf_decode(code, len, off, addr, &x, is_slot, ctx);
		CT_VEC_PUSH(xs, x);
		too_long = xs.n > SF_MAX_INSNS;
	}
	s.x = xs.v;
	s.n = xs.n;
	if (!too_long) {
		s.at_off = xmalloc(len * sizeof(*s.at_off));
		memset(s.at_off, 0xff, len * sizeof(*s.at_off));
		for (size_t i = 0; i < s.n; i++)
			s.at_off[s.x[i].off] = (int32_t)i;
		s.st = xcalloc(s.n * 16, sizeof(*s.st));
		s.reached = xcalloc(s.n, sizeof(*s.reached));
		s.plan = xcalloc(s.n, sizeof(*s.plan));
		bool *queued = xcalloc(s.n, sizeof(*queued));
		size_t *work = xmalloc(s.n * sizeof(*work));
		uint64_t v[16];
		for (int r = 0; r < 16; r++)
			v[r] = SF_OTHER;
		sf_flow(&s, 0, v, addr);
		work[0] = 0;
		queued[0] = true;
		sf_run(&s, work, 1, queued);
		/* code the walk did not reach: a landing pad, which the unwinder
		 * enters with the callee-saved registers of the call that threw,
		 * what they hold at any call (code a jump from elsewhere enters
		 * is none: callers.c leaves such a function alone).  Not at
		 * padding, which runs into the code after it (a nop, `xchg
		 * %ax,%ax`: what reads and writes no register). */
		bool *seeded = xcalloc(s.n, sizeof(*seeded));
		uint64_t seed[16], was[16];
		for (int pass = 0, changed = 1; changed; pass++) {
			for (int r = 0; r < 16; r++)
				seed[r] = SF_OTHER;
			for (size_t i = 0; i < s.n; i++)
				if (s.reached[i] && (s.x[i].kind == SF_CALL || s.x[i].kind == SF_CALL_REG))
					for (int r = 0; r < 16; r++)
						if (!(SF_CLOBBERED >> r & 1) && r != 4)
							seed[r] = sf_join(&s, seed[r], s.st[16 * i + r], addr + s.x[i].off);
			changed = pass == 0 || memcmp(seed, was, sizeof(seed)) != 0;
			memcpy(was, seed, sizeof(seed));
			/* (the first time, in order: code a seed's walk reaches is
			 * none of its own) */
			for (size_t i = 0; i < s.n && changed; i++) {
				if (pass == 0 && !s.reached[i] && (s.x[i].kind != SF_NORMAL || s.x[i].reads || s.x[i].writes))
					seeded[i] = true;
				if (seeded[i] && sf_flow(&s, i, seed, addr + s.x[i].off) && !queued[i]) {
					work[0] = i;
					queued[i] = true;
					sf_run(&s, work, 1, queued);
				}
			}
		}
		/* (what is still unreached: padding) */
		free(seeded);
		uint64_t out[16];
		long succ[2];
		for (size_t i = 0; i < s.n; i++)
			sf_step(&s, i, out, succ, true);
		free(work);
		free(queued);
	}
	/* the references in order, the calls through registers among them */
	size_t k = 0;
	for (size_t i = 0; i <= s.n; i++) {
		uint64_t at = i < s.n ? addr + s.x[i].off : UINT64_MAX;
		for (; k < h.v.n && h.v.v[k].at < at; k++)
			fn(ctx, &h.v.v[k]);
		if (i == s.n)
			break;
		const struct sf_insn *x = &s.x[i];
		const struct sf_escape *e = NULL;
		if (x->kind == SF_LOAD) {
			for (; k < h.v.n && h.v.v[k].at == at; k++) {
				struct ct_code_ref r = h.v.v[k];
				if (r.kind == CT_REF_ADDR && r.target == x->target) {
					if (too_long) {
						r.why = SF_WHY_LONG;
						r.why_at = at;
					} else if (sf_escaped(&s, x->target, &e)) {
						r.why = e->why;
						r.why_at = e->at;
					} else {
						r.through = CT_THROUGH_LOAD;
						r.via_reg = true;
					}
				}
				fn(ctx, &r);
			}
		} else if (s.plan && s.plan[i] && !sf_escaped(&s, s.plan[i], NULL)) {
			struct ct_code_ref r = {CT_REF_ADDR, at, x->len, false, s.plan[i],
						x->kind == SF_CALL_REG ? CT_THROUGH_CALL : CT_THROUGH_JUMP, true, 0, 0};
			fn(ctx, &r);
		}
	}
	free(s.at_off);
	free(s.st);
	free(s.reached);
	free(s.plan);
	CT_VEC_FREE(s.esc);
	CT_VEC_FREE(xs);
	CT_VEC_FREE(h.v);
	return bad;
}

/* ---- ways on from a probe that lead to one instruction only ---- */

/* The ways on from the emulated jump or nop at AT, before looking at what
 * else of the function enters them; NEXT: where the code after it starts. */
static size_t ways_at(const uint8_t *code, size_t len, uint64_t entry, uint64_t at, struct ct_way out[2],
		      uint64_t *next_out)
{
	struct insn x;
	if (at < entry || at - entry >= len)
		return 0;
	size_t off = (size_t)(at - entry);
	if (!decode(code + off, len - off, at, &x) || !kernel_emulates(&x))
		return 0;
	uint64_t next = at + x.in.length, t = branch_target(&x);
	*next_out = next;
	size_t n = 0;
	switch (x.in.meta.category) {
	case ZYDIS_CATEGORY_COND_BR: {
		uint8_t cc = jcc_cond(&x.in);
		if (!cc || !t || t == next)
			return 0;
		out[n++] = (struct ct_way){t, cc, false};
		out[n++] = (struct ct_way){next, cc, true};
		break;
	}
	case ZYDIS_CATEGORY_UNCOND_BR:
		if (!t)
			return 0;
		out[n++] = (struct ct_way){t, 0, false};
		break;
	case ZYDIS_CATEGORY_NOP:
	case ZYDIS_CATEGORY_WIDENOP:
		out[n++] = (struct ct_way){next, 0, false};
		break;
	default: /* a call, a push (SP moves): no way the probe sees whole */
		return 0;
	}
	return n;
}

size_t ct_probe_ways_any(const uint8_t *code, size_t len, uint64_t entry, uint64_t at, struct ct_way out[2])
{
	uint64_t next;
	return ways_at(code, len, entry, at, out, &next);
}

size_t ct_probe_ways(const uint8_t *code, size_t len, uint64_t entry, uint64_t at, struct ct_way out[2])
{
	uint64_t next = 0;
	size_t n = ways_at(code, len, entry, at, out, &next);
	if (!n)
		return 0;
	struct insn x;
	/* Each way must start where nothing else of the function goes: no other
	 * branch lands there, no jump through a table may, and the instruction
	 * before it does not run on into it (unless it is the probe's own). */
	bool keep[2] = {true, true}, found[2] = {false, false};
	uint64_t prev_end = 0;
	bool prev_runs_on = false;
	for (size_t o = 0; o < len; o += x.in.length) {
		if (!decode(code + o, len - o, entry + o, &x)) {
			if (!only_padding(code + o, len - o))
				return 0;
			break;
		}
		for (size_t k = 0; k < n; k++) {
			found[k] |= x.addr == out[k].to;
			if (x.addr == out[k].to && out[k].to != next && prev_end == x.addr && prev_runs_on)
				keep[k] = false; /* the code before runs on into a jump's target */
		}
		bool jump = x.in.meta.category == ZYDIS_CATEGORY_COND_BR || x.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
		uint64_t tx = jump ? branch_target(&x) : 0;
		if (jump && !tx)
			return 0; /* a jump through a table: it may land anywhere */
		for (size_t k = 0; k < n; k++)
			if (tx == out[k].to && x.addr != at)
				keep[k] = false;
		prev_end = x.addr + x.in.length;
		/* (a call returns to the next instruction, a jcc may go on there) */
		prev_runs_on = x.in.meta.category != ZYDIS_CATEGORY_UNCOND_BR && x.in.meta.category != ZYDIS_CATEGORY_RET &&
			       x.in.meta.category != ZYDIS_CATEGORY_INTERRUPT && !traps(&x);
	}
	size_t m = 0;
	for (size_t k = 0; k < n; k++)
		if (keep[k] && found[k]) /* (a way into the middle of an instruction: none) */
			out[m++] = out[k];
	return m;
}

enum ct_insn_role ct_insn_role_at(const uint8_t *code, size_t len, uint64_t addr)
{
	struct insn x;
	if (!decode(code, len, addr, &x))
		return CT_INSN_OTHER;
	if (x.in.meta.category == ZYDIS_CATEGORY_CALL)
		return kernel_emulates(&x) ? CT_INSN_CALL : CT_INSN_OTHER;
	if ((x.in.meta.category == ZYDIS_CATEGORY_NOP || x.in.meta.category == ZYDIS_CATEGORY_WIDENOP) &&
	    kernel_emulates(&x))
		return CT_INSN_NOP;
	return CT_INSN_OTHER;
}

/* ---- whether an assembly function's RETs have a result in RAX ---- */

/* Does instruction X write all of RAX (RAX or EAX, not only when a
 * condition holds)?  Its implicit operands count too (cdqe, rdtsc). */
static bool writes_whole_rax(const struct insn *x)
{
	for (int i = 0; i < x->in.operand_count; i++) {
		const ZydisDecodedOperand *o = &x->ops[i];
		if (o->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (o->reg.value == ZYDIS_REGISTER_RAX || o->reg.value == ZYDIS_REGISTER_EAX) &&
		    (o->actions & ZYDIS_OPERAND_ACTION_WRITE) && !(o->actions & ZYDIS_OPERAND_ACTION_CONDWRITE))
			return true;
	}
	return false;
}

bool ct_rets_set_rax(const uint8_t *code, size_t len, uint64_t entry)
{
	/* The instructions, then "RAX is set" before each (set[i]): false at
	 * the entry, true after a write of all of RAX or a call (the callee's
	 * result, which code that calls and returns passes on: tests/fixtures/
	 * c/warm's wm_f), what the instruction before left otherwise, and
	 * where branches of the function land, true only if it is on every
	 * way in -- from true everywhere down, a pass at a time, until it
	 * stays. */
	struct line {
		uint64_t target; /* a jump's; then its index (+1; 0: none, or out of the function) */
		uint8_t cat;     /* 0, 'r' ret, 'c' call, 'j' jmp, 'b' conditional jump */
		bool writes;
	};
	CT_VEC(struct line) v = {0};
	CT_VEC(uint64_t) addrs = {0}; /* each line's */
	struct insn x;
	bool ok = true;
	for (size_t off = 0; off < len && ok; off += x.in.length) {
		if (!decode(code + off, len - off, entry + off, &x)) {
			ok = only_padding(code + off, len - off);
			break;
		}
		struct line l = {0, 0, writes_whole_rax(&x)};
		uint8_t cat = x.in.meta.category;
		if (cat == ZYDIS_CATEGORY_UNCOND_BR || cat == ZYDIS_CATEGORY_COND_BR) {
			l.cat = cat == ZYDIS_CATEGORY_COND_BR ? 'b' : 'j';
			l.target = branch_target(&x);
			ok = l.target != 0; /* (a jump table's targets are not known: no answer) */
		} else if (cat == ZYDIS_CATEGORY_RET || cat == ZYDIS_CATEGORY_CALL) {
			l.cat = cat == ZYDIS_CATEGORY_RET ? 'r' : 'c';
		}
		CT_VEC_PUSH(v, l);
		CT_VEC_PUSH(addrs, x.addr);
	}
	size_t n = v.n, rets = 0;
	for (size_t i = 0; i < n && ok; i++) {
		uint64_t t = v.v[i].target;
		size_t k = t ? ct_lower_bound_u64(addrs.v, n, t) : n;
		/* (into the middle of an instruction: no answer; out: a tail jump) */
		if (t >= entry && t < entry + len && (k == n || addrs.v[k] != t))
			ok = false;
		v.v[i].target = k < n && addrs.v[k] == t ? k + 1 : 0;
	}
	bool *set = ok && n ? xmalloc(2 * n * sizeof(*set)) : NULL, *next = set ? set + n : NULL;
	for (size_t i = 0; i < n && set; i++)
		set[i] = i > 0;
	for (bool changed = set != NULL; changed;) {
		for (size_t i = 0; i < n; i++)
			next[i] = i > 0;
		for (size_t i = 0; i < n; i++) {
			const struct line *l = &v.v[i];
			bool out = l->cat == 'c' || l->writes || set[i];
			if (l->target)
				next[l->target - 1] &= out;
			if (l->cat != 'r' && l->cat != 'j' && i + 1 < n)
				next[i + 1] &= out;
		}
		changed = memcmp(set, next, n * sizeof(*set)) != 0;
		memcpy(set, next, n * sizeof(*set));
	}
	for (size_t i = 0; i < n && set; i++)
		if (v.v[i].cat == 'r') {
			rets++;
			ok &= set[i];
		}
	free(set);
	CT_VEC_FREE(v);
	CT_VEC_FREE(addrs);
	return ok && rets > 0;
}
