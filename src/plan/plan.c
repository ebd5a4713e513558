#include "plan/plan.h"
#include "plan/pads.h"
#include "format/calib.h"
#include "target/goruntime.h"
#include "util/util.h"

#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* C runtime start-up code the compiler adds to every executable. */
static const char *const crt_funcs[] = {
	"_start", "_init", "_fini", "deregister_tm_clones", "register_tm_clones",
	"__do_global_dtors_aux", "frame_dummy", "__libc_csu_init", "__libc_csu_fini",
	"_dl_relocate_static_pie", "__x86.get_pc_thunk.bx", NULL,
};

/* C++ code that is not the program's (prefixes of demangled names). */
static const char *const cxx_runtime[] = {
	"std::", "__gnu_cxx::", "__cxxabiv1::", "__gnu_debug::", "operator new", "operator delete",
	"__cxa_", "__gxx_", "_GLOBAL__sub_I_", "__static_initialization_and_destruction_", NULL,
};

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

bool ct_plan_default_selected(const struct ct_target *t, const struct ct_func *f)
{
	/* Go, gc or gccgo (whose names target.c demangled): package main
	 * and the main module (gccgo: inferred from DWARF, else none). */
	if (t->lang == CT_LANG_GO || t->gccgo) {
		if (has_prefix(f->name, "main."))
			return true;
		const char *mod = t->main_module;
		if (!mod || !*mod || !strcmp(mod, "command-line-arguments"))
			return false;
		size_t n = strlen(mod);
		return !strncmp(f->name, mod, n) && (f->name[n] == '.' || f->name[n] == '/');
	}
	if (f->flags & CT_FN_PLT) /* a stripped program's library calls */
		return !strcmp(t->funcs_source, "dynsym");
	if (t->rust.is_rust)
		return ct_rust_own(&t->rust, f);
	for (const char *const *c = crt_funcs; *c; c++)
		if (!strcmp(f->name, *c))
			return false;
	/* C++: the standard library's templates instantiated in the program,
	 * its runtime when linked in, and the compiler's static initializers */
	for (const char *const *c = cxx_runtime; *c; c++)
		if (has_prefix(f->dm.simple ? f->dm.simple : f->name, *c))
			return false;
	return true;
}

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* ANY_GLOB false: only a glob naming CT_PLT_SUFFIX picks a PLT stub (-F '*' means
 * the program's functions, not also its calls of others'). */
static bool matches_any(const struct ct_func *f, const char **globs, size_t n, bool any_glob)
{
	for (size_t i = 0; i < n; i++)
		if ((any_glob || strstr(globs[i], CT_PLT_SUFFIX)) && ct_names_match(&f->dm, f->name, globs[i]))
			return true;
	return false;
}

/* What find_sites asks of jump and call targets about (F, of T). */
struct sites_of {
	const struct ct_target *t;
	const struct ct_func *f;
};

static bool is_morestack(void *ctx, uint64_t target)
{
	const struct sites_of *so = ctx;
	const struct ct_func *f = ct_target_func_at(so->t, target);
	return f && f->entry == target && ct_go_is_morestack(f->name);
}

enum ct_callconv ct_callconv_of(const struct ct_func *f)
{
	if (!(f->flags & CT_FN_GO))
		return CT_CC_SYSV;
	return (f->flags & CT_FN_ABI0) ? CT_CC_GO_STACK : CT_CC_GO_REG;
}

static uint8_t gsrc_of(const struct ct_target *t, const struct ct_func *f)
{
	/* C code of a cgo binary: TLS g is g0 while Go calls C (the probe
	 * then reports m.curg's goroutine), NULL on threads C created. */
	if (!(f->flags & CT_FN_GO))
		return t->lang == CT_LANG_GO ? CT_G_TLS : CT_G_NONE;
	return (f->flags & CT_FN_ABI0) ? CT_G_TLS : CT_G_R14;
}

static struct ct_plan_site *push_site(struct ct_plan *p, uint64_t addr, int64_t off, uint32_t func, uint8_t kind,
				      uint64_t target, uint8_t gsrc)
{
	struct ct_plan_site s = {0};
	s.addr = addr;
	s.offset = (uint64_t)off;
	s.func = func;
	s.kind = kind;
	s.target_addr = target;
	s.target_func = CT_NOFUNC;
	s.gsrc = gsrc;
	s.call_site = s.next = s.rides = CT_NOSITE;
	if (kind == CT_SITE_TAIL && !target) /* through a pointer: any function may be its target */
		s.flags = CT_SITEF_INDIRECT;
	return ct_plan_push_site(p, &s);
}

struct ct_plan_site *ct_plan_push_site(struct ct_plan *p, const struct ct_plan_site *s)
{
	if (p->sites.n == p->sites.cap) { /* (a quarter more: the table is much of the plan) */
		size_t cap = p->sites.cap < 64 ? 64 : p->sites.cap + p->sites.cap / 4;
		p->sites.v = xrealloc(p->sites.v, cap * sizeof(*p->sites.v));
		p->sites.cap = cap;
	}
	p->sites.v[p->sites.n] = *s;
	return &p->sites.v[p->sites.n++];
}

static struct ct_plan_site *add_site(struct ct_plan *p, uint64_t addr, uint32_t func, uint8_t kind,
				     uint64_t target, uint8_t gsrc)
{
	int64_t off = ct_elf_vaddr_to_offset(&p->t->elf, addr);
	if (off < 0) {
		ct_fail("address 0x%llx is not in the file's loadable segments", (unsigned long long)addr);
		return NULL;
	}
	return push_site(p, addr, off, func, kind, target, gsrc);
}

/* Exit E of function FUNC (its roles' condition with it). */
static struct ct_plan_site *add_exit(struct ct_plan *p, const struct ct_exit_site *e, uint32_t func, uint8_t gsrc)
{
	struct ct_plan_site *s = add_site(p, e->addr, func, e->kind, e->target, gsrc);
	if (s && e->cond) {
		s->cond = e->cond;
		s->flags |= CT_SITEF_COND;
	}
	return s;
}

struct ct_plan_site *ct_plan_add_site_elsewhere(struct ct_plan *p, uint64_t addr, uint64_t offset, uint32_t func,
						uint8_t kind, uint8_t gsrc)
{
	struct ct_plan_site *s = push_site(p, addr, (int64_t)offset, func, kind, 0, gsrc);
	s->elsewhere = true;
	return s;
}

struct ct_plan_site *ct_plan_add_site(struct ct_plan *p, uint64_t addr, uint32_t func, uint8_t kind,
				      const struct ct_func *code)
{
	return add_site(p, addr, func, kind, 0, gsrc_of(p->t, code));
}

/* Is A in E's PLT (.plt, .plt.sec, .plt.got)? */
static bool in_plt(const struct ct_elf *e, uint64_t a)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		GElf_Shdr sh;
		const uint8_t *bytes;
		if (ct_elf_section(e, names[i], &sh, &bytes) && a >= sh.sh_addr && a - sh.sh_addr < sh.sh_size)
			return true;
	}
	return false;
}

/* Is a conditional jump out of the function to TARGET a tail call: to a
 * function's entry or a PLT stub?  (Not into a part split off a function,
 * GCC's `f.cold`: no function of its own, target.c -- a probe on each such
 * jump would cost a trap a call for nothing.) */
static bool cond_tail(void *ctx, uint64_t target)
{
	const struct sites_of *so = ctx;
	const struct ct_func *g = ct_target_func_at(so->t, target);
	return g ? g->entry == target : in_plt(&so->t->elf, target);
}

static int cmp_exit_at(const void *a, const void *b)
{
	const struct ct_exit_site *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Is A in F's code or a part split off it? */
static bool in_func_or_parts(const struct ct_func *f, const struct ct_part *parts, size_t nparts, uint64_t a)
{
	bool in = a >= f->entry && a < f->end;
	for (size_t k = 0; k < nparts && !in; k++)
		in = a >= parts[k].entry && a < parts[k].end;
	return in;
}

/* The exits in the parts split off F (GCC's F.cold, BOLT's F.warm: its
 * RETs may be there, LLVM's BOLTed librustc_driver has functions with none
 * of their own), added to FS's: a jump from a part back into F, or into
 * another of its parts, is none. */
static void part_exits(const struct ct_target *t, const struct ct_func *f, struct sites_of *so, struct ct_fn_sites *fs)
{
	size_t np;
	const struct ct_part *parts = ct_target_parts_of(t, f->entry, &np);
	bool added = false;
	for (size_t k = 0; k < np; k++) {
		size_t len = parts[k].end - parts[k].entry;
		const uint8_t *code = ct_elf_bytes_at(&t->elf, parts[k].entry, len);
		struct ct_fn_sites ps;
		if (!code || ct_find_sites(code, len, parts[k].entry, ct_callconv_of(f), is_morestack, cond_tail, so, &ps))
			continue; /* (its exits stay unknown, as before) */
		for (size_t i = 0; i < ps.nexits; i++) {
			const struct ct_exit_site *e = &ps.exits[i];
			if ((e->kind != CT_SITE_RET && e->kind != CT_SITE_TAIL) ||
			    (e->kind == CT_SITE_TAIL && e->target && in_func_or_parts(f, parts, np, e->target)))
				continue;
			fs->exits = xrealloc(fs->exits, (fs->nexits + 1) * sizeof(*fs->exits));
			fs->exits[fs->nexits++] = *e;
			added = true;
		}
		ct_fn_sites_free(&ps);
	}
	if (added)
		qsort(fs->exits, fs->nexits, sizeof(*fs->exits), cmp_exit_at);
}

/* Decodes F's own sites (entry, exits).  CFI (C code's, or NULL): a jump
 * out of F's bounds with its frame still allocated is no tail jump but one
 * into another part of F (GCC's `f.cold`, whose code a stripped program's
 * symbol sizes leave out; python3's PyModule_New returns from there): no
 * probe goes there, which would read no return address at SP (python3: a
 * trap on each of 3,610 such jumps, and garbage reported as return
 * addresses); F's calls may end in code not probed, as after a tail jump
 * to untraced code (goes_on_elsewhere). */
static int find_sites(const struct ct_target *t, const struct ct_func *f, struct ct_cfi *cfi,
		      struct ct_fn_sites *fs)
{
	size_t len = f->end - f->entry;
	const uint8_t *code = ct_elf_bytes_at(&t->elf, f->entry, len);
	if (!code || !len)
		return ct_fail("function %s has no code in the file", ct_names_show(&f->dm, f->name));
	struct sites_of so = {t, f};
	if (ct_find_sites(code, len, f->entry, ct_callconv_of(f), is_morestack, cond_tail, &so, fs)) {
		return ct_fail("function %s cannot be probed: %s", ct_names_show(&f->dm, f->name), ct_error());
	}
	part_exits(t, f, &so, fs);
	size_t n = 0;
	for (size_t i = 0; i < fs->nexits; i++) {
		int64_t cfa;
		/* (a jump through a memory slot too: cc1plus's grokdeclarator
		 * goes on that way partway, 592 bytes of frame allocated --
		 * the word at SP was reported as a return address each time,
		 * 903 of them, which used up what the probes may report) */
		if (cfi && fs->exits[i].kind == CT_SITE_TAIL &&
		    ct_cfa_sp_offset(cfi, fs->exits[i].addr, &cfa) && cfa != 8) {
			fs->goes_on_elsewhere = true;
			continue;
		}
		fs->exits[n++] = fs->exits[i];
	}
	fs->nexits = n;
	return 0;
}

/* A marker probe at the entry of runtime function NAME. */
static struct ct_plan_site *add_marker(struct ct_plan *p, const char *name, uint8_t kind)
{
	const struct ct_target *t = p->t;
	struct ct_plan_site *s = NULL;
	for (size_t j = 0; j < t->nfuncs; j++) {
		if (strcmp(t->funcs[j].name, name))
			continue;
		struct ct_fn_sites fs;
		if (find_sites(t, &t->funcs[j], NULL, &fs) == 0) {
			if (!(s = add_site(p, fs.entry_site, CT_NOFUNC, kind, 0, gsrc_of(t, &t->funcs[j]))))
				ct_debug("no %s marker: %s", name, ct_error());
			ct_fn_sites_free(&fs);
		} else {
			ct_debug("no %s marker: %s", name, ct_error());
		}
		break;
	}
	return s;
}

/* record --parks: the Go scheduler's markers (CT_SITE_GOREADY), each
 * what its key_adj says (CT_GOSCHED_*): where a parked goroutine is made
 * runnable, so that its park says how long it then waited to run; where
 * the scheduler takes a running one off its thread, and runs one. */
static void add_scheduler_markers(struct ct_plan *p)
{
	static const struct {
		const char *name;
		int32_t what;
	} m[] = {
		{CT_GO_READY, CT_GOSCHED_READY},
		{"runtime.goschedImpl", CT_GOSCHED_DESCHED}, /* Gosched, preemptions */
		{"runtime.preemptPark", CT_GOSCHED_DESCHED}, /* stopped for the GC (Go 1.14 on) */
		/* back from a system call that outlasted its P: it runs at once
		 * where a P is idle, else waits for one */
		{"runtime.exitsyscall0", CT_GOSCHED_DESCHED},
		{"runtime.execute", CT_GOSCHED_EXECUTE},
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct ct_plan_site *s = add_marker(p, m[i].name, CT_SITE_GOREADY);
		if (s)
			s->key_adj = m[i].what;
	}
}

/* Is PF, observed from its callers, a PLT stub whose one instruction
 * that leaves is its jump through the GOT slot (FS), no probe at its entry
 * (no CHECK: every call of it is a planned call's, seen at the call)? */
static bool stub_jumps_at_once(const struct ct_plan_func *pf, const struct ct_fn_sites *fs)
{
	return (pf->fn->flags & CT_FN_PLT) && pf->check_site == CT_NOSITE && fs->nexits == 1 &&
	       fs->exits[0].kind == CT_SITE_TAIL && !fs->exits[0].target;
}

/* Functions that never return: a PLT stub of one by its name
 * (ct_noreturn_name: exit@plt, __stack_chk_fail@plt, longjmp@plt,
 * _Unwind_Resume@plt), or one whose code nothing leaves but calls (FOUND's
 * never_leaves: no RET, no jump out, what gcc makes of a function that ends
 * calling exit()).  gcc puts no trap after their calls (rustc and clang do:
 * walk.traps), and each got an exit probe on whatever code came next,
 * never hit there (cmake: 3,272 after _Unwind_Resume@plt).  None now, nor
 * one found while recording (session.c found_return).  One that ends the
 * process or thread (exit, abort) keeps its plan otherwise: its call stays
 * open, what runs inside it (atexit handlers, destructors) nested in it,
 * until the process ends.  One that unwinds (longjmp, _Unwind_Resume) or
 * a function of the program (which may do either) is observed at its own
 * entry, the return addresses of its calls watched by no probe
 * (unwatch_traps): a stub's jump into the library ends its call there,
 * unobserved, and the frames it leaves end at the next event that is not
 * deeper, unwound (a call entered at a planned call site and ending in a
 * jump was taken for returned then).  Not Go code (a panic, a Goexit have
 * markers of their own). */
static void plan_noreturn(struct ct_plan *p, const struct ct_fn_sites *found)
{
	if (p->t->gccgo)
		return;
	/* the functions a call in tail position in them reads its results
	 * at the exits of the calls of (CT_SITE_TAILRES roles): none of those */
	bool *tail_res = xcalloc(p->funcs.n ? p->funcs.n : 1, sizeof(*tail_res));
	for (size_t i = 0; i < p->funcs.n; i++)
		for (size_t k = 0; k < p->funcs.v[i].ncalls; k++)
			if (p->funcs.v[i].calls[k].tail_results && p->funcs.v[i].calls[k].tail_caller < p->funcs.n)
				tail_res[p->funcs.v[i].calls[k].tail_caller] = true;
	for (uint32_t j = 0; j < p->funcs.n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		const struct ct_func *fn = pf->fn;
		enum ct_noreturn how = (fn->flags & CT_FN_PLT) ? ct_noreturn_name(fn->name)
				       : found[j].never_leaves && !found[j].goes_on_elsewhere ? CT_NORETURN_OWN
												 : CT_NORETURN_NO;
		if ((fn->flags & CT_FN_GO) || how == CT_NORETURN_NO || tail_res[j])
			continue; /* (a call in tail position in it: it would return) */
		pf->noreturn = (uint8_t)how;
		/* (a stub's jump into a function that ends the process ends no
		 * call: not an exit, emit_function plants none there) */
		if ((fn->flags & CT_FN_PLT) && how == CT_NORETURN_ENDS)
			pf->nexits = 0;
		if (!pf->in_caller || how == CT_NORETURN_ENDS)
			continue;
		pf->in_caller = pf->indirect = pf->slot_called = false;
		p->in_caller--;
		free(pf->why);
		pf->why = xstrdup(how == CT_NORETURN_OWN ? "it never returns: nothing in its code returns or jumps out of it"
							 : "it never returns: it unwinds the stack to a caller further up");
	}
	free(tail_res);
}

/* Does PF never return to the callers of its calls whose return addresses
 * are watched (plan_noreturn)? */
static bool leaves_watched(const struct ct_plan_func *pf)
{
	return pf->noreturn && pf->noreturn != CT_NORETURN_ENDS;
}

/* PF's calls that never return where they were made (a trap follows:
 * walk.traps; or PF unwinds the stack: leaves_watched) get no exit probe,
 * and their return addresses are no watched ones: a tail jump of PF's to
 * untraced code (a PLT stub's jump into siglongjmp) checks those
 * (plan_tail_watch), and a watched return address said a probe there sees
 * the call end -- the replay ended the call at the jump, returned, at the
 * next event not deeper.  (One that ends the process keeps them: its call
 * stays open, what runs inside nested in it.) */
static void unwatch_traps(struct ct_plan_func *pf)
{
	for (size_t k = 0; k < pf->ncalls; k++)
		for (size_t w = 0; (pf->calls[k].walk.traps || leaves_watched(pf)) && w < pf->watched.n; w++)
			if (pf->watched.v[w] == pf->calls[k].ret)
				pf->watched.v[w--] = pf->watched.v[--pf->watched.n];
}

/* Function J's sites, contiguous (args.c relies on it): callee side
 * (entry, then exits) or caller side (CHECK, tail jumps, then per call its
 * CALL and RETSITE). */
static int emit_function(struct ct_plan *p, uint32_t j, const struct ct_fn_sites *fs)
{
	const struct ct_target *t = p->t;
	struct ct_plan_func *pf = &p->funcs.v[j];
	uint8_t gsrc = gsrc_of(t, pf->fn);
	pf->check_site = CT_NOSITE;
	unwatch_traps(pf);
	if (!pf->in_caller) {
		uint32_t entry = (uint32_t)p->sites.n;
		if (!add_site(p, fs->entry_site, j, CT_SITE_ENTRY, 0, gsrc))
			return -1;
		/* (the jump of a stub of a function that ends the process ends
		 * no call: see the one at its calls below) */
		bool ends = (pf->fn->flags & CT_FN_PLT) && pf->noreturn == CT_NORETURN_ENDS;
		for (size_t i = 0; i < fs->nexits; i++)
			if (!(ends && fs->exits[i].kind == CT_SITE_TAIL) && !add_exit(p, &fs->exits[i], j, gsrc))
				return -1;
		/* where a call that went on in untraced code (a tail jump) ends:
		 * a return site that closes the call opened at the entry */
		for (size_t k = 0; pf->return_sites && k < pf->ncalls; k++) {
			struct ct_callsite *cs = &pf->calls[k];
			if (cs->walk.traps || pf->noreturn) { /* (it never returns there: no probe would be hit) */
				cs->exit_site = CT_NOSITE;
				continue;
			}
			if (cs->how == CT_EXIT_VIA) { /* (chosen before its RETs were kept) */
				cs->how = CT_EXIT_STEPPED;
				cs->exit = cs->walk.first_site;
				cs->sp_delta = 0;
			}
			struct ct_plan_site *s = add_site(p, cs->exit, j, CT_SITE_RETSITE, 0, gsrc_of(t, cs->caller));
			if (!s)
				return -1;
			s->key_adj = 8 + cs->sp_delta; /* the callee's SP + 8, SP moved as far on the way */
			s->call_site = cs->call_site = entry;
			s->cs = cs;
			if (cs->how == CT_EXIT_STEPPED && !cs->walk.first_emulated)
				s->flags |= CT_SITEF_STEPPED;
			cs->exit_site = (uint32_t)(p->sites.n - 1);
		}
		return 0;
	}
	/* Its own cheap entry catches calls from anywhere else (only where the
	 * kernel emulates it: a single-step there would cost what was saved),
	 * or its single-stepped one when its address is taken: there is no
	 * other place to see those calls, and that entry hit then sends every
	 * call, in place of the emulated CALL sites (its RETs are saved). */
	uint8_t check_stepped = fs->entry_emulated || pf->check_walk ? 0 : CT_SITEF_STEPPED;
	/* (or after the prologue, where the kernel emulates one: callers.c) */
	uint64_t check_at = pf->check_walk ? pf->check_walk->site : fs->entry_site;
	if (fs->entry_emulated || pf->indirect || pf->slot_called) {
		pf->check_site = (uint32_t)p->sites.n;
		struct ct_plan_site *cs = add_site(p, check_at, j, CT_SITE_CHECK, 0, gsrc);
		if (!cs)
			return -1;
		cs->flags |= check_stepped;
		cs->sp_drop = pf->check_walk ? (uint32_t)-pf->check_walk->sp_delta : 0;
		if (pf->indirect)
			cs->flags |= CT_SITEF_INDIRECT;
	}
	/* A tail jump hands the call over to its target: a traced one enters
	 * at the same key (a tail call); untraced code returns to the return
	 * site (and if a traced function enters at the same key first, the
	 * call ended at the jump).  A PLT stub is that jump alone, entered
	 * only by the planned calls: its jump is a role of each call's probe
	 * (the same instant), not a single-stepped hit of its own.  Not that
	 * of a function that ends the process or thread (exit@plt): no probe
	 * sees its end, so the jump would end the call there, unobserved, and
	 * what runs inside it (atexit handlers, destructors) would follow it
	 * as its siblings; without, it stays open around them until the
	 * process ends (plan_noreturn). */
	bool stub = stub_jumps_at_once(pf, fs);
	bool tail_at_calls = stub && pf->noreturn != CT_NORETURN_ENDS;
	for (size_t i = 0; i < fs->nexits && !stub; i++)
		if (fs->exits[i].kind == CT_SITE_TAIL && !add_exit(p, &fs->exits[i], j, gsrc))
			return -1;
	/* With a CHECK, its morestack restart re-runs it: say so, as at an
	 * ENTRY (a CALL the CHECK sends twice is one call). */
	for (size_t i = 0; i < fs->nexits && pf->check_site != CT_NOSITE; i++)
		if (fs->exits[i].kind == CT_SITE_RESTART &&
		    !add_site(p, fs->exits[i].addr, j, CT_SITE_RESTART, fs->exits[i].target, gsrc))
			return -1;
	/* (called by a compiler's wrapper, where it returns to: those places
	 * are found while recording, as an address-taken function's callers) */
	bool via = false;
	for (size_t k = 0; k < pf->ncalls; k++)
		via |= pf->calls[k].how == CT_EXIT_VIA;
	size_t nrets = 0;
	for (size_t i = 0; i < fs->nexits && (pf->indirect || via); i++)
		nrets += fs->exits[i].kind == CT_SITE_RET;
	if (nrets > pf->rets.cap - pf->rets.n) { /* (as many: most have one or two) */
		pf->rets.cap = pf->rets.n + nrets;
		pf->rets.v = xrealloc(pf->rets.v, pf->rets.cap * sizeof(*pf->rets.v));
	}
	for (size_t i = 0; i < fs->nexits && (pf->indirect || via); i++)
		if (fs->exits[i].kind == CT_SITE_RET)
			CT_VEC_PUSH(pf->rets, fs->exits[i].addr);
	/* Each first call from a call site found while recording would end
	 * unobserved (a server's first request through its handler: the one
	 * a user sends to see it; urfave/cli's FlagNames from each generic
	 * Names wrapper's caller, 77 calls in lefthook 2.2.2's `version`):
	 * until the callers it has are found, its RETs see those calls end.
	 * Interim RETs: a single-step each call, a call another probe sees end
	 * is left to that one; taken out once that is all they see (session.c
	 * settle_interim). */
	if (pf->check_site != CT_NOSITE && (pf->indirect || via) && p->interim_rets && pf->rets.n) {
		for (size_t k = 0; k < pf->rets.n; k++) {
			struct ct_plan_site *rs = add_site(p, pf->rets.v[k], j, CT_SITE_RET, 0, gsrc);
			if (!rs)
				return -1;
			rs->interim = true;
		}
		pf->interim = true;
		p->interim_funcs++;
	}
	for (size_t k = 0; k < pf->ncalls; k++) {
		struct ct_callsite *cs = &pf->calls[k];
		uint8_t cg = gsrc_of(t, cs->caller);
		if (cs->how == CT_EXIT_VIA && pf->check_site == CT_NOSITE) {
			/* no CHECK to look the call up again where its caller
			 * returns to: at the return address, as before */
			cs->how = CT_EXIT_STEPPED;
			cs->exit = cs->walk.first_site;
			cs->sp_delta = 0;
		}
		struct ct_plan_site *s = add_site(p, cs->at, j, CT_SITE_CALL, 0, cg);
		if (!s)
			return -1;
		s->key_adj = 8; /* the return address the call pushes */
		s->cs = cs;
		if (cs->icall) /* through an address: its call is marked so, as one found while recording */
			s->flags |= CT_SITEF_INDIRECT;
		cs->call_site = (uint32_t)(p->sites.n - 1);
		if (pf->check_site != CT_NOSITE) {
			/* The CHECK (emulated, SP 8 lower: the callee's key
			 * already) sends this call as the CALL site's event:
			 * one hit a call instead of two. */
			s->flags |= CT_SITEF_ATCHECK | check_stepped; /* its hit's cost */
			struct ct_plan_planned pl = {CT_PLANNED_KEY(pf->check_site, (int64_t)(cs->ret - check_at)),
						     {.site = cs->call_site, .key_delta = -s->key_adj,
						      .via = cs->how == CT_EXIT_VIA ? 8 + (uint32_t)cs->sp_delta : 0}};
			CT_VEC_PUSH(p->planned, pl);
		}
		if (tail_at_calls) {
			struct ct_plan_site *tj = add_site(p, cs->at, j, CT_SITE_TAIL, fs->exits[0].target, cg);
			if (!tj)
				return -1;
			tj->key_adj = 8; /* the stub's frame: the CALL's */
			tj->at_call = true;
			s = &p->sites.v[cs->call_site];
		}
		if (cs->how == CT_EXIT_VIA) {
			cs->exit_site = CT_NOSITE; /* where its caller returns to, found while recording */
			continue;
		}
		if (cs->walk.traps || pf->noreturn) { /* (never hit: it does not return there) */
			cs->exit_site = CT_NOSITE;
			continue;
		}
		if (cs->how == CT_EXIT_TAILPOS) {
			s->flags |= CT_SITEF_TAILPOS;
			/* its results: a role of each exit probe of its caller's calls */
			const struct ct_plan_func *pc = cs->tail_results ? &p->funcs.v[cs->tail_caller] : NULL;
			for (size_t m = 0; pc && m < pc->ncalls; m++) {
				struct ct_callsite *cc = &pc->calls[m];
				if (cc->how == CT_EXIT_TAILPOS)
					continue; /* its recursive call: ends at the others' */
				struct ct_plan_site *r = add_site(p, cc->exit, j, CT_SITE_TAILRES, 0, gsrc_of(t, cc->caller));
				if (!r)
					return -1;
				r->key_adj = 8 + cc->sp_delta;
				r->call_site = cs->call_site;
				r->cs = cc; /* its results are read as the caller's are there */
				r->flags |= cc->how == CT_EXIT_STEPPED ? CT_SITEF_STEPPED : 0;
			}
			if (cs->tail_less_prev) {
				struct ct_plan_site *d = add_site(p, cs->at, j, CT_SITE_TAILDIFF, 0, cg);
				if (!d)
					return -1;
				d->call_site = cs->call_site;
				d->cs = cs;
			}
			continue;
		}
		size_t shared = cs->shared ? (size_t)(uintptr_t)map_get(&p->shared_exits, cs->exit) : 0;
		if (shared) { /* closes any call made by that call instruction */
			cs->exit_site = (uint32_t)(shared - 1);
			continue;
		}
		s = add_site(p, cs->exit, j, CT_SITE_RETSITE, 0, cg);
		if (!s)
			return -1;
		s->key_adj = 8 + cs->sp_delta;
		s->call_site = cs->call_site;
		s->cs = cs;
		if (cs->how == CT_EXIT_STEPPED)
			s->flags |= CT_SITEF_STEPPED;
		if (cs->icall) { /* one of the exits of an indirect call instruction */
			s->flags |= CT_SITEF_INDIRECT;
			if (cs->rides_on)
				s->rides = p->funcs.v[cs->rides_on - 1].calls[cs->rides_k].exit_site;
		}
		cs->exit_site = (uint32_t)(p->sites.n - 1);
		if (cs->shared)
			map_put(&p->shared_exits, cs->exit, (void *)(uintptr_t)p->sites.n);
	}
	return 0;
}

/* Room in the site table for all emit_function will add (at most: room a
 * page of which is never written costs no memory), then some: doubling
 * left a copy of each size behind (restic's 221,152 sites: 8, 4, 2... MB of
 * heap), and would copy the whole table again for a few sites more.  The
 * table is cut to size when the plan is built (fit_sites). */
static void reserve_sites(struct ct_plan *p, const struct ct_fn_sites *found)
{
	size_t n = p->sites.n + 64, calls = 0;
	for (size_t j = 0; j < p->funcs.n; j++) {
		const struct ct_plan_func *pf = &p->funcs.v[j];
		n += 1 + 2 * found[j].nexits + 3 * pf->ncalls; /* (interim RETs: among its exits) */
		calls += pf->ncalls;
		for (size_t k = 0; k < pf->ncalls; k++) /* TAILRES: one at each exit of its caller's calls */
			if (pf->calls[k].how == CT_EXIT_TAILPOS && pf->calls[k].tail_results)
				n += p->funcs.v[pf->calls[k].tail_caller].ncalls;
	}
	if (n > p->sites.cap) {
		p->sites.v = xrealloc(p->sites.v, n * sizeof(*p->sites.v));
		p->sites.cap = n;
	}
	/* (and the planned calls' entries, one each at most) */
	if (p->planned.n + calls > p->planned.cap) {
		p->planned.cap = p->planned.n + calls;
		p->planned.v = xrealloc(p->planned.v, p->planned.cap * sizeof(*p->planned.v));
	}
}

/* The site table cut to what the plan has, and room for the sites found
 * while recording: those of a run are a few hundred. */
static void fit_sites(struct ct_plan *p)
{
	size_t cap = p->sites.n + p->sites.n / 16 + 256;
	if (cap < p->sites.cap) {
		p->sites.v = xrealloc(p->sites.v, cap * sizeof(*p->sites.v));
		p->sites.cap = cap;
	}
}

/* Order of the roles of one probe: closing the call that just returned
 * comes first, opening the next call last.  A function's own entry comes
 * before its exits: a function whose first instruction is a RET or its tail
 * jump (`bar: jmp usleep@plt`) has both at one address. */
static int role_rank(const struct ct_plan_site *s)
{
	if (s->at_call)
		return 9; /* the jump the called PLT stub makes: after the call */
	switch (s->kind) {
	case CT_SITE_RETSITE:
		return 0;
	case CT_SITE_TAILRES: /* after the exit it rides on (never a probe itself) */
	case CT_SITE_CATCH:   /* what was unwound, before __cxa_begin_catch's own call */
		return 1;
	case CT_SITE_ENTRY:
		return 2;
	case CT_SITE_CHECK:
		return 3;
	case CT_SITE_RET:
		return 4;
	case CT_SITE_TAIL:
		return 5;
	case CT_SITE_RESTART:
		return 6;
	case CT_SITE_GOEXIT:
	case CT_SITE_RECOVER:
	case CT_SITE_DEFERRET:
	case CT_SITE_GOREADY:
		return 7;
	default: /* CALL */
		return 8;
	}
}

struct role_ref {
	uint64_t addr;
	int rank;
	uint32_t site;
};

static int cmp_role(const void *x, const void *y)
{
	const struct role_ref *a = x, *b = y;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank - b->rank;
	return a->site < b->site ? -1 : a->site > b->site;
}

void ct_plan_link_roles(struct ct_plan *p)
{
	size_t n = p->sites.n;
	struct role_ref *r = xcalloc(n ? n : 1, sizeof(*r));
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		struct ct_plan_site *s = &p->sites.v[i];
		s->next = CT_NOSITE;
		s->flags &= (uint16_t)~CT_SITEF_COMPANION;
		/* a RETSITE riding on another's probe (plan_indirect_sites: the
		 * same program reads its results there) is no role of it */
		if (s->rides != CT_NOSITE && p->sites.v[s->rides].addr != s->addr)
			s->rides = CT_NOSITE;
		if (s->rides != CT_NOSITE)
			s->flags |= CT_SITEF_COMPANION; /* no chain names it */
		else if (!(s->flags & CT_SITEF_ATCHECK) && s->kind != CT_SITE_TAILDIFF && !s->interim) /* no probe, no role in one; an interim RET's is its own */
			r[nr++] = (struct role_ref){s->addr, role_rank(s), (uint32_t)i};
	}
	n = nr;
	qsort(r, n, sizeof(*r), cmp_role);
	for (size_t i = 0; i < n;) {
		size_t e = i + 1;
		while (e < n && r[e].addr == r[i].addr)
			e++;
		for (size_t k = i; k + 1 < e; k++) {
			p->sites.v[r[k].site].next = r[k + 1].site;
			p->sites.v[r[k + 1].site].flags |= CT_SITEF_COMPANION;
		}
		i = e;
	}
	free(r);
}

bool ct_site_is_probe(const struct ct_plan_site *s)
{
	return !(s->flags & (CT_SITEF_COMPANION | CT_SITEF_ATCHECK)) && s->kind != CT_SITE_TAILDIFF;
}

/* At most this many return addresses are checked, over all tail jumps of a
 * plan (a map entry each); a function past it keeps the jump pending. */
#define TAIL_WATCH_MAX (1u << 18)

struct tail_edge {
	uint32_t to, from; /* FROM tail-jumps to traced TO */
};

static int cmp_tail_edge(const void *x, const void *y)
{
	const struct tail_edge *a = x, *b = y;
	return a->to != b->to ? (a->to < b->to ? -1 : 1) : (a->from > b->from) - (a->from < b->from);
}

/* A C function's tail jump to untraced code hands the call over to code
 * that returns to its caller: a probe sees the call end only at the return
 * address of a planned call of it, or of a function that tail-jumped to it
 * (the same call goes on).  Each such function's list of those addresses
 * (pf->tail_watch), which its jump's probe checks the return address
 * against (CT_COOKIE_RETCHECK): elsewhere (a call from another module, the
 * loader's call of a constructor) the call's end will not be seen. */
static void plan_tail_watch(struct ct_plan *p)
{
	size_t n = p->funcs.n, total = 0;
	CT_VEC(struct tail_edge) edges = {0};
	bool *out = xcalloc(n ? n : 1, sizeof(*out));
	for (size_t i = 0; i < p->sites.n; i++) {
		const struct ct_plan_site *s = &p->sites.v[i];
		if (s->kind != CT_SITE_TAIL || s->func == CT_NOFUNC || s->at_call)
			continue; /* (at a planned call: its return address is watched) */
		if (s->target_func != CT_NOFUNC) {
			struct tail_edge e = {s->target_func, s->func};
			CT_VEC_PUSH(edges, e);
		} else if (!(p->funcs.v[s->func].fn->flags & CT_FN_GO)) {
			out[s->func] = true;
		}
	}
	if (edges.n) /* (qsort of NULL is undefined, even of nothing) */
		qsort(edges.v, edges.n, sizeof(*edges.v), cmp_tail_edge);
	uint32_t *seen = xcalloc(n ? n : 1, sizeof(*seen)), *queue = xcalloc(n ? n : 1, sizeof(*queue));
	for (size_t j = 0; j < n; j++) {
		if (!out[j])
			continue;
		struct ct_plan_func *pf = &p->funcs.v[j];
		size_t head = 0, tail = 0;
		queue[tail++] = (uint32_t)j;
		seen[j] = (uint32_t)j + 1;
		while (head < tail) {
			uint32_t f = queue[head++];
			for (size_t k = 0; k < p->funcs.v[f].watched.n; k++)
				CT_VEC_PUSH(pf->tail_watch, p->funcs.v[f].watched.v[k]);
			/* the functions that tail-jump to f */
			size_t lo = 0, hi = edges.n;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (edges.v[mid].to < f)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < edges.n && edges.v[lo].to == f; lo++)
				if (seen[edges.v[lo].from] != j + 1) {
					seen[edges.v[lo].from] = (uint32_t)j + 1;
					queue[tail++] = edges.v[lo].from;
				}
		}
		pf->tail_checked = total + pf->tail_watch.n <= TAIL_WATCH_MAX;
		if (pf->tail_checked)
			total += pf->tail_watch.n;
		else
			CT_VEC_FREE(pf->tail_watch);
	}
	free(seen);
	free(queue);
	free(out);
	CT_VEC_FREE(edges);
}

/* The function whose tail jump to untraced code probe site I checks the
 * return address of, or CT_NOFUNC. */
static uint32_t tail_checked_func(const struct ct_plan *p, size_t i)
{
	for (size_t k = i; k != CT_NOSITE && k < p->sites.n; k = p->sites.v[k].next) {
		const struct ct_plan_site *s = &p->sites.v[k];
		if (k == i && s->kind == CT_SITE_CHECK)
			return CT_NOFUNC; /* it looks the caller up already: an unplanned call never returns */
		if (s->kind == CT_SITE_TAIL && s->target_func == CT_NOFUNC && s->func != CT_NOFUNC &&
		    p->funcs.v[s->func].tail_checked)
			return s->func;
	}
	return CT_NOFUNC;
}

bool ct_plan_tail_check(const struct ct_plan *p, size_t i, const uint64_t **rets, size_t *n)
{
	uint32_t f = tail_checked_func(p, i);
	if (f == CT_NOFUNC)
		return false;
	*rets = p->funcs.v[f].tail_watch.v;
	*n = p->funcs.v[f].tail_watch.n;
	return true;
}

struct ct_tail_ends *ct_plan_tail_ends(const struct ct_plan *p)
{
	size_t n = p->funcs.n;
	struct ct_tail_ends *e = xcalloc(n ? n : 1, sizeof(*e));
	CT_VEC(struct tail_edge) edges = {0};
	for (size_t j = 0; j < n; j++)
		e[j].entry = CT_NOSITE;
	for (size_t i = 0; i < p->sites.n; i++) {
		const struct ct_plan_site *s = &p->sites.v[i];
		if (s->func == CT_NOFUNC)
			continue;
		if (s->kind == CT_SITE_ENTRY && e[s->func].entry == CT_NOSITE)
			e[s->func].entry = (uint32_t)i;
		if (s->kind == CT_SITE_TAIL && s->target_func != CT_NOFUNC) {
			struct tail_edge t = {s->target_func, s->func};
			CT_VEC_PUSH(edges, t);
		}
		uint32_t f = ct_site_is_probe(s) ? tail_checked_func(p, i) : CT_NOFUNC;
		if (f != CT_NOFUNC)
			CT_VEC_PUSH(e[f].probes, (uint32_t)i);
	}
	/* each function's, then those of the functions it tail-jumps to */
	uint32_t *seen = xcalloc(n ? n : 1, sizeof(*seen)), *queue = xcalloc(n ? n : 1, sizeof(*queue));
	for (size_t j = 0; j < n; j++) {
		if (e[j].entry == CT_NOSITE)
			continue;
		size_t head = 0, tail = 0;
		queue[tail++] = (uint32_t)j;
		seen[j] = (uint32_t)j + 1;
		CT_VEC(uint32_t) probes = {0};
		while (head < tail) {
			uint32_t f = queue[head++];
			for (size_t k = 0; k < e[f].probes.n && f != j; k++)
				CT_VEC_PUSH(probes, e[f].probes.v[k]);
			if (f != j && e[f].entry != CT_NOSITE)
				CT_VEC_PUSH(e[j].funcs, f);
			for (size_t k = 0; k < edges.n; k++)
				if (edges.v[k].from == f && seen[edges.v[k].to] != j + 1) {
					seen[edges.v[k].to] = (uint32_t)j + 1;
					queue[tail++] = edges.v[k].to;
				}
		}
		for (size_t k = 0; k < probes.n; k++)
			CT_VEC_PUSH(e[j].probes, probes.v[k]);
		CT_VEC_FREE(probes);
	}
	free(seen);
	free(queue);
	CT_VEC_FREE(edges);
	return e;
}

void ct_plan_tail_ends_free(struct ct_tail_ends *e, size_t n)
{
	for (size_t j = 0; e && j < n; j++) {
		CT_VEC_FREE(e[j].probes);
		CT_VEC_FREE(e[j].funcs);
	}
	free(e);
}

/* Each function's tail jumps: the functions they go to, the probe sites
 * that check the return address when they go to untraced code. */
struct ct_tail_index {
	CT_VEC(uint32_t) *to, *probes; /* per function */
};

static struct ct_tail_index *tail_index(struct ct_plan *p)
{
	if (p->tail_index)
		return p->tail_index;
	struct ct_tail_index *x = xcalloc(1, sizeof(*x));
	size_t n = p->funcs.n ? p->funcs.n : 1;
	x->to = xcalloc(n, sizeof(*x->to));
	x->probes = xcalloc(n, sizeof(*x->probes));
	for (size_t i = 0; i < p->sites.n; i++) {
		const struct ct_plan_site *s = &p->sites.v[i];
		if (s->kind == CT_SITE_TAIL && s->func < p->funcs.n && s->target_func < p->funcs.n)
			CT_VEC_PUSH(x->to[s->func], s->target_func);
		uint32_t f = ct_site_is_probe(s) ? tail_checked_func(p, i) : CT_NOFUNC;
		if (f < p->funcs.n)
			CT_VEC_PUSH(x->probes[f], (uint32_t)i);
	}
	return p->tail_index = x;
}

static void tail_index_free(struct ct_tail_index *x, size_t n)
{
	for (size_t j = 0; x && j < n; j++) {
		CT_VEC_FREE(x->to[j]);
		CT_VEC_FREE(x->probes[j]);
	}
	if (x) {
		free(x->to);
		free(x->probes);
	}
	free(x);
}

size_t ct_plan_tail_probes_of(struct ct_plan *p, uint32_t func, uint32_t **out)
{
	*out = NULL;
	if (func >= p->funcs.n)
		return 0;
	const struct ct_tail_index *x = tail_index(p);
	CT_VEC(uint32_t) probes = {0}, queue = {0};
	struct ct_map seen = {0};
	CT_VEC_PUSH(queue, func);
	map_put(&seen, (uint64_t)func + 1, (void *)1);
	for (size_t head = 0; head < queue.n && head < 64; head++) {
		uint32_t f = queue.v[head];
		for (size_t k = 0; k < x->probes[f].n; k++)
			CT_VEC_PUSH(probes, x->probes[f].v[k]);
		for (size_t k = 0; k < x->to[f].n; k++)
			if (!map_get(&seen, (uint64_t)x->to[f].v[k] + 1)) {
				map_put(&seen, (uint64_t)x->to[f].v[k] + 1, (void *)1);
				CT_VEC_PUSH(queue, x->to[f].v[k]);
			}
	}
	map_free(&seen);
	CT_VEC_FREE(queue);
	*out = probes.v;
	return probes.n;
}

size_t ct_plan_tail_check_entries(const struct ct_plan *p)
{
	size_t total = 0;
	for (size_t i = 0; i < p->sites.n; i++) {
		const uint64_t *rets;
		size_t n;
		if (ct_site_is_probe(&p->sites.v[i]) && ct_plan_tail_check(p, i, &rets, &n))
			total += n;
	}
	return total;
}

bool ct_plan_names_selected(const struct ct_target *t, const struct ct_func *f, const struct ct_selection *sel)
{
	if (sel->go_parks && t->lang == CT_LANG_GO && !strcmp(f->name, CT_GO_GOPARK))
		return true; /* (asked for by name: -N does not take it out) */
	bool sel_ok = sel->ntrace ? matches_any(f, sel->trace, sel->ntrace, !(f->flags & CT_FN_PLT))
				  : ct_plan_default_selected(t, f);
	return sel_ok && !matches_any(f, sel->exclude, sel->nexclude, true);
}

/* Whether SEL picks F (not yet known: whether it can be probed). */
static bool selected(const struct ct_target *t, const struct ct_func *f, const struct ct_selection *sel)
{
	return !(f->flags & (CT_FN_NOPROBE | CT_FN_WRAPPER)) && ct_plan_names_selected(t, f, sel);
}

#define HUGE_PAGE_PLAN_FUNCS 5000

int ct_plan_build(struct ct_plan *p, const struct ct_target *t, const struct ct_selection *sel)
{
	/* (a process's program, record -p, is opened as /proc/PID/exe: its
	 * messages name the file that is, which `calltrace list` can open
	 * after the process is gone too) */
	char shown_buf[PATH_MAX];
	const char *shown = ct_program_path(t->elf.path, shown_buf, sizeof(shown_buf));
	memset(p, 0, sizeof(*p));
	p->t = t;
	p->exits = sel->exits;
	p->interim_rets = sel->exits == CT_EXITS_AUTO && !sel->fixed_sites && !sel->limits && !sel->no_interim;
	p->no_spills = sel->limits;
	/* Exact names (no wildcard) the user asked for must exist. */
	for (size_t i = 0; !sel->lenient && i < sel->ntrace; i++) {
		const char *g = sel->trace[i];
		if (is_glob(g))
			continue;
		bool found = false;
		for (size_t j = 0; j < t->nfuncs && !found; j++)
			if (ct_names_equal(&t->funcs[j].dm, t->funcs[j].name, g)) {
				found = true;
				if (t->funcs[j].flags & CT_FN_NOPROBE)
					return ct_fail("%s switches stacks or runs without a goroutine; it cannot be traced",
						       g);
				if (t->funcs[j].flags & CT_FN_WRITABLE)
					return ct_fail("%s is in a writable segment of %s, where the kernel puts no probe; "
						       "it cannot be traced (link its code into a read-only segment)",
						       g, shown);
			}
		GElf_Sym sym;
		if (!found && ct_elf_symbol(&t->elf, g, &sym) && GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC)
			return ct_fail("%s in %s is an IFUNC: the loader picks one of its variants when the program starts; "
				       "trace those, see: calltrace list %s '*%s*'", g, shown, shown, g);
		if (!found)
			return ct_fail("no function named %s in %s; see: calltrace list %s", g, shown, shown);
	}
	if (sel->go_parks && !sel->lenient) {
		bool has = false;
		for (size_t j = 0; j < t->nfuncs && !has; j++)
			has = !strcmp(t->funcs[j].name, CT_GO_GOPARK) && (t->funcs[j].flags & CT_FN_GO);
		if (!has)
			ct_warn("--parks: %s has no runtime.gopark of gc's Go runtime (%s): no goroutine waits to show",
				shown, t->gccgo ? "gccgo's runtime parks goroutines in libgo, traced as threads" : "not a Go program");
	}
	bool *picked = xcalloc(t->nfuncs ? t->nfuncs : 1, sizeof(*picked));
	CT_VEC(uint64_t) entries = {0};
	for (size_t j = 0; j < t->nfuncs; j++) {
		const struct ct_func *f = &t->funcs[j];
		if ((picked[j] = selected(t, f, sel) && !(f->flags & CT_FN_WRITABLE)))
			CT_VEC_PUSH(entries, f->entry);
		else if ((f->flags & CT_FN_WRITABLE) && selected(t, f, sel)) {
			struct ct_plan_skip sk = {f, xstrdup("in a writable segment, where the kernel puts no probe")};
			CT_VEC_PUSH(p->skipped, sk);
		}
	}
	/* A big plan's heap in huge pages (util.c): lefthook's -F '*' (11,517
	 * functions) plans in 0.65 s instead of 0.84, for ~7 MB more.  Not a
	 * small one's: 2,000 functions (make bench's 14,589 sites) gained
	 * nothing measurable and took ~10 MB more while recording (84 MB
	 * against 74: more than make bench's goal for the tracer). */
	if (entries.n >= HUGE_PAGE_PLAN_FUNCS)
		ct_heap_in_huge_pages();
	/* Calls seen from the caller: the scan of the whole binary's code for
	 * references to these starts now, on another thread. */
	struct ct_code_scan *scan = NULL;
	if (sel->exits != CT_EXITS_RET && !t->gccgo)
		scan = ct_code_scan_start(t, entries.v, entries.n);
	CT_VEC_FREE(entries);
	struct ct_map planned = {0}; /* entries already planned: aliases probe once */
	struct ct_cfi *cfi = t->lang == CT_LANG_C ? ct_cfi_open(&t->elf) : NULL;
	CT_VEC(struct ct_fn_sites) found = {0};
	/* (room for every one at once: doubling left a copy of each size
	 * behind, ~10 MB of heap for restic's 17,609 functions) */
	size_t npicked = 0;
	for (size_t j = 0; j < t->nfuncs; j++)
		npicked += picked[j];
	CT_VEC_GROW(p->funcs, npicked);
	CT_VEC_GROW(found, npicked);
	for (size_t j = 0; j < t->nfuncs; j++) {
		const struct ct_func *f = &t->funcs[j];
		if (!picked[j] || map_get(&planned, f->entry + 1))
			continue;
		map_put(&planned, f->entry + 1, (void *)1);
		struct ct_fn_sites fs;
		if (find_sites(t, f, cfi, &fs)) {
			bool exact = false;
			for (size_t i = 0; i < sel->ntrace; i++)
				exact |= ct_names_equal(&f->dm, f->name, sel->trace[i]);
			if (exact) {
				ct_code_scan_free(scan);
				ct_cfi_free(cfi);
				free(picked);
				map_free(&planned);
				for (size_t k = 0; k < found.n; k++)
					ct_fn_sites_free(&found.v[k]);
				CT_VEC_FREE(found);
				ct_plan_free(p);
				return -1;
			}
			ct_debug("skipping %s", ct_error());
			const char *why = ct_error(), *colon = strstr(why, " cannot be probed: ");
			struct ct_plan_skip sk = {f, xstrdup(colon ? colon + 19 : why)};
			CT_VEC_PUSH(p->skipped, sk);
			continue;
		}
		struct ct_plan_func pf = {0};
		pf.fn = f;
		pf.entry_site = fs.entry_site;
		pf.entry_emulated = fs.entry_emulated;
		pf.entry_optimized = fs.entry_optimized;
		pf.falls_through = fs.falls_through;
		pf.nexits = (uint32_t)fs.nexits;
		pf.check_site = CT_NOSITE;
		pf.spill_site = CT_NOSITE;
		pf.results = sel->args && ct_plan_wants_results(p, sel->args, f);
		if (sel->go_parks && !strcmp(f->name, CT_GO_GOPARK)) {
			struct ct_selection asked = *sel;
			asked.go_parks = false;
			pf.parks_only = !ct_plan_names_selected(t, f, &asked);
		}
		CT_VEC_PUSH(p->funcs, pf);
		CT_VEC_PUSH(found, fs);
	}
	ct_cfi_free(cfi);
	map_free(&planned);
	free(picked);
	if (!p->funcs.n) {
		ct_code_scan_free(scan);
		CT_VEC_FREE(found);
		ct_plan_free(p);
		if (!t->nfuncs) { /* its libraries' may be chosen (LIB:GLOB): not here */
			char dpath[PATH_MAX], where[3 * PATH_MAX];
			ct_debug_file_find(t->elf.elf, t->elf.path, dpath, sizeof(dpath), where, sizeof(where));
			/* a statically linked program (ldconfig) loads no library
			 * whose functions -F 'LIB:GLOB' could name */
			GElf_Shdr interp;
			bool dynamic = ct_elf_section(&t->elf, ".interp", &interp, NULL);
			return ct_fail("%s has no function symbols: it is stripped, and no separate debug file was found%s%s%s; install its debug symbols (Debian: its -dbgsym package)%s rebuild it without -s%s",
				       shown, where[0] ? " (none at " : "", where, where[0] ? ")" : "",
				       dynamic ? "," : " or",
				       dynamic ? ", or trace its libraries' functions (-F 'LIB:GLOB')" : "");
		}
		if (sel->ntrace) {
			char pats[512] = "";
			for (size_t i = 0; i < sel->ntrace; i++)
				snprintf(pats + strlen(pats), sizeof(pats) - strlen(pats), "%s'%s'",
					 i ? ", " : "", sel->trace[i]);
			return ct_fail("no traceable function matches %s in %s; see: calltrace list %s", pats, shown,
				       shown);
		}
		return ct_fail("no traceable function in %s%s; choose some with -F GLOB (see: calltrace list %s)",
			       shown,
			       t->lang == CT_LANG_GO || t->gccgo ? " (nothing in package main or the main module)" : "",
			       shown);
	}
	ct_callers_plan(p, found.v, sel, scan);
	ct_code_scan_free(scan);
	plan_noreturn(p, found.v);
	/* What working out the callers took and gave back is holes in the
	 * heap now, which the site table, in one piece, does not fit: their
	 * pages go back (restic's list -v: 89 -> 84 MB at the most). */
	if (p->funcs.n >= HUGE_PAGE_PLAN_FUNCS)
		malloc_trim(0);
	struct ct_map by_entry = {0};
	for (size_t j = 0; j < p->funcs.n; j++)
		map_put(&by_entry, p->funcs.v[j].fn->entry, (void *)(uintptr_t)(j + 1));
	reserve_sites(p, found.v);
	int rc = 0;
	for (size_t j = 0; j < p->funcs.n && rc == 0; j++) {
		rc = emit_function(p, (uint32_t)j, &found.v[j]);
		if (found.v[j].entry_optimized)
			p->trapless_entries++;
		if (found.v[j].entry_emulated)
			p->cheap_entries++;
		else
			p->slow_entries++;
	}
	for (size_t k = 0; k < found.n; k++)
		ct_fn_sites_free(&found.v[k]);
	CT_VEC_FREE(found);
	if (rc) {
		map_free(&by_entry);
		ct_plan_free(p);
		return -1;
	}
	/* Resolve tail-jump targets to traced functions (also through the PLT). */
	for (size_t i = 0; i < p->sites.n; i++) {
		struct ct_plan_site *s = &p->sites.v[i];
		size_t j = s->kind == CT_SITE_TAIL ? ct_plan_traced_at(p, &by_entry, s->target_addr) : 0;
		if (j)
			s->target_func = (uint32_t)(j - 1);
	}
	map_free(&by_entry);
	for (size_t k = 0; k < p->planned.n; k++)
		ct_plan_call_caller(p, p->planned.v[k].val.site, &p->planned.v[k].val);
	plan_tail_watch(p);
	if (t->lang == CT_LANG_GO) {
		/* Goroutine ends: lets reconstruction close frames left by Goexit. */
		add_marker(p, CT_GO_GOEXIT1, CT_SITE_GOEXIT);
		/* A recovered panic resumes a frame at its deferreturn call, which
		 * may be a return site: the markers say so (not under record-time
		 * limits, whose kernel-side stacks do not follow them). */
		if (sel->go_markers) {
			add_marker(p, CT_GO_RECOVERY, CT_SITE_RECOVER);
			add_marker(p, CT_GO_DEFERRETURN, CT_SITE_DEFERRET);
		}
		if (sel->go_scheduler)
			add_scheduler_markers(p);
	}
	/* A C++ handler begins: what it caught unwound the frames deeper
	 * than the catching one, traced code or not (with a library's own
	 * libstdc++, ct_plan_catch_only plans it there). */
	if (sel->catch_marker)
		add_marker(p, CT_CXA_BEGIN_CATCH, CT_SITE_CATCH);
	ct_plan_ahead_entries(p, sel);
	ct_plan_link_roles(p);
	ct_plan_goroutines(p);
	fit_sites(p);
	p->built_sites = p->sites.n;
	return 0;
}

int ct_plan_catch_only(struct ct_plan *p, const struct ct_target *t)
{
	memset(p, 0, sizeof(*p));
	p->t = t;
	p->exits = CT_EXITS_AUTO;
	add_marker(p, CT_CXA_BEGIN_CATCH, CT_SITE_CATCH);
	ct_plan_link_roles(p);
	ct_plan_goroutines(p);
	fit_sites(p);
	p->built_sites = p->sites.n;
	if (!p->sites.n) {
		ct_plan_free(p);
		return ct_fail("no %s to probe in %s", CT_CXA_BEGIN_CATCH, t->elf.path);
	}
	return 0;
}

void ct_plan_free(struct ct_plan *p)
{
	ct_pads_free(p->pads);
	p->pads = NULL;
	tail_index_free(p->tail_index, p->funcs.n);
	p->tail_index = NULL;
	if (p->fetch)
		for (size_t i = 0; i < p->sites.n; i++)
			ct_plan_fetch_drop(p, p->fetch[i]);
	free(p->fetch);
	p->fetch = NULL;
	if (p->types)
		ct_types_close(p->types);
	p->types = NULL;
	for (size_t i = 0; i < p->skipped.n; i++)
		free(p->skipped.v[i].why);
	CT_VEC_FREE(p->skipped);
	for (size_t j = 0; j < p->funcs.n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		free(pf->why);
		free(pf->calls);
		free(pf->check_walk);
		CT_VEC_FREE(pf->rets);
		CT_VEC_FREE(pf->watched);
		CT_VEC_FREE(pf->tail_watch);
		ct_plan_fetch_drop(p, pf->args_view);
		ct_plan_fetch_drop(p, pf->results_view);
	}
	CT_VEC_FREE(p->funcs);
	CT_VEC_FREE(p->sites);
	CT_VEC_FREE(p->planned);
	for (size_t i = 0; i < p->found_calls.n; i++)
		free(p->found_calls.v[i]);
	CT_VEC_FREE(p->found_calls);
	CT_VEC_FREE(p->tail_users);
	map_free(&p->tail_users_of);
	map_free(&p->plt_traced);
	CT_VEC_FREE(p->unproven);
	map_free(&p->shared_exits);
	MAP_FOREACH(&p->ahead_walks, i)
	{
		free(p->ahead_walks.vals[i]);
	}
	map_free(&p->ahead_walks);
	map_free(&p->entry_site_of);
	CT_VEC_FREE(p->runtime_calls);
	for (size_t i = 0; i < p->kept_walks.n; i++)
		free(p->kept_walks.v[i]);
	CT_VEC_FREE(p->kept_walks);
	map_free(&p->by_name);
	ct_plan_captures_free(p);
	MAP_FOREACH(&p->fetch_pool, i)
	{
		ct_site_fetch_free(p->fetch_pool.vals[i]);
		free(p->fetch_pool.vals[i]);
	}
	map_free(&p->fetch_pool);
	map_free(&p->fetch_pooled);
	for (size_t i = 0; i < p->gap_callers.n; i++)
		free(p->gap_callers.v[i]);
	CT_VEC_FREE(p->gap_callers);
}

const char *ct_plan_icall_note(const struct ct_plan *p, char *out, size_t n)
{
	out[0] = 0;
	if (p->icall_sites || p->icall_left)
		snprintf(out, n, "; %zu indirect call instruction%s planned for the functions they may call (%zu pairs%s",
			 p->icall_sites, p->icall_sites == 1 ? "" : "s", p->icall_pairs, p->icall_left ? ", " : ")");
	size_t len = strlen(out);
	if (p->icall_left)
		snprintf(out + len, n - len, "%zu more to be found while recording)", p->icall_left);
	len = strlen(out);
	if (p->interim_funcs)
		snprintf(out + len, n - len, "; %zu with interim RETs until their call sites are found", p->interim_funcs);
	return out;
}

char *ct_plan_skipped_names(const struct ct_plan *p, size_t max)
{
	/* each name once, with how many functions have it (Rust's instances
	 * of one generic, a C++ template's: "drop_arc_raw (x4)") */
	const char **names = xcalloc(max ? max : 1, sizeof(*names));
	size_t *count = xcalloc(max ? max : 1, sizeof(*count)), n = 0, more = 0;
	for (size_t i = 0; i < p->skipped.n; i++) {
		const char *name = ct_names_show(&p->skipped.v[i].fn->dm, p->skipped.v[i].fn->name);
		size_t k = 0;
		while (k < n && strcmp(names[k], name))
			k++;
		if (k < n)
			count[k]++;
		else if (n < max) {
			names[n] = name;
			count[n++] = 1;
		} else
			more++;
	}
	struct ct_buf b = {0};
	for (size_t k = 0; k < n; k++) {
		if (k)
			buf_put(&b, ", ", 2);
		buf_cstr(&b, names[k]);
		if (count[k] > 1) {
			char times[32];
			buf_put(&b, times, (size_t)snprintf(times, sizeof(times), " (x%zu)", count[k]));
		}
	}
	if (more) {
		char tail[48];
		buf_put(&b, tail, (size_t)snprintf(tail, sizeof(tail), " (and %zu more)", more));
	}
	buf_put(&b, "", 1);
	free(names);
	free(count);
	return (char *)b.p;
}

unsigned ct_plan_hit_classes(const struct ct_plan *p)
{
	unsigned classes = 0;
	for (size_t i = 0; i < p->sites.n; i++) {
		const struct ct_plan_site *s = &p->sites.v[i];
		const uint8_t *code = s->elsewhere ? NULL : ct_elf_bytes_at(&p->t->elf, s->addr, 15);
		if (code && ct_site_is_probe(s))
			classes |= 1u << ct_hit_class_of(s->kind, ct_hit_flags_at(code, 15, s->addr));
	}
	return classes;
}

/* The plan function whose entry is ENTRY, or NULL (the plan's functions are
 * in the target's order, by entry). */
static const struct ct_plan_func *plan_func_at_entry(const struct ct_plan *p, uint64_t entry)
{
	size_t lo = 0, hi = p->funcs.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->funcs.v[mid].fn->entry < entry)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->funcs.n && p->funcs.v[lo].fn->entry == entry ? &p->funcs.v[lo] : NULL;
}

bool ct_plan_call_walks(const struct ct_plan *p, size_t i)
{
	for (size_t k = i; k < p->sites.n; k = p->sites.v[k].next) {
		const struct ct_plan_site *s = &p->sites.v[k];
		const struct ct_func *c = s->kind == CT_SITE_CALL && s->cs ? s->cs->caller : NULL;
		if (c && (c->flags & CT_FN_GO) && !plan_func_at_entry(p, c->entry))
			return true;
	}
	return false;
}

void ct_plan_call_caller(const struct ct_plan *p, uint32_t call_site, struct ct_planned_call *val)
{
	val->caller_depth = val->caller_check = 0;
	const struct ct_plan_site *s = call_site < p->sites.n ? &p->sites.v[call_site] : NULL;
	const struct ct_func *c = s && s->kind == CT_SITE_CALL && s->cs ? s->cs->caller : NULL;
	int32_t sp;
	/* Go: the pcsp table says how far SP is below the caller's entry at the
	 * call instruction (C: not known) */
	if (!c || !(c->flags & CT_FN_GO) || !p->t->pcln.nfuncs || !ct_pclntab_sp_at(&p->t->pcln, s->cs->at, &sp))
		return;
	/* is the caller traced, and entered at its CHECK? */
	const struct ct_plan_func *pc = plan_func_at_entry(p, c->entry);
	if (pc) {
		if (pc->check_site == CT_NOSITE)
			return; /* traced, not at a CHECK: never a call without an exit */
		val->caller_check = pc->check_site + 1;
	}
	val->caller_depth = (uint32_t)sp + 8; /* and the return address the call pushes */
}

/* Sites [FIRST, FIRST + N) into OUT. */
static void file_sites_into(const struct ct_plan *p, size_t first, size_t n, struct ct_file_site *out)
{
	for (size_t i = first; i < first + n; i++) {
		const struct ct_plan_site *s = &p->sites.v[i];
		out[i - first] = (struct ct_file_site){(uint32_t)i, s->addr,      s->func, s->kind, s->target_func,
						       s->key_adj,  s->call_site, s->next, s->flags};
		out[i - first].flags = ct_plan_site_flags(p, i);
	}
}

void ct_plan_file_tables(const struct ct_plan *p, struct ct_file_func *funcs, struct ct_file_site *sites)
{
	for (size_t i = 0; i < p->funcs.n; i++) {
		const struct ct_func *f = p->funcs.v[i].fn;
		funcs[i] = (struct ct_file_func){.id = (uint32_t)i, .name = f->name, .entry = f->entry,
						 .size = f->end - f->entry,
						 .flags = f->flags | (p->funcs.v[i].falls_through ? CT_FN_FALLS : 0) |
							  (p->funcs.v[i].parks_only ? CT_FN_PARKS : 0)};
	}
	file_sites_into(p, 0, p->sites.n, sites);
}

struct ct_file_site *ct_plan_file_sites(const struct ct_plan *p, size_t first, size_t n)
{
	struct ct_file_site *out = xcalloc(n ? n : 1, sizeof(*out));
	file_sites_into(p, first, n, out);
	return out;
}

uint16_t ct_plan_site_flags(const struct ct_plan *p, size_t i)
{
	/* what its hits cost depends on it (overhead correction); a CALL
	 * its callee's CHECK sends is priced as the CHECK's hit */
	const struct ct_plan_site *s = &p->sites.v[i];
	const uint8_t *code = s->elsewhere ? NULL : ct_elf_bytes_at(&p->t->elf, s->addr, 15);
	return s->flags | (s->interim ? CT_SITEF_INTERIM : 0) |
	       (code && !(s->flags & CT_SITEF_ATCHECK) ? ct_hit_flags_at(code, 15, s->addr) : 0);
}
