#include "plan/sites.h"
#include "util/util.h"

#include <Zydis/Zydis.h>
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

static ZydisDecoder *decoder(void)
{
	static ZydisDecoder d;
	static bool init;
	if (!init) {
		ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		init = true;
	}
	return &d;
}

static bool decode(const uint8_t *p, size_t n, uint64_t addr, struct insn *out)
{
	out->addr = addr;
	out->bytes = p;
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder(), p, n, &out->in, out->ops));
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
		return b[0] == 0x90 || (b[0] == 0x0f && b[1] == 0x1f) ||
		       (b[0] == 0x66 && (b[1] == 0x90 || (b[1] == 0x0f && b[2] == 0x1f)));
	default:
		return false;
	}
}

/* May this register be written before the entry site without changing what
 * the entry site sees (arguments, goroutine, SP)? */
static bool clobber_ok(ZydisRegister r, enum ct_abi abi)
{
	if (r == ZYDIS_REGISTER_RFLAGS || r == ZYDIS_REGISTER_EFLAGS || r == ZYDIS_REGISTER_FLAGS ||
	    r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP || r == ZYDIS_REGISTER_IP)
		return true;
	r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	switch (abi) {
	case CT_ABI_GO_REG: /* R12, R13 are scratch in ABIInternal */
		return r == ZYDIS_REGISTER_R12 || r == ZYDIS_REGISTER_R13;
	case CT_ABI_GO_STACK: /* args live on the stack: only SP matters */
		return r != ZYDIS_REGISTER_RSP && r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15;
	case CT_ABI_C: /* R10, R11 are scratch in SysV */
	default:
		return r == ZYDIS_REGISTER_R10 || r == ZYDIS_REGISTER_R11;
	}
}

/* An instruction that may run before the entry site: it writes no memory,
 * no register that matters, and does not branch. */
static bool harmless_before_entry(const struct insn *x, enum ct_abi abi)
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
		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && !clobber_ok(op->reg.value, abi))
			return false;
	}
	return true;
}

/* The kernel refuses a uprobe on an instruction with a LOCK or an ES/CS/SS/DS
 * segment prefix (arch/x86/kernel/uprobes.c: is_prefix_bad), and one refused
 * site fails the whole link. */
static bool kernel_refuses(const struct insn *x)
{
	for (int i = 0; i < x->in.raw.prefix_count; i++)
		switch (x->in.raw.prefixes[i].value) {
		case 0xf0:
		case 0x26:
		case 0x2e:
		case 0x36:
		case 0x3e:
			return true;
		}
	return false;
}

static bool only_padding(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xcc && p[i] != 0x00)
			return false;
	return true;
}

int ct_find_sites(const uint8_t *code, size_t len, uint64_t addr, enum ct_abi abi,
		  ct_is_morestack_fn is_morestack, void *ctx, struct ct_fn_sites *out)
{
	memset(out, 0, sizeof(*out));
	CT_VEC(struct ct_exit_site) exits = {0};
	CT_VEC(uint64_t) targets = {0}; /* intra-function branch targets */
	struct insn x;
	size_t off = 0;
	int first_cheap = -1;
	bool prefix_clean = true; /* all instructions so far harmless */
	uint64_t cheap_addr = 0;

	while (off < len) {
		if (!decode(code + off, len - off, addr + off, &x)) {
			if (off && only_padding(code + off, len - off))
				break;
			CT_VEC_FREE(exits);
			CT_VEC_FREE(targets);
			return ct_fail("undecodable instruction at +0x%zx (byte 0x%02x)", off, code[off]);
		}
		if (first_cheap < 0 && out->ninsns < ENTRY_LOOKAHEAD && prefix_clean) {
			if (kernel_emulates(&x)) {
				first_cheap = (int)out->ninsns;
				cheap_addr = x.addr;
			} else if (!harmless_before_entry(&x, abi)) {
				prefix_clean = false;
			}
		}
		uint64_t t = branch_target(&x);
		bool inside = t >= addr && t < addr + len;
		switch (x.in.meta.category) {
		case ZYDIS_CATEGORY_RET: {
			struct ct_exit_site e = {x.addr, CT_SITE_RET, 0};
			CT_VEC_PUSH(exits, e);
			break;
		}
		case ZYDIS_CATEGORY_UNCOND_BR:
			if (t && !inside) {
				struct ct_exit_site e = {x.addr, CT_SITE_TAIL, t};
				CT_VEC_PUSH(exits, e);
			} else if (t) {
				CT_VEC_PUSH(targets, t);
			}
			break;
		case ZYDIS_CATEGORY_COND_BR:
			if (t && inside)
				CT_VEC_PUSH(targets, t);
			break;
		case ZYDIS_CATEGORY_CALL:
			if (t && is_morestack && is_morestack(ctx, t)) {
				struct ct_exit_site e = {x.addr, CT_SITE_RESTART, t};
				CT_VEC_PUSH(exits, e);
			}
			break;
		default:
			break;
		}
		off += x.in.length;
		out->ninsns++;
	}
	if (!out->ninsns) {
		CT_VEC_FREE(exits);
		CT_VEC_FREE(targets);
		return ct_fail("empty function body");
	}

	/* The cheap site must run exactly once per call: no branch may land
	 * between the function start and it (a jump to the start itself is
	 * Go's morestack restart, which reconstruction expects). */
	out->entry_site = addr;
	out->entry_emulated = false;
	if (first_cheap >= 0) {
		bool reentered = false;
		for (size_t i = 0; i < targets.n; i++)
			if (targets.v[i] > addr && targets.v[i] <= cheap_addr)
				reentered = true;
		if (!reentered) {
			out->entry_site = cheap_addr;
			out->entry_emulated = true;
		}
	}
	if (out->entry_site == addr && !out->entry_emulated) {
		/* +0 itself may be an emulated instruction (push %rbp, nop). */
		if (decode(code, len, addr, &x) && kernel_emulates(&x))
			out->entry_emulated = true;
	}
	/* Sites the kernel would refuse make the function unprobeable. */
	struct insn chk;
	bool refused = decode(code + (out->entry_site - addr), len - (out->entry_site - addr), out->entry_site, &chk) &&
		       kernel_refuses(&chk);
	for (size_t i = 0; !refused && i < exits.n; i++)
		refused = decode(code + (exits.v[i].addr - addr), len - (exits.v[i].addr - addr), exits.v[i].addr, &chk) &&
			  kernel_refuses(&chk);
	if (refused) {
		CT_VEC_FREE(exits);
		CT_VEC_FREE(targets);
		return ct_fail("a probe site has a lock or segment prefix, which uprobes refuse");
	}
	out->exits = exits.v;
	out->nexits = exits.n;
	CT_VEC_FREE(targets);
	return 0;
}

void ct_fn_sites_free(struct ct_fn_sites *s)
{
	free(s->exits);
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
