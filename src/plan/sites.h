/* Probe sites of one function, found by decoding its machine code with
 * Zydis (never by scanning bytes for 0xC3, which also appears inside other
 * instructions).  Pure logic on a byte range: unit-tested without a kernel. */
#ifndef CT_SITES_H
#define CT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/abi.h"      /* enum ct_callconv */
#include "probes/event.h" /* enum ct_site_kind */
#include "format/tracefile.h" /* CT_SITEF_* */

struct ct_exit_site {
	uint64_t addr;
	enum ct_site_kind kind;
	uint64_t target; /* TAIL/RESTART: the jump/call target; 0 if unknown */
	/* TAIL: a conditional jump (`je g`, as clang -Os and LLVM's cold code
	 * make tail calls): its condition code (opcode & 15) + 1; 0: always */
	uint8_t cond;
};

struct ct_fn_sites {
	uint64_t entry_site;  /* address of the entry probe */
	bool entry_emulated;  /* the kernel emulates it (cheap) vs single-steps */
	bool entry_optimized; /* a 5-byte nop: cheaper still, no trap (kernel_optimizes) */
	struct ct_exit_site *exits;
	size_t nexits;
	size_t ninsns;        /* instructions decoded */
	/* its last instruction runs on into the code after its end: no RET,
	 * jump or trap ends it (hand-written assembly sharing a body: glibc's
	 * __strcasecmp_avx2 sets up the locale and runs into
	 * __strcasecmp_l_avx2) */
	bool falls_through;
	/* it jumps into another part of its code with its frame still
	 * allocated (GCC's `f.cold`, outside the bounds a stripped program's
	 * symbol gives it): it may return from there, where no RET of it is
	 * probed (set by the plan, which drops those jumps from EXITS) */
	bool goes_on_elsewhere;
	/* nothing in its code leaves it but calls: no RET, no jump out of it
	 * (direct, through the GOT or a pointer), no running on past its end
	 * (gcc's code of a function that ends calling exit() or abort():
	 * never returns, as long as no other part of it does: the plan's
	 * goes_on_elsewhere) */
	bool never_leaves;
	/* its indirect calls, for ct_indirect_call_shape (the plan looks at
	 * them in every traced function: decoded once) */
	struct ct_icall_at *icalls;
	size_t nicalls;
};

/* An indirect call of a function: at offset OFF, LEN bytes; FROM: the
 * offset after the call before it (or 0), where what it calls through
 * starts to be loaded (a call clobbers every register). */
struct ct_icall_at {
	uint32_t off, from;
	uint8_t len;
};

/* Tells whether a direct CALL target is Go's morestack (restart path). */
typedef bool (*ct_is_morestack_fn)(void *ctx, uint64_t target);
/* Is a conditional jump out of the function to TARGET a tail call (not one
 * into another part of it: GCC's `f.cold`)?  NULL: every one is. */
typedef bool (*ct_is_tail_fn)(void *ctx, uint64_t target);

/* Decodes CODE (LEN bytes, loaded at ADDR) and fills OUT.  Returns 0, or -1
 * with ct_fail() when the body does not decode. */
int ct_find_sites(const uint8_t *code, size_t len, uint64_t addr, enum ct_callconv cc,
		  ct_is_morestack_fn is_morestack, ct_is_tail_fn is_tail, void *ctx, struct ct_fn_sites *out);
void ct_fn_sites_free(struct ct_fn_sites *s);

/* An indirect jump (`jmp *%rax`, `jmp *0x80(%rax)`): a tail jump through a
 * pointer (the call goes on in its target and returns to our caller), or a
 * jump inside the function (a switch's jump table).  Told apart by where SP
 * is at the jump, followed from the entry along the direct branches: a
 * tail jump comes after the frame is torn down (SP back at its entry
 * level), a jump table's jump runs with the frame still allocated.  A
 * frameless function's jump table runs at the entry level too: there the
 * way the target is made decides (an offset from a table added to its base:
 * a jump table; a pointer loaded from memory, a struct field or a method
 * table, or passed in: a tail jump).  A target made from a constant
 * address (`lea f(%rip),%rax; jmp *%rax`, Go's reflectcall dispatching to
 * runtime.call16...) is known: outside the function a tail jump to it, as a
 * direct `jmp f` is, inside it a jump inside.  Where it cannot be decided
 * the jump is not taken for a tail jump (the function's call then stays
 * open until something shallower happens, as before). */
enum ct_ijump_kind {
	CT_IJUMP_TAIL = 1,      /* a tail jump (a TAIL exit site, to TARGET when known) */
	CT_IJUMP_GOT = 2,       /* through a GOT slot (`jmp *f@GOTPCREL(%rip)`): a tail jump too */
	CT_IJUMP_INSIDE = 3,    /* a jump inside the function */
	CT_IJUMP_UNDECIDED = 4, /* cannot tell: not a tail jump */
};

struct ct_ijump {
	uint64_t addr;
	enum ct_ijump_kind kind;
	bool sp_known;
	int32_t sp_below; /* sp_known: bytes SP is below its entry level there */
	uint64_t target;  /* a constant target address, else 0 */
	const char *why;  /* what decided it (static text) */
};

/* The indirect jumps of CODE (LEN bytes at ADDR, a whole function decoded
 * from its start), classified: up to MAX of them in OUT; how many there are. */
size_t ct_indirect_jumps(const uint8_t *code, size_t len, uint64_t addr, struct ct_ijump *out, size_t max);

/* Why the kernel's x86 uprobe code would refuse a probe on the instruction at
 * CODE (arch/x86/kernel/uprobes.c: lock and segment prefixes, opcodes outside
 * its table -- VEX/EVEX ones by the byte after the prefix --, mov to %ss,
 * 0x66-prefixed branches), or NULL when it accepts one. */
const char *ct_uprobe_refuses(const uint8_t *code, size_t len, uint64_t addr);

/* ---- calls seen from the caller (--exit=auto) ---- */

/* A direct reference in code: a call, a jump, or an operand that holds an
 * address (RIP-relative, or an absolute immediate or displacement). */
enum ct_ref_kind {
	CT_REF_CALL = 1, /* call rel32 */
	CT_REF_JUMP = 2, /* jmp/jcc rel */
	CT_REF_ADDR = 3, /* an address operand (lea f(%rip), mov $f, ...) */
};

struct ct_code_ref {
	enum ct_ref_kind kind;
	uint64_t at;     /* the instruction */
	uint8_t len;     /* its length: a call returns to at + len */
	bool plain;      /* CALL: a plain e8 call, which the kernel emulates */
	uint64_t target; /* the destination, or the address operand's value */
	/* ADDR: the instruction calls (CT_THROUGH_CALL) or jumps
	 * (CT_THROUGH_JUMP) through the word at TARGET, a RIP-relative
	 * memory operand (`call *slot(%rip)`: rustc's -Z plt=no, gcc's
	 * -fno-plt), else 0: it reads or writes it, or holds its address */
	uint8_t through;
	/* ADDR of a GOT slot (ct_scan_slot_refs): CALL or JUMP, the
	 * instruction calls or jumps through a register that, on every path
	 * to it, holds what code loaded from the slot (`mov slot(%rip),%rbx`
	 * ... `call *%rbx`); LOAD, that load, whose value goes nowhere else */
	bool via_reg;
	/* ADDR, a load of a slot (`mov slot(%rip),%reg`) not followed so:
	 * why (ct_slot_load_why), and where it was decided (why_at) */
	uint8_t why;
	uint64_t why_at;
};

enum { CT_THROUGH_CALL = 1, CT_THROUGH_JUMP = 2, CT_THROUGH_LOAD = 3 };

/* The text for a ct_code_ref's why (0: none). */
const char *ct_slot_load_why(uint8_t why);

typedef void (*ct_ref_fn)(void *ctx, const struct ct_code_ref *r);

/* Calls FN for every reference in CODE (LEN bytes at ADDR).  Bytes that do
 * not decode are stepped over one at a time (so what follows is still
 * scanned).  Returns how many bytes did not decode. */
size_t ct_scan_refs(const uint8_t *code, size_t len, uint64_t addr, ct_ref_fn fn, void *ctx);

/* ct_scan_refs, where IS_SLOT(CTX, ADDR) tells the GOT slots whose loads
 * into a register it follows (through the code's branches: a loop that
 * calls through the register): a register that holds such a slot's word
 * and is only ever the target of `call *%reg` or `jmp *%reg` gives those
 * calls as through the slot (via_reg), its loads as CT_THROUGH_LOAD; any
 * other use, or one in doubt, gives the load as an ADDR reference with
 * its why, and no call. */
size_t ct_scan_slot_refs(const uint8_t *code, size_t len, uint64_t addr, ct_ref_fn fn, void *ctx,
			 bool (*is_slot)(void *ctx, uint64_t addr));

/* How a call's return is observed: a walk along the straight line of
 * instructions from its return address. */
enum ct_exit_how {
	CT_EXIT_EMULATED = 1, /* at the first instruction the kernel emulates */
	CT_EXIT_STEPPED = 2,  /* at one it single-steps (no emulated one in reach) */
	CT_EXIT_TAILPOS = 3,  /* `ret` comes first: the caller returns right after */
	CT_EXIT_NONE = 4,     /* no instruction after the call can take a probe */
	/* (chosen, not walked) TAILPOS in a wrapper the Go compiler made: the
	 * exit where that returns to, found while recording (the CHECK looks
	 * the call up again from there: struct ct_planned_call.via) */
	CT_EXIT_VIA = 5,
};

#define CT_LOC_LOST (-2)  /* struct ct_exit_walk.loc: the value is gone */
/* struct ct_exit_walk.xloc: at SP + off, at RBP + off, in general register off */
enum { CT_XLOC_NONE = 0, CT_XLOC_SP = 1, CT_XLOC_RBP = 2, CT_XLOC_REG = 3 };
#define CT_LOC_STACK (-1) /* ... it is in the 8 bytes at SP + stack_off */
#define CT_LOC_MEM (-3)   /* ... its low `width` bytes are at register `base` + addend */

struct ct_exit_walk {
	enum ct_exit_how how;
	uint64_t site;         /* EMULATED/STEPPED: where the probe goes */
	uint64_t ret_at;       /* TAILPOS with at_ret: the address of the ret */
	int32_t sp_delta;      /* SP at the site minus SP right after the return */
	uint32_t written;      /* enum ct_reg bits: registers written before the site */
	bool stack_written;    /* memory at SP-relative addresses written before it */
	int32_t stack_lo, stack_hi; /* stack_written: those bytes lie in [SP + lo, SP + hi) at the site */
	bool mem_written;      /* other memory written before it */
	/* Where the value each register (enum ct_reg) held at the return is at
	 * the site: loc[r].reg is a register, CT_LOC_STACK or CT_LOC_LOST.  A
	 * register may hold it changed by an exact 64-bit sum the caller made
	 * (`lea 1(%rax),%rcx`; `add %rax,%rdx` with RDX loaded from a stack
	 * word still in place): the value is then that register plus `addend`,
	 * minus the word at SP + stack_off if `less_word` -- or, `word_reg` k + 1,
	 * the word at register k + stack_off (`add 0x18(%rdx),%rax`: a result
	 * added to a struct field, which nothing wrote since, and k still
	 * points to it).  Or (CT_LOC_MEM)
	 * the caller stored it through a register (`mov %al,0x78(%rdx)`, a
	 * struct field) that still holds the address, and nothing was stored
	 * since: it is in memory at register `base` + `addend`. */
	struct {
		int8_t reg;
		bool less_word;
		int32_t stack_off; /* CT_LOC_STACK, less_word: from SP at the site */
		int32_t addend;
		uint8_t width;     /* only its low `width` bytes are the value's (a 32-bit copy: 4) */
		int8_t base;       /* CT_LOC_MEM */
		uint8_t word_reg;  /* less_word: 0 at SP, else through register word_reg - 1 */
	} loc[15];
	/* CT_LOC_LOST: the instruction that overwrote its last copy (0: none). */
	uint64_t lost_at[15];
	/* Where each SSE register's value at the return (float results: BPF
	 * cannot read XMM registers) is at the site: in memory the caller
	 * stored it to, at SP + off or at RBP + off (RBP as at the return), or
	 * a general register it was copied to (enum ct_reg `off`), its low
	 * `width` bytes (the same spill_state walk as ct_spill_walk's, from the
	 * return address); else base CT_XLOC_NONE.  `lost` and `out`
	 * (bytes from the return address + 1, 0: none): where its last copy was
	 * overwritten, where it was stored somewhere the walk does not read
	 * (a global, through a pointer). */
	struct {
		int8_t base;
		uint8_t width;
		uint16_t lost, out;
		int32_t off;
	} xloc[16];
	/* The alternative when results need the registers as they were, or
	 * the caller's return is not observed: the return address itself, if
	 * it can take a probe (0 if not). */
	uint64_t first_site;
	bool first_emulated;
	/* a trap (ud2, hlt) ends the straight line after the call: the
	 * compiler made it unreachable, the call never returns there */
	bool traps;
	/* TAILPOS: sp_delta, written, the stack_/mem_written fields and loc[]
	 * describe the caller's `ret` (its frame is gone then: only registers
	 * hold values); false if the walk lost SP before it. */
	bool at_ret;
	/* at_ret: registers r (bits) holding, in register left_in[r], the sum
	 * of r's return-time value and the word the caller loaded from its
	 * frame at left_off[r] (from SP right after the return), a frame its
	 * ret has left (`return f(x) + g(y)` with f's result kept there) */
	uint16_t left_regs;
	int8_t left_in[15];
	int32_t left_off[15];
	uint32_t ninsns;       /* instructions walked */
	/* an indirect call ended the straight line (SP known): where, its length */
	uint64_t icall_at;
	uint8_t icall_len;
	/* an instruction before the site may fault (memory through a
	 * register other than SP, a division): Go makes a panic there */
	bool may_fault;
	/* What each register holds at the site, in terms of the start (the
	 * other way round from loc[]): a start register plus `c`
	 * (CT_HELD_REG, `reg`), the 8-byte word at SP + off as at the start
	 * (CT_HELD_STACK, `c` 0), at register `reg` + off as at the start
	 * (CT_HELD_MEM), or nothing known (CT_HELD_NONE); its low `width`
	 * bytes only.  What a call's arguments are, read a few instructions
	 * before it (plan/ahead.c). */
	struct {
		uint8_t kind;
		int8_t reg;
		uint8_t width;
		int32_t off, c;
	} held[15];
};
enum { CT_HELD_NONE = 0, CT_HELD_REG, CT_HELD_STACK, CT_HELD_MEM };

/* What a planned call keeps of the walk from its return address: where its
 * exit can go.  The whole walk (~700 bytes, most of it where each
 * register's value went) is what reading results there needs, and a big
 * program has 100k+ call sites (lefthook -F '*': 160k, 120 MB of walks
 * zeroed and faulted in): struct ct_callsite holds this, the plan keeps
 * the whole walk only where results are read (ct_callsite_walk). */
struct ct_exit_brief {
	uint64_t site;          /* the fields of struct ct_exit_walk of these names */
	uint64_t first_site;
	uint64_t icall_at;
	int32_t sp_delta;
	uint8_t how;            /* enum ct_exit_how */
	bool first_emulated;
	bool at_ret;
	uint8_t icall_len;
	bool traps;
};
void ct_exit_brief_of(const struct ct_exit_walk *w, struct ct_exit_brief *out);

/* Is NAME (a symbol, "@plt" or "@VERSION" after it ignored) a function of
 * libc, libgcc, libstdc++ or Rust's core that never returns to its caller,
 * and how it leaves: the process or thread ends there (exit, abort,
 * __stack_chk_fail, pthread_exit, std::terminate), or the stack unwinds to
 * a frame further up (longjmp, _Unwind_Resume, __cxa_throw,
 * std::__throw_*, a Rust panic)?  CT_NORETURN_NO if neither. */
enum ct_noreturn { CT_NORETURN_NO, CT_NORETURN_ENDS, CT_NORETURN_UNWINDS, CT_NORETURN_OWN };
enum ct_noreturn ct_noreturn_name(const char *name);

/* Walks from RET_ADDR (CODE: LEN bytes from there to the end of the
 * caller).  Pure logic on bytes. */
void ct_exit_walk(const uint8_t *code, size_t len, uint64_t ret_addr, struct ct_exit_walk *out);

/* ... the same, but STOP, an instruction on the straight line that can
 * take a probe (an indirect call that ends it), is taken as the site
 * (EMULATED, whatever it costs) if nothing the kernel emulates comes
 * first. */
void ct_exit_walk_to(const uint8_t *code, size_t len, uint64_t ret_addr, uint64_t stop, struct ct_exit_walk *out);

/* ... the same from FROM, going on past the nops the kernel emulates (a
 * way from one probe to the next instruction that needs one: plan/ahead.c). */
void ct_walk_past_nops(const uint8_t *code, size_t len, uint64_t from, struct ct_exit_walk *out);

/* The name of a general register (enum ct_reg): "RAX". */
const char *ct_reg_name(unsigned r);

/* Does the kernel emulate the instruction at CODE (a cheap probe) rather
 * than single-step it? */
bool ct_kernel_emulates_at(const uint8_t *code, size_t len, uint64_t addr);
/* Where a program's first single-step can happen before any of its code
 * that is traced runs: the first instruction on the straight line from its
 * entry point ENTRY (following direct jumps; BYTES_AT gives the file's
 * bytes at an address, NULL outside its code) that takes a probe and that
 * the kernel single-steps.  A process's first single-step costs 0.1-0.5 ms
 * more than the others here (the kernel makes the area the instruction is
 * stepped in) and its first probe hit of any kind ~15 us more: a probe
 * there pays both before main, where no call is open to show them.  0 if
 * none comes before a call, a return or a conditional branch. */
uint64_t ct_warm_up_site(uint64_t entry, const uint8_t *(*bytes_at)(void *ctx, uint64_t addr, size_t *len),
			 void *ctx);
/* Can a callee of the function whose code is CODE (LEN bytes at ADDR) write
 * its frame: does the function compute an address in its stack (an lea off
 * SP or RBP, SP or RBP read as a value) other than to set up or restore its
 * frame pointer or SP?  true if in doubt (code that does not decode). */
bool ct_frame_address_taken(const uint8_t *code, size_t len, uint64_t addr);
/* What a hit at the instruction at CODE costs, as the site flags the
 * overhead correction prices (format/calib.h): CT_SITEF_STEPPED (not
 * emulated), CT_SITEF_CALLINSN (an emulated `call`), CT_SITEF_RETINSN (a
 * `ret`, stepped too), CT_SITEF_NOTRAP (a 5-byte nop: no trap); 0 for
 * another emulated one or undecodable bytes. */
uint8_t ct_hit_flags_at(const uint8_t *code, size_t len, uint64_t addr);

/* The call instruction that returns to RET, decoding CODE (LEN bytes at
 * ADDR, a whole function) from its start: its address, 0 if no
 * instruction ends at RET or the one that does is not a call. */
uint64_t ct_call_before(const uint8_t *code, size_t len, uint64_t addr, uint64_t ret);

/* Without the function's start (a return address found in a module
 * without symbols): does some call instruction end exactly where CODE's LEN
 * bytes end?  Its length (the shortest such), 0 if none.  A plausibility
 * check of a return address, not a proof. */
size_t ct_call_ends_at(const uint8_t *code, size_t len);

/* The indirect calls (through a register or memory) in CODE (LEN bytes at
 * ADDR, a whole function, decoded from its start): up to MAX of their
 * addresses in AT and lengths in LENS; how many there are. */
size_t ct_indirect_calls(const uint8_t *code, size_t len, uint64_t addr, uint64_t *at, uint8_t *lens, size_t max);

/* An indirect call and how its target was found: the register was last
 * loaded (on the way down the code, no branch followed) from memory at a
 * register plus `disp` -- Go's interface call loads the method from the
 * itab at 0x18 + 8 * its index, a call of a function value from the funcval
 * at 0 --, or the call reads memory at a register plus `disp` itself, or
 * RIP-relative memory (a GOT slot, a global pointer). */
enum ct_icall_via { CT_ICALL_OTHER = 0, CT_ICALL_LOADED = 1, CT_ICALL_MEM = 2, CT_ICALL_RIP = 3 };
struct ct_icall {
	uint64_t at;
	uint8_t len;
	uint8_t via; /* enum ct_icall_via */
	int32_t disp;
};
/* ... the same with their shapes: up to MAX in OUT; how many there are. */
size_t ct_indirect_call_shapes(const uint8_t *code, size_t len, uint64_t addr, struct ct_icall *out, size_t max);
/* ... the shape of one, AT (from ct_find_sites: struct ct_fn_sites.icalls). */
struct ct_icall ct_indirect_call_shape(const uint8_t *code, size_t len, uint64_t addr, const struct ct_icall_at *at);

/* Go's open-coded defer (`defer mu.Unlock()`, the compiler's closure
 * calling Unlock): at a return, the function calls the closure whose
 * address it keeps in a frame slot (`mov 0x60(%rsp),%rdx; mov (%rdx),%rsi;
 * call *%rsi`).  The function the indirect call ICALL calls, reached on the
 * straight line from FROM (CODE: LEN bytes at ENTRY, the whole Go
 * function), if the code shows it: every store to that slot is the address
 * of one closure in the frame (or zero), and every store to that closure's
 * code word is one function's address (or zero), each right after its
 * `lea`, SP moved only by the prologue and epilogues.  0 if not shown.
 * Register ABI code only: a store of X15 is taken for a zero. */
uint64_t ct_go_deferred_closure(const uint8_t *code, size_t len, uint64_t entry, uint64_t from, uint64_t icall);
/* The indirect calls of the Go function in CODE (LEN bytes at ENTRY) that
 * the code shows call FN, each from the straight line that ends in it
 * (ct_go_deferred_closure): FN's open-coded defers there.  Up to MAX in AT
 * and LENS; returns how many there are. */
size_t ct_go_deferred_calls(const uint8_t *code, size_t len, uint64_t entry, uint64_t fn, uint64_t *at, uint8_t *lens,
			    size_t max);

/* A function whose entry the kernel single-steps (a Go leaf without a
 * stack check: `sub $0x18,%rsp; mov %rbp,0x10(%rsp); ...`) may still be seen
 * entering at the first instruction on the straight line from ENTRY (CODE:
 * LEN bytes, the whole function) that the kernel emulates: W is the walk's
 * state there (ct_exit_walk from the entry: how far SP went down, where each
 * register's value at the entry is).  Not a call, and only where it runs
 * once a call: no branch of the function lands between the entry and it (a
 * jump through a table might: none).  False if there is no such place. */
bool ct_check_after_entry(const uint8_t *code, size_t len, uint64_t entry, struct ct_exit_walk *w);

/* A way on from a probe: the instruction it goes to, and when (a
 * conditional jump's: its condition code + 1, jumping or, FALL, not). */
struct ct_way {
	uint64_t to;
	uint8_t cond; /* 0: always */
	bool fall;
};
/* The ways on from the emulated jump or nop at AT (in the function whose
 * CODE is LEN bytes from ENTRY) that nothing else of the function enters:
 * no other branch lands where one starts, no jump through a table may, and
 * the instruction before it does not run on into it.  A probe there sees
 * which way the code goes (a jcc: from the flags) before it goes.  0 for
 * anything else (a call, a push, a jump through a register). */
size_t ct_probe_ways(const uint8_t *code, size_t len, uint64_t entry, uint64_t at, struct ct_way out[2]);
/* ... all of them, whatever else enters them: one instruction decoded,
 * where ct_probe_ways decodes the whole function (a first look, cheap
 * enough for every exit probe of a big program). */
size_t ct_probe_ways_any(const uint8_t *code, size_t len, uint64_t entry, uint64_t at, struct ct_way out[2]);
/* What the instruction at CODE is to a walk along the ways: an emulated
 * `call rel32`, an emulated nop (the way goes on after it), or other. */
enum ct_insn_role { CT_INSN_OTHER = 0, CT_INSN_CALL, CT_INSN_NOP };
enum ct_insn_role ct_insn_role_at(const uint8_t *code, size_t len, uint64_t addr);

/* May a branch of the function (CODE: LEN bytes from its ENTRY) land in
 * LO..HI (inclusive): a direct jump or jcc to there, or any jump through a
 * table?  Code that does not decode (but for padding at its end) may. */
bool ct_branch_lands(const uint8_t *code, size_t len, uint64_t entry, uint64_t lo, uint64_t hi);
/* An assembly function's result (GNU as describes none: a nameless
 * DW_TAG_unspecified_type): is all of RAX written (by an instruction of its
 * own, or a call's result) on every way to each of its RETs?  Then RAX
 * holds what it returns -- glibc's strlen and memcpy variants; not
 * __floor_sse41 (XMM0) or a function that returns nothing.  False without
 * a RET (its end is another function's), or with jumps it cannot follow. */
bool ct_rets_set_rax(const uint8_t *code, size_t len, uint64_t entry);

/* Where the code from a C++/Rust landing pad goes (ct_pad_walk), worst
 * first last: it only leaves the function by an exception (a call of a
 * function that does not return: _Unwind_Resume, __cxa_rethrow, abort);
 * it may return from the function; it goes where the walk cannot follow
 * (an indirect jump, code that does not decode, too long a way). */
enum ct_pad_end { CT_PAD_RESUMES, CT_PAD_LEAVES, CT_PAD_UNKNOWN };
/* The code at ADDR, *AVAIL bytes of it (NULL: none). */
typedef const uint8_t *(*ct_code_at_fn)(void *ctx, uint64_t addr, size_t *avail);
/* Does the function at CALLEE never return (it unwinds or ends the
 * program)? */
typedef bool (*ct_noreturn_fn)(void *ctx, uint64_t callee);
struct ct_map;
/* Every instruction reachable from PAD (both ways of each jcc, into direct
 * jumps' targets wherever they are, past calls but those NORETURN says do
 * not return), at most MAX of them: each one's address + 1 put in SEEN (its
 * length the value), and how the paths end.  A path that comes to CUT (not
 * 0) ends there, not taken in SEEN. */
enum ct_pad_end ct_pad_walk(uint64_t pad, uint64_t cut, ct_code_at_fn code_at, ct_noreturn_fn noreturn, void *ctx,
			    size_t max, struct ct_map *seen);

/* One instruction's text, for `list -v` ("jbe 0x4810f9"). */
int ct_disasm_one(const uint8_t *code, size_t len, uint64_t addr, char *out, size_t outlen);


/* ---- arguments passed in SSE registers (issue 17) ---- */

/* BPF cannot read XMM registers, but many functions store their SSE
 * arguments to the stack before anything else happens (every -O0 prologue;
 * -O2 code keeping one across a call).  ct_spill_walk follows the straight
 * line from a function's first instruction, tracking which registers still
 * hold (copies of) the SSE argument registers as they were at the entry and
 * which stack slots they were stored to; the first point where every needed
 * register has been stored, and is still there, is where a second probe can
 * read the arguments from memory.  Pure logic on bytes. */
struct ct_spill_need {
	uint8_t xmm;       /* in: the register (0..15) as it was at the entry */
	uint8_t size;      /* in: its low SIZE bytes are needed */
	int32_t sp_off;    /* out: they are at SP + sp_off at the chosen site */
};

struct ct_spill_site {
	uint64_t addr;     /* the instruction to probe (before it runs) */
	bool emulated;     /* the kernel emulates it (else single-stepped) */
	int32_t sp_drop;   /* SP at the entry minus SP there (bytes pushed) */
	uint32_t ninsns;   /* instructions walked from the entry to it */
};

/* May the probe go at ADDR (not taken by another site)? */
typedef bool (*ct_addr_ok_fn)(void *ctx, uint64_t addr);

/* CODE: the function's LEN bytes from its entry ENTRY.  Sites at or after
 * LIMIT are not chosen (a branch target: code there may run more than once
 * per call).  Among the points where all NEEDS are met, the first the kernel
 * emulates within a few instructions of the first, else the first; false if
 * there is none. */
bool ct_spill_walk(const uint8_t *code, size_t len, uint64_t entry, uint64_t limit, struct ct_spill_need *needs,
		   size_t nneeds, ct_addr_ok_fn ok, void *ctx, struct ct_spill_site *out);

#endif
