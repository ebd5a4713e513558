/* ct_find_sites / ct_disasm_one on hand-assembled x86-64 code.  Every byte
 * array carries its disassembly (verified with objdump -D -b binary
 * -mi386:x86-64 --adjust-vma=0x401000). */
#include "unit.h"
#include "fetchsim.h"

#include "plan/fetch.h"
#include "plan/plan.h"
#include "plan/sites.h"
#include "target/types.h"
#include "util/util.h"

#define BASE 0x401000ULL
#define MORESTACK 0x460000ULL

static bool is_morestack(void *ctx, uint64_t target)
{
	int *calls = ctx;
	if (calls)
		(*calls)++;
	return target == MORESTACK;
}

static int find(const uint8_t *code, size_t len, enum ct_callconv abi, struct ct_fn_sites *s)
{
	return ct_find_sites(code, len, BASE, abi, is_morestack, NULL, NULL, s);
}

/* Go ABIInternal prologue. */
static const uint8_t go_reg[] = {
	0x49, 0x3b, 0x66, 0x10,       /* +00 cmp 0x10(%r14),%rsp */
	0x76, 0x0e,                   /* +04 jbe 0x401014 */
	0x55,                         /* +06 push %rbp */
	0x48, 0x89, 0xe5,             /* +07 mov %rsp,%rbp */
	0x48, 0x83, 0xec, 0x10,       /* +0a sub $0x10,%rsp */
	0x48, 0x83, 0xc4, 0x10,       /* +0e add $0x10,%rsp */
	0x5d,                         /* +12 pop %rbp */
	0xc3,                         /* +13 ret */
	0xe8, 0xe7, 0xef, 0x05, 0x00, /* +14 call 0x460000 (morestack) */
	0xeb, 0xe5,                   /* +19 jmp 0x401000 (restart at +0) */
};

TEST(sites_go_reg_prologue)
{
	struct ct_fn_sites s;
	int calls = 0;
	CHECK_EQ_I(ct_find_sites(go_reg, sizeof(go_reg), BASE, CT_CC_GO_REG, is_morestack, NULL, &calls, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 4);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.ninsns, 10);
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[0].addr, BASE + 0x13);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	CHECK_EQ_U(s.exits[0].target, 0);
	CHECK_EQ_U(s.exits[1].addr, BASE + 0x14);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_RESTART);
	CHECK_EQ_U(s.exits[1].target, MORESTACK);
	CHECK_EQ_I(calls, 1); /* asked once, about the one direct call */
	ct_fn_sites_free(&s);
	CHECK(s.exits == NULL && s.nexits == 0);
}

/* Large frame: the bound check is on SP minus the frame size. */
static const uint8_t go_large[] = {
	0x4c, 0x8d, 0xa4, 0x24, 0x00, 0xf0, 0xff, 0xff, /* +00 lea -0x1000(%rsp),%r12 */
	0x4d, 0x3b, 0x66, 0x10,                         /* +08 cmp 0x10(%r14),%r12 */
	0x76, 0x01,                                     /* +0c jbe 0x40100f */
	0xc3,                                           /* +0e ret */
	0xe8, 0xec, 0xef, 0x05, 0x00,                   /* +0f call 0x460000 */
	0xeb, 0xea,                                     /* +14 jmp 0x401000 */
};

TEST(sites_go_large_frame_prologue)
{
	struct ct_fn_sites s;
	CHECK_EQ_I(find(go_large, sizeof(go_large), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 0xc);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[0].addr, BASE + 0xe);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	CHECK_EQ_U(s.exits[1].addr, BASE + 0xf);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_RESTART);
	CHECK_EQ_U(s.exits[1].target, MORESTACK);
	ct_fn_sites_free(&s);
	/* In C, R12 is callee-saved: only R10/R11 may be written before the
	 * entry probe, so the lea pushes the entry back to +0. */
	CHECK_EQ_I(find(go_large, sizeof(go_large), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	ct_fn_sites_free(&s);
}

/* Go ABI0 (assembly/stack-args) prologue: g from TLS into RCX. */
static const uint8_t go_abi0[] = {
	0x64, 0x48, 0x8b, 0x0c, 0x25, 0xf8, 0xff, 0xff, 0xff, /* +00 mov %fs:0xfffffffffffffff8,%rcx */
	0x48, 0x3b, 0x61, 0x10,                               /* +09 cmp 0x10(%rcx),%rsp */
	0x76, 0x01,                                           /* +0d jbe 0x401010 */
	0xc3,                                                 /* +0f ret */
	0xe8, 0xeb, 0xef, 0x05, 0x00,                         /* +10 call 0x460000 */
	0xeb, 0xe9,                                           /* +15 jmp 0x401000 */
};

TEST(sites_go_abi0_prologue)
{
	struct ct_fn_sites s;
	/* Stack ABI: RCX holds no argument, so the jbe is a fine entry. */
	CHECK_EQ_I(find(go_abi0, sizeof(go_abi0), CT_CC_GO_STACK, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 0xd);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[0].addr, BASE + 0xf);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	CHECK_EQ_U(s.exits[1].addr, BASE + 0x10);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_RESTART);
	ct_fn_sites_free(&s);
	/* Register ABI: RCX is an argument register; the mov would clobber
	 * it before the probe, so the entry stays at +0 (single-stepped). */
	CHECK_EQ_I(find(go_abi0, sizeof(go_abi0), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 2);
	ct_fn_sites_free(&s);
}

TEST(sites_c_push_rbp)
{
	static const uint8_t code[] = {
		0x55,             /* +0 push %rbp */
		0x48, 0x89, 0xe5, /* +1 mov %rsp,%rbp */
		0x31, 0xc0,       /* +4 xor %eax,%eax */
		0x5d,             /* +6 pop %rbp */
		0xc3,             /* +7 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.ninsns, 5);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 7);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

TEST(sites_c_endbr64_push)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* +0 endbr64 */
		0x55,                   /* +4 push %rbp */
		0x48, 0x89, 0xe5,       /* +5 mov %rsp,%rbp */
		0x5d,                   /* +8 pop %rbp */
		0xc3,                   /* +9 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 4);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 9);
	ct_fn_sites_free(&s);
}

TEST(sites_c_fentry_nop_probed_without_trap)
{
	/* gcc -pg -mfentry -mnop-mcount: a 5-byte nop first, which the
	 * kernel probes without a trap; it wins over the push after it */
	static const uint8_t code[] = {
		0x0f, 0x1f, 0x44, 0x00, 0x00, /* +0 nopl 0x0(%rax,%rax,1) */
		0x55,                         /* +5 push %rbp */
		0x5d,                         /* +6 pop %rbp */
		0xc3,                         /* +7 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(s.entry_emulated && s.entry_optimized);
	ct_fn_sites_free(&s);
	/* across a page boundary it is only emulated, like the push: the
	 * first of the two is taken */
	CHECK_EQ_I(ct_find_sites(code, sizeof(code), BASE + 0xffd, CT_CC_SYSV, NULL, NULL, NULL, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 0xffd);
	CHECK(s.entry_emulated && !s.entry_optimized);
	ct_fn_sites_free(&s);
	/* a push first, then the nop: the nop would see SP moved (frame key,
	 * stack arguments), so the push is the entry */
	static const uint8_t later[] = {
		0x55,                         /* +0 push %rbp */
		0x0f, 0x1f, 0x44, 0x00, 0x00, /* +1 nopl 0x0(%rax,%rax,1) */
		0x5d,                         /* +6 pop %rbp */
		0xc3,                         /* +7 ret */
	};
	CHECK_EQ_I(find(later, sizeof(later), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(s.entry_emulated && !s.entry_optimized);
	ct_fn_sites_free(&s);
}

TEST(sites_multibyte_nops_are_emulated)
{
	/* Zydis files the 0f 1f nops as WIDENOP, not NOP: the kernel
	 * emulates its own encodings (measured: as cheap as a push), and
	 * single-steps the others */
	static const uint8_t nop4[] = {0x0f, 0x1f, 0x40, 0x00, 0xc3};             /* nopl 0x0(%rax); ret */
	static const uint8_t nop6[] = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}; /* nopw 0x0(%rax,%rax,1) */
	static const uint8_t nop8[] = {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3};
	static const uint8_t nop1[] = {0x90, 0xc3};
	static const uint8_t sib4[] = {0x0f, 0x1f, 0x04, 0x00, 0xc3}; /* nopl (%rax,%rax,1): gas's */
	static const uint8_t nop9[] = {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3};
	static const uint8_t mov[] = {0x48, 0x89, 0xf8, 0xc3};
	CHECK(ct_kernel_emulates_at(nop4, sizeof(nop4), BASE));
	CHECK(ct_kernel_emulates_at(nop6, sizeof(nop6), BASE));
	CHECK(ct_kernel_emulates_at(nop8, sizeof(nop8), BASE));
	CHECK(ct_kernel_emulates_at(nop1, sizeof(nop1), BASE));
	CHECK(!ct_kernel_emulates_at(sib4, sizeof(sib4), BASE));
	CHECK(!ct_kernel_emulates_at(nop9, sizeof(nop9), BASE));
	CHECK(!ct_kernel_emulates_at(mov, sizeof(mov), BASE));
	/* how a hit there is priced */
	static const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3};
	static const uint8_t nop5d[] = {0x0f, 0x1f, 0x44, 0x00, 0x08, 0xc3}; /* optimized, but not emulated if not */
	CHECK_EQ_U(ct_hit_flags_at(nop5, sizeof(nop5), BASE), CT_SITEF_NOTRAP);
	CHECK_EQ_U(ct_hit_flags_at(nop5, sizeof(nop5), BASE + 0xffc), 0);
	CHECK_EQ_U(ct_hit_flags_at(nop5d, sizeof(nop5d), BASE), CT_SITEF_STEPPED);
	CHECK_EQ_U(ct_hit_flags_at(nop4, sizeof(nop4), BASE), 0);
	struct ct_fn_sites s;
	CHECK_EQ_I(find(nop6, sizeof(nop6), CT_CC_SYSV, &s), 0);
	CHECK(s.entry_emulated && !s.entry_optimized);
	ct_fn_sites_free(&s);
}

TEST(sites_c_mov_first_not_emulated)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8, /* +0 mov %rdi,%rax */
		0xc3,             /* +3 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 3);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

TEST(sites_c3_inside_immediate)
{
	static const uint8_t code[] = {
		0xb8, 0xc3, 0x00, 0x00, 0x00, /* +0 mov $0xc3,%eax */
		0xc3,                         /* +5 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.ninsns, 2);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 5);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	ct_fn_sites_free(&s);
}

TEST(sites_several_rets)
{
	static const uint8_t code[] = {
		0x85, 0xff, /* +0 test %edi,%edi */
		0x74, 0x01, /* +2 je 0x401005 */
		0xc3,       /* +4 ret */
		0x31, 0xc0, /* +5 xor %eax,%eax */
		0xc3,       /* +7 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	/* test only writes flags: the je is the cheap entry; its target
	 * (+5) lies after it, so it cannot re-run. */
	CHECK_EQ_U(s.entry_site, BASE + 2);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[0].addr, BASE + 4);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	CHECK_EQ_U(s.exits[1].addr, BASE + 7);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

TEST(sites_ret_imm16)
{
	static const uint8_t code[] = {
		0x55,             /* +0 push %rbp */
		0x5d,             /* +1 pop %rbp */
		0xc2, 0x08, 0x00, /* +2 ret $0x8 */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.ninsns, 3);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 2);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

TEST(sites_rep_ret)
{
	static const uint8_t code[] = {
		0x55,       /* +0 push %rbp */
		0x5d,       /* +1 pop %rbp */
		0xf3, 0xc3, /* +2 repz ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.ninsns, 3);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 2); /* at the prefix, not at the C3 */
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

TEST(sites_tail_jmp_out)
{
	static const uint8_t rel32[] = {
		0x48, 0x89, 0xf8,             /* +0 mov %rdi,%rax */
		0xe9, 0xf8, 0x0f, 0x00, 0x00, /* +3 jmp 0x402000 */
	};
	static const uint8_t rel8[] = {
		0x31, 0xc0, /* +0 xor %eax,%eax */
		0xeb, 0x10, /* +2 jmp 0x401014 */
	};
	static const uint8_t only[] = {
		0xe9, 0xfb, 0x0f, 0x00, 0x00, /* +0 jmp 0x402000 */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(rel32, sizeof(rel32), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 3);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[0].target, 0x402000);
	ct_fn_sites_free(&s);

	CHECK_EQ_I(find(rel8, sizeof(rel8), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 2);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[0].target, BASE + 0x14);
	ct_fn_sites_free(&s);

	/* A body that is only a jmp: entry at +0 (jmp is emulated), and the
	 * same instruction is the tail exit. */
	CHECK_EQ_I(find(only, sizeof(only), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[0].target, 0x402000);
	ct_fn_sites_free(&s);

	/* Jumping to exactly addr+len is leaving the function. */
	static const uint8_t edge[] = {
		0xc3,       /* +0 ret */
		0xeb, 0x00, /* +1 jmp 0x401003 (= BASE + len) */
	};
	CHECK_EQ_I(find(edge, sizeof(edge), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[1].target, BASE + 3);
	ct_fn_sites_free(&s);
}

TEST(sites_jmp_inside_is_not_exit)
{
	static const uint8_t code[] = {
		0x31, 0xc0,       /* +00 xor %eax,%eax */
		0x83, 0xc0, 0x01, /* +02 add $0x1,%eax */
		0x83, 0xf8, 0x0a, /* +05 cmp $0xa,%eax */
		0x73, 0x02,       /* +08 jae 0x40100c */
		0xeb, 0xf6,       /* +0a jmp 0x401002 */
		0xc3,             /* +0c ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.ninsns, 6);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 0xc);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	/* xor writes RAX (the SysV return/varargs register): +0. */
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	ct_fn_sites_free(&s);
}

TEST(sites_call_morestack_or_not)
{
	static const uint8_t code[] = {
		0x55,                         /* +0 push %rbp */
		0xe8, 0xfa, 0xff, 0x05, 0x00, /* +1 call 0x461000 */
		0x5d,                         /* +6 pop %rbp */
		0xc3,                         /* +7 ret */
	};
	struct ct_fn_sites s;
	/* 0x461000 is not morestack: a plain call, no exit. */
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
	/* No callback at all: no RESTART either. */
	CHECK_EQ_I(ct_find_sites(go_reg, sizeof(go_reg), BASE, CT_CC_GO_REG, NULL, NULL, NULL, &s), 0);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

TEST(sites_jump_onto_cheap_site_forces_plus0)
{
	/* The restart path jumps back onto the jbe itself: a probe there
	 * would fire twice per call. */
	static const uint8_t onto[] = {
		0x49, 0x3b, 0x66, 0x10,       /* +00 cmp 0x10(%r14),%rsp */
		0x76, 0x01,                   /* +04 jbe 0x401007 */
		0xc3,                         /* +06 ret */
		0xe8, 0xf4, 0xef, 0x05, 0x00, /* +07 call 0x460000 */
		0xeb, 0xf6,                   /* +0c jmp 0x401004 */
	};
	/* Same with a conditional jump (jbe) landing on the cheap site. */
	static const uint8_t onto_jcc[] = {
		0x49, 0x3b, 0x66, 0x10,       /* +00 cmp 0x10(%r14),%rsp */
		0x76, 0x01,                   /* +04 jbe 0x401007 */
		0xc3,                         /* +06 ret */
		0xe8, 0xf4, 0xef, 0x05, 0x00, /* +07 call 0x460000 */
		0x76, 0xf6,                   /* +0c jbe 0x401004 */
		0xc3,                         /* +0e ret */
	};
	/* A jump strictly between +0 and the cheap site (onto the cmp). */
	static const uint8_t between[] = {
		0x4c, 0x8d, 0xa4, 0x24, 0x00, 0xf0, 0xff, 0xff, /* +00 lea -0x1000(%rsp),%r12 */
		0x4d, 0x3b, 0x66, 0x10,                         /* +08 cmp 0x10(%r14),%r12 */
		0x76, 0x01,                                     /* +0c jbe 0x40100f */
		0xc3,                                           /* +0e ret */
		0xeb, 0xf7,                                     /* +0f jmp 0x401008 */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(onto, sizeof(onto), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated); /* cmp is not emulated */
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_RESTART);
	ct_fn_sites_free(&s);

	CHECK_EQ_I(find(onto_jcc, sizeof(onto_jcc), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 3);
	CHECK_EQ_U(s.exits[2].addr, BASE + 0xe);
	ct_fn_sites_free(&s);

	CHECK_EQ_I(find(between, sizeof(between), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	ct_fn_sites_free(&s);

	/* Control: a jump back to +0 exactly (the normal restart) keeps the
	 * cheap site (see sites_go_reg_prologue). */
}

TEST(sites_prefixed_branch_not_emulated)
{
	static const uint8_t code[] = {
		0x49, 0x3b, 0x66, 0x10, /* +0 cmp 0x10(%r14),%rsp */
		0x3e, 0x76, 0x01,       /* +4 jbe,pt 0x401008 (ds prefix) */
		0xc3,                   /* +7 ret */
		0xc3,                   /* +8 ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 2);
	ct_fn_sites_free(&s);
}

TEST(sites_entry_lookahead)
{
	static const uint8_t four[] = {
		0x4d, 0x89, 0xd3, /* +0 mov %r10,%r11 */
		0x4d, 0x89, 0xd3, /* +3 mov %r10,%r11 */
		0x4d, 0x89, 0xd3, /* +6 mov %r10,%r11 */
		0x55,             /* +9 push %rbp  (4th instruction) */
		0x5d,             /* +a pop %rbp */
		0xc3,             /* +b ret */
	};
	static const uint8_t five[] = {
		0x4d, 0x89, 0xd3, /* +0 mov %r10,%r11 */
		0x4d, 0x89, 0xd3, /* +3 mov %r10,%r11 */
		0x4d, 0x89, 0xd3, /* +6 mov %r10,%r11 */
		0x4d, 0x89, 0xd3, /* +9 mov %r10,%r11 */
		0x55,             /* +c push %rbp  (5th: too far) */
		0x5d,             /* +d pop %rbp */
		0xc3,             /* +e ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(four, sizeof(four), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 9);
	CHECK(s.entry_emulated);
	ct_fn_sites_free(&s);
	CHECK_EQ_I(find(five, sizeof(five), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 0xe);
	ct_fn_sites_free(&s);
}

TEST(sites_padding_after_last_ret)
{
	static const uint8_t int3[] = {
		0x55,                   /* +0 push %rbp */
		0x5d,                   /* +1 pop %rbp */
		0xc3,                   /* +2 ret */
		0xcc, 0xcc, 0xcc, 0xcc, /* +3 int3 x4 */
	};
	static const uint8_t zero[] = {
		0x55, /* +0 push %rbp */
		0x5d, /* +1 pop %rbp */
		0xc3, /* +2 ret */
		0x00, /* +3 (lone zero byte: does not decode) */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(int3, sizeof(int3), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 2);
	ct_fn_sites_free(&s);
	CHECK_EQ_I(find(zero, sizeof(zero), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.ninsns, 3);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + 2);
	ct_fn_sites_free(&s);
}

TEST(sites_garbage_fails_with_offset)
{
	static const uint8_t mid[] = {
		0x55, /* +0 push %rbp */
		0x06, /* +1 (bad: push %es is invalid in 64-bit mode) */
		0xc3, /* +2 ret */
	};
	static const uint8_t first[] = {
		0x06, /* +0 (bad) */
		0xc3, /* +1 ret */
	};
	static const uint8_t cut[] = {
		0x55,             /* +0 push %rbp */
		0xb8, 0xc3, 0x00, /* +1 mov $imm32,%eax cut short */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(mid, sizeof(mid), CT_CC_SYSV, &s), -1);
	CHECK(strstr(ct_error(), "+0x1") != NULL);
	CHECK(strstr(ct_error(), "undecodable") != NULL);
	CHECK(s.exits == NULL);
	CHECK_EQ_I(find(first, sizeof(first), CT_CC_SYSV, &s), -1);
	CHECK(strstr(ct_error(), "+0x0") != NULL);
	CHECK_EQ_I(find(cut, sizeof(cut), CT_CC_SYSV, &s), -1);
	CHECK(strstr(ct_error(), "+0x1") != NULL);
	/* Nothing at all. */
	CHECK_EQ_I(find(mid, 0, CT_CC_SYSV, &s), -1);
}

TEST(sites_single_ret)
{
	static const uint8_t code[] = {0xc3}; /* +0 ret */
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.ninsns, 1);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_GO_REG, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK_EQ_U(s.nexits, 1);
	ct_fn_sites_free(&s);
}

TEST(sites_disasm_one)
{
	char text[128];
	int n = ct_disasm_one(go_reg + 4, sizeof(go_reg) - 4, BASE + 4, text, sizeof(text));
	CHECK_EQ_I(n, 2);
	CHECK(text[0] != 0);
	CHECK(strstr(text, "jbe") != NULL);
	CHECK(strstr(text, "401014") != NULL);
	n = ct_disasm_one(go_reg, sizeof(go_reg), BASE, text, sizeof(text));
	CHECK_EQ_I(n, 4);
	CHECK(strstr(text, "cmp") != NULL);
	static const uint8_t bad[] = {0x06};
	CHECK_EQ_I(ct_disasm_one(bad, 1, BASE, text, sizeof(text)), -1);
	CHECK(text[0] != 0);
	/* A tiny output buffer is truncated, not overrun. */
	char small[4];
	memset(small, 'x', sizeof(small));
	ct_disasm_one(go_reg, sizeof(go_reg), BASE, small, sizeof(small));
	CHECK_EQ_U(strlen(small), 3);
}

/* The kernel's rules (arch/x86/kernel/uprobes.c), checked on 6.18 by a
 * tracefs probe on each of these instructions. */
TEST(sites_uprobe_refusals)
{
	static const struct {
		uint8_t b[10];
		size_t n;
		bool refused;
	} cases[] = {
		{{0xc5, 0xf9, 0xef, 0xc0}, 4, true},             /* vpxor %xmm0,%xmm0,%xmm0 (VEX, refused) */
		{{0xc5, 0xfd, 0x74, 0xd1}, 4, true},             /* vpcmpeqb: accepted, stepped wrongly */
		{{0x62, 0xe2, 0x7d, 0x28, 0x7a, 0xce}, 6, true}, /* vpbroadcastb %esi,%ymm17 (EVEX) */
		{{0xf0, 0xff, 0x07}, 3, true},                   /* lock incl (%rdi) */
		{{0x3e, 0xeb, 0xfe}, 3, true},                   /* ds jmp */
		{{0x3e, 0xff, 0xe0}, 3, true},                   /* notrack jmp *%rax */
		{{0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0}, 9, true}, /* cs nopl */
		{{0x8e, 0xd0}, 2, true},                         /* mov %eax,%ss */
		{{0xcc}, 1, true},                               /* int3 */
		{{0xec}, 1, true},                               /* in (%dx),%al */
		{{0x66, 0xe8, 0x00, 0x00}, 4, true},             /* callw */
		{{0x66, 0x0f, 0x38, 0x00, 0xc1}, 5, false},      /* pshufb (0F-escaped: accepted) */
		{{0x66, 0x90}, 2, false},                        /* xchg %ax,%ax */
		{{0x0f, 0x1f, 0x00}, 3, false},                  /* nopl (%rax) */
		{{0xf3, 0x0f, 0x1e, 0xfa}, 4, false},            /* endbr64 */
		{{0x0f, 0xa2}, 2, false},                        /* cpuid */
		{{0x55}, 1, false},                              /* push %rbp */
		{{0xf3, 0xc3}, 2, false},                        /* repz ret */
		{{0xff, 0xe0}, 2, false},                        /* jmp *%rax */
		{{0xe8, 0, 0, 0, 0}, 5, false},                  /* call */
		{{0xf2, 0xe9, 0, 0, 0, 0}, 6, false},            /* bnd jmp */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = ct_uprobe_refuses(cases[i].b, cases[i].n, BASE);
		if ((why != NULL) != cases[i].refused) {
			unit_fail(__FILE__, __LINE__, "case %zu: %s", i, why ? why : "accepted");
			return;
		}
	}
}

/* A refused first instruction that only writes a vector register is passed
 * over; one that writes an argument or result register makes the function
 * unprobeable, with the reason. */
TEST(sites_refused_entry)
{
	static const uint8_t over[] = {
		0xc5, 0xf9, 0xef, 0xc0, /* +0 vpxor %xmm0,%xmm0,%xmm0 */
		0x48, 0x8d, 0x04, 0x77, /* +4 lea (%rdi,%rsi,2),%rax */
		0xc3,                   /* +8 ret */
	};
	static const uint8_t stuck[] = {
		0xc5, 0xf9, 0x7e, 0xc0, /* +0 vmovd %xmm0,%eax */
		0xc3,                   /* +4 ret */
	};
	static const uint8_t lock_ret[] = {
		0x55,             /* +0 push %rbp */
		0x5d,             /* +1 pop %rbp */
		0x3e, 0xc3,       /* +2 ds ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(over, sizeof(over), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE + 4);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 1);
	ct_fn_sites_free(&s);
	CHECK_EQ_I(find(stuck, sizeof(stuck), CT_CC_SYSV, &s), -1);
	CHECK(strstr(ct_error(), "first instruction") && strstr(ct_error(), "vmovd"));
	CHECK_EQ_I(find(lock_ret, sizeof(lock_ret), CT_CC_SYSV, &s), -1);
	CHECK(strstr(ct_error(), "exit at +0x2") && strstr(ct_error(), "segment prefix"));
}

/* ---- exits observed at return sites (ct_exit_walk) ---- */

/* Go main.fib (go1.19), after its first recursive call: the result (RAX) is
 * stored to 0x8(SP), then RAX is reused for the second call's argument. */
TEST(exit_walk_go_fib_first_call)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0x44, 0x24, 0x08, /* +00 mov %rax,0x8(%rsp) */
		0x48, 0x8b, 0x4c, 0x24, 0x20, /* +05 mov 0x20(%rsp),%rcx */
		0x48, 0x83, 0xc1, 0xfe,       /* +0a add $-2,%rcx */
		0x48, 0x89, 0xc8,             /* +0e mov %rcx,%rax */
		0xe8, 0xb5, 0xff, 0xff, 0xff, /* +11 call (the second fib) */
	};
	struct ct_exit_walk w;
	ct_exit_walk(code, sizeof(code), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, BASE + 0x11);
	CHECK_EQ_I(w.sp_delta, 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_STACK); /* the result, where it was saved */
	CHECK_EQ_I(w.loc[CT_RAX].stack_off, 8);
	CHECK_EQ_I(w.loc[CT_RCX].reg, CT_LOC_LOST);
	CHECK_EQ_I(w.loc[CT_RBX].reg, CT_RBX);
	CHECK(w.written == ((1u << CT_RAX) | (1u << CT_RCX)));
	CHECK(w.stack_written && !w.mem_written);
	CHECK_EQ_U(w.first_site, BASE);
	CHECK(!w.first_emulated);
}

/* A trap after the call (rustc's and clang's `call _Unwind_Resume; ud2`):
 * the call never returns there, which the plan must know (callers.c: no
 * exit probe on the ud2); a trap further on, past an emulated instruction,
 * is no business of this call's. */
TEST(exit_walk_trap_after_call)
{
	static const uint8_t ud2[] = {
		0x0f, 0x0b,       /* +00 ud2 */
		0x55,             /* +02 push %rbp (the next function) */
	};
	static const uint8_t mov_ud2[] = {
		0x48, 0x89, 0xc7, /* +00 mov %rax,%rdi */
		0x0f, 0x0b,       /* +03 ud2 */
	};
	static const uint8_t hlt[] = {0xf4};
	static const uint8_t push_ud2[] = {
		0x55,             /* +00 push %rbp (emulated: the exit) */
		0x0f, 0x0b,       /* +01 ud2 */
	};
	static const uint8_t plain[] = {
		0x48, 0x89, 0xc7, /* +00 mov %rax,%rdi */
		0xc3,             /* +03 ret */
	};
	struct ct_exit_walk w;
	ct_exit_walk(ud2, sizeof(ud2), BASE, &w);
	CHECK(w.traps);
	CHECK(w.how != CT_EXIT_EMULATED); /* never the push past it */
	ct_exit_walk(mov_ud2, sizeof(mov_ud2), BASE, &w);
	CHECK(w.traps);
	ct_exit_walk(hlt, sizeof(hlt), BASE, &w);
	CHECK(w.traps);
	ct_exit_walk(push_ud2, sizeof(push_ud2), BASE, &w);
	CHECK(!w.traps);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	ct_exit_walk(plain, sizeof(plain), BASE, &w);
	CHECK(!w.traps);
	struct ct_exit_brief b;
	ct_exit_walk(ud2, sizeof(ud2), BASE, &w);
	ct_exit_brief_of(&w, &b);
	CHECK(b.traps);
}

/* ct_find_sites's never_leaves of CODE (SysV), -1 if it fails. */
static int never_leaves(const uint8_t *code, size_t len)
{
	struct ct_fn_sites s;
	if (find(code, len, CT_CC_SYSV, &s))
		return -1;
	int r = s.never_leaves;
	ct_fn_sites_free(&s);
	return r;
}

/* A function nothing in whose code leaves but calls never returns (gcc's
 * code of one ending in exit()); one with a RET, a jump out, an indirect
 * jump or code running on past its end may. */
TEST(find_sites_never_leaves)
{
	static const uint8_t fatal[] = {
		0x53,                         /* +00 push %rbx */
		0x89, 0xfb,                   /* +01 mov %edi,%ebx */
		0xe8, 0x10, 0x00, 0x00, 0x00, /* +03 call +0x18 (printf) */
		0x89, 0xdf,                   /* +08 mov %ebx,%edi */
		0xe8, 0x20, 0x00, 0x00, 0x00, /* +0a call +0x2f (exit) */
	};
	static const uint8_t branch_ret[] = {
		0x85, 0xff,                   /* +00 test %edi,%edi */
		0x75, 0x01,                   /* +02 jne +5 */
		0xc3,                         /* +04 ret */
		0xe8, 0x20, 0x00, 0x00, 0x00, /* +05 call (abort) */
	};
	static const uint8_t cold[] = {
		0x85, 0xff,                   /* +00 test %edi,%edi */
		0x0f, 0x85, 0x00, 0x10, 0x00, 0x00, /* +02 jne +0x1008 (f.cold: a part elsewhere) */
		0xe8, 0x20, 0x00, 0x00, 0x00, /* +08 call (abort) */
	};
	static const uint8_t table[] = {
		0xff, 0xe0,                   /* +00 jmp *%rax (a jump table, or a tail call) */
		0xe8, 0x20, 0x00, 0x00, 0x00, /* +02 call (abort) */
	};
	static const uint8_t runs_on[] = {
		0xe8, 0x20, 0x00, 0x00, 0x00, /* +00 call */
		0x48, 0x89, 0xc7,             /* +05 mov %rax,%rdi: into the code after it */
	};
	CHECK_EQ_I(never_leaves(fatal, sizeof(fatal)), 1);
	CHECK_EQ_I(never_leaves(branch_ret, sizeof(branch_ret)), 0);
	CHECK_EQ_I(never_leaves(cold, sizeof(cold)), 0);
	CHECK_EQ_I(never_leaves(table, sizeof(table)), 0);
	CHECK_EQ_I(never_leaves(runs_on, sizeof(runs_on)), 0);
}

/* The runtime functions that never return, by symbol name (a PLT stub's
 * too), and how they leave. */
TEST(noreturn_names)
{
	CHECK_EQ_U(ct_noreturn_name("exit@plt"), CT_NORETURN_ENDS);
	CHECK_EQ_U(ct_noreturn_name("__stack_chk_fail@plt"), CT_NORETURN_ENDS);
	CHECK_EQ_U(ct_noreturn_name("abort@GLIBC_2.2.5"), CT_NORETURN_ENDS);
	CHECK_EQ_U(ct_noreturn_name("_ZSt9terminatev@plt"), CT_NORETURN_ENDS);
	CHECK_EQ_U(ct_noreturn_name("pthread_exit"), CT_NORETURN_ENDS);
	CHECK_EQ_U(ct_noreturn_name("_Unwind_Resume@plt"), CT_NORETURN_UNWINDS);
	CHECK_EQ_U(ct_noreturn_name("__cxa_throw@plt"), CT_NORETURN_UNWINDS);
	CHECK_EQ_U(ct_noreturn_name("siglongjmp@plt"), CT_NORETURN_UNWINDS);
	CHECK_EQ_U(ct_noreturn_name("__longjmp_chk@plt"), CT_NORETURN_UNWINDS);
	CHECK_EQ_U(ct_noreturn_name("_ZSt20__throw_length_errorPKc@plt"), CT_NORETURN_UNWINDS);
	CHECK_EQ_U(ct_noreturn_name("_ZN4core9panicking5panic17h0123456789abcdefE"), CT_NORETURN_UNWINDS);
	/* returns: a setjmp, exit's neighbours, a name that only starts alike */
	CHECK_EQ_U(ct_noreturn_name("_setjmp@plt"), CT_NORETURN_NO);
	CHECK_EQ_U(ct_noreturn_name("atexit@plt"), CT_NORETURN_NO);
	CHECK_EQ_U(ct_noreturn_name("exit_group"), CT_NORETURN_NO);
	CHECK_EQ_U(ct_noreturn_name("_ZSt4cout"), CT_NORETURN_NO);
	CHECK_EQ_U(ct_noreturn_name("__cxa_throw_helper"), CT_NORETURN_NO);
}

/* ... and after the second: the caller adds and returns. */
TEST(exit_walk_tail_position)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x4c, 0x24, 0x08, /* +00 mov 0x8(%rsp),%rcx */
		0x48, 0x01, 0xc8,             /* +05 add %rcx,%rax */
		0x48, 0x8b, 0x6c, 0x24, 0x10, /* +08 mov 0x10(%rsp),%rbp */
		0x48, 0x83, 0xc4, 0x18,       /* +0d add $0x18,%rsp */
		0xc3,                         /* +11 ret */
	};
	static const uint8_t leave_ret[] = {
		0xc9, /* leave (SP from RBP: not followed) */
		0xc3, /* ret */
	};
	/* `return f(x)`: the frame goes, the result stays in RAX */
	static const uint8_t pass[] = {
		0x48, 0x8b, 0x6c, 0x24, 0x20, /* +00 mov 0x20(%rsp),%rbp */
		0x48, 0x83, 0xc4, 0x28,       /* +05 add $0x28,%rsp */
		0xc3,                         /* +09 ret */
	};
	struct ct_exit_walk w;
	ct_exit_walk(code, sizeof(code), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_TAILPOS);
	CHECK_EQ_U(w.first_site, BASE);
	/* at the ret, the result is the sum less a word of the frame just
	 * left (below SP: not a place to read from) */
	CHECK(w.at_ret);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_LOST);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 0x0d);
	/* ... but the sum still holds: RAX plus the word loaded from 8 off
	 * SP at the return (the other call's result, read at its exit) */
	CHECK_EQ_U(w.left_regs, 1u << CT_RAX);
	CHECK_EQ_I(w.left_in[CT_RAX], CT_RAX);
	CHECK_EQ_I(w.left_off[CT_RAX], 8);
	static const uint8_t sub[] = {
		0x48, 0x8b, 0x4c, 0x24, 0x08, /* +00 mov 0x8(%rsp),%rcx */
		0x48, 0x29, 0xc8,             /* +05 sub %rcx,%rax (not a sum the walk follows) */
		0x48, 0x83, 0xc4, 0x18,       /* +08 add $0x18,%rsp */
		0xc3,                         /* +0c ret */
	};
	ct_exit_walk(sub, sizeof(sub), BASE, &w);
	CHECK(w.at_ret && !w.left_regs);
	static const uint8_t lea_rcx[] = {
		0x48, 0x8b, 0x4c, 0x24, 0x08, /* +00 mov 0x8(%rsp),%rcx */
		0x48, 0x8d, 0x0c, 0x01,       /* +05 lea (%rcx,%rax,1),%rcx: the sum in RCX */
		0x48, 0x83, 0xc4, 0x18,       /* +09 add $0x18,%rsp */
		0xc3,                         /* +0d ret */
	};
	ct_exit_walk(lea_rcx, sizeof(lea_rcx), BASE, &w);
	CHECK_EQ_U(w.left_regs, 1u << CT_RAX);
	CHECK_EQ_I(w.left_in[CT_RAX], CT_RCX);
	static const uint8_t reloaded[] = {
		0x48, 0x8b, 0x4c, 0x24, 0x08, /* +00 mov 0x8(%rsp),%rcx */
		0x48, 0x83, 0xc4, 0x18,       /* +05 add $0x18,%rsp */
		0x48, 0x8b, 0x4c, 0x24, 0xf8, /* +09 mov -0x8(%rsp),%rcx: below SP, not followed */
		0x48, 0x01, 0xc8,             /* +0e add %rcx,%rax */
		0xc3,                         /* +11 ret */
	};
	ct_exit_walk(reloaded, sizeof(reloaded), BASE, &w);
	CHECK(w.at_ret && !w.left_regs);
	ct_exit_walk(pass, sizeof(pass), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_TAILPOS);
	CHECK(w.at_ret && !w.stack_written && !w.mem_written);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX);
	CHECK_EQ_I(w.loc[CT_RBX].reg, CT_RBX);
	CHECK_EQ_I(w.loc[CT_RAX].addend, 0);
	CHECK_EQ_I(w.loc[CT_RBP].reg, CT_LOC_LOST);
	ct_exit_walk(leave_ret, sizeof(leave_ret), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_TAILPOS);
	CHECK(!w.at_ret);
}

/* Only a frame no callee can write keeps a word across a call. */
TEST(frame_address_taken)
{
	static const uint8_t fib[] = {
		0x49, 0x3b, 0x66, 0x10,             /* cmp 0x10(%r14),%rsp */
		0x48, 0x83, 0xec, 0x18,             /* sub $0x18,%rsp */
		0x48, 0x89, 0x6c, 0x24, 0x10,       /* mov %rbp,0x10(%rsp) */
		0x48, 0x8d, 0x6c, 0x24, 0x10,       /* lea 0x10(%rsp),%rbp */
		0x48, 0x89, 0x44, 0x24, 0x20,       /* mov %rax,0x20(%rsp) */
		0x48, 0x8d, 0x48, 0xff,             /* lea -0x1(%rax),%rcx */
		0x48, 0x8b, 0x6c, 0x24, 0x10,       /* mov 0x10(%rsp),%rbp */
		0x48, 0x83, 0xc4, 0x18,             /* add $0x18,%rsp */
		0xc3,                               /* ret */
	};
	CHECK(!ct_frame_address_taken(fib, sizeof(fib), BASE));
	static const uint8_t lea_slot[] = {0x48, 0x8d, 0x44, 0x24, 0x08, 0xc3}; /* lea 0x8(%rsp),%rax */
	CHECK(ct_frame_address_taken(lea_slot, sizeof(lea_slot), BASE));
	static const uint8_t lea_rbp[] = {0x48, 0x8d, 0x45, 0xe0, 0xc3}; /* lea -0x20(%rbp),%rax (-O0 C) */
	CHECK(ct_frame_address_taken(lea_rbp, sizeof(lea_rbp), BASE));
	static const uint8_t copy_sp[] = {0x48, 0x89, 0xe7, 0xc3}; /* mov %rsp,%rdi */
	CHECK(ct_frame_address_taken(copy_sp, sizeof(copy_sp), BASE));
	static const uint8_t frame_ptr[] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3}; /* push %rbp; mov %rsp,%rbp */
	CHECK(!ct_frame_address_taken(frame_ptr, sizeof(frame_ptr), BASE));
	static const uint8_t bad[] = {0x48, 0x8b}; /* cut short: in doubt */
	CHECK(ct_frame_address_taken(bad, sizeof(bad), BASE));
}

TEST(exit_walk_sp_and_registers)
{
	/* add/pop move SP; the site's delta says how far */
	static const uint8_t pops[] = {
		0x48, 0x83, 0xc4, 0x08,       /* +0 add $8,%rsp */
		0x5b,                         /* +4 pop %rbx */
		0xe9, 0x00, 0x10, 0x00, 0x00, /* +5 jmp (tail jump out) */
	};
	/* register copies follow the value; a write elsewhere kills slots */
	static const uint8_t moves[] = {
		0x48, 0x89, 0xc3,       /* +0 mov %rax,%rbx */
		0x48, 0x89, 0x04, 0x24, /* +3 mov %rax,(%rsp) */
		0x48, 0x89, 0x07,       /* +7 mov %rax,(%rdi) */
		0x31, 0xc0,             /* +a xor %eax,%eax */
		0x90,                   /* +c nop */
	};
	/* an indirect call comes first: the return address, single-stepped */
	static const uint8_t indirect[] = {
		0x48, 0x89, 0xc7, /* +0 mov %rax,%rdi */
		0xff, 0xd1,       /* +3 call *%rcx */
	};
	/* the return address cannot take a probe, nothing after it either */
	static const uint8_t refused[] = {
		0xc5, 0xf9, 0xef, 0xc0, /* vpxor %xmm0,%xmm0,%xmm0 */
		0xff, 0xd0,             /* call *%rax */
	};
	/* a push is emulated: the site is the push, before it runs */
	static const uint8_t push[] = {
		0x48, 0x89, 0xc6, /* +0 mov %rax,%rsi */
		0x53,             /* +3 push %rbx */
	};
	struct ct_exit_walk w;
	ct_exit_walk(pops, sizeof(pops), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, BASE + 5);
	CHECK_EQ_I(w.sp_delta, 16);
	CHECK_EQ_I(w.loc[CT_RBX].reg, CT_LOC_LOST);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX);
	ct_exit_walk(moves, sizeof(moves), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, BASE + 0xc);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RBX);
	CHECK(w.mem_written && w.stack_written);
	ct_exit_walk(indirect, sizeof(indirect), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_STEPPED);
	CHECK_EQ_U(w.site, BASE);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX);
	ct_exit_walk(refused, sizeof(refused), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_NONE);
	CHECK_EQ_U(w.first_site, 0);
	ct_exit_walk(push, sizeof(push), BASE, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, BASE + 3);
	CHECK_EQ_I(w.sp_delta, 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX);
}

/* ---- results read at the exit site (ct_exit_walk + ct_fetch_relocate) ---- */

/* The machine at the exit site: registers (enum ct_reg) and the stack bytes
 * from SP up. */
struct at_site {
	uint64_t regs[15];
	uint8_t stack[0x200];
};

static void put_word(struct at_site *m, uint32_t off, uint64_t v)
{
	memcpy(m->stack + off, &v, 8);
}

/* Reads the first N Go result registers (RAX, RBX, RCX, ...) where the walk
 * over CODE says they are at its exit site, as calltrace.bpf.c's run_fetch
 * would from M (fetchsim.h): OUT[i] (of which a value of SIZES[i] bytes uses
 * the low ones; SIZES NULL: all 8).  -1 if the relocation fails (ct_error
 * says why), -2 if the walk finds no emulated site or the fetch has an op
 * other than a word's, -3 if the fetch drops the hit's values. */
static int results_sized(const uint8_t *code, size_t len, const struct at_site *m, uint32_t n, const uint16_t *sizes,
			 uint64_t *out, struct ct_exit_walk *w)
{
	ct_exit_walk(code, len, BASE, w);
	if (w->how != CT_EXIT_EMULATED)
		return -2;
	struct ct_site_fetch raw, f;
	ct_fetch_build_raw(CT_CC_GO_REG, n, &raw);
	for (uint32_t i = 0; sizes && i < n; i++)
		raw.vals[i].pieces[0].size = sizes[i];
	int rc = ct_fetch_relocate(&raw, -8 - w->sp_delta, w, &f);
	ct_site_fetch_free(&raw);
	if (rc)
		return -1;
	struct sim_proc pr = {0};
	memcpy(pr.regs, m->regs, sizeof(m->regs));
	pr.regs[CT_REG_SP] = 0x7ffd0000;
	sim_map(&pr, pr.regs[CT_REG_SP], m->stack, sizeof(m->stack));
	uint8_t payload[CT_MAX_PAYLOAD] = {0};
	if (sim_run_fetch(&pr, &f.prog, payload)) {
		ct_site_fetch_free(&f);
		return -3; /* the hit's values dropped */
	}
	for (uint32_t i = 0; i < f.prog.nops; i++) {
		const struct ct_fetch_op *op = &f.prog.ops[i];
		uint64_t v;
		memcpy(&v, payload + op->dst, 8);
		if (op->code != CT_OP_REG && op->code != CT_OP_STACKWORD && op->code != CT_OP_REGDIFF &&
		    op->code != CT_OP_MEMWORD)
			rc = -2;
		if (sizes && sizes[op->dst / 8] < 8)
			v &= (1ull << (8 * sizes[op->dst / 8])) - 1;
		out[op->dst / 8] = v;
	}
	ct_site_fetch_free(&f);
	return rc;
}

static int results_at(const uint8_t *code, size_t len, const struct at_site *m, uint32_t n, uint64_t *out,
		      struct ct_exit_walk *w)
{
	return results_sized(code, len, m, n, NULL, out, w);
}

/* bench/fib's loop `s += leaf(i)` (go1.19): the result is added to the sum
 * reloaded from 0x8(SP), then RAX is reused; at the `jg` the result is the
 * sum less the word it was added to, which is still in place. */
TEST(exit_walk_result_added_to_a_stack_word)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x4c, 0x24, 0x10, /* +00 mov 0x10(%rsp),%rcx */
		0x48, 0xff, 0xc1,             /* +05 inc %rcx */
		0x48, 0x8b, 0x54, 0x24, 0x08, /* +08 mov 0x8(%rsp),%rdx */
		0x48, 0x01, 0xc2,             /* +0d add %rax,%rdx */
		0x48, 0x89, 0xc8,             /* +10 mov %rcx,%rax */
		0x48, 0x8b, 0x4c, 0x24, 0x18, /* +13 mov 0x18(%rsp),%rcx */
		0x48, 0x39, 0x01,             /* +18 cmp %rax,(%rcx) */
		0x7f, 0xd4,                   /* +1b jg (the loop) */
	};
	/* ... and fib's caller: lea (%rax,%rdx,1),%rbx, then an emulated nop */
	static const uint8_t lea_sum[] = {
		0x48, 0x8b, 0x54, 0x24, 0x08, /* +00 mov 0x8(%rsp),%rdx */
		0x48, 0x8d, 0x1c, 0x10,       /* +05 lea (%rax,%rdx,1),%rbx */
		0x48, 0x8b, 0x54, 0x24, 0x10, /* +09 mov 0x10(%rsp),%rdx */
		0x31, 0xc0,                   /* +0e xor %eax,%eax */
		0x90,                         /* +10 nop */
	};
	/* the word is written after it was added: the result is gone */
	static const uint8_t word_written[] = {
		0x48, 0x8b, 0x54, 0x24, 0x08, /* +00 mov 0x8(%rsp),%rdx */
		0x48, 0x01, 0xc2,             /* +05 add %rax,%rdx */
		0x31, 0xc0,                   /* +08 xor %eax,%eax */
		0x48, 0x89, 0x74, 0x24, 0x08, /* +0a mov %rsi,0x8(%rsp) */
		0x90,                         /* +0f nop */
	};
	/* added straight from the stack, then SP moves: the offset follows */
	static const uint8_t add_mem[] = {
		0x48, 0x03, 0x44, 0x24, 0x20, /* +00 add 0x20(%rsp),%rax */
		0x48, 0x83, 0xc4, 0x18,       /* +05 add $0x18,%rsp */
		0x90,                         /* +09 nop */
	};
	/* ... SP moves past the word: what lies below SP may change any time */
	static const uint8_t add_mem_popped[] = {
		0x48, 0x03, 0x44, 0x24, 0x20, /* +00 add 0x20(%rsp),%rax */
		0x48, 0x83, 0xc4, 0x28,       /* +05 add $0x28,%rsp */
		0x90,                         /* +09 nop */
	};
	struct ct_exit_walk w;
	uint64_t got[4] = {0};
	struct at_site m = {0};
	/* returned 7 with the sum 100 at 0x8(SP), i=3 at 0x10(SP) */
	put_word(&m, 8, 100), put_word(&m, 16, 3), put_word(&m, 24, 0xc000010000);
	m.regs[CT_RAX] = 4, m.regs[CT_RCX] = 0xc000010000, m.regs[CT_RDX] = 107;
	CHECK_EQ_I(results_at(code, sizeof(code), &m, 1, got, &w), 0);
	CHECK_EQ_U(w.site, BASE + 0x1b);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RDX);
	CHECK(w.loc[CT_RAX].less_word);
	CHECK_EQ_I(w.loc[CT_RAX].stack_off, 8);
	CHECK_EQ_U(got[0], 7);
	/* a result that wraps around: exact modulo 2^64 */
	m.regs[CT_RDX] = 100 - 5;
	CHECK_EQ_I(results_at(code, sizeof(code), &m, 1, got, &w), 0);
	CHECK_EQ_U(got[0], (uint64_t)-5);

	memset(&m, 0, sizeof(m));
	put_word(&m, 8, 40), put_word(&m, 16, 22), m.regs[CT_RBX] = 40 + 17711, m.regs[CT_RDX] = 22;
	CHECK_EQ_I(results_at(lea_sum, sizeof(lea_sum), &m, 1, got, &w), 0);
	CHECK_EQ_U(w.site, BASE + 0x10);
	CHECK_EQ_U(got[0], 17711);

	CHECK_EQ_I(results_at(word_written, sizeof(word_written), &m, 1, got, &w), -1);
	CHECK(strstr(ct_error(), "the value of RAX is gone at 0x40100a")); /* with the word */
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_LOST);

	memset(&m, 0, sizeof(m));
	put_word(&m, 8, 1000), m.regs[CT_RAX] = 1000 + 42; /* the word at 0x20 is at 0x8 at the site */
	CHECK_EQ_I(results_at(add_mem, sizeof(add_mem), &m, 1, got, &w), 0);
	CHECK_EQ_I(w.sp_delta, 0x18);
	CHECK_EQ_I(w.loc[CT_RAX].stack_off, 8);
	CHECK_EQ_U(got[0], 42);
	CHECK_EQ_I(results_at(add_mem_popped, sizeof(add_mem_popped), &m, 1, got, &w), -1);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 5);
}

/* net/http's req.Close = shouldClose(...) (go1.19): the bool result is
 * stored into the request through RDX, then RAX is reused for the next
 * call's argument; at that call the value is read from the struct.  A store
 * through SP after it may write the struct (if it lies in the frame): read
 * unless the bytes overlap; another store through a register, or the base
 * register written, and the value is gone. */
TEST(exit_walk_result_stored_through_a_register)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x54, 0x24, 0x78,             /* +00 mov 0x78(%rsp),%rdx */
		0x88, 0x42, 0x78,                         /* +05 mov %al,0x78(%rdx) */
		0x48, 0x8b, 0x5c, 0x24, 0x78,             /* +08 mov 0x78(%rsp),%rbx */
		0x48, 0x8d, 0x05, 0x00, 0x00, 0x00, 0x00, /* +0d lea 0x0(%rip),%rax */
		0x48, 0x8b, 0x4c, 0x24, 0x20,             /* +14 mov 0x20(%rsp),%rcx */
		0x48, 0x89, 0x4c, 0x24, 0x10,             /* +19 mov %rcx,0x10(%rsp) */
		0x90,                                     /* +1e nop */
	};
	static const uint8_t other_store[] = {
		0x48, 0x89, 0x42, 0x10, /* +00 mov %rax,0x10(%rdx) */
		0x31, 0xc0,             /* +04 xor %eax,%eax */
		0x48, 0x89, 0x0e,       /* +06 mov %rcx,(%rsi) (may be the same bytes) */
		0x90,                   /* +09 nop */
	};
	static const uint8_t base_written[] = {
		0x48, 0x89, 0x42, 0x10, /* +00 mov %rax,0x10(%rdx) */
		0x48, 0x89, 0xca,       /* +04 mov %rcx,%rdx */
		0x31, 0xc0,             /* +07 xor %eax,%eax */
		0x90,                   /* +09 nop */
	};
	struct ct_exit_walk w;
	uint64_t got[4] = {0};
	uint16_t one[1] = {1};
	struct at_site m = {0};
	/* the struct at 0x7ffd0000 + 0x100 (in the stack region), beside 0x10(SP) */
	uint64_t req = 0x7ffd0000 + 0x100;
	m.stack[0x100 + 0x78] = 1;
	m.regs[CT_RDX] = req, m.regs[CT_RBX] = req, m.regs[CT_RAX] = 0x4a0000;
	CHECK_EQ_I(results_sized(code, sizeof(code), &m, 1, one, got, &w), 0);
	CHECK_EQ_U(w.site, BASE + 0x1e);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_MEM);
	CHECK_EQ_I(w.loc[CT_RAX].base, CT_RDX);
	CHECK_EQ_I(w.loc[CT_RAX].addend, 0x78);
	CHECK_EQ_U(w.loc[CT_RAX].width, 1);
	CHECK(w.mem_written);
	CHECK_EQ_U(got[0], 1);
	/* the struct is where the store through SP went: no value */
	m.regs[CT_RDX] = 0x7ffd0000 + 0x10 - 0x78;
	CHECK_EQ_I(results_sized(code, sizeof(code), &m, 1, one, got, &w), -3);
	/* a whole word needs 8 bytes stored */
	CHECK_EQ_I(results_at(code, sizeof(code), &m, 1, got, &w), -1);
	CHECK(strstr(ct_error(), "only the low 1 byte of RAX is kept, 8 needed"));

	CHECK_EQ_I(results_at(other_store, sizeof(other_store), &m, 1, got, &w), -1);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_LOST);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 6);
	CHECK_EQ_I(results_at(base_written, sizeof(base_written), &m, 1, got, &w), -1);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_LOST);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 7);
}

/* encoding/json's refill, `dec.buf = dec.buf[0 : len(dec.buf)+n]` after
 * n, err := dec.r.Read(...) (go1.19): n is added to the slice's length,
 * loaded through RDX, before the bounds check's `jb`.  There the result is
 * RAX less that word, read through RDX; the word stored to, or RDX
 * written, and it is gone. */
TEST(exit_walk_result_added_to_a_struct_field)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x54, 0x24, 0x50, /* +00 mov 0x50(%rsp),%rdx */
		0x48, 0x8b, 0x72, 0x20,       /* +05 mov 0x20(%rdx),%rsi */
		0x48, 0x03, 0x42, 0x18,       /* +09 add 0x18(%rdx),%rax */
		0x48, 0x39, 0xc6,             /* +0d cmp %rax,%rsi */
		0x72, 0x14,                   /* +10 jb */
	};
	static const uint8_t field_written[] = {
		0x48, 0x8b, 0x54, 0x24, 0x50, /* +00 mov 0x50(%rsp),%rdx */
		0x48, 0x03, 0x42, 0x18,       /* +05 add 0x18(%rdx),%rax */
		0x48, 0x89, 0x0e,             /* +09 mov %rcx,(%rsi) (may be the same bytes) */
		0x72, 0x14,                   /* +0c jb */
	};
	static const uint8_t stack_written[] = {
		0x48, 0x8b, 0x54, 0x24, 0x50, /* +00 mov 0x50(%rsp),%rdx */
		0x48, 0x03, 0x42, 0x18,       /* +05 add 0x18(%rdx),%rax */
		0x48, 0x89, 0x4c, 0x24, 0x10, /* +09 mov %rcx,0x10(%rsp) (the struct may lie there) */
		0x72, 0x14,                   /* +0e jb */
	};
	static const uint8_t base_written[] = {
		0x48, 0x8b, 0x54, 0x24, 0x50, /* +00 mov 0x50(%rsp),%rdx */
		0x48, 0x03, 0x42, 0x18,       /* +05 add 0x18(%rdx),%rax */
		0x48, 0x8b, 0x52, 0x08,       /* +09 mov 0x8(%rdx),%rdx */
		0x72, 0x14,                   /* +0d jb */
	};
	struct ct_exit_walk w;
	uint64_t got[4] = {0};
	struct at_site m = {0};
	/* the decoder at 0x7ffd0000 + 0x100, its buffer's length 4096 at +0x18;
	 * 512 bytes read */
	uint64_t dec = 0x7ffd0000 + 0x100;
	put_word(&m, 0x50, dec), put_word(&m, 0x100 + 0x18, 4096);
	m.regs[CT_RDX] = dec, m.regs[CT_RAX] = 4096 + 512;
	CHECK_EQ_I(results_at(code, sizeof(code), &m, 1, got, &w), 0);
	CHECK_EQ_U(w.site, BASE + 0x10);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX);
	CHECK(w.loc[CT_RAX].less_word);
	CHECK_EQ_U(w.loc[CT_RAX].word_reg, CT_RDX + 1);
	CHECK_EQ_I(w.loc[CT_RAX].stack_off, 0x18);
	CHECK_EQ_U(got[0], 512);
	/* the field cannot be read at the hit: no value rather than a wrong one */
	m.regs[CT_RDX] = 0x1000;
	CHECK_EQ_I(results_at(code, sizeof(code), &m, 1, got, &w), -3);

	CHECK_EQ_I(results_at(field_written, sizeof(field_written), &m, 1, got, &w), -1);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 9);
	CHECK_EQ_I(results_at(stack_written, sizeof(stack_written), &m, 1, got, &w), -1);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 9);
	CHECK_EQ_I(results_at(base_written, sizeof(base_written), &m, 1, got, &w), -1);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 9);
}

/* net/http's connectMethodForRequest (go1.19) returns requiresHTTP1's bool
 * in a field of its own results: stored into its own frame, copied to R8
 * (32 bits), then its ret.  At that ret the result is R8's low byte: a
 * tail call's results read wherever the caller's own are.  Not a whole
 * word (4 bytes kept), nor for a C caller (a store to its frame may be what
 * a result points to), nor with a store below the return address. */
TEST(tail_results_copied_to_the_callers_results)
{
	static const uint8_t code[] = {
		0x88, 0x44, 0x24, 0x40,       /* +00 mov %al,0x40(%rsp) */
		0x48, 0x8b, 0x5c, 0x24, 0x20, /* +04 mov 0x20(%rsp),%rbx */
		0x48, 0x8b, 0x54, 0x24, 0x18, /* +09 mov 0x18(%rsp),%rdx */
		0x41, 0x89, 0xc0,             /* +0e mov %eax,%r8d */
		0x48, 0x89, 0xd0,             /* +11 mov %rdx,%rax */
		0x48, 0x8b, 0x6c, 0x24, 0x48, /* +14 mov 0x48(%rsp),%rbp */
		0x48, 0x83, 0xc4, 0x50,       /* +19 add $0x50,%rsp */
		0xc3,                         /* +1d ret */
	};
	static const uint8_t above[] = {
		0x88, 0x44, 0x24, 0x58, /* +00 mov %al,0x58(%rsp) (the caller's caller's frame) */
		0x41, 0x89, 0xc0,       /* +04 mov %eax,%r8d */
		0x48, 0x83, 0xc4, 0x50, /* +07 add $0x50,%rsp */
		0xc3,                   /* +0b ret */
	};
	struct ct_exit_walk w;
	struct ct_site_fetch raw, tv;
	ct_exit_walk(code, sizeof(code), BASE, &w);
	CHECK_EQ_I(w.how, CT_EXIT_TAILPOS);
	CHECK(w.at_ret && w.stack_written && w.stack_hi <= 0);
	ct_fetch_build_raw(CT_CC_GO_REG, 1, &raw);
	raw.vals[0].pieces[0].size = 1;
	CHECK(ct_plan_tail_results(&raw, &w, true, &tv));
	CHECK_EQ_U(tv.prog.nops, 1);
	CHECK_EQ_U(tv.prog.ops[0].code, CT_OP_REG);
	CHECK_EQ_U(tv.prog.ops[0].reg, CT_R8);
	CHECK_EQ_U(tv.prog.guard_from, tv.prog.guard_to);
	ct_site_fetch_free(&tv);
	CHECK(!ct_plan_tail_results(&raw, &w, false, &tv));
	raw.vals[0].pieces[0].size = 8;
	CHECK(!ct_plan_tail_results(&raw, &w, true, &tv));
	raw.vals[0].pieces[0].size = 1;
	ct_exit_walk(above, sizeof(above), BASE, &w);
	CHECK_EQ_I(w.how, CT_EXIT_TAILPOS);
	CHECK(!ct_plan_tail_results(&raw, &w, true, &tv));
	ct_site_fetch_free(&raw);
}

/* Constants added to a result: read back exactly; a 32-bit copy keeps only
 * 4 bytes of it; mul writes RAX (and RDX) without a word in its operands. */
TEST(exit_walk_result_plus_constants)
{
	static const uint8_t consts[] = {
		0x48, 0x8d, 0x48, 0x01, /* +00 lea 0x1(%rax),%rcx */
		0x48, 0x83, 0xc1, 0x05, /* +04 add $0x5,%rcx */
		0x48, 0xff, 0xc9,       /* +08 dec %rcx */
		0x48, 0x83, 0xe9, 0x03, /* +0b sub $0x3,%rcx */
		0x31, 0xc0,             /* +0f xor %eax,%eax */
		0xeb, 0xfe,             /* +11 jmp (itself) */
	};
	static const uint8_t narrow[] = {
		0x89, 0xc1, /* +0 mov %eax,%ecx (zero-extends: 4 bytes of the value) */
		0x31, 0xc0, /* +2 xor %eax,%eax */
		0x90,       /* +4 nop */
	};
	static const uint8_t mul[] = {
		0x48, 0x89, 0xc1, /* +0 mov %rax,%rcx */
		0x48, 0xf7, 0xe1, /* +3 mul %rcx (writes RDX:RAX, RCX keeps the copy) */
		0x90,             /* +6 nop */
	};
	struct ct_exit_walk w;
	uint64_t got[4] = {0};
	struct at_site m = {0};
	m.regs[CT_RCX] = 10 + 1 + 5 - 1 - 3;
	CHECK_EQ_I(results_at(consts, sizeof(consts), &m, 1, got, &w), 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RCX);
	CHECK_EQ_I(w.loc[CT_RAX].addend, -2);
	CHECK(!w.loc[CT_RAX].less_word);
	CHECK_EQ_U(got[0], 10);
	CHECK_EQ_I(results_at(narrow, sizeof(narrow), &m, 1, got, &w), -1);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RCX);
	CHECK_EQ_U(w.loc[CT_RAX].width, 4);
	CHECK(strstr(ct_error(), "only the low 4 bytes of RAX are kept, 8 needed"));
	m.regs[CT_RCX] = 6;
	CHECK_EQ_I(results_at(mul, sizeof(mul), &m, 1, got, &w), 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RCX);
	CHECK(w.loc[CT_RDX].reg == CT_LOC_LOST);
	CHECK_EQ_U(got[0], 6);
}

/* Go multi-register results (a string: RAX, RBX; and a third, RCX): every
 * piece must be readable, else the relocation fails and the exit is
 * single-stepped at the return address. */
TEST(exit_walk_multi_register_results)
{
	static const uint8_t spilled[] = {
		0x48, 0x89, 0x44, 0x24, 0x10, /* +00 mov %rax,0x10(%rsp) */
		0x48, 0x89, 0x5c, 0x24, 0x18, /* +05 mov %rbx,0x18(%rsp) */
		0x31, 0xc0,                   /* +0a xor %eax,%eax */
		0x48, 0x89, 0xcb,             /* +0c mov %rcx,%rbx (RCX: copied) */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +0f call (the next one) */
	};
	/* spilled, then part of the slot overwritten */
	static const uint8_t clobbered[] = {
		0x48, 0x89, 0x44, 0x24, 0x08,             /* +00 mov %rax,0x8(%rsp) */
		0xc7, 0x44, 0x24, 0x0c, 0x00, 0x00, 0x00, /* +05 movl $0x0,0xc(%rsp) */
		0x00,
		0x31, 0xc0, /* +0d xor %eax,%eax */
		0x90,       /* +0f nop */
	};
	/* spilled, reloaded into RDI, then SP moves past the slot: RDI stays */
	static const uint8_t reloaded[] = {
		0x48, 0x89, 0x44, 0x24, 0x08, /* +00 mov %rax,0x8(%rsp) */
		0x48, 0x8b, 0x7c, 0x24, 0x08, /* +05 mov 0x8(%rsp),%rdi */
		0x48, 0x83, 0xc4, 0x10,       /* +0a add $0x10,%rsp */
		0x31, 0xc0,                   /* +0e xor %eax,%eax */
		0x90,                         /* +10 nop */
	};
	/* a store through another register may hit the slot */
	static const uint8_t aliased[] = {
		0x48, 0x89, 0x44, 0x24, 0x08, /* +00 mov %rax,0x8(%rsp) */
		0x48, 0x89, 0x1f,             /* +05 mov %rbx,(%rdi) */
		0x31, 0xc0,                   /* +08 xor %eax,%eax */
		0x90,                         /* +0a nop */
	};
	struct ct_exit_walk w;
	uint64_t got[4] = {0};
	struct at_site m = {0};
	put_word(&m, 16, 0xc000012345), put_word(&m, 24, 5), m.regs[CT_RBX] = 77, m.regs[CT_RCX] = 77;
	CHECK_EQ_I(results_at(spilled, sizeof(spilled), &m, 3, got, &w), 0);
	CHECK_EQ_U(got[0], 0xc000012345);
	CHECK_EQ_U(got[1], 5);
	CHECK_EQ_U(got[2], 77);
	CHECK_EQ_I(w.loc[CT_RBX].reg, CT_LOC_STACK);
	CHECK_EQ_I(w.loc[CT_RBX].stack_off, 0x18);
	CHECK_EQ_I(results_at(clobbered, sizeof(clobbered), &m, 1, got, &w), -1);
	CHECK_EQ_U(w.lost_at[CT_RAX], BASE + 0xd);
	m.regs[CT_RDI] = 99;
	CHECK_EQ_I(results_at(reloaded, sizeof(reloaded), &m, 1, got, &w), 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RDI);
	CHECK_EQ_U(got[0], 99);
	CHECK_EQ_I(results_at(aliased, sizeof(aliased), &m, 1, got, &w), -1);
	CHECK(w.mem_written);
}

/* Narrow values: a bool result saved by a byte store (Go's `mov %dil`), a C
 * int result copied by a 32-bit move.  Enough where the value is that
 * narrow, not where all 8 bytes are needed; a store of AH is not a low byte. */
TEST(exit_walk_narrow_results)
{
	static const uint8_t go_parts[] = {
		0x48, 0x89, 0x44, 0x24, 0x78,             /* +00 mov %rax,0x78(%rsp) */
		0x48, 0x89, 0x5c, 0x24, 0x38,             /* +05 mov %rbx,0x38(%rsp) */
		0x48, 0x89, 0x4c, 0x24, 0x50,             /* +0a mov %rcx,0x50(%rsp) */
		0x40, 0x88, 0x7c, 0x24, 0x2f,             /* +0f mov %dil,0x2f(%rsp) */
		0x48, 0x8b, 0x84, 0x24, 0x40, 0x01, 0x00, /* +14 mov 0x140(%rsp),%rax */
		0x00,
		0x31, 0xff,                   /* +1c xor %edi,%edi */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +1e call */
	};
	static const uint8_t c_int[] = {
		0x89, 0xc3,                   /* +0 mov %eax,%ebx */
		0x31, 0xc0,                   /* +2 xor %eax,%eax */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +4 call */
	};
	static const uint8_t high_byte[] = {
		0x88, 0x64, 0x24, 0x08, /* +0 mov %ah,0x8(%rsp) */
		0x31, 0xc0,             /* +4 xor %eax,%eax */
		0x90,                   /* +6 nop */
	};
	static const uint8_t reload32[] = {
		0x89, 0x44, 0x24, 0x0c, /* +0 mov %eax,0xc(%rsp) */
		0x8b, 0x54, 0x24, 0x0c, /* +4 mov 0xc(%rsp),%edx */
		0x31, 0xc0,             /* +8 xor %eax,%eax */
		0x90,                   /* +a nop */
	};
	static const uint16_t string_int_bool[] = {8, 8, 8, 1}, int32[] = {4};
	struct ct_exit_walk w;
	uint64_t got[4] = {0};
	struct at_site m = {0};
	put_word(&m, 0x78, 0x4c0123), put_word(&m, 0x38, 3), put_word(&m, 0x50, 18);
	m.regs[CT_RBX] = 3, m.regs[CT_RCX] = 18; /* still there too: read from the registers */
	m.stack[0x2f] = 1, m.stack[0x30] = 0xee; /* the bool, then other bytes */
	CHECK_EQ_I(results_sized(go_parts, sizeof(go_parts), &m, 4, string_int_bool, got, &w), 0);
	CHECK_EQ_U(got[0], 0x4c0123);
	CHECK_EQ_U(got[1], 3);
	CHECK_EQ_U(got[2], 18);
	CHECK_EQ_U(got[3], 1);
	CHECK_EQ_I(w.loc[CT_RDI].reg, CT_LOC_STACK);
	CHECK_EQ_I(w.loc[CT_RDI].stack_off, 0x2f);
	CHECK_EQ_U(w.loc[CT_RDI].width, 1);
	CHECK_EQ_I(results_at(go_parts, sizeof(go_parts), &m, 4, got, &w), -1); /* 8 bytes of RDI */
	CHECK(strstr(ct_error(), "only the low 1 byte of RDI is kept, 8 needed"));

	m.regs[CT_RBX] = 0xfffffff6; /* -10, zero-extended by the copy */
	CHECK_EQ_I(results_sized(c_int, sizeof(c_int), &m, 1, int32, got, &w), 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RBX);
	CHECK_EQ_U(got[0], 0xfffffff6);
	CHECK_EQ_I(results_at(c_int, sizeof(c_int), &m, 1, got, &w), -1);

	CHECK_EQ_I(results_sized(high_byte, sizeof(high_byte), &m, 1, int32, got, &w), -1);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_LOC_LOST);

	m.regs[CT_RDX] = 0x7fffffff;
	CHECK_EQ_I(results_sized(reload32, sizeof(reload32), &m, 1, int32, got, &w), 0);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RDX);
	CHECK_EQ_U(w.loc[CT_RAX].width, 4);
	CHECK_EQ_U(got[0], 0x7fffffff);
}

struct refs_seen {
	struct ct_code_ref r[16];
	int n;
};

static void collect_ref(void *ctx, const struct ct_code_ref *r)
{
	struct refs_seen *s = ctx;
	if (s->n < 16)
		s->r[s->n++] = *r;
}

TEST(scan_refs_calls_jumps_addresses)
{
	static const uint8_t code[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00,             /* +00 call 0x402000 */
		0x48, 0x8d, 0x05, 0xf4, 0x1f, 0x00, 0x00, /* +05 lea 0x403000(%rip),%rax */
		0xbf, 0x00, 0x40, 0x40, 0x00,             /* +0c mov $0x404000,%edi */
		0xeb, 0x00,                               /* +11 jmp 0x401013 */
		0x66, 0x66, 0x48, 0xe8, 0, 0, 0, 0,       /* +13 data16 data16 rex.W call (not plain) */
		0xff, 0x14, 0xc5, 0x00, 0x50, 0x40, 0x00, /* +1b call *0x405000(,%rax,8) */
		0x06,                                     /* +22 (bad) */
		0xc3,                                     /* +23 ret */
	};
	struct refs_seen s = {0};
	CHECK_EQ_U(ct_scan_refs(code, sizeof(code), BASE, collect_ref, &s), 1);
	CHECK_EQ_I(s.n, 6);
	CHECK(s.r[0].kind == CT_REF_CALL && s.r[0].plain && s.r[0].target == 0x402000 && s.r[0].len == 5);
	CHECK(s.r[1].kind == CT_REF_ADDR && s.r[1].target == 0x403000 && s.r[1].at == BASE + 5);
	CHECK(s.r[2].kind == CT_REF_ADDR && s.r[2].target == 0x404000);
	CHECK(s.r[3].kind == CT_REF_JUMP && s.r[3].target == BASE + 0x13);
	CHECK(s.r[4].kind == CT_REF_CALL && !s.r[4].plain);
	CHECK(s.r[5].kind == CT_REF_ADDR && s.r[5].target == 0x405000);
}

/* Self-recursion made a loop (rustc opt-level s, tests/fixtures/rust/app's
 * down): the branch back to the entry re-runs the entry for the same call,
 * planned as a RESTART site.  In Go code the JMP back after morestack is
 * not one (the CALL morestack is). */
static const uint8_t self_loop[] = {
	0x89, 0x3d, 0x00, 0x10, 0x00, 0x00, /* +00 mov %edi,0x1000(%rip) */
	0x83, 0xc7, 0xff,                   /* +06 add $-1,%edi */
	0x72, 0xf5,                         /* +09 jb 0x401000 */
	0xc3,                               /* +0b ret */
};

TEST(sites_branch_to_own_entry_is_restart)
{
	struct ct_fn_sites s;
	CHECK_EQ_I(ct_find_sites(self_loop, sizeof(self_loop), BASE, CT_CC_SYSV, NULL, NULL, NULL, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK_EQ_U(s.nexits, 2);
	CHECK_EQ_U(s.exits[0].addr, BASE + 9);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RESTART);
	CHECK_EQ_U(s.exits[0].target, BASE);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
	CHECK_EQ_I(ct_find_sites(go_large, sizeof(go_large), BASE, CT_CC_GO_REG, is_morestack, NULL, NULL, &s), 0);
	for (size_t i = 0; i < s.nexits; i++)
		CHECK(s.exits[i].kind != CT_SITE_RESTART || s.exits[i].target == MORESTACK);
	ct_fn_sites_free(&s);
}

/* A tail call through a GOT slot (rustc opt-level s, tests/fixtures/rust/
 * app's <Level as Debug>::fmt into Formatter::write_str) ends the function
 * like a direct one; a jump table (indexed) does not. */
static const uint8_t got_tail[] = {
	0x48, 0x89, 0xf0,                         /* +00 mov %rsi,%rax */
	0x80, 0x3f, 0x01,                         /* +03 cmpb $1,(%rdi) */
	0x75, 0x06,                               /* +06 jne +0e */
	0xff, 0x25, 0x00, 0x10, 0x00, 0x00,       /* +08 jmp *0x1000(%rip) */
	0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00, /* +0e jmp *0x402000(,%rax,8) */
};

/* CODE's only exit is a tail jump at +AT whose target is not known. */
static void check_unknown_tail(const uint8_t *code, size_t len, uint64_t at)
{
	struct ct_fn_sites s;
	CHECK_EQ_I(ct_find_sites(code, len, BASE, CT_CC_SYSV, NULL, NULL, NULL, &s), 0);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].addr, BASE + at);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[0].target, 0);
	ct_fn_sites_free(&s);
}

TEST(sites_jump_through_got_is_tail)
{
	check_unknown_tail(got_tail, sizeof(got_tail), 8);
}

/* Indirect jumps: a tail jump where SP is back at its entry level (the
 * frame torn down), a jump table's jump where the frame is still there or
 * the target is made from a table of offsets; undecided otherwise. */
static const uint8_t ij_method[] = {
	0x48, 0x8b, 0x07, /* +00 mov (%rdi),%rax */
	0xff, 0x60, 0x08, /* +03 jmp *0x8(%rax): sqlite3_mutex_enter's kind */
};
static const uint8_t ij_framed_switch[] = {
	0x53,             /* +00 push %rbx */
	0x48, 0x63, 0xc7, /* +01 movslq %edi,%rax */
	0xff, 0xe0,       /* +04 jmp *%rax: 8 below the entry level */
	0x5b,             /* +06 pop %rbx (a case) */
	0xc3,             /* +07 ret */
};
static const uint8_t ij_epilogue[] = {
	0x53,                         /* +00 push %rbx */
	0x48, 0x83, 0xec, 0x10,       /* +01 sub $0x10,%rsp */
	0xe8, 0x00, 0x00, 0x00, 0x00, /* +05 call +0a: returns the pointer */
	0x48, 0x83, 0xc4, 0x10,       /* +0a add $0x10,%rsp */
	0x5b,                         /* +0e pop %rbx */
	0xff, 0xe0,                   /* +0f jmp *%rax */
};
static const uint8_t ij_frameless_switch[] = {
	0x48, 0x8d, 0x15, 0x00, 0x10, 0x00, 0x00, /* +00 lea 0x1000(%rip),%rdx */
	0x48, 0x63, 0x04, 0xba,                   /* +07 movslq (%rdx,%rdi,4),%rax */
	0x48, 0x01, 0xd0,                         /* +0b add %rdx,%rax */
	0xff, 0xe0,                               /* +0e jmp *%rax */
};
static const uint8_t ij_absolute_table[] = {
	0xff, 0x24, 0xfd, 0x00, 0x20, 0x40, 0x00, /* +00 jmp *0x402000(,%rdi,8) */
};
static const uint8_t ij_leave[] = {
	0x55,                   /* +00 push %rbp */
	0x48, 0x89, 0xe5,       /* +01 mov %rsp,%rbp */
	0x48, 0x83, 0xe4, 0xf0, /* +04 and $-16,%rsp */
	0x48, 0x83, 0xec, 0x20, /* +08 sub $0x20,%rsp */
	0xc9,                   /* +0c leave */
	0xff, 0x67, 0x10,       /* +0d jmp *0x10(%rdi) */
};
static const uint8_t ij_two_paths[] = {
	0x85, 0xff, /* +00 test %edi,%edi */
	0x74, 0x01, /* +02 je +05 */
	0x53,       /* +04 push %rbx */
	0xff, 0x27, /* +05 jmp *(%rdi): SP 0 or 8 below */
};

static enum ct_ijump_kind ijump_kind(const uint8_t *code, size_t len, uint64_t at)
{
	struct ct_ijump j[4];
	size_t n = ct_indirect_jumps(code, len, BASE, j, 4);
	for (size_t i = 0; i < n && i < 4; i++)
		if (j[i].addr == BASE + at)
			return j[i].kind;
	return 0;
}

TEST(sites_indirect_jumps_tail_or_table)
{
	CHECK_EQ_I(ijump_kind(ij_method, sizeof(ij_method), 3), CT_IJUMP_TAIL);
	CHECK_EQ_I(ijump_kind(ij_framed_switch, sizeof(ij_framed_switch), 4), CT_IJUMP_INSIDE);
	CHECK_EQ_I(ijump_kind(ij_epilogue, sizeof(ij_epilogue), 0xf), CT_IJUMP_TAIL);
	CHECK_EQ_I(ijump_kind(ij_frameless_switch, sizeof(ij_frameless_switch), 0xe), CT_IJUMP_INSIDE);
	CHECK_EQ_I(ijump_kind(ij_absolute_table, sizeof(ij_absolute_table), 0), CT_IJUMP_UNDECIDED);
	CHECK_EQ_I(ijump_kind(ij_leave, sizeof(ij_leave), 0xd), CT_IJUMP_TAIL);
	CHECK_EQ_I(ijump_kind(ij_two_paths, sizeof(ij_two_paths), 5), CT_IJUMP_UNDECIDED);
	CHECK_EQ_I(ijump_kind(got_tail, sizeof(got_tail), 8), CT_IJUMP_GOT);
	struct ct_ijump j;
	CHECK_EQ_U(ct_indirect_jumps(ij_framed_switch, sizeof(ij_framed_switch), BASE, &j, 1), 1);
	CHECK(j.sp_known && j.sp_below == 8);
	/* the tail jumps are exits (TAIL, target unknown); the others are not */
	check_unknown_tail(ij_epilogue, sizeof(ij_epilogue), 0xf);
	struct ct_fn_sites s;
	CHECK_EQ_I(ct_find_sites(ij_framed_switch, sizeof(ij_framed_switch), BASE, CT_CC_SYSV, NULL, NULL, NULL, &s), 0);
	CHECK_EQ_U(s.nexits, 1);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
	/* Go's indirect jumps are never tail jumps */
	CHECK_EQ_I(ct_find_sites(ij_method, sizeof(ij_method), BASE, CT_CC_GO_REG, NULL, NULL, NULL, &s), 0);
	CHECK_EQ_U(s.nexits, 0);
	ct_fn_sites_free(&s);
}

/* ---- float results: where the caller stores XMM0/XMM1 (issue 17) ---- */

/* The double the relocated capture F reads for its first value, run as the
 * BPF side would over a process where 1.375 is in R14, at SP + 0x18 and at
 * RBP - 8 (and nothing else is). */
static double float_read(const struct ct_site_fetch *f)
{
	static const uint64_t sp = 0x7ffd0000, rbp = 0x7ffd0100;
	double v = 1.375, got = 0;
	struct sim_proc pr = {0};
	pr.regs[CT_REG_SP] = sp;
	pr.regs[CT_RBP] = rbp;
	memcpy(&pr.regs[CT_R14], &v, 8);
	sim_map(&pr, sp + 0x18, &v, 8);
	sim_map(&pr, rbp - 8, &v, 8);
	uint8_t payload[CT_MAX_PAYLOAD] = {0};
	sim_run_fetch(&pr, &f->prog, payload);
	const struct ct_val_piece *p = &f->vals[0].pieces[0];
	uint16_t hdr = 8;
	uint32_t at = p->slot;
	if (p->kind != CT_PIECE_REG) {
		memcpy(&hdr, payload + at, 2);
		at += CT_MEM_HDR;
	}
	if (hdr == 8)
		memcpy(&got, payload + at, 8);
	return got;
}

/* Walks CODE from its start (a return address at BASE) to the exit site at
 * BASE + SITE: X0 and X1's places there. */
static void float_walk(const uint8_t *code, size_t len, uint64_t site, struct ct_exit_walk *w)
{
	ct_exit_walk(code, len, BASE, w);
	CHECK_EQ_U(w->how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w->site, BASE + site);
}

TEST(exit_walk_float_results_stored)
{
	/* gcc -O0 `double r = scale(...)`: through RAX into RBP's frame */
	static const uint8_t o0[] = {
		0x66, 0x48, 0x0f, 0x7e, 0xc0, /* +00 movq %xmm0,%rax */
		0x48, 0x89, 0x45, 0xf8,       /* +05 mov %rax,-0x8(%rbp) */
		0x66, 0x0f, 0xef, 0xc9,       /* +09 pxor %xmm1,%xmm1 */
		0xf3, 0x0f, 0x2a, 0x4d, 0xdc, /* +0d cvtsi2ssl -0x24(%rbp),%xmm1 */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +12 call */
	};
	/* clang -O2: straight to the stack, then the next call's setup */
	static const uint8_t o2_stack[] = {
		0xf2, 0x0f, 0x11, 0x44, 0x24, 0x18,       /* +00 movsd %xmm0,0x18(%rsp) */
		0x48, 0x8b, 0x05, 0x72, 0x2d, 0x00, 0x00, /* +06 mov 0x2d72(%rip),%rax */
		0x48, 0x8b, 0x38,                         /* +0d mov (%rax),%rdi */
		0xe8, 0xfb, 0xff, 0xff, 0xff,             /* +10 call */
	};
	/* gcc -O2: kept in a callee-saved general register across the call */
	static const uint8_t o2_reg[] = {
		0x48, 0x8b, 0x3d, 0x47, 0x2b, 0x00, 0x00, /* +00 mov 0x2b47(%rip),%rdi */
		0x66, 0x49, 0x0f, 0x7e, 0xc6,             /* +07 movq %xmm0,%r14 */
		0xe8, 0xfb, 0xff, 0xff, 0xff,             /* +0c call */
	};
	/* a struct of two doubles (X0:X1), X1 through X0 */
	static const uint8_t pair[] = {
		0x66, 0x48, 0x0f, 0x7e, 0xc0, /* +00 movq %xmm0,%rax */
		0x66, 0x0f, 0x28, 0xc1,       /* +05 movapd %xmm1,%xmm0 */
		0x48, 0x89, 0x45, 0xe0,       /* +09 mov %rax,-0x20(%rbp) */
		0xf2, 0x0f, 0x11, 0x45, 0xe8, /* +0d movsd %xmm0,-0x18(%rbp) */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +12 call */
	};
	/* a float through EAX: its 4 bytes */
	static const uint8_t narrow[] = {
		0x66, 0x0f, 0x7e, 0xc0, /* +00 movd %xmm0,%eax */
		0x89, 0x45, 0xf4,       /* +04 mov %eax,-0xc(%rbp) */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +07 call */
	};
	struct ct_exit_walk w;
	float_walk(o0, sizeof(o0), 0x12, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_RBP);
	CHECK_EQ_I(w.xloc[0].off, -8);
	CHECK_EQ_U(w.xloc[0].width, 8);
	CHECK_EQ_I(w.xloc[1].base, CT_XLOC_NONE); /* overwritten by pxor */
	CHECK_EQ_U(w.xloc[1].lost, 0x09 + 1);
	float_walk(o2_stack, sizeof(o2_stack), 0x10, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_SP);
	CHECK_EQ_I(w.xloc[0].off, 0x18);
	float_walk(o2_reg, sizeof(o2_reg), 0x0c, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_REG);
	CHECK_EQ_I(w.xloc[0].off, CT_R14);
	CHECK_EQ_U(w.xloc[0].width, 8);
	float_walk(pair, sizeof(pair), 0x12, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_RBP);
	CHECK_EQ_I(w.xloc[0].off, -0x20);
	CHECK_EQ_I(w.xloc[1].base, CT_XLOC_RBP);
	CHECK_EQ_I(w.xloc[1].off, -0x18);
	float_walk(narrow, sizeof(narrow), 0x07, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_RBP);
	CHECK_EQ_I(w.xloc[0].off, -0xc);
	CHECK_EQ_U(w.xloc[0].width, 4);

	/* the capture reads them there: a memory op (or the register) in place
	 * of the SSE piece BPF cannot read */
	struct ct_val_piece pc = {CT_PIECE_XREG, CT_XMM0, 8, 0, 0, 0};
	struct ct_val_desc d = {0};
	d.name = (char *)"r";
	d.flags = CT_VAL_RESULT;
	d.pieces = &pc;
	d.npieces = 1;
	struct ct_site_fetch res = {0}, f;
	res.vals = &d;
	res.nvals = 1;
	float_walk(o2_stack, sizeof(o2_stack), 0x10, &w);
	CHECK_EQ_I(ct_fetch_relocate(&res, -8 - w.sp_delta, &w, &f), 0);
	CHECK_EQ_U(f.prog.nops, 1);
	CHECK_EQ_U(f.prog.ops[0].code, CT_OP_STACK);
	CHECK_EQ_I(f.prog.ops[0].off, 0x18);
	CHECK_EQ_U(f.prog.ops[0].size, 8);
	CHECK_EQ_U(f.vals[0].pieces[0].kind, CT_PIECE_STACK);
	CHECK_EQ_U(f.vals[0].pieces[0].slot, f.prog.ops[0].dst);
	CHECK(f.prog.size >= f.prog.ops[0].dst + CT_MEM_HDR + 8);
	CHECK(float_read(&f) == 1.375);
	ct_site_fetch_free(&f);
	float_walk(o0, sizeof(o0), 0x12, &w);
	CHECK_EQ_I(ct_fetch_relocate(&res, -8 - w.sp_delta, &w, &f), 0);
	CHECK_EQ_U(f.prog.ops[0].code, CT_OP_REGMEM);
	CHECK_EQ_U(f.prog.ops[0].reg, CT_RBP);
	CHECK_EQ_I(f.prog.ops[0].off, -8);
	CHECK_EQ_U(f.vals[0].pieces[0].kind, CT_PIECE_REGMEM);
	CHECK(float_read(&f) == 1.375);
	ct_site_fetch_free(&f);
	float_walk(o2_reg, sizeof(o2_reg), 0x0c, &w);
	CHECK_EQ_I(ct_fetch_relocate(&res, -8 - w.sp_delta, &w, &f), 0);
	CHECK_EQ_U(f.prog.ops[0].code, CT_OP_REG);
	CHECK_EQ_U(f.prog.ops[0].reg, CT_R14);
	CHECK_EQ_U(f.vals[0].pieces[0].kind, CT_PIECE_REG);
	CHECK(float_read(&f) == 1.375);
	ct_site_fetch_free(&f);
	/* only 4 bytes kept: a double stays unread */
	float_walk(narrow, sizeof(narrow), 0x07, &w);
	CHECK_EQ_I(ct_fetch_relocate(&res, -8 - w.sp_delta, &w, &f), 0);
	CHECK_EQ_U(f.prog.nops, 0);
	CHECK_EQ_U(f.vals[0].pieces[0].kind, CT_PIECE_XREG);
	ct_site_fetch_free(&f);
	/* the call site's capture (no walk) leaves it alone */
	CHECK_EQ_I(ct_fetch_relocate(&res, -8, NULL, &f), 0);
	CHECK_EQ_U(f.prog.nops, 0);
	CHECK_EQ_U(f.vals[0].pieces[0].kind, CT_PIECE_XREG);
	ct_site_fetch_free(&f);
}

TEST(exit_walk_float_results_not_proven)
{
	/* to a global (not read), then X0 overwritten */
	static const uint8_t global[] = {
		0xf2, 0x0f, 0x11, 0x05, 0xba, 0x2d, 0x00, 0x00, /* +00 movsd %xmm0,0x2dba(%rip) */
		0xf2, 0x0f, 0x10, 0x44, 0x24, 0x18,             /* +08 movsd 0x18(%rsp),%xmm0 */
		0xe8, 0xfb, 0xff, 0xff, 0xff,                   /* +0e call */
	};
	/* a store through another register may hit the slot */
	static const uint8_t through_ptr[] = {
		0xf2, 0x0f, 0x11, 0x44, 0x24, 0x08, /* +00 movsd %xmm0,0x8(%rsp) */
		0x48, 0x89, 0x03,                   /* +06 mov %rax,(%rbx) */
		0xe8, 0xfb, 0xff, 0xff, 0xff,       /* +09 call */
	};
	/* SP moves past the slot: below SP it may change any time */
	static const uint8_t popped[] = {
		0xf2, 0x0f, 0x11, 0x44, 0x24, 0x08, /* +00 movsd %xmm0,0x8(%rsp) */
		0x48, 0x83, 0xc4, 0x10,             /* +06 add $0x10,%rsp */
		0x90,                               /* +0a nop */
	};
	/* ... but a slot above it stays, at its new offset */
	static const uint8_t above[] = {
		0xf2, 0x0f, 0x11, 0x44, 0x24, 0x18, /* +00 movsd %xmm0,0x18(%rsp) */
		0x48, 0x83, 0xc4, 0x10,             /* +06 add $0x10,%rsp */
		0x90,                               /* +0a nop */
	};
	/* RBP's frame and SP's may overlap: a store through SP kills RBP slots */
	static const uint8_t alias[] = {
		0xf3, 0x0f, 0x11, 0x45, 0xec, /* +00 movss %xmm0,-0x14(%rbp) */
		0x89, 0x04, 0x24,             /* +05 mov %eax,(%rsp) */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +08 call */
	};
	/* RBP written: its slots have no name any more */
	static const uint8_t rbp_moved[] = {
		0xf2, 0x0f, 0x11, 0x45, 0xe8, /* +00 movsd %xmm0,-0x18(%rbp) */
		0x48, 0x89, 0xdd,             /* +05 mov %rbx,%rbp */
		0xe8, 0xfb, 0xff, 0xff, 0xff, /* +08 call */
	};
	struct ct_exit_walk w;
	float_walk(global, sizeof(global), 0x0e, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_NONE);
	CHECK_EQ_U(w.xloc[0].out, 0x00 + 1);
	CHECK_EQ_U(w.xloc[0].lost, 0x08 + 1);
	float_walk(through_ptr, sizeof(through_ptr), 0x09, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_NONE);
	CHECK_EQ_U(w.xloc[0].lost, 0); /* still in X0 */
	float_walk(popped, sizeof(popped), 0x0a, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_NONE);
	float_walk(above, sizeof(above), 0x0a, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_SP);
	CHECK_EQ_I(w.xloc[0].off, 0x08);
	float_walk(alias, sizeof(alias), 0x08, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_NONE);
	float_walk(rbp_moved, sizeof(rbp_moved), 0x08, &w);
	CHECK_EQ_I(w.xloc[0].base, CT_XLOC_NONE);
}

TEST(sites_hit_flags)
{
	/* what the overhead correction prices a hit at each instruction as */
	static const uint8_t call[] = {0xe8, 0x10, 0x00, 0x00, 0x00}; /* call rel32 */
	static const uint8_t callind[] = {0xff, 0xd0};               /* call *%rax */
	static const uint8_t ret[] = {0xc3};
	static const uint8_t nop[] = {0x90};
	static const uint8_t jne[] = {0x75, 0x02};
	static const uint8_t mov[] = {0x48, 0x89, 0xf8}; /* mov %rdi,%rax */
	CHECK_EQ_U(ct_hit_flags_at(call, sizeof(call), BASE), CT_SITEF_CALLINSN);
	CHECK_EQ_U(ct_hit_flags_at(callind, sizeof(callind), BASE), CT_SITEF_STEPPED);
	CHECK_EQ_U(ct_hit_flags_at(ret, sizeof(ret), BASE), CT_SITEF_STEPPED | CT_SITEF_RETINSN);
	CHECK_EQ_U(ct_hit_flags_at(nop, sizeof(nop), BASE), 0);
	CHECK_EQ_U(ct_hit_flags_at(jne, sizeof(jne), BASE), 0);
	CHECK_EQ_U(ct_hit_flags_at(mov, sizeof(mov), BASE), CT_SITEF_STEPPED);
}

/* ---- a CHECK after the prologue (ct_check_after_entry) ---- */

/* Go net/http.isNotToken (go1.19): a leaf without a stack check, called
 * through its address: its entry is single-stepped, the `jge` after the
 * prologue is emulated, SP 0x18 lower there; its int32 argument is still in
 * EAX (sign-extended in place: the low 4 bytes are kept). */
TEST(check_after_entry_go_leaf)
{
	static const uint8_t code[] = {
		0x48, 0x83, 0xec, 0x18,       /* +00 sub $0x18,%rsp */
		0x48, 0x89, 0x6c, 0x24, 0x10, /* +04 mov %rbp,0x10(%rsp) */
		0x48, 0x8d, 0x6c, 0x24, 0x10, /* +09 lea 0x10(%rsp),%rbp */
		0x48, 0x63, 0xc0,             /* +0e movsxd %eax,%rax */
		0x48, 0x83, 0xf8, 0x7f,       /* +11 cmp $0x7f,%rax */
		0x7d, 0x04,                   /* +15 jge +0x1b */
		0x31, 0xc0,                   /* +17 xor %eax,%eax */
		0xeb, 0x02,                   /* +19 jmp +0x1d */
		0xb0, 0x01,                   /* +1b mov $1,%al */
		0x48, 0x8b, 0x6c, 0x24, 0x10, /* +1d mov 0x10(%rsp),%rbp */
		0x48, 0x83, 0xc4, 0x18,       /* +22 add $0x18,%rsp */
		0xc3,                         /* +26 ret */
	};
	struct ct_exit_walk w;
	CHECK(ct_check_after_entry(code, sizeof(code), BASE, &w));
	CHECK_EQ_U(w.site, BASE + 0x15);
	CHECK_EQ_I(w.sp_delta, -0x18);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX);
	CHECK_EQ_U(w.loc[CT_RAX].width, 4);
	CHECK_EQ_I(w.loc[CT_RBX].reg, CT_RBX);
	CHECK_EQ_U(w.loc[CT_RBX].width, 8);
	/* a loop back into the prologue's line: the site would run again */
	uint8_t loop[sizeof(code)];
	memcpy(loop, code, sizeof(code));
	loop[0x1a] = (uint8_t)(0x11 - 0x1b); /* +19 jmp +0x11 */
	CHECK(!ct_check_after_entry(loop, sizeof(loop), BASE, &w));
	/* a branch landing on the site itself */
	loop[0x1a] = (uint8_t)(0x15 - 0x1b);
	CHECK(!ct_check_after_entry(loop, sizeof(loop), BASE, &w));
	/* ... but one to the entry is fine (it is not the site) */
	loop[0x1a] = (uint8_t)(0x00 - 0x1b);
	CHECK(ct_check_after_entry(loop, sizeof(loop), BASE, &w));
	/* a jump through a table anywhere: where it lands is not known */
	static const uint8_t table[] = {
		0x48, 0x83, 0xec, 0x18, /* +00 sub $0x18,%rsp */
		0x7d, 0x02,             /* +04 jge +0x08 */
		0xff, 0xe1,             /* +06 jmp *%rcx */
		0x48, 0x83, 0xc4, 0x18, /* +08 add $0x18,%rsp */
		0xc3,                   /* +0c ret */
	};
	CHECK(!ct_check_after_entry(table, sizeof(table), BASE, &w));
	/* an emulated call first: that probe may be its callee's CALL site */
	static const uint8_t call[] = {
		0x48, 0x83, 0xec, 0x18,       /* +00 sub $0x18,%rsp */
		0xe8, 0x00, 0x00, 0x00, 0x00, /* +04 call +9 */
		0x48, 0x83, 0xc4, 0x18,       /* +09 add $0x18,%rsp */
		0xc3,                         /* +0d ret */
	};
	CHECK(!ct_check_after_entry(call, sizeof(call), BASE, &w));
	/* nothing emulated before the ret (`mov 0x8(%rax),%rax; ret`) */
	static const uint8_t leaf[] = {0x48, 0x8b, 0x40, 0x08, 0xc3};
	CHECK(!ct_check_after_entry(leaf, sizeof(leaf), BASE, &w));
	/* a C leaf's store to its red zone, then the kernel's 5-byte nop: a
	 * probe there becomes a call, which would write over it; the 4-byte
	 * one is emulated in place */
	static const uint8_t redzone[] = {
		0x48, 0x89, 0x7c, 0x24, 0xf8, /* +00 mov %rdi,-0x8(%rsp) */
		0x0f, 0x1f, 0x44, 0x00, 0x00, /* +05 nopl 0x0(%rax,%rax,1) */
		0x48, 0x8b, 0x44, 0x24, 0xf8, /* +0a mov -0x8(%rsp),%rax */
		0xc3,                         /* +0f ret */
	};
	CHECK(!ct_check_after_entry(redzone, sizeof(redzone), BASE, &w));
	static const uint8_t redzone4[] = {
		0x48, 0x89, 0x7c, 0x24, 0xf8, /* +00 mov %rdi,-0x8(%rsp) */
		0x0f, 0x1f, 0x40, 0x00,       /* +05 nopl 0x0(%rax) */
		0x48, 0x8b, 0x44, 0x24, 0xf8, /* +09 mov -0x8(%rsp),%rax */
		0xc3,                         /* +0e ret */
	};
	CHECK(ct_check_after_entry(redzone4, sizeof(redzone4), BASE, &w));
	CHECK_EQ_U(w.site, BASE + 5);
}

/* Does a branch land between a return address and its exit probe (a call
 * found while recording)?  sync.Pool.Get's shape (go_core itemPool.get,
 * go1.19): the item it had joins at New's return address. */
TEST(branch_lands_at_return_address)
{
	static const uint8_t code[] = {
		0x48, 0x85, 0xc0,             /* +00 test %rax,%rax */
		0x75, 0x0e,                   /* +03 jne +0x13 */
		0x48, 0x8b, 0x4c, 0x24, 0x20, /* +05 mov 0x20(%rsp),%rcx */
		0x48, 0x8b, 0x51, 0x18,       /* +0a mov 0x18(%rcx),%rdx */
		0x48, 0x85, 0xd2,             /* +0e test %rdx,%rdx */
		0x75, 0x07,                   /* +11 jne +0x1a */
		0x48, 0x8b, 0x5c, 0x24, 0x08, /* +13 mov 0x8(%rsp),%rbx */
		0xeb, 0x05,                   /* +18 jmp +0x1f */
		0x48, 0x8b, 0x02,             /* +1a mov (%rdx),%rax */
		0xff, 0xd0,                   /* +1d call *%rax */
		0x48, 0x8b, 0x6c, 0x24, 0x10, /* +1f mov 0x10(%rsp),%rbp */
		0x48, 0x83, 0xc4, 0x18,       /* +24 add $0x18,%rsp */
		0xc3,                         /* +28 ret */
	};
	CHECK(ct_branch_lands(code, sizeof(code), BASE, BASE + 0x1f, BASE + 0x1f));
	CHECK(ct_branch_lands(code, sizeof(code), BASE, BASE + 0x1a, BASE + 0x1a));
	CHECK(!ct_branch_lands(code, sizeof(code), BASE, BASE + 0x20, BASE + 0x28));
	CHECK(!ct_branch_lands(code, sizeof(code), BASE, BASE + 0x1b, BASE + 0x1e));
	/* the jmp made a jump through a table: it may land anywhere */
	uint8_t table[sizeof(code)];
	memcpy(table, code, sizeof(code));
	table[0x18] = 0xff, table[0x19] = 0xe1; /* +18 jmp *%rcx */
	CHECK(ct_branch_lands(table, sizeof(table), BASE, BASE + 0x20, BASE + 0x28));
	/* code that does not decode may hide one (0x06: no instruction in
	 * 64-bit mode); padding after the last instruction does not */
	uint8_t pad[sizeof(code) + 3];
	memcpy(pad, code, sizeof(code));
	pad[sizeof(code)] = pad[sizeof(code) + 1] = pad[sizeof(code) + 2] = 0xcc;
	CHECK(!ct_branch_lands(pad, sizeof(pad), BASE, BASE + 0x20, BASE + 0x28));
	pad[sizeof(code)] = 0x06;
	CHECK(ct_branch_lands(pad, sizeof(pad), BASE, BASE + 0x20, BASE + 0x28));
}

TEST(sites_call_ends_at)
{
	/* a return address found while recording, in code without symbols:
	 * does a call instruction end right before it? */
	static const uint8_t rel[] = {0x48, 0x89, 0xc7, 0xe8, 0x10, 0x00, 0x00, 0x00}; /* mov; call rel32 */
	static const uint8_t reg[] = {0x90, 0xff, 0xd0};                            /* call *%rax */
	static const uint8_t r11[] = {0x90, 0x41, 0xff, 0xd3};                      /* call *%r11 */
	static const uint8_t got[] = {0xff, 0x15, 0x10, 0x20, 0x00, 0x00};          /* call *0x2010(%rip) */
	static const uint8_t slot[] = {0x90, 0xff, 0x54, 0x24, 0x08};               /* call *0x8(%rsp) */
	static const uint8_t mov[] = {0x90, 0x48, 0x89, 0xc3};                      /* mov %rax,%rbx */
	static const uint8_t cut[] = {0x90, 0xe8, 0x10, 0x00, 0x00};                /* inside a call */
	static const uint8_t jmp[] = {0x90, 0xff, 0xe0};                            /* jmp *%rax */
	CHECK(ct_call_ends_at(rel, sizeof(rel)));
	CHECK(ct_call_ends_at(reg, sizeof(reg)));
	CHECK(ct_call_ends_at(r11, sizeof(r11)));
	CHECK(ct_call_ends_at(got, sizeof(got)));
	CHECK(ct_call_ends_at(slot, sizeof(slot)));
	CHECK(!ct_call_ends_at(mov, sizeof(mov)));
	CHECK(!ct_call_ends_at(cut, sizeof(cut)));
	CHECK(!ct_call_ends_at(jmp, sizeof(jmp)));
	CHECK(!ct_call_ends_at(rel, 1));
}

TEST(sites_indirect_call_shapes)
{
	/* Go's calls through an interface and through a function value (from
	 * the ifacehot fixture), a call through memory, one through a GOT slot
	 * and one through a register loaded before another call */
	static const uint8_t code[] = {
		0x48, 0x8b, 0x31,             /* +0  mov (%rcx),%rsi: the itab */
		0x48, 0x8b, 0x76, 0x20,       /* +3  mov 0x20(%rsi),%rsi: its method 1 */
		0x48, 0x89, 0xf2,             /* +7  mov %rsi,%rdx: a copy */
		0xff, 0xd2,                   /* +10 call *%rdx */
		0x48, 0x8b, 0x3e,             /* +12 mov (%rsi),%rdi: a funcval's code */
		0xff, 0xd7,                   /* +15 call *%rdi */
		0xff, 0x50, 0x18,             /* +17 call *0x18(%rax) */
		0xff, 0x15, 0x10, 0x20, 0x00, 0x00, /* +20 call *0x2010(%rip) */
		0x48, 0x8b, 0x43, 0x08,       /* +26 mov 0x8(%rbx),%rax */
		0xe8, 0x00, 0x00, 0x00, 0x00, /* +30 call (clobbers it) */
		0xff, 0xd0,                   /* +35 call *%rax */
		0xc3,                         /* +37 ret */
	};
	struct ct_icall v[8];
	size_t n = ct_indirect_call_shapes(code, sizeof(code), BASE, v, 8);
	CHECK_EQ_U(n, 5);
	CHECK_EQ_U(v[0].at, BASE + 10);
	CHECK_EQ_U(v[0].len, 2);
	CHECK_EQ_U(v[0].via, CT_ICALL_LOADED);
	CHECK_EQ_U(v[0].disp, 0x20);
	CHECK_EQ_U(v[1].via, CT_ICALL_LOADED);
	CHECK_EQ_U(v[1].disp, 0);
	CHECK_EQ_U(v[2].via, CT_ICALL_MEM);
	CHECK_EQ_U(v[2].disp, 0x18);
	CHECK_EQ_U(v[3].via, CT_ICALL_RIP);
	CHECK_EQ_U(v[4].at, BASE + 35);
	CHECK_EQ_U(v[4].via, CT_ICALL_OTHER);
	/* the addresses alone, as before */
	uint64_t at[2];
	uint8_t lens[2];
	CHECK_EQ_U(ct_indirect_calls(code, sizeof(code), BASE, at, lens, 2), 5);
	CHECK_EQ_U(at[1], BASE + 15);
	CHECK_EQ_U(lens[1], 2);
	/* the same from the function's sites (the plan's way: decoded once) */
	struct ct_fn_sites fs;
	CHECK_EQ_I(ct_find_sites(code, sizeof(code), BASE, CT_CC_GO_REG, NULL, NULL, NULL, &fs), 0);
	CHECK_EQ_U(fs.nicalls, 5);
	for (size_t k = 0; k < fs.nicalls && k < 5; k++) {
		struct ct_icall c = ct_indirect_call_shape(code, sizeof(code), BASE, &fs.icalls[k]);
		CHECK_EQ_U(c.at, v[k].at);
		CHECK_EQ_U(c.len, v[k].len);
		CHECK_EQ_U(c.via, v[k].via);
		CHECK_EQ_I(c.disp, v[k].disp);
	}
	ct_fn_sites_free(&fs);
	/* none: direct calls only, and 0xff bytes that are no call's opcode
	 * (an immediate whose next byte looks like a call's ModRM) */
	static const uint8_t direct[] = {
		0x48, 0x83, 0xf8, 0xff,       /* cmp $-1,%rax */
		0xb8, 0xff, 0xd0, 0x00, 0x00, /* mov $0xd0ff,%eax */
		0xe8, 0x00, 0x00, 0x00, 0x00, /* call rel32 */
		0xff, 0xe0,                   /* jmp *%rax */
	};
	CHECK_EQ_U(ct_indirect_call_shapes(direct, sizeof(direct), BASE, v, 8), 0);
	CHECK_EQ_U(ct_indirect_call_shapes(direct, 9, BASE, v, 8), 0);
	/* a code pointer the function spilled to its frame and loads back (a
	 * register's, or called through the slot itself), or takes from a
	 * table: none is an itab's method or a funcval's code, whatever the
	 * offset (0x18 would read as itab method 0, 0 as a funcval) */
	static const uint8_t frame[] = {
		0x48, 0x8b, 0x54, 0x24, 0x18, /* +0  mov 0x18(%rsp),%rdx */
		0xff, 0xd2,                   /* +5  call *%rdx */
		0x48, 0x8b, 0x0c, 0x24,       /* +7  mov (%rsp),%rcx */
		0xff, 0xd1,                   /* +11 call *%rcx */
		0xff, 0x54, 0x24, 0x20,       /* +13 call *0x20(%rsp) */
		0xff, 0x54, 0xc8, 0x18,       /* +17 call *0x18(%rax,%rcx,8) */
		0x48, 0x8b, 0x04, 0x24,       /* +21 mov (%rsp),%rax: the itab */
		0x48, 0x8b, 0x50, 0x18,       /* +25 mov 0x18(%rax),%rdx: method 0 */
		0xff, 0xd2,                   /* +29 call *%rdx */
		0xc3,                         /* +31 ret */
	};
	CHECK_EQ_U(ct_indirect_call_shapes(frame, sizeof(frame), BASE, v, 8), 5);
	for (int k = 0; k < 4; k++)
		CHECK_EQ_U(v[k].via, CT_ICALL_OTHER);
	CHECK_EQ_U(v[4].via, CT_ICALL_LOADED);
	CHECK_EQ_I(v[4].disp, 0x18);
}

/* Go's open-coded defer (go1.19, the go_core fixture's (*locked).add:
 * `g.mu.Lock(); defer g.mu.Unlock(); return g.bump(k)`): after bump's call
 * the closure whose address the frame keeps at 0x40(%rsp) is called through
 * its code word; the slot is only ever given 0 or the closure made at
 * 0x30(%rsp), whose code word is only ever given 0 (X15) or add.func1. */
TEST(sites_go_deferred_closure)
{
	uint8_t code[] = {
		0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0xbe, 0x00, 0x00, 0x00, 0x48, 0x83,
		0xec, 0x50, 0x48, 0x89, 0x6c, 0x24, 0x48, 0x48, 0x8d, 0x6c, 0x24, 0x48,
		0x49, 0xc7, 0xc5, 0x00, 0x00, 0x00, 0x00, 0x4c, 0x89, 0x6c, 0x24, 0x40,
		0xc6, 0x44, 0x24, 0x17, 0x00, 0x48, 0xc7, 0x44, 0x24, 0x18, 0x00, 0x00,
		0x00, 0x00, 0x48, 0x89, 0xc1, 0x31, 0xc0, 0xba, 0x01, 0x00, 0x00, 0x00,
		0xf0, 0x0f, 0xb1, 0x11, 0x0f, 0x94, 0xc2, 0x84, 0xd2, 0x75, 0x1c, 0x48,
		0x89, 0x5c, 0x24, 0x20, 0x48, 0x89, 0x4c, 0x24, 0x28, 0x48, 0x89, 0xc8,
		0xe8, 0xc7, 0x65, 0xfe, 0xff, 0x48, 0x8b, 0x4c, 0x24, 0x28, 0x48, 0x8b,
		0x5c, 0x24, 0x20, 0x44, 0x0f, 0x11, 0x7c, 0x24, 0x30, 0x48, 0x8d, 0x15,
		0x90, 0x00, 0x00, 0x00, 0x48, 0x89, 0x54, 0x24, 0x30, 0x48, 0x89, 0x4c,
		0x24, 0x38, 0x48, 0x8d, 0x54, 0x24, 0x30, 0x48, 0x89, 0x54, 0x24, 0x40,
		0xc6, 0x44, 0x24, 0x17, 0x01, 0x48, 0x89, 0xc8, 0xe8, 0xef, 0xfe, 0xff,
		0xff, 0x48, 0x89, 0x44, 0x24, 0x18, 0xc6, 0x44, 0x24, 0x17, 0x00, 0x48,
		0x8b, 0x54, 0x24, 0x40, 0x48, 0x8b, 0x0a, 0xff, 0xd1, 0x48, 0x8b, 0x44,
		0x24, 0x18, 0x48, 0x8b, 0x6c, 0x24, 0x48, 0x48, 0x83, 0xc4, 0x50, 0xc3,
		0xe8, 0x47, 0xdf, 0xfa, 0xff, 0x48, 0x8b, 0x44, 0x24, 0x18, 0x48, 0x8b,
		0x6c, 0x24, 0x48, 0x48, 0x83, 0xc4, 0x50, 0xc3, 0x48, 0x89, 0x44, 0x24,
		0x08, 0x48, 0x89, 0x5c, 0x24, 0x10, 0xe8, 0x49, 0x8a, 0xfd, 0xff, 0x48,
		0x8b, 0x44, 0x24, 0x08, 0x48, 0x8b, 0x5c, 0x24, 0x10, 0xe9, 0x1a, 0xff,
		0xff, 0xff,
	};
	const uint64_t ret = BASE + 0x91, icall = BASE + 0xa3, func1 = BASE + 0x100;
	CHECK_EQ_U(ct_go_deferred_closure(code, sizeof(code), BASE, ret, icall), func1);
	/* the straight line from another return address does not reach it */
	CHECK_EQ_U(ct_go_deferred_closure(code, sizeof(code), BASE, BASE + 0xa5, icall), 0);
	/* the exit walk stops there and says so; to it, that call is the site */
	struct ct_exit_walk w;
	ct_exit_walk(code + 0x91, sizeof(code) - 0x91, ret, &w);
	CHECK_EQ_U(w.how, CT_EXIT_STEPPED);
	CHECK_EQ_U(w.icall_at, icall);
	CHECK_EQ_U(w.icall_len, 2);
	ct_exit_walk_to(code + 0x91, sizeof(code) - 0x91, ret, icall, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, icall);
	CHECK_EQ_I(w.loc[CT_RAX].reg, CT_RAX); /* bump's result, still there */
	/* the slot given something else (RBX where R13 was zeroed) */
	code[31] = 0x48, code[33] = 0x5c; /* mov %rbx,0x40(%rsp) */
	CHECK_EQ_U(ct_go_deferred_closure(code, sizeof(code), BASE, ret, icall), 0);
	code[31] = 0x4c, code[33] = 0x6c;
	CHECK_EQ_U(ct_go_deferred_closure(code, sizeof(code), BASE, ret, icall), func1);
	/* the closure's code word given something else (its receiver) */
	code[117 + 4] = 0x30; /* mov %rcx,0x30(%rsp) */
	CHECK_EQ_U(ct_go_deferred_closure(code, sizeof(code), BASE, ret, icall), 0);
}

/* Code that runs on past its end into the next function (glibc's
 * __strcasecmp_avx2: set-up, a nop, then __strcasecmp_l_avx2) is told from
 * code ending in a RET, a jump, a call (which may not return), a trap, or
 * padding after them. */
TEST(sites_falls_through)
{
	static const uint8_t runs_on[] = {
		0x8d, 0x7f, 0x02,             /* lea 2(%rdi),%edi */
		0x0f, 0x1f, 0x44, 0x00, 0x00, /* nopl 0(%rax,%rax,1) */
	};
	static const uint8_t ends[][6] = {
		{0x8d, 0x7f, 0x02, 0xc3},                   /* ret */
		{0x8d, 0x7f, 0x02, 0xeb, 0x10},             /* jmp */
		{0x8d, 0x7f, 0x02, 0xe8, 0x00, 0x10},       /* call (6 bytes: cut below) */
		{0x8d, 0x7f, 0x02, 0x0f, 0x0b},             /* ud2 */
		{0x8d, 0x7f, 0x02, 0xc3, 0xcc, 0xcc},       /* ret, int3 padding */
	};
	static const size_t lens[] = {4, 5, 0, 5, 6};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(runs_on, sizeof(runs_on), CT_CC_SYSV, &s), 0);
	CHECK(s.falls_through);
	CHECK_EQ_U(s.nexits, 0);
	ct_fn_sites_free(&s);
	static const uint8_t call_end[] = {0x8d, 0x7f, 0x02, 0xe8, 0x00, 0x10, 0x00, 0x00};
	CHECK_EQ_I(find(call_end, sizeof(call_end), CT_CC_SYSV, &s), 0);
	CHECK(!s.falls_through);
	ct_fn_sites_free(&s);
	for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
		if (!lens[i])
			continue;
		CHECK_EQ_I(find(ends[i], lens[i], CT_CC_SYSV, &s), 0);
		CHECK(!s.falls_through);
		ct_fn_sites_free(&s);
	}
}

/* Bytes at ADDR in a little code map: struct code_piece[] ending with len 0. */
struct code_piece {
	uint64_t addr;
	const uint8_t *bytes;
	size_t len;
};

static const uint8_t *piece_at(void *ctx, uint64_t addr, size_t *len)
{
	for (const struct code_piece *p = ctx; p->len; p++)
		if (addr >= p->addr && addr < p->addr + p->len) {
			*len = p->len - (addr - p->addr);
			return p->bytes + (addr - p->addr);
		}
	return NULL;
}

TEST(warm_up_site_is_the_first_stepped_instruction_from_the_entry)
{
	/* glibc's _start: endbr64 (the kernel may take it for a nop) is
	 * passed over, xor %ebp,%ebp is single-stepped */
	static const uint8_t start[] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* +0 endbr64 */
		0x31, 0xed,             /* +4 xor %ebp,%ebp */
		0x49, 0x89, 0xd1,       /* +6 mov %rdx,%r9 */
	};
	struct code_piece c[] = {{BASE, start, sizeof(start)}, {0, NULL, 0}};
	CHECK_EQ_U(ct_warm_up_site(BASE, piece_at, c), BASE + 4);
	/* Go's _rt0_amd64_linux: jmp _rt0_amd64, whose first instruction is
	 * stepped; push (emulated) and a nop on the way are passed over */
	static const uint8_t rt0[] = {0xe9, 0xfb, 0x0f, 0x00, 0x00}; /* jmp BASE+0x1000 */
	static const uint8_t rt0b[] = {
		0x55,                   /* +0 push %rbp */
		0x90,                   /* +1 nop */
		0x48, 0x8b, 0x3c, 0x24, /* +2 mov (%rsp),%rdi */
	};
	struct code_piece g[] = {{BASE, rt0, sizeof(rt0)}, {BASE + 0x1000, rt0b, sizeof(rt0b)}, {0, NULL, 0}};
	CHECK_EQ_U(ct_warm_up_site(BASE, piece_at, g), BASE + 0x1002);
	/* a call, a conditional branch or a ret before any: none (the
	 * traced code may be behind it) */
	static const uint8_t callfirst[] = {0xe8, 0x00, 0x00, 0x00, 0x00, 0x31, 0xed}; /* call; xor */
	static const uint8_t jccfirst[] = {0x74, 0x02, 0x31, 0xed, 0x31, 0xed};          /* je; xor */
	static const uint8_t retfirst[] = {0xc3};
	static const uint8_t lockfirst[] = {0xf0, 0x48, 0x01, 0x07}; /* lock add %rax,(%rdi): refused */
	const uint8_t *none[] = {callfirst, jccfirst, retfirst, lockfirst};
	size_t nlen[] = {sizeof(callfirst), sizeof(jccfirst), sizeof(retfirst), sizeof(lockfirst)};
	for (size_t i = 0; i < 4; i++) {
		struct code_piece n[] = {{BASE, none[i], nlen[i]}, {0, NULL, 0}};
		CHECK_EQ_U(ct_warm_up_site(BASE, piece_at, n), 0);
	}
	/* a jump out of the code, or code that runs out */
	static const uint8_t away[] = {0xeb, 0x10};
	struct code_piece a[] = {{BASE, away, sizeof(away)}, {0, NULL, 0}};
	CHECK_EQ_U(ct_warm_up_site(BASE, piece_at, a), 0);
	/* a loop of jumps ends */
	static const uint8_t loop[] = {0xeb, 0xfe};
	struct code_piece l[] = {{BASE, loop, sizeof(loop)}, {0, NULL, 0}};
	CHECK_EQ_U(ct_warm_up_site(BASE, piece_at, l), 0);
}

/* clang -Os's conditional tail calls: `test %esi,%esi; je free@plt; ret`
 * (a short jcc back, out of the function) and `jne g` with rel32: TAIL
 * exits with their conditions; the entry probe is not on either jump
 * (it would be the jump's too, taken or not). */
TEST(sites_conditional_tail_jumps)
{
	static const uint8_t code[] = {
		0x85, 0xf6,                         /* +0 test %esi,%esi */
		0x74, 0xf0,                         /* +2 je 0x400ff4 (out: before the function) */
		0x85, 0xff,                         /* +4 test %edi,%edi */
		0x0f, 0x85, 0x00, 0x10, 0x00, 0x00, /* +6 jne 0x40200c (out: after it) */
		0x75, 0x01,                         /* +c jne 0x40100f (inside) */
		0xc3,                               /* +e ret */
		0xc3,                               /* +f ret */
	};
	struct ct_fn_sites s;
	CHECK_EQ_I(find(code, sizeof(code), CT_CC_SYSV, &s), 0);
	CHECK_EQ_U(s.entry_site, BASE);
	CHECK(!s.entry_emulated);
	CHECK_EQ_U(s.nexits, 4);
	CHECK_EQ_U(s.exits[0].addr, BASE + 2);
	CHECK_EQ_U(s.exits[0].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[0].target, BASE + 4 - 0x10);
	CHECK_EQ_U(s.exits[0].cond, 0x4 + 1); /* e */
	CHECK_EQ_U(s.exits[1].addr, BASE + 6);
	CHECK_EQ_U(s.exits[1].kind, CT_SITE_TAIL);
	CHECK_EQ_U(s.exits[1].target, BASE + 0xc + 0x1000);
	CHECK_EQ_U(s.exits[1].cond, 0x5 + 1); /* ne */
	CHECK_EQ_U(s.exits[2].kind, CT_SITE_RET);
	CHECK_EQ_U(s.exits[3].kind, CT_SITE_RET);
	ct_fn_sites_free(&s);
}

/* What the CPU's setCC says of the 16 conditions under EFLAGS FL (the
 * same 4-bit condition codes as jcc's). */
static void cpu_conditions(uint64_t fl, uint8_t r[16])
{
	__asm__ volatile("pushq %16\n\tpopfq\n\t"
			 "seto %0\n\tsetno %1\n\tsetb %2\n\tsetae %3\n\tsete %4\n\tsetne %5\n\t"
			 "setbe %6\n\tseta %7\n\tsets %8\n\tsetns %9\n\tsetp %10\n\tsetnp %11\n\t"
			 "setl %12\n\tsetge %13\n\tsetle %14\n\tsetg %15"
			 : "=m"(r[0]), "=m"(r[1]), "=m"(r[2]), "=m"(r[3]), "=m"(r[4]), "=m"(r[5]), "=m"(r[6]),
			   "=m"(r[7]), "=m"(r[8]), "=m"(r[9]), "=m"(r[10]), "=m"(r[11]), "=m"(r[12]), "=m"(r[13]),
			   "=m"(r[14]), "=m"(r[15])
			 : "r"(fl)
			 : "cc");
}

/* The probe's reading of a conditional jump's flags (event.h, run by the
 * BPF side) against the CPU itself, every combination of CF, PF, ZF, SF
 * and OF. */
TEST(jcc_taken_agrees_with_the_cpu)
{
	static const uint64_t bits[] = {1u << 0, 1u << 2, 1u << 6, 1u << 7, 1u << 11};
	for (unsigned m = 0; m < 32; m++) {
		uint64_t fl = 0x2; /* (bit 1 is always set) */
		for (unsigned b = 0; b < 5; b++)
			if (m & (1u << b))
				fl |= bits[b];
		uint8_t cpu[16];
		cpu_conditions(fl, cpu);
		for (unsigned cc = 0; cc < 16; cc++)
			if (ct_jcc_taken(cc, fl) != cpu[cc]) {
				unit_fail(__FILE__, __LINE__, "condition %u, eflags 0x%llx: %d, the CPU says %u", cc,
					  (unsigned long long)fl, ct_jcc_taken(cc, fl), cpu[cc]);
				return;
			}
	}
}

/* A switch whose case pops the frame and jumps through a pointer: no
 * direct branch reaches the case, so SP there was unknown and the jump
 * undecided (no probe: its target's entry unwound the call); the case
 * starts where the jump table's jump is, SP 8 below. */
static const uint8_t ij_case_tail[] = {
	0x53,                   /* +0 push %rbx */
	0x48, 0x8b, 0x0f,       /* +1 mov (%rdi),%rcx */
	0xff, 0xe1,             /* +4 jmp *%rcx (the jump table's) */
	0x5b,                   /* +6 pop %rbx (a case) */
	0x48, 0x8b, 0x47, 0x08, /* +7 mov 0x8(%rdi),%rax */
	0xff, 0xe0,             /* +b jmp *%rax (a tail jump) */
	0x5b,                   /* +d pop %rbx (another case) */
	0xc3,                   /* +e ret */
};

TEST(ijump_case_of_a_jump_table_tail_jumps)
{
	struct ct_ijump j[2];
	CHECK_EQ_U(ct_indirect_jumps(ij_case_tail, sizeof(ij_case_tail), BASE, j, 2), 2);
	CHECK_EQ_U(j[0].addr, BASE + 4);
	CHECK_EQ_U(j[0].kind, CT_IJUMP_INSIDE);
	CHECK_EQ_U(j[1].addr, BASE + 0xb);
	CHECK_EQ_U(j[1].kind, CT_IJUMP_TAIL);
	struct ct_fn_sites s;
	CHECK_EQ_I(find(ij_case_tail, sizeof(ij_case_tail), CT_CC_SYSV, &s), 0);
	size_t tails = 0;
	for (size_t i = 0; i < s.nexits; i++)
		tails += s.exits[i].kind == CT_SITE_TAIL && s.exits[i].addr == BASE + 0xb;
	CHECK_EQ_U(tails, 1);
	ct_fn_sites_free(&s);
}

/* ct_scan_slot_refs: registers loaded from GOT slots (0x403000, 0x403008) */
static bool two_slots(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr == 0x403000 || addr == 0x403008;
}

static void scan_slots(const uint8_t *code, size_t len, struct refs_seen *s)
{
	memset(s, 0, sizeof(*s));
	CHECK_EQ_U(ct_scan_slot_refs(code, len, BASE, collect_ref, s, two_slots), 0);
}

static bool via(const struct ct_code_ref *r, uint64_t at, uint8_t through, uint64_t slot)
{
	return r->kind == CT_REF_ADDR && r->via_reg && r->at == BASE + at && r->through == through && r->target == slot;
}

static bool kept_load(const struct ct_code_ref *r, uint64_t at, uint64_t slot, uint8_t why, uint64_t why_at)
{
	return r->kind == CT_REF_ADDR && !r->via_reg && !r->through && r->at == BASE + at && r->target == slot &&
	       r->why == why && r->why_at == BASE + why_at && ct_slot_load_why(why);
}

TEST(scan_slot_refs_follow_registers_loaded_from_got_slots)
{
	/* push %rbx; mov slot1(%rip),%rbx; 1: mov %ebp,%edi; call *%rbx;
	 * dec %ebp; jnz 1b; pop %rbx; ret; xchg %ax,%ax (padding: not a
	 * landing pad's start); mov %rax,%rbx; mov %rbx,%rdi; call 0x402000
	 * (a pad that overwrites the register before reading it) */
	static const uint8_t loop[] = {0x53, 0x48, 0x8b, 0x1d, 0xf8, 0x1f, 0x00, 0x00, 0x89, 0xef, 0xff,
				       0xd3, 0xff, 0xcd, 0x75, 0xf8, 0x5b, 0xc3, 0x66, 0x90, 0x48, 0x89,
				       0xc3, 0x48, 0x89, 0xdf, 0xe8, 0xe1, 0x0f, 0x00, 0x00};
	struct refs_seen s;
	scan_slots(loop, sizeof(loop), &s);
	CHECK_EQ_I(s.n, 4);
	CHECK(via(&s.r[0], 1, CT_THROUGH_LOAD, 0x403000));
	CHECK(via(&s.r[1], 0xa, CT_THROUGH_CALL, 0x403000) && s.r[1].len == 2);
	CHECK(s.r[2].kind == CT_REF_JUMP && s.r[3].kind == CT_REF_CALL && s.r[3].target == 0x402000);

	/* mov slot1(%rip),%rax; call 0x402000 (%rax live: it may read it);
	 * call *%rax; ret */
	static const uint8_t clob[] = {0x48, 0x8b, 0x05, 0xf9, 0x1f, 0x00, 0x00, 0xe8,
				       0xf4, 0x0f, 0x00, 0x00, 0xff, 0xd0, 0xc3};
	scan_slots(clob, sizeof(clob), &s);
	CHECK_EQ_I(s.n, 2);
	CHECK(kept_load(&s.r[0], 0, 0x403000, 2, 7));
	CHECK(s.r[1].kind == CT_REF_CALL);

	/* mov slot1(%rip),%rbx; test %edi,%edi; je 1f; mov %rdi,%rbx;
	 * 1: call *%rbx; ret (another value on one path) */
	static const uint8_t mixed[] = {0x48, 0x8b, 0x1d, 0xf9, 0x1f, 0x00, 0x00, 0x85, 0xff,
					0x74, 0x03, 0x48, 0x89, 0xfb, 0xff, 0xd3, 0xc3};
	scan_slots(mixed, sizeof(mixed), &s);
	CHECK_EQ_I(s.n, 2);
	CHECK(kept_load(&s.r[0], 0, 0x403000, 5, 0xe));

	/* mov slot1(%rip),%rbx; mov %rbx,(%rsi) (stored); call *%rbx;
	 * mov slot2(%rip),%rax; jmp *%rax (a tail jump through it) */
	static const uint8_t stored[] = {0x48, 0x8b, 0x1d, 0xf9, 0x1f, 0x00, 0x00, 0x48, 0x89, 0x1e, 0xff,
					 0xd3, 0x48, 0x8b, 0x05, 0xf5, 0x1f, 0x00, 0x00, 0xff, 0xe0};
	scan_slots(stored, sizeof(stored), &s);
	CHECK_EQ_I(s.n, 3);
	CHECK(kept_load(&s.r[0], 0, 0x403000, 1, 7));
	CHECK(via(&s.r[1], 0xc, CT_THROUGH_LOAD, 0x403008));
	CHECK(via(&s.r[2], 0x13, CT_THROUGH_JUMP, 0x403008));

	/* push %r12; push %rbx; mov slot1(%rip),%rbx; call *%rbx; xor
	 * %ebx,%ebx (the value gone); mov %rbx,(%rsi); mov slot2(%rip),%r12;
	 * call *%r12; pop %rbx; pop %r12; ret; then a landing pad, entered
	 * with the callee-saved registers of a call: mov %r12,%rdi; call
	 * 0x402000 */
	static const uint8_t pad[] = {0x41, 0x54, 0x53, 0x48, 0x8b, 0x1d, 0xf6, 0x1f, 0x00, 0x00, 0xff, 0xd3, 0x31,
				      0xdb, 0x48, 0x89, 0x1e, 0x4c, 0x8b, 0x25, 0xf0, 0x1f, 0x00, 0x00, 0x41, 0xff,
				      0xd4, 0x5b, 0x41, 0x5c, 0xc3, 0x4c, 0x89, 0xe7, 0xe8, 0xd9, 0x0f, 0x00, 0x00};
	scan_slots(pad, sizeof(pad), &s);
	CHECK_EQ_I(s.n, 4);
	CHECK(via(&s.r[0], 3, CT_THROUGH_LOAD, 0x403000));
	CHECK(via(&s.r[1], 0xa, CT_THROUGH_CALL, 0x403000));
	CHECK(kept_load(&s.r[2], 0x11, 0x403008, 1, 0x1f));
	CHECK(s.r[3].kind == CT_REF_CALL);

	/* without IS_SLOT, as ct_scan_refs: the loads are addresses */
	memset(&s, 0, sizeof(s));
	ct_scan_slot_refs(loop, sizeof(loop), BASE, collect_ref, &s, NULL);
	CHECK(s.n == 3 && s.r[0].kind == CT_REF_ADDR && !s.r[0].via_reg && !s.r[0].through && !s.r[0].why);
}

/* V8's VirtualMemory::SetPermissions: a check that calls a function that
 * never returns (V8_Fatal, after a push), alignment padding, then the
 * block the check jumped to, which tail-jumps through a vtable: the
 * padding's fall-through is no path, so SP there is the entry's. */
static const uint8_t ij_after_noreturn[] = {
	0x48, 0x39, 0xf7,             /* +0 cmp %rsi,%rdi */
	0x72, 0x0c,                   /* +3 jb +0x11 */
	0x55,                         /* +5 push %rbp */
	0x48, 0x89, 0xe5,             /* +6 mov %rsp,%rbp */
	0xe8, 0x00, 0x01, 0x00, 0x00, /* +9 call fatal (never returns) */
	0x0f, 0x1f, 0x00,             /* +e nopl (%rax) (padding) */
	0x48, 0x8b, 0x3f,             /* +11 mov (%rdi),%rdi */
	0x48, 0x8b, 0x07,             /* +14 mov (%rdi),%rax */
	0xff, 0x60, 0x48,             /* +17 jmp *0x48(%rax) (a tail jump) */
};

TEST(ijump_after_a_call_that_never_returns_and_padding)
{
	struct ct_ijump j[1];
	CHECK_EQ_U(ct_indirect_jumps(ij_after_noreturn, sizeof(ij_after_noreturn), BASE, j, 1), 1);
	CHECK_EQ_U(j[0].addr, BASE + 0x17);
	CHECK_EQ_U(j[0].kind, CT_IJUMP_TAIL);
}

/* ---- a call seen ahead, at the exit probe before it (plan/ahead.c) ---- */

/* make bench's leaf loop (Go 1.19, main.main.func1): `jg` at +0x4d is the
 * exit probe of the call at +0x2d, and jumps back to two stores and that
 * call; nothing else enters there (the loop is entered by the `jmp` at
 * +0x21, to its `cmp`). */
static const uint8_t leaf_loop[] = {
	0x49, 0x3b, 0x66, 0x10,       /* +00 cmp 0x10(%r14),%rsp */
	0x76, 0x56,                   /* +04 jbe +0x5c */
	0x48, 0x83, 0xec, 0x28,       /* +06 sub $0x28,%rsp */
	0x48, 0x89, 0x6c, 0x24, 0x20, /* +0a mov %rbp,0x20(%rsp) */
	0x48, 0x8d, 0x6c, 0x24, 0x20, /* +0f lea 0x20(%rsp),%rbp */
	0x48, 0x8b, 0x4a, 0x08,       /* +14 mov 0x8(%rdx),%rcx */
	0x48, 0x89, 0x4c, 0x24, 0x18, /* +18 mov %rcx,0x18(%rsp) */
	0x31, 0xc0,                   /* +1d xor %eax,%eax */
	0x31, 0xd2,                   /* +1f xor %edx,%edx */
	0xeb, 0x27,                   /* +21 jmp +0x4a */
	0x48, 0x89, 0x44, 0x24, 0x10, /* +23 mov %rax,0x10(%rsp) */
	0x48, 0x89, 0x54, 0x24, 0x08, /* +28 mov %rdx,0x8(%rsp) */
	0xe8, 0x2e, 0xfc, 0xff, 0xff, /* +2d call main.leaf */
	0x48, 0x8b, 0x4c, 0x24, 0x10, /* +32 mov 0x10(%rsp),%rcx */
	0x48, 0xff, 0xc1,             /* +37 inc %rcx */
	0x48, 0x8b, 0x54, 0x24, 0x08, /* +3a mov 0x8(%rsp),%rdx */
	0x48, 0x01, 0xc2,             /* +3f add %rax,%rdx */
	0x48, 0x89, 0xc8,             /* +42 mov %rcx,%rax */
	0x48, 0x8b, 0x4c, 0x24, 0x18, /* +45 mov 0x18(%rsp),%rcx */
	0x48, 0x39, 0x01,             /* +4a cmp %rax,(%rcx) */
	0x7f, 0xd4,                   /* +4d jg +0x23 */
	0x48, 0x89, 0xd0,             /* +4f mov %rdx,%rax */
	0x48, 0x8b, 0x6c, 0x24, 0x20, /* +52 mov 0x20(%rsp),%rbp */
	0x48, 0x83, 0xc4, 0x28,       /* +57 add $0x28,%rsp */
	0xc3,                         /* +5b ret */
	0x0f, 0x1f, 0x40, 0x00,       /* +5c nopl 0x0(%rax) */
	0xe8, 0x9b, 0x68, 0xfd, 0xff, /* +60 call runtime.morestack */
	0xeb, 0x99,                   /* +65 jmp +0x00 */
};

TEST(probe_ways_of_a_loops_jcc)
{
	struct ct_way w[2];
	CHECK_EQ_U(ct_probe_ways(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x4d, w), 2);
	CHECK_EQ_U(w[0].to, BASE + 0x23); /* jumping: back to the call */
	CHECK_EQ_U(w[0].cond, 0xf + 1);   /* jg: condition code 15 */
	CHECK(!w[0].fall);
	CHECK_EQ_U(w[1].to, BASE + 0x4f); /* not jumping: on to the ret */
	CHECK(w[1].fall);
	/* a `jmp` leads one way, always; a call, a mov, the ret: none */
	/* (the jmp's target, the loop's cmp, is where the code before runs on to) */
	CHECK_EQ_U(ct_probe_ways(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x21, w), 0);
	CHECK_EQ_U(ct_probe_ways(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x2d, w), 0);
	CHECK_EQ_U(ct_probe_ways(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x23, w), 0);
	CHECK_EQ_U(ct_probe_ways(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x5b, w), 0);
	CHECK_EQ_U(ct_insn_role_at(leaf_loop + 0x2d, sizeof(leaf_loop) - 0x2d, BASE + 0x2d), CT_INSN_CALL);
	CHECK_EQ_U(ct_insn_role_at(leaf_loop + 0x5c, sizeof(leaf_loop) - 0x5c, BASE + 0x5c), CT_INSN_NOP);
	CHECK_EQ_U(ct_insn_role_at(leaf_loop + 0x4d, sizeof(leaf_loop) - 0x4d, BASE + 0x4d), CT_INSN_OTHER);
	/* the code before the jump's target runs on into it (a 2-byte nop for
	 * the jmp at +0x21): only the way the jump does not take is its own */
	uint8_t code[sizeof(leaf_loop)];
	memcpy(code, leaf_loop, sizeof(code));
	code[0x21] = 0x66, code[0x22] = 0x90;
	CHECK_EQ_U(ct_probe_ways(code, sizeof(code), BASE, BASE + 0x4d, w), 1);
	CHECK(w[0].fall);
	/* another branch to the target (the jmp at +0x21 to +0x23) */
	memcpy(code, leaf_loop, sizeof(code));
	code[0x22] = 0x00;
	CHECK_EQ_U(ct_probe_ways(code, sizeof(code), BASE, BASE + 0x4d, w), 1);
	CHECK(w[0].fall);
	/* a branch into the way (to +0x28): the way starts alone, but
	 * ct_branch_lands sees the landing before the call */
	code[0x22] = 0x05;
	CHECK_EQ_U(ct_probe_ways(code, sizeof(code), BASE, BASE + 0x4d, w), 2);
	CHECK(ct_branch_lands(code, sizeof(code), BASE, BASE + 0x24, BASE + 0x2d));
	CHECK(!ct_branch_lands(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x24, BASE + 0x2d));
	/* a jump through a table anywhere: no way is known to be alone */
	memcpy(code, leaf_loop, sizeof(code));
	code[0x5c] = 0xff, code[0x5d] = 0xe1, code[0x5e] = 0x90, code[0x5f] = 0x90; /* jmp *%rcx; nop; nop */
	CHECK_EQ_U(ct_probe_ways(code, sizeof(code), BASE, BASE + 0x4d, w), 0);
	/* the first look (the plan's, at every exit probe) gives both ways
	 * whatever else enters them, from the one instruction; nothing where
	 * the full look gives nothing for the instruction itself */
	CHECK_EQ_U(ct_probe_ways_any(code, sizeof(code), BASE, BASE + 0x4d, w), 2);
	CHECK_EQ_U(w[0].to, BASE + 0x23);
	CHECK_EQ_U(w[1].to, BASE + 0x4f);
	CHECK_EQ_U(ct_probe_ways_any(leaf_loop, sizeof(leaf_loop), BASE, BASE + 0x2d, w), 0); /* a call */
	CHECK_EQ_U(ct_probe_ways_any(leaf_loop, 0x4e, BASE, BASE + 0x4d, w), 0); /* cut short */
}

TEST(fetch_ahead_reads_the_arguments_before_the_call)
{
	/* the walk from the jg's way to the call: two stores of the frame */
	struct ct_exit_walk w;
	ct_exit_walk(leaf_loop + 0x23, sizeof(leaf_loop) - 0x23, BASE + 0x23, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, BASE + 0x2d);
	CHECK_EQ_I(w.sp_delta, 0);
	CHECK(w.stack_written);
	CHECK(!w.may_fault); /* (stores to the frame) */
	CHECK_EQ_U(w.held[CT_RAX].kind, CT_HELD_REG);
	CHECK_EQ_I(w.held[CT_RAX].reg, CT_RAX);
	struct ct_site_fetch f = {0}, out;
	f.prog.nops = 1;
	f.prog.size = 8;
	f.prog.ops[0] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RAX, .dst = 0, .size = 8};
	CHECK_EQ_I(ct_fetch_ahead(&f, &w, &out), 0);
	CHECK_EQ_U(out.prog.ops[0].code, CT_OP_REG);
	CHECK_EQ_U(out.prog.ops[0].reg, CT_RAX);
	ct_site_fetch_free(&out);
	/* what an argument points to, with the frame written on the way: no */
	f.prog.nops = 2;
	f.prog.size = 24;
	f.prog.ops[1] = (struct ct_fetch_op){.code = CT_OP_DEREF, .dst = 8, .size = 16, .src = 0};
	CHECK(ct_fetch_ahead(&f, &w, &out) != 0);
	/* ... unless it never changes (a Go string's bytes) */
	f.immutable_ops = 1u << 1;
	CHECK_EQ_I(ct_fetch_ahead(&f, &w, &out), 0);
	ct_site_fetch_free(&out);
	/* past a nop (the morestack path: `nopl; call`) to the call after it */
	ct_exit_walk(leaf_loop + 0x5c, sizeof(leaf_loop) - 0x5c, BASE + 0x5c, &w);
	CHECK_EQ_U(w.site, BASE + 0x5c);
	ct_walk_past_nops(leaf_loop + 0x5c, sizeof(leaf_loop) - 0x5c, BASE + 0x5c, &w);
	CHECK_EQ_U(w.how, CT_EXIT_EMULATED);
	CHECK_EQ_U(w.site, BASE + 0x60);
	/* a load through RAX on the way (`mov (%rax),%edx; mov %rdx,%rdx`):
	 * it may fault, a Go panic before the call */
	uint8_t code[sizeof(leaf_loop)];
	memcpy(code, leaf_loop, sizeof(code));
	memcpy(code + 0x28, (const uint8_t[]){0x8b, 0x10, 0x48, 0x89, 0xd2}, 5);
	ct_exit_walk(code + 0x23, sizeof(code) - 0x23, BASE + 0x23, &w);
	CHECK_EQ_U(w.site, BASE + 0x2d);
	CHECK(w.may_fault);
	/* the way after the loop: RAX is RDX there, RBP is reloaded (the walk
	 * stops at the ret: no call to see ahead) */
	ct_exit_walk(leaf_loop + 0x4f, sizeof(leaf_loop) - 0x4f, BASE + 0x4f, &w);
	CHECK(w.how != CT_EXIT_EMULATED);
	/* from +0x32 (after the call) to the jg: RAX is RCX + 1, RCX the word
	 * at SP + 0x18 */
	ct_exit_walk(leaf_loop + 0x32, sizeof(leaf_loop) - 0x32, BASE + 0x32, &w);
	CHECK_EQ_U(w.site, BASE + 0x4d);
	CHECK_EQ_U(w.held[CT_RAX].kind, CT_HELD_NONE); /* (the word at SP + 0x10, plus 1: no capture reads that) */
	CHECK_EQ_I(w.held[CT_RCX].kind, CT_HELD_STACK);
	CHECK_EQ_I(w.held[CT_RCX].off, 0x18);
	f.immutable_ops = 0;
	f.prog.nops = 1;
	f.prog.size = 8;
	f.prog.ops[0] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RCX, .dst = 0, .size = 8};
	CHECK_EQ_I(ct_fetch_ahead(&f, &w, &out), 0);
	CHECK_EQ_U(out.prog.ops[0].code, CT_OP_STACKWORD);
	CHECK_EQ_I(out.prog.ops[0].off, 0x18);
	ct_site_fetch_free(&out);
}

/* An assembly function's result (DWARF: a nameless unspecified type) is
 * kept only where RAX is set on every way to each RET. */
TEST(asm_result_kept_only_where_rax_is_set_before_every_ret)
{
	static const uint8_t lea_ret[] = {0x48, 0x8d, 0x47, 0x01, /* lea 0x1(%rdi),%rax */
					  0xc3};                  /* ret */
	static const uint8_t roundsd_ret[] = {0x66, 0x0f, 0x3a, 0x0b, 0xc0, 0x09, /* roundsd $9,%xmm0,%xmm0 (__floor_sse41) */
					      0xc3};
	static const uint8_t set_then_branch[] = {0x48, 0x89, 0xf8, /* mov %rdi,%rax */
						  0x48, 0x85, 0xd2, /* test %rdx,%rdx */
						  0x74, 0x03,       /* je ret */
						  0x48, 0x89, 0xf1, /* mov %rsi,%rcx */
						  0xc3};
	static const uint8_t set_on_one_way[] = {0x48, 0x85, 0xd2,                   /* test %rdx,%rdx */
						 0x74, 0x05,                         /* je ret */
						 0xb8, 0x01, 0x00, 0x00, 0x00,       /* mov $1,%eax */
						 0xc3};
	static const uint8_t no_ret[] = {0x48, 0x89, 0xf8,             /* mov %rdi,%rax */
					 0xe9, 0x00, 0x10, 0x00, 0x00}; /* jmp (another function) */
	static const uint8_t call_ret[] = {0xe8, 0x00, 0x10, 0x00, 0x00, /* call (another function) */
					   0xc3};
	static const uint8_t cmov_ret[] = {0x48, 0x0f, 0x44, 0xc7, /* cmove %rdi,%rax */
					   0xc3};
	static const uint8_t al_ret[] = {0x0f, 0x94, 0xc0, /* sete %al */
					 0xc3};
	/* a jump out of the function, backwards too (strncmp into strcmp's body), is a tail jump */
	static const uint8_t jump_back_out[] = {0x48, 0x85, 0xff,                   /* test %rdi,%rdi */
						0x0f, 0x85, 0xf7, 0xfe, 0xff, 0xff, /* jne BASE-0x100 */
						0xb8, 0x01, 0x00, 0x00, 0x00,       /* mov $1,%eax */
						0xc3};
	static const uint8_t jump_mid[] = {0x74, 0x01,                   /* je into the mov's middle */
					   0xb8, 0x01, 0x00, 0x00, 0x00, /* mov $1,%eax */
					   0xc3};
	CHECK(ct_rets_set_rax(jump_back_out, sizeof(jump_back_out), BASE));
	CHECK(!ct_rets_set_rax(jump_mid, sizeof(jump_mid), BASE));
	CHECK(ct_rets_set_rax(lea_ret, sizeof(lea_ret), BASE));
	CHECK(!ct_rets_set_rax(roundsd_ret, sizeof(roundsd_ret), BASE));
	CHECK(ct_rets_set_rax(set_then_branch, sizeof(set_then_branch), BASE));
	CHECK(!ct_rets_set_rax(set_on_one_way, sizeof(set_on_one_way), BASE));
	CHECK(!ct_rets_set_rax(no_ret, sizeof(no_ret), BASE));
	CHECK(ct_rets_set_rax(call_ret, sizeof(call_ret), BASE));
	CHECK(!ct_rets_set_rax(cmov_ret, sizeof(cmov_ret), BASE));
	CHECK(!ct_rets_set_rax(al_ret, sizeof(al_ret), BASE));
}
