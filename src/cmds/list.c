/* calltrace list: which functions of a binary can be traced, and where the
 * probes would go (entry site, cheap or single-stepped, and exit sites). */
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "plan/plan.h"
#include "plan/plt.h"
#include "target/libs.h"
#include "util/util.h"
#include "wasm/wasm.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: calltrace list [options] BINARY [GLOB...]\n"
		   "\n"
		   "  BINARY            an ELF binary, or a WebAssembly module (WASI or Go js/wasm)\n"
		   "  GLOB              functions to show (default: what record traces by default)\n"
		   "  -F, --trace G     a GLOB too, as record takes it (repeatable); 'LIB:GLOB'\n"
		   "                    lists that library of BINARY (all GLOBs must name it)\n"
		   "  -N, --exclude G   leave out functions matching G\n"
		   "  -v, --verbose     also show every probe site with its instruction, and how\n"
		   "                    each function's calls are observed (its exit mode and why)\n"
		   "      --exit MODE   plan as record --exit MODE would: auto (default) or ret\n"
		   "      --no-interim  plan as record --no-interim would\n"
		   "      --no-args     do not show the decoded signatures\n"
		   "      --demangle M  C++/Rust names: simple (default), full (with parameters,\n"
		   "                    Rust hash) or no (the mangled symbol); GLOBs match any form\n"
		   "\nUnder each function: its arguments -> results as record would capture them,\n"
		   "with types and where each lives (registers, CFA+N = stack above the return\n"
		   "address, X0(unreadable) = an SSE register BPF cannot read, st(0)(unreadable) =\n"
		   "the x87 register of a long double result).  With -v, `spill` is where the\n"
		   "SSE arguments are read instead: the straight line from the entry has stored\n"
		   "them to the stack there; for results in SSE registers, each call's exit says\n"
		   "where the caller stored or copied them (read there) or why they stay unread.\n"
		   "An indirect jump (`jmp *%%rax`) is a `tail` site when it is a tail jump (SP back\n"
		   "at its entry level), else a `jump` line says why not (a switch's jump table,\n"
		   "or undecided).\n");
}

static int32_t op_offset(const struct ct_site_fetch *f, uint16_t slot)
{
	for (uint32_t i = 0; i < f->prog.nops; i++)
		if (f->prog.ops[i].dst == slot)
			return f->prog.ops[i].off;
	return 0;
}

/* "a int [RAX], s string [RBX:RCX]": values with types and where they live
 * (CFA = the stack pointer at entry + 8, i.e. just above the return address). */
static void print_values(const struct ct_plan *p, const struct ct_site_fetch *f)
{
	const struct ct_typetab *tt = p->types ? ct_types_table(p->types) : NULL;
	for (uint32_t i = 0; f && i < f->nvals; i++) {
		const struct ct_val_desc *v = &f->vals[i];
		printf("%s%s %s [", i ? ", " : "", v->name[0] ? v->name : "_",
		       v->flags & CT_VAL_RAW ? "word" : tt ? ct_type_get(tt, v->type)->name : "?");
		if (v->flags & CT_VAL_INCOMPLETE)
			printf("unavailable: DWARF omits parameters");
		else if (v->flags & CT_VAL_OPTIMIZED)
			printf("optimized out");
		else if (v->flags & CT_VAL_CUT)
			printf("beyond the capture limits");
		else if (!v->npieces)
			printf("location unknown");
		for (uint32_t k = 0; k < v->npieces; k++) {
			const struct ct_val_piece *pc = &v->pieces[k];
			printf("%s", k ? ":" : "");
			if (pc->kind == CT_PIECE_REG)
				printf("%s", ct_reg_name(pc->reg));
			else if (pc->kind == CT_PIECE_XREG)
				printf("X%u(unreadable)", pc->reg - CT_XMM0);
			else if (pc->kind == CT_PIECE_X87)
				printf("st(0)(unreadable)");
			else if (pc->kind == CT_PIECE_STACK)
				printf("CFA%+d", op_offset(f, pc->slot) - 8);
			else if (pc->kind == CT_PIECE_CONST && !pc->size)
				printf("empty"); /* an empty class or struct: nothing to hold */
			else if (pc->kind == CT_PIECE_CONST)
				printf("constant %#" PRIx64, pc->literal); /* its bytes, little-endian */
			else
				printf("*(%s%+d)", ct_reg_name(pc->reg), op_offset(f, pc->slot));
		}
		printf("]");
	}
}

static const char *kind_name(uint8_t k)
{
	switch (k) {
	case CT_SITE_RET:
		return "ret";
	case CT_SITE_TAIL:
		return "tail";
	case CT_SITE_RESTART:
		return "restart";
	case CT_SITE_GOEXIT:
		return "goexit";
	case CT_SITE_CALL:
		return "call";
	case CT_SITE_RETSITE:
		return "return";
	case CT_SITE_CHECK:
		return "check";
	default:
		return "entry";
	}
}

static void insn_text(const struct ct_target *t, uint64_t addr, uint64_t end, char *text, size_t n)
{
	size_t avail = end > addr ? end - addr : 15; /* (past it: in a part split off it) */
	if (avail > 15)
		avail = 15;
	const uint8_t *code = ct_elf_bytes_at(&t->elf, addr, avail);
	while (!code && avail > 1) /* (at the end of its section) */
		code = ct_elf_bytes_at(&t->elf, addr, --avail);
	if (code)
		ct_disasm_one(code, avail, addr, text, n);
	else
		snprintf(text, n, "?");
}

/* F's indirect jumps, classified as planning does (plan/sites.c): none in
 * Go code, whose indirect jumps are never tail jumps. */
static struct ct_ijump *indirect_jumps(const struct ct_target *t, const struct ct_plan_func *f, size_t *n)
{
	*n = 0;
	size_t len = f->fn->end > f->fn->entry ? f->fn->end - f->fn->entry : 0;
	const uint8_t *code = len && !(f->fn->flags & CT_FN_GO) ? ct_elf_bytes_at(&t->elf, f->fn->entry, len) : NULL;
	size_t nj = code ? ct_indirect_jumps(code, len, f->fn->entry, NULL, 0) : 0;
	if (!nj)
		return NULL;
	struct ct_ijump *j = xcalloc(nj, sizeof(*j));
	*n = ct_indirect_jumps(code, len, f->fn->entry, j, nj);
	return j;
}

/* "caller+48 0x482ed0": in CALLER if it holds ADDR (a function without a
 * symbol has a name only there: callers.c), else in T's function there */
static void where(const struct ct_target *t, const struct ct_func *caller, uint64_t addr, char *out, size_t n)
{
	const struct ct_func *f = caller && addr >= caller->entry && addr < caller->end ? caller : ct_target_func_at(t, addr);
	if (f)
		snprintf(out, n, "%s+%llu 0x%llx", ct_names_show(&f->dm, f->name), (unsigned long long)(addr - f->entry),
			 (unsigned long long)addr);
	else
		snprintf(out, n, "0x%llx", (unsigned long long)addr);
}

/* A call in tail position with results, single-stepped: why its caller's
 * end cannot stand for it (the caller does not return them as they are, or
 * its own exits cannot read them).  Appended to OUT. */
static void tail_results_why(const struct ct_plan *p, const struct ct_plan_func *f, const struct ct_callsite *cs,
			     char *out, size_t n)
{
	struct ct_exit_walk buf;
	const struct ct_exit_walk *w = ct_callsite_walk(p, cs, &buf);
	size_t len = strlen(out);
	char *o = out + len;
	if (len + 1 >= n)
		return;
	if (!w->at_ret) {
		snprintf(o, n - len, ", and the walk does not follow SP to the caller's ret");
		return;
	}
	if (w->stack_written || w->mem_written) {
		snprintf(o, n - len, ", and the caller stores to memory before its ret");
		return;
	}
	const struct ct_fetch *prog = f->results_view ? &f->results_view->prog : NULL;
	for (uint32_t i = 0; prog && i < prog->nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *op = &prog->ops[i];
		if ((op->code != CT_OP_REG && op->code != CT_OP_REGMEM) || op->reg >= 15)
			continue;
		const __typeof__(w->loc[0]) *l = &w->loc[op->reg];
		if (l->reg == op->reg && !l->less_word && !l->addend && l->width >= 8)
			continue;
		if (w->lost_at[op->reg])
			snprintf(o, n - len, ", and the value of %s is gone at 0x%llx, before the caller's ret",
				 ct_reg_name(op->reg), (unsigned long long)w->lost_at[op->reg]);
		else
			snprintf(o, n - len, ", and the caller changes %s before its ret", ct_reg_name(op->reg));
		return;
	}
	snprintf(o, n - len, ", and the caller's own exits cannot read them");
}

/* Why a call's exit is single-stepped (the return address, or an emulated
 * site's results could not be read there: which value is gone where). */
static void results_stepped_why(const struct ct_plan *p, const struct ct_plan_func *f, const struct ct_callsite *cs,
				char *out, size_t n)
{
	struct ct_site_fetch moved;
	struct ct_exit_walk buf;
	switch (cs->walk.how) {
	case CT_EXIT_EMULATED:
		if (f->results_view && ct_fetch_relocate(f->results_view, -8 - cs->walk.sp_delta,
							 ct_callsite_walk(p, cs, &buf), &moved) != 0)
			snprintf(out, n, "single-stepped to read the results: at 0x%llx, %s",
				 (unsigned long long)cs->walk.site, ct_error());
		else {
			if (f->results_view)
				ct_site_fetch_free(&moved);
			snprintf(out, n, "single-stepped: the results are gone by the next instruction the kernel emulates");
		}
		return;
	case CT_EXIT_TAILPOS:
		if (!f->results) {
			snprintf(out, n, "single-stepped: in tail position in a caller not traced");
			return;
		}
		snprintf(out, n, "single-stepped: in tail position (the caller returns before any emulated instruction), but the results are captured");
		tail_results_why(p, f, cs, out, n);
		return;
	default:
		snprintf(out, n, "single-stepped: nothing the kernel emulates before the next branch");
	}
}

/* Results the caller stored through a register before the exit site (a
 * struct field), read there from memory: where.  Appended to OUT. */
static void stored_results_note(const struct ct_plan *p, const struct ct_plan_func *f, const struct ct_callsite *cs,
				char *out, size_t n)
{
	const struct ct_fetch *prog = &f->results_view->prog;
	struct ct_exit_walk buf;
	const struct ct_exit_walk *w = prog->nops ? ct_callsite_walk(p, cs, &buf) : NULL;
	for (uint32_t i = 0; i < prog->nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *op = &prog->ops[i];
		size_t len = strlen(out);
		if (op->code != CT_OP_REG || op->reg >= 15 || w->loc[op->reg].reg != CT_LOC_MEM || len + 1 >= n)
			continue;
		int32_t off = w->loc[op->reg].addend;
		snprintf(out + len, n - len, "; %s from memory at %s%s0x%x, where the caller stored it",
			 ct_reg_name(op->reg), ct_reg_name((unsigned)w->loc[op->reg].base), off < 0 ? "-" : "+",
			 off < 0 ? -(unsigned)off : (unsigned)off);
	}
}

/* Results in SSE registers (BPF cannot read them) at one call's exit: where
 * the exit probe reads each (the caller stored or copied it there), or why
 * it stays unavailable.  Appended to OUT ("" if there are none). */
static void float_results_note(const struct ct_plan *p, const struct ct_plan_func *f, const struct ct_callsite *cs,
			       char *out, size_t n)
{
	const struct ct_site_fetch *r = f->results_view;
	struct ct_exit_walk buf;
	const struct ct_exit_walk *w = NULL; /* (walked at the first such register) */
	uint32_t seen = 0;
	size_t len = strlen(out);
	for (uint32_t i = 0; r && i < r->nvals; i++)
		for (uint32_t k = 0; k < r->vals[i].npieces; k++) {
			const struct ct_val_piece *pc = &r->vals[i].pieces[k];
			unsigned x = pc->reg - CT_XMM0;
			if (pc->kind != CT_PIECE_XREG || x >= 16 || (seen >> x & 1) || len + 1 >= n)
				continue;
			seen |= 1u << x;
			if (!w)
				w = ct_callsite_walk(p, cs, &buf);
			const __typeof__(w->xloc[0]) *l = &w->xloc[x];
			char *o = out + len;
			size_t left = n - len;
			if (cs->how != CT_EXIT_EMULATED)
				snprintf(o, left, "; X%u unreadable there (not stored yet)", x);
			else if (l->base == CT_XLOC_REG && l->width >= pc->size)
				snprintf(o, left, "; X%u read from %s, where the caller copied it", x,
					 ct_reg_name((unsigned)l->off));
			else if (l->base != CT_XLOC_NONE && l->width >= pc->size)
				snprintf(o, left, "; X%u read from *(%s%+d), where the caller stored it", x,
					 l->base == CT_XLOC_SP ? "SP" : "RBP", l->off);
			else if (l->base != CT_XLOC_NONE)
				snprintf(o, left, "; X%u unavailable: only its low %u bytes are kept, %u needed", x, l->width,
					 pc->size);
			else if (l->out)
				snprintf(o, left, "; X%u unavailable: stored at 0x%llx where the walk does not read (a global, or through a pointer)",
					 x, (unsigned long long)(cs->ret + l->out - 1));
			else if (l->lost)
				snprintf(o, left, "; X%u unavailable: gone at 0x%llx before it was stored", x,
					 (unsigned long long)(cs->ret + l->lost - 1));
			else
				snprintf(o, left, "; X%u unavailable: still in an SSE register there", x);
			len += strlen(o);
		}
}

/* --exit=auto: how the function's calls are observed, and why. */
/* JUMP_AT_CALLS: a PLT stub's jump is a role of its calls' probes. */
static void print_exit_mode(const struct ct_plan *p, const struct ct_plan_func *f, bool jump_at_calls, bool verbose)
{
	size_t at_emulated = 0; /* return sites at the first emulated instruction after the call */
	size_t at_ret = 0;      /* ... at the caller's RET (the call in tail position) */
	size_t traps = 0;       /* ... none: a trap follows the call (plan.c emit_function) */
	for (size_t k = 0; !f->in_caller && k < f->ncalls; k++) {
		if (f->calls[k].walk.traps || f->noreturn) {
			traps += f->calls[k].walk.traps;
			continue;
		}
		at_emulated += f->calls[k].how == CT_EXIT_EMULATED;
		at_ret += f->calls[k].how == CT_EXIT_STEPPED && f->calls[k].exit != f->calls[k].ret;
	}
	char rets[112] = "";
	if (at_ret)
		snprintf(rets, sizeof(rets), ", %zu at the caller's RET", at_ret);
	if (traps)
		snprintf(rets + strlen(rets), sizeof(rets) - strlen(rets), ", none after the %zu followed by a trap", traps);
	else if (f->noreturn)
		snprintf(rets + strlen(rets), sizeof(rets) - strlen(rets), ", none: it never returns");
	if (!f->in_caller && (f->fn->flags & CT_FN_PLT) && f->noreturn == CT_NORETURN_ENDS) {
		/* (its entry seen at the stub: as record plans it, no exit) */
		if (verbose)
			printf("      exits: none, it never returns (the process or thread ends in it: its calls stay "
			       "open); entries at its own entry%s%s%s\n",
			       f->why ? " (not seen from its callers: " : "", f->why ? f->why : "", f->why ? ")" : "");
		return;
	}
	if (!f->in_caller && (f->fn->flags & CT_FN_PLT)) {
		if (verbose)
			printf("      exits: at the return addresses of its %zu call site%s (a PLT stub: it jumps to the "
			       "library function, which returns there; %zu of them at the first emulated instruction "
			       "after%s)%s%s\n",
			       f->ncalls, f->ncalls == 1 ? "" : "s", at_emulated, rets,
			       f->why ? "; not seen from its callers: " : "", f->why ? f->why : "");
		return;
	}
	if (!f->in_caller && f->noreturn && !f->return_sites) {
		/* (no RET to probe; f->why: why its entry is not seen from its callers) */
		if (verbose)
			printf("      exits: none, it never returns; entries at its own entry%s%s%s\n", f->why ? " (" : "",
			       f->why ? f->why : "", f->why ? ")" : "");
		return;
	}
	if (!f->in_caller) {
		if (verbose)
			printf("      exits: RET probes%s%s%s\n", p->exits_note || f->why ? " (" : "",
			       p->exits_note ? p->exits_note : f->why ? f->why : "", p->exits_note || f->why ? ")" : "");
		if (verbose && f->return_sites)
			printf("      and the return addresses of its %zu call site%s (it tail-jumps to untraced code; %zu "
			       "of them at the first emulated instruction after%s)\n",
			       f->ncalls, f->ncalls == 1 ? "" : "s", at_emulated, rets);
		return;
	}
	size_t em = 0, st = 0, tp = 0;
	for (size_t k = 0; k < f->ncalls; k++) {
		em += f->calls[k].how == CT_EXIT_EMULATED;
		st += f->calls[k].how == CT_EXIT_STEPPED;
		tp += f->calls[k].how == CT_EXIT_TAILPOS || f->calls[k].how == CT_EXIT_VIA;
	}
	char after[96] = "";
	if (f->check_walk)
		snprintf(after, sizeof(after), " after its prologue (its first instruction is single-stepped; SP %d lower)",
			 -f->check_walk->sp_delta);
	if (!f->ncalls) /* (every caller found while recording: a virtual method, a handler) */
		printf("      exits: at the call sites found while recording (none is planned before it runs)");
	else if (f->noreturn) /* (one that ends the process: plan.c plan_noreturn) */
		printf("      exits: none, it never returns (the process or thread ends in it: its %zu call%s stay%s open)",
		       f->ncalls, f->ncalls == 1 ? "" : "s", f->ncalls == 1 ? "s" : "");
	else
		printf("      exits: at its %zu call site%s (%zu exits emulated, %zu single-stepped, %zu in tail position)",
		       f->ncalls, f->ncalls == 1 ? "" : "s", em, st, tp);
	printf("%s%s%s\n",
	       jump_at_calls ? "; entries at the calls, and its jump into the library there too (the stub jumps at once; "
			       "its own instruction is not probed: calls from elsewhere go unseen)"
	       : f->check_site == CT_NOSITE ? "; entries at the calls, calls from elsewhere go unseen (its entry is single-stepped)"
					    : "; entries at its own entry",
	       after, f->check_site == CT_NOSITE ? "" : ", which looks up the caller (from: not probed)");
	size_t via = 0;
	for (size_t k = 0; k < f->ncalls; k++)
		via += f->calls[k].icall && !f->calls[k].via_place;
	if (f->indirect && via)
		printf("      and calls through its address (%s): at %zu indirect call%s of traced code planned for it (`via`), "
		       "each other call site found while recording, its exit probe added then\n",
		       f->why, via, via == 1 ? "" : "s");
	else if (f->indirect)
		printf("      and calls through its address (%s): each call site found while recording, its exit probe added then\n",
		       f->why);
	if (f->interim)
		printf("      until those are found, its %zu RET%s see%s the calls from them end (interim RETs, a single-step "
		       "each call: taken out once %d of its calls ended at exit probes and no new call site was found for "
		       "%d ms)\n",
		       f->rets.n, f->rets.n == 1 ? "" : "s", f->rets.n == 1 ? "s" : "", CT_INTERIM_WORTH, CT_INTERIM_QUIET_MS);
	if (!verbose)
		return;
	/* "call": the call instruction is probed (the entry); "from": the
	 * function's own entry reports calls from there. */
	const char *role_of = f->check_site == CT_NOSITE ? "call" : "from";
	for (size_t k = 0; k < f->ncalls; k++) {
		const struct ct_callsite *cs = &f->calls[k];
		/* "after": where a wrapper that makes its call last returns to */
		const char *role = cs->via_place ? "after" : cs->icall ? "via" : role_of;
		char at[160], ex[160], text[128];
		where(p->t, cs->caller, cs->at, at, sizeof(at));
		if (cs->how == CT_EXIT_TAILPOS) {
			printf("      %-7s %-40s -> ends with %s (tail position%s%s%s%s)\n", role, at,
			       ct_names_show(&cs->caller->dm, cs->caller->name),
			       cs->tail_results ? ", which returns its results as they are: read at its exits"
			       : cs->tail_less_prev ? ", which returns its result plus the one of its call before, kept in its "
						      "frame: the result is the one read at its exits less that one"
						    : "",
			       cs->via_place ? "; where " : "",
			       cs->via_place ? (cs->wrapper ? ct_names_show(&cs->wrapper->dm, cs->wrapper->name)
							    : "a `go` or `defer` wrapper the runtime runs") : "",
			       cs->via_place ? " returns to" : "");
			continue;
		}
		if (cs->walk.traps || f->noreturn) {
			printf("      %-7s %-40s -> never returns there: %s, no exit probe\n", role, at,
			       cs->walk.traps ? "a trap (ud2) follows the call" : "the process or thread ends in it");
			continue;
		}
		if (cs->how == CT_EXIT_VIA) {
			printf("      %-7s %-40s -> ends with %s, which is not traced (tail position): at the exit probe "
			       "where that returns to (an `after` line; another place found while recording)\n", role, at,
			       ct_names_show(&cs->caller->dm, cs->caller->name));
			continue;
		}
		where(p->t, cs->caller, cs->exit, ex, sizeof(ex));
		/* (or in the deferred closure the call after it calls) */
		bool elsewhere = cs->exit < cs->caller->entry || cs->exit >= cs->caller->end;
		const struct ct_func *in = elsewhere ? ct_target_func_at(p->t, cs->exit) : cs->caller;
		insn_text(p->t, cs->exit, in ? in->end : cs->exit + 1, text, sizeof(text));
		char sp[32] = "";
		if (cs->sp_delta)
			snprintf(sp, sizeof(sp), ", SP%+d", cs->sp_delta);
		char why[512] = "emulated";
		if (cs->how == CT_EXIT_EMULATED && f->results_view && f->results_view->nvals) {
			snprintf(why, sizeof(why), "emulated, results read there");
			stored_results_note(p, f, cs, why, sizeof(why));
		}
		else if (cs->how != CT_EXIT_EMULATED)
			results_stepped_why(p, f, cs, why, sizeof(why));
		if (cs->exit_site < p->sites.n && p->sites.v[cs->exit_site].kind == CT_SITE_RETSITE &&
		    (p->sites.v[cs->exit_site].flags & CT_SITEF_ATCHECK))
			snprintf(why, sizeof(why), "not probed: that call's callee's entry probe sees this call end%s",
				 p->fetch && p->fetch[cs->exit_site] && p->fetch[cs->exit_site]->nvals ? ", reading its results"
													: "");
		if (elsewhere) {
			size_t len = strlen(why);
			snprintf(why + len, sizeof(why) - len, "; at the entry of the deferred closure the call after it calls");
		}
		float_results_note(p, f, cs, why, sizeof(why));
		if (cs->via_place) {
			size_t len = strlen(why);
			snprintf(why + len, sizeof(why) - len, "; where %s returns to", cs->wrapper ?
				 ct_names_show(&cs->wrapper->dm, cs->wrapper->name) : "a `go` or `defer` wrapper the runtime runs");
		}
		const struct ct_plan_site *cs_site = cs->call_site < p->sites.n ? &p->sites.v[cs->call_site] : NULL;
		if (cs_site && (cs_site->flags & CT_SITEF_AHEAD)) {
			size_t len = strlen(why);
			snprintf(why + len, sizeof(why) - len, "; entered at 0x%llx%s, an exit probe that leads only "
				 "here: one hit for both", (unsigned long long)cs_site->addr,
				 !(cs_site->flags & CT_SITEF_COND) ? ""
				 : (cs_site->flags & CT_SITEF_FALL) ? " when its jump does not go"
								   : " when its jump goes");
		}
		if (cs->rides_on) {
			size_t len = strlen(why);
			snprintf(why + len, sizeof(why) - len, "; rides on the exit probe of %s there",
				 ct_names_show(&p->funcs.v[cs->rides_on - 1].fn->dm, p->funcs.v[cs->rides_on - 1].fn->name));
		}
		printf("      %-7s %-40s -> %s %s (%s%s)\n", role, at, ex, text, why, sp);
	}
}

/* The GLOB the user gave that picks FN only by its name before GCC's
 * clone suffixes ("look" for look.constprop.0), or NULL (one matches its
 * own name, or none was given). */
static const char *clone_glob(const struct ct_func *fn, const struct ct_selection *sel)
{
	const char *g = NULL;
	for (size_t i = 0; i < sel->ntrace; i++) {
		if (ct_names_match_as_clone(&fn->dm, fn->name, sel->trace[i]))
			g = g ? g : sel->trace[i];
		else if (ct_names_match(&fn->dm, fn->name, sel->trace[i]))
			return NULL;
	}
	return g;
}

/* record -F 'LIB:GLOB' traces a library's functions: list shows them too,
 * by listing that library (found as ld.so would find it for EXE) with the
 * globs after "LIB:".  A listing is of one binary, so every glob must then
 * name the same library.  0 with *PATH NULL when no glob names one; -1 with
 * ct_fail(). */
static int library_globs(const char *exe, const char **globs, size_t n, size_t ntrace, char **path)
{
	*path = NULL;
	const char *lib = NULL, *other = NULL;
	size_t len = 0, colon;
	for (size_t i = 0; i < n; i++) {
		if (!ct_lib_glob(globs[i], &colon))
			other = other ? other : globs[i];
		else if (!lib)
			lib = globs[i], len = colon;
		else if (colon != len || strncmp(globs[i], lib, len))
			other = other ? other : globs[i];
	}
	if (!lib)
		return 0;
	if (!other && (!ntrace || !ct_lib_glob(globs[0], &colon)))
		return ct_fail("-N '%s' needs a -F '%.*s:GLOB' to exclude from", lib, (int)len, lib);
	if (other)
		return ct_fail("'%s' names functions of library %.*s, '%s' does not: list shows one binary's "
			       "functions, list them one binary at a time",
			       lib, (int)len, lib, other);
	char *name = xasprintf("%.*s", (int)len, lib);
	*path = ct_lib_resolve_exe(exe, name);
	if (!*path) {
		char *why = xstrdup(ct_error());
		ct_fail("cannot find library %s: %s", name, why);
		free(why);
	}
	free(name);
	if (!*path)
		return -1;
	for (size_t i = 0; i < n; i++)
		globs[i] += len + 1;
	return 0;
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"trace", required_argument, NULL, 'F'},
		{"exclude", required_argument, NULL, 'N'},
		{"verbose", no_argument, NULL, 'v'},
		{"exit", required_argument, NULL, 'x'},
		{"no-args", no_argument, NULL, 'n'},
		{"no-interim", no_argument, NULL, 'i'},
		{"demangle", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	CT_VEC(const char *) exclude = {0}, trace = {0};
	int c, verbose = 0, args = 1;
	bool no_interim = false;
	enum ct_exit_mode exits = CT_EXITS_AUTO;
	optind = 1;
	opterr = 0; /* one line of our own: ct_bad_option */
	while ((c = getopt_long(argc, argv, ":F:N:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (ct_empty_glob(c, optarg))
				return 2;
			CT_VEC_PUSH(trace, optarg);
			break;
		case 'N':
			if (ct_empty_glob(c, optarg))
				return 2;
			CT_VEC_PUSH(exclude, optarg);
			break;
		case 'x':
			if (strcmp(optarg, "auto") && strcmp(optarg, "ret")) {
				ct_print_errorf("--exit is auto (default) or ret, not '%s'", optarg);
				return 2;
			}
			exits = strcmp(optarg, "ret") ? CT_EXITS_AUTO : CT_EXITS_RET;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'n':
			args = 0;
			break;
		case 'i':
			no_interim = true;
			break;
		case 'd':
			if (ct_demangle_parse(optarg, &ct_demangle_mode)) {
				ct_print_errorf("--demangle takes simple, full or no, not '%s'", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return ct_bad_option("list", c, argv, opts);
		}
	}
	if (optind >= argc) {
		ct_print_errorf("list: which binary? (see calltrace list --help)");
		return 2;
	}
	for (int i = optind + 1; i < argc; i++) /* (the GLOBs after BINARY, after -F's) */
		CT_VEC_PUSH(trace, argv[i]);
	const char *binary = argv[optind];
	char *libpath = NULL;
	if (!ct_wasm_is_module(binary)) {
		/* (one array: the -F globs, then the -N ones) */
		const char **all = xcalloc(trace.n + exclude.n + 1, sizeof(*all));
		if (trace.n) /* (memcpy from NULL, even of nothing, is undefined) */
			memcpy(all, trace.v, trace.n * sizeof(*all));
		if (exclude.n)
			memcpy(all + trace.n, exclude.v, exclude.n * sizeof(*all));
		if (library_globs(binary, all, trace.n + exclude.n, trace.n, &libpath)) {
			ct_print_error();
			free(all);
			CT_VEC_FREE(exclude);
			CT_VEC_FREE(trace);
			return 1;
		}
		if (trace.n)
			memcpy(trace.v, all, trace.n * sizeof(*all));
		if (exclude.n)
			memcpy(exclude.v, all + trace.n, exclude.n * sizeof(*all));
		free(all);
		if (libpath)
			binary = libpath;
	}
	if (ct_wasm_is_module(binary)) {
		int rc = ct_wasm_list(binary, trace.v, trace.n, exclude.v, exclude.n);
		if (rc)
			ct_print_error();
		CT_VEC_FREE(exclude);
		CT_VEC_FREE(trace);
		return rc ? 1 : 0;
	}
	struct ct_target t;
	if (ct_target_open(&t, binary)) {
		ct_print_error();
		free(libpath);
		return 1;
	}
	struct ct_args_opts ao = {.enabled = args != 0, .fetch = {64, 8, 3}};
	struct ct_selection sel = {.trace = trace.v,
				   .ntrace = trace.n,
				   .exclude = exclude.v,
				   .nexclude = exclude.n,
				   .exits = exits,
				   .no_interim = no_interim,
				   .go_markers = true,
				   .args = &ao};
	ct_plt_add_funcs(&t, &sel);
	struct ct_plan p;
	if (ct_plan_build(&p, &t, &sel)) {
		ct_print_error();
		ct_target_close(&t);
		free(libpath);
		CT_VEC_FREE(exclude);
		CT_VEC_FREE(trace);
		return 1;
	}
	char *shown = ct_shown(t.elf.path);
	printf("# %s: %s", shown, ct_target_kind(&t));
	free(shown);
	for (size_t i = 0; i < t.rust.ncrates; i++)
		printf("%s%s", i ? ", " : " (own crates: ", t.rust.crates[i]);
	if (t.rust.ncrates)
		printf(")");
	if (t.gccgo && t.go_version[0])
		printf(" %s", t.go_version);
	if (t.lang == CT_LANG_GO)
		printf(" %s, %s ABI, module %s%s, runtime.g offsets from %s (goid %u, stack.hi %u, g in TLS at %lld)",
		       t.go_version[0] ? t.go_version : "(version unknown)", t.regabi ? "register" : "stack",
		       t.main_module ? t.main_module : "-",
		       t.module_from_path ? " (its main package's project: a GOPATH build)" : "", t.gcfg_source, t.gcfg.goid_off, t.gcfg.stack_hi_off,
		       (long long)t.gcfg.tls_g_off);
	printf(", %s, functions from %s%s%s%s\n", t.elf.pie ? "PIE" : "non-PIE", t.funcs_source,
	       t.elf.debug_path ? " " : "", t.elf.debug_path ? t.elf.debug_path : "", t.has_dwarf ? ", DWARF" : ", no DWARF");
	printf("# %zu functions, %zu probe sites (%zu cheap entries, %zu single-stepped", p.funcs.n, p.sites.n,
	       p.cheap_entries, p.slow_entries);
	if (p.trapless_entries)
		printf(", %zu at 5-byte nops, probed without a trap", p.trapless_entries);
	printf(")");
	char note[320]; /* (the goroutine ids' note: ~240) */
	if (p.exits == CT_EXITS_AUTO && !p.exits_note)
		printf(", %zu observed from their callers%s", p.in_caller, ct_plan_icall_note(&p, note, sizeof(note)));
	else
		printf(", exits at RET (%s)", p.exits_note ? p.exits_note : "--exit=ret");
	if (p.ahead_entries)
		printf(", %zu call%s seen at the exit probe of the call before (one hit for both)", p.ahead_entries,
		       p.ahead_entries == 1 ? "" : "s");
	if (p.skipped.n)
		printf(", %zu cannot be probed (listed at the end)", p.skipped.n);
	printf("\n");
	ct_plan_args(&p, &ao);
	if (args && p.args_note)
		printf("# arguments: %s\n", p.args_note);
	if (t.lang == CT_LANG_GO)
		printf("# goroutine ids: %s\n", ct_plan_goid_note(&p, note, sizeof(note)));
	printf("# %-18s %-12s %-6s %s\n", "ENTRY", "SITE", "EXITS", "FUNCTION");
	size_t si = 0;
	/* (one pass: node has 550k sites and 40k functions observed from their callers) */
	bool *jump_at_calls = xcalloc(p.funcs.n + 1, sizeof(*jump_at_calls));
	for (size_t i = 0; i < p.sites.n; i++)
		if (p.sites.v[i].at_call && p.sites.v[i].func < p.funcs.n)
			jump_at_calls[p.sites.v[i].func] = true;
	for (size_t i = 0; i < p.funcs.n; i++) {
		const struct ct_plan_func *f = &p.funcs.v[i];
		printf("  0x%-16llx +%-3llu %-7s %-6u %s", (unsigned long long)f->fn->entry,
		       (unsigned long long)(f->entry_site - f->fn->entry), f->entry_optimized ? "no-trap" : f->entry_emulated ? "cheap" : "step",
		       f->nexits, ct_names_show(&f->fn->dm, f->fn->name));
		const char *cg = clone_glob(f->fn, &sel);
		if (cg)
			printf("  (%s: matched before GCC's suffix %s)", cg, f->fn->name + ct_clone_base_len(f->fn->name));
		printf("\n");
		if (args && p.fetch) {
			const struct ct_site_fetch *in = f->args_view, *out = f->results_view;
			if (in || out) {
				printf("      (");
				print_values(&p, in);
				printf(") -> (");
				print_values(&p, out);
				printf(")\n");
			}
		}
		print_exit_mode(&p, f, jump_at_calls[i], verbose);
		if (!verbose)
			continue;
		for (; si < p.sites.n && (p.sites.v[si].func < i || p.sites.v[si].func == CT_NOFUNC); si++)
			;
		size_t nij = 0;
		struct ct_ijump *ij = indirect_jumps(&t, f, &nij);
		for (; si < p.sites.n && p.sites.v[si].func == i; si++) {
			const struct ct_plan_site *s = &p.sites.v[si];
			if (s->kind == CT_SITE_CALL || s->kind == CT_SITE_RETSITE || s->kind == CT_SITE_SPILL ||
			    s->kind == CT_SITE_TAILRES || s->kind == CT_SITE_TAILDIFF || s->at_call)
				continue; /* shown with the call sites above, or below */
			char text[128];
			insn_text(&t, s->addr, f->fn->end, text, sizeof(text));
			printf("      %-7s +%-5llu %s", kind_name(s->kind), (unsigned long long)(s->addr - f->fn->entry),
			       text);
			for (size_t k = 0; s->kind == CT_SITE_TAIL && k < nij; k++)
				if (ij[k].addr == s->addr)
					printf(" (indirect: %s)", ij[k].why);
			if (s->interim)
				printf(" (interim: until its callers are found)");
			if (s->cond) /* (its probe reads the flags: see docs/FORMAT.md, SITES flag 0x200) */
				printf(" (conditional: a tail call when it jumps, else the function goes on)");
			printf("\n");
		}
		/* the indirect jumps not taken for tail jumps, and why */
		for (size_t k = 0; k < nij; k++) {
			if (ij[k].kind == CT_IJUMP_TAIL || ij[k].kind == CT_IJUMP_GOT)
				continue;
			char text[128], sp[48] = "";
			insn_text(&t, ij[k].addr, f->fn->end, text, sizeof(text));
			if (ij[k].sp_known && ij[k].sp_below)
				snprintf(sp, sizeof(sp), "SP %d below its entry level; ", ij[k].sp_below);
			printf("      %-7s +%-5llu %s (%s: %s%s)\n", "jump", (unsigned long long)(ij[k].addr - f->fn->entry),
			       text, ij[k].kind == CT_IJUMP_INSIDE ? "inside the function" : "undecided, not a tail jump",
			       sp, ij[k].why);
		}
		free(ij);
		if (f->spill_site != CT_NOSITE && p.fetch && p.fetch[f->spill_site]) {
			/* arguments passed in SSE registers, read where the prologue stored them */
			const struct ct_plan_site *s = &p.sites.v[f->spill_site];
			const struct ct_site_fetch *sf = p.fetch[f->spill_site];
			char text[128];
			insn_text(&t, s->addr, f->fn->end, text, sizeof(text));
			printf("      %-7s +%-5llu %s (%s; reads ", "spill", (unsigned long long)(s->addr - f->fn->entry), text,
			       s->flags & CT_SITEF_STEPPED ? "single-stepped" : "emulated");
			for (uint32_t v = 0, n = 0; v < sf->nvals; v++)
				if (sf->vals[v].npieces)
					printf("%s%s", n++ ? ", " : "", sf->vals[v].name[0] ? sf->vals[v].name : "_");
			printf(" from the stack)\n");
		}
	}
	if (p.skipped.n)
		printf("# %zu functions cannot be probed (record leaves them out):\n", p.skipped.n);
	for (size_t i = 0; i < p.skipped.n; i++)
		printf("  0x%-16llx %-12s %-6s %s: %s\n", (unsigned long long)p.skipped.v[i].fn->entry, "-", "-",
		       ct_names_show(&p.skipped.v[i].fn->dm, p.skipped.v[i].fn->name), p.skipped.v[i].why);
	free(jump_at_calls);
	ct_plan_free(&p);
	ct_target_close(&t);
	free(libpath);
	CT_VEC_FREE(exclude);
	CT_VEC_FREE(trace);
	return 0;
}
