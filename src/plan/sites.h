/* Probe sites of one function, found by decoding its machine code with
 * Zydis (never by scanning bytes for 0xC3, which also appears inside other
 * instructions).  Pure logic on a byte range: unit-tested without a kernel. */
#ifndef CT_SITES_H
#define CT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Site kinds as stored in the record file (docs/FORMAT.md). */
enum ct_site_kind {
	CT_SITE_ENTRY = 0,   /* the call starts (first cheap instruction) */
	CT_SITE_RET = 1,     /* a RET: the call returns */
	CT_SITE_TAIL = 2,    /* JMP out of the function: tail call to target */
	CT_SITE_RESTART = 3, /* CALL runtime.morestack: the entry will re-run */
	CT_SITE_GOEXIT = 4,  /* runtime.goexit1 entry: the goroutine ends */
};

/* Calling convention of the code, which decides which registers an entry
 * site may see clobbered before it and still read the same arguments. */
enum ct_abi {
	CT_ABI_C = 0,       /* SysV: args in RDI RSI RDX RCX R8 R9 (+RAX count) */
	CT_ABI_GO_REG = 1,  /* Go ABIInternal: args in RAX..R11, ctx RDX, g R14 */
	CT_ABI_GO_STACK = 2 /* Go ABI0: args on the stack, registers dead */
};

struct ct_exit_site {
	uint64_t addr;
	enum ct_site_kind kind;
	uint64_t target; /* TAIL/RESTART: the jump/call target; 0 if unknown */
};

struct ct_fn_sites {
	uint64_t entry_site;  /* address of the entry probe */
	bool entry_emulated;  /* the kernel emulates it (cheap) vs single-steps */
	struct ct_exit_site *exits;
	size_t nexits;
	size_t ninsns;        /* instructions decoded */
};

/* Tells whether a direct CALL target is Go's morestack (restart path). */
typedef bool (*ct_is_morestack_fn)(void *ctx, uint64_t target);

/* Decodes CODE (LEN bytes, loaded at ADDR) and fills OUT.  Returns 0, or -1
 * with ct_fail() when the body does not decode. */
int ct_find_sites(const uint8_t *code, size_t len, uint64_t addr, enum ct_abi abi,
		  ct_is_morestack_fn is_morestack, void *ctx, struct ct_fn_sites *out);
void ct_fn_sites_free(struct ct_fn_sites *s);

/* Why the kernel's x86 uprobe code would refuse a probe on the instruction at
 * CODE (arch/x86/kernel/uprobes.c: lock and segment prefixes, opcodes outside
 * its table -- VEX/EVEX ones by the byte after the prefix --, mov to %ss,
 * 0x66-prefixed branches), or NULL when it accepts one. */
const char *ct_uprobe_refuses(const uint8_t *code, size_t len, uint64_t addr);

/* One instruction's text, for `list -v` ("jbe 0x4810f9"). */
int ct_disasm_one(const uint8_t *code, size_t len, uint64_t addr, char *out, size_t outlen);

#endif
