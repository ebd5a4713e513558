/* Calling conventions: where each parameter and result of a signature lives
 * at function entry and at RET.  Pure logic over the type table, so it is
 * tested on tables of signatures without any binary.
 *
 *  - Go register ABI (ABIInternal, Go >= 1.17 amd64), the algorithm of
 *    src/cmd/compile/abi-internal.md: integer registers RAX RBX RCX RDI RSI
 *    R8 R9 R10 R11, float registers X0-X14; a value that does not fit goes
 *    whole to the stack; results restart at register 0; stack args from
 *    CFA+0, stack results after them (pointer-aligned), then the spill area.
 *  - Go ABI0 (stack ABI): everything on the stack from CFA+0, results after
 *    the args, pointer-aligned.
 *  - C / SysV AMD64: integer class in RDI RSI RDX RCX R8 R9, SSE class in
 *    XMM0-7, MEMORY class (and what does not fit) on the stack from CFA+0 in
 *    8-byte slots; results in RAX(/RDX), XMM0(/XMM1), or via a hidden
 *    pointer passed in RDI and returned in RAX.  A C++ class that is not
 *    trivially copyable (ct_type.by_ref) goes through such a pointer both ways.
 *  - Rust's own convention (rustc 1.63 fn_abi_adjust_for_abi, then LLVM's C
 *    convention for what it makes of each value): a value of no size takes
 *    nothing; a scalar (integer, bool, char, pointer, reference, C-like enum,
 *    or a struct/enum wrapping one) one register; a pair of scalars (&str,
 *    &[T], (u32, u64), Option<u32>) two, each independently; any other value
 *    ("aggregate") of at most 8 bytes one integer register, a larger one a
 *    pointer to a copy.  Integer registers RDI RSI RDX RCX R8 R9, float ones
 *    XMM0-7, then 8-byte stack slots.  Results: RAX (RDX, XMM0/XMM1 for
 *    pairs), larger aggregates through a hidden pointer in RDI, returned in
 *    RAX.  Which of the three a type is comes from its layout in DWARF;
 *    where that is not certain (unions, i128) the value is unknown, and so
 *    is every later one, whose registers depend on it.
 */
#ifndef CT_ABI_H
#define CT_ABI_H

#include "target/types.h"

/* Integer argument registers in the order the convention assigns them. */
#define CT_GO_NINT 9u   /* Go ABIInternal: RAX RBX RCX RDI RSI R8 R9 R10 R11 */
#define CT_SYSV_NINT 6u /* SysV: RDI RSI RDX RCX R8 R9 */
extern const uint8_t ct_go_int_regs[CT_GO_NINT];
extern const uint8_t ct_sysv_int_regs[CT_SYSV_NINT];

/* The calling convention of a function's code: where its arguments and
 * results are (ct_abi_assign), and which registers may be written before
 * its entry site without changing what that site reads (ct_find_sites). */
enum ct_callconv {
	CT_CC_GO_REG = 1,   /* Go ABIInternal: args in RAX..R11, ctx RDX, g R14 */
	CT_CC_GO_STACK = 2, /* Go ABI0: args on the stack, registers dead */
	CT_CC_SYSV = 3,     /* C: args in RDI RSI RDX RCX R8 R9 (+RAX count) */
	CT_CC_RUST = 4,     /* Rust's own: SysV's registers, its own placement */
};

static inline bool ct_callconv_is_go(enum ct_callconv cc)
{
	return cc == CT_CC_GO_REG || cc == CT_CC_GO_STACK;
}

struct ct_abi_layout {
	struct ct_loc *locs;   /* one per sig->params[i], same order; pieces owned here.
				  Args: at entry.  Results: at RET.  A stack value is
				  one STACK piece (split in 32 KiB chunks if larger);
				  a zero-size value one STACK piece of size 0.  n == 0:
				  no readable location (a SysV void result, or one
				  returned in x87 st(0): long double, _Complex long
				  double, struct { long double }). */
	size_t n;
	uint32_t stack_args;   /* bytes of stack-assigned args (CFA+0 ...); Go: aligned to 8 */
	uint32_t stack_results;/* Go: bytes of stack-assigned results after them (aligned to 8) */
	uint32_t spill;        /* Go register ABI: spill area for register args
				  (and the dictionary), aligned to 8 */
	uint32_t width;        /* Go: stack_args+stack_results+spill; equals
				  pclntab _func.args when DWARF lists every param
				  (blank `_` params are missing from DWARF but take
				  registers).  SysV: stack_args. */
	/* SysV: the result is returned in memory; at RET, RAX holds its
	 * address, so its pieces are CT_PIECE_REGMEM on RAX, and the hidden
	 * pointer took RDI at entry. */
	bool sret_via_rax;
};

/* Assigns locations for SIG under convention CC.  Go: if sig->go_dict, the
 * hidden dictionary pointer takes the first integer register and the first
 * 8-byte spill slot (under ABI0, which no shape instance uses, the first 8
 * stack bytes); it gets no loc.  Params
 * are placed in sig order and results after them, wherever they appear in
 * sig.  SysV: variadic functions get their named params placed; a long
 * double (x87) argument goes to the stack; more than one result is an error.
 * Returns 0, or -1 with ct_fail() for a type it cannot place (unknown kind
 * or size, a field outside its struct, a type id out of range); OUT is then
 * empty and needs no free. */
int ct_abi_assign(const struct ct_typetab *tt, const struct ct_sig *sig, enum ct_callconv cc,
		  struct ct_abi_layout *out);
void ct_abi_layout_free(struct ct_abi_layout *l);

#endif
