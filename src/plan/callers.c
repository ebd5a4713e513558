/* --exit=auto: calls observed from the caller.  A traced function all of
 * whose references are plain direct calls (`call rel32`) from code we can
 * probe gets its entry at each call instruction (the kernel emulates it:
 * ~1 us, where the callee's own entry is often single-stepped) and its exit
 * at each call's return site: the first instruction after the return
 * address, on the straight line, that the kernel emulates.  Its RETs -- a
 * single-step each, ~20 us -- are not probed at all.
 *
 * The analysis must be conservative: a call we do not know of would have no
 * exit.  So any other reference keeps the function on RET probes:
 *   - code: an address operand (lea f(%rip), mov $f), a jump to it (a tail
 *     call), a call with prefixes, a call from code that is never probed or
 *     lies outside every known function;
 *   - data: its address as an 8-byte word in any loaded data section (Go
 *     funcvals and itabs, C function-pointer tables, .init_array), Go's
 *     method tables (32-bit offsets from the start of text), dynamic
 *     relocations, exported dynamic symbols, the ELF entry point.
 * A function called from a function that calls setjmp (the caller may
 * resume past any of its call sites after a longjmp), or from a call whose
 * exception landing pad may lead back to where its end would be seen
 * (pads.h), also keeps RET probes, and so does every function of a binary built by gccgo (split
 * stacks).  See docs/RECONSTRUCTION.md for the reconstruction rules. */
#include "plan/pads.h"
#include "plan/plan.h"
#include "plan/plt.h"
#include "target/fde.h"
#include "target/goruntime.h"
#include "util/util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A direct call the scan found, until its ct_callsite is needed (tens of
 * thousands of calls, each call site a few cache lines, to fault in). */
struct call_ref {
	uint64_t at, ret;
	const struct ct_func *caller;
};

/* (a REASON_MAX-byte string of its own once set, else "": two inline
 * buffers were 6.8 MB of the heap while restic's 17,609 were planned) */
#define REASON_MAX 192
struct callee {
	char *why; /* non-empty: keeps RET probes, and why */
	char *taken; /* non-empty: its address is taken (where): Go functions
			with a cheap entry are observed from their callers
			anyway, other callers found while recording */
	CT_VEC(struct call_ref) refs; /* the calls found, in order ... */
	CT_VEC(struct ct_callsite) calls; /* ... as call sites (calls_of) */
	/* Go, how its address is taken: the method slots of the itabs in data
	 * that hold it (bit k: fun[k]; bit 63 also for any slot past it), a
	 * word elsewhere in data (a funcval), an address operand in code (a
	 * closure made there): which indirect calls may reach it */
	uint64_t itab_slots;
	bool in_funcval, in_code;
	/* a dynamic symbol of the program: modules it loads may call it */
	bool exported;
	/* some of its calls are through a GOT slot (got_words): no probe can
	 * be at those call instructions (single-stepped), its CHECK sends them */
	bool slot_calls;
	/* C: its address is in a table in data (a C++ vtable, an array of
	 * handlers: in_table), or where the loader calls it or code loads it
	 * (.init_array, the GOT: elsewhere) */
	bool in_table, elsewhere;
	/* the lowest address past its entry another function jumps to (0:
	 * none): glibc's mempcpy sets its result and jumps into memcpy's
	 * body; a CHECK moved past it would take that for a call */
	uint64_t jumped_into;
};

/* C's calls as call sites, from the scan's refs (added to any it has). */
static void calls_of(struct callee *c)
{
	if (!c->refs.n)
		return;
	size_t n0 = c->calls.n;
	c->calls.v = xrealloc(c->calls.v, (n0 + c->refs.n) * sizeof(*c->calls.v));
	memset(c->calls.v + n0, 0, c->refs.n * sizeof(*c->calls.v));
	c->calls.n = c->calls.cap = n0 + c->refs.n;
	for (size_t k = 0; k < c->refs.n; k++) {
		struct ct_callsite *cs = &c->calls.v[n0 + k];
		cs->at = c->refs.v[k].at;
		cs->ret = c->refs.v[k].ret;
		cs->caller = c->refs.v[k].caller;
		cs->call_site = cs->exit_site = CT_NOSITE;
	}
	CT_VEC_FREE(c->refs);
}

struct part_edge {
	uint64_t from, to;
};

/* a reference, and the function it is in */
struct found_ref {
	struct ct_code_ref r;
	const struct ct_func *in;
};

struct analysis {
	const struct ct_target *t;
	struct ct_plan *p;
	struct callee *c;         /* per plan function */
	struct ct_map by_entry;   /* traced entry -> plan index + 1 */
	struct ct_map by_textoff; /* Go: entry - runtime.text -> plan index + 1 */
	/* the keys' bounds: most words of data are no address of traced code,
	 * and a compare is cheaper than a hash (docker: ~5% of its plan) */
	uint64_t entry_lo, entry_hi, textoff_lo, textoff_hi;
	struct ct_map twice;      /* addresses of returns-twice functions, their PLT stubs and GOT slots */
	struct ct_map got_slots;  /* GOT slot holding a traced function (got_words) -> plan index + 1 */
	struct ct_map twice_callers; /* entry of a function that calls one -> 1 */
	const struct ct_func *cur;   /* the function scanned, NULL in code outside functions */
	/* code outside every known function (a stripped library's static
	 * functions): the gap scanned, its calls' caller for return sites */
	struct ct_func gap_code;
	/* a function in a gap that only .eh_frame knows (a stripped program's
	 * own): scanned as a named one is (a->cur), its FDE its bounds */
	struct ct_func fde_fn;
	char fde_name[24];
	const struct ct_func *gap; /* the one scanned, copied to p->gap_callers once a call there counts */
	struct ct_fde *fdes; /* .eh_frame's, by start */
	size_t nfdes;
	struct ct_pads *pads; /* the code's landing pads (pad_rejoins), at the first need */
	/* direct jumps between two functions but to no function's entry: a
	 * function split in parts (GCC's `f.cold`, which has an FDE of its own
	 * and no symbol with a size), each edge the entries of the two */
	CT_VEC(struct part_edge) part_edges;
	struct ct_map plt_stubs;     /* PLT stub -> the name of the symbol it jumps to */
	/* Go: the wrapper closures the compiler made for `go` and `defer`
	 * (they take nothing), by the hash of their enclosing function's
	 * name; built at the first need (wrapper_calls) */
	struct named_closure {
		uint64_t parent_hash;
		const struct ct_func *fn;
	} *argless;
	size_t nargless;
	bool argless_done;
	/* methods by name (hash_strn of "M"): how many of them there are in
	 * the binary and how many are traced, 2 counts in a heap pair
	 * (mostly_traced) */
	struct ct_map methods;
	bool methods_done;
	/* calls and jumps through a register loaded from a GOT slot, and those
	 * loads (ct_scan_slot_refs): planned once every jump into the middle
	 * of a function is known (slot_reg_refs) */
	CT_VEC(struct found_ref) reg_refs;
	CT_VEC(uint64_t) entered;    /* targets of jumps into a function from outside it */
	struct ct_map reg_calls;     /* those calls planned: at -> 1 (no indirect call sites) */
};

static bool same_program(const struct ct_site_fetch *a, const struct ct_site_fetch *b);
static void note_in_data(struct callee *c, const char *name);
typedef void (*got_word_fn)(void *ctx, uint64_t slot, uint64_t val, const char *sym);
static void got_words(const struct ct_elf *e, got_word_fn fn, void *ctx);

static void keep_ret(struct analysis *a, size_t j, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void keep_ret(struct analysis *a, size_t j, const char *fmt, ...)
{
	if (a->c[j].why[0])
		return; /* the first reason is enough */
	char why[REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (why[0])
		a->c[j].why = xstrdup(why);
}

/* Its address is taken: called through it from sites no scan finds. */
static void note_taken(struct analysis *a, size_t j, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note_taken(struct analysis *a, size_t j, const char *fmt, ...)
{
	if (a->c[j].taken[0])
		return;
	char taken[REASON_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(taken, sizeof(taken), fmt, ap);
	va_end(ap);
	if (taken[0])
		a->c[j].taken = xstrdup(taken);
}

static size_t traced(struct analysis *a, uint64_t addr)
{
	if (addr < a->entry_lo || addr > a->entry_hi)
		return 0;
	return (size_t)(uintptr_t)map_get(&a->by_entry, addr);
}

/* The code being scanned as the caller of a call from there (its code is
 * what the exit walk reads), kept as long as the plan's call sites are: a
 * named function as it is; a gap, or a function only .eh_frame knows,
 * copied to the plan once a call there counts. */
static const struct ct_func *caller_kept(struct analysis *a)
{
	const struct ct_func *now = a->cur ? a->cur : &a->gap_code;
	if (now != &a->gap_code && now != &a->fde_fn)
		return now;
	if (!a->gap) {
		size_t len = strlen(now->name) + 1;
		struct ct_func *f = xcalloc(1, sizeof(*f) + len);
		*f = *now;
		f->name = memcpy(f + 1, now->name, len);
		CT_VEC_PUSH(a->p->gap_callers, f);
		a->gap = f;
	}
	return a->gap;
}

/* The entry of the function ADDR is in: a named one, else one only
 * .eh_frame knows (its FDE's start); 0 if none. */
static uint64_t part_at(const struct analysis *a, uint64_t addr)
{
	const struct ct_func *f = ct_target_func_at(a->t, addr);
	if (f)
		return f->entry;
	const struct ct_fde *d = ct_fde_at(a->fdes, a->nfdes, addr);
	return d ? d->start : 0;
}

static void on_ref(void *ctx, const struct ct_code_ref *r)
{
	struct analysis *a = ctx;
	const struct ct_func *g = a->cur;
	if (r->kind == CT_REF_ADDR && r->via_reg) { /* (slot_reg_refs) */
		CT_VEC_PUSH(a->reg_refs, ((struct found_ref){*r, g}));
		return;
	}
	if (r->kind == CT_REF_JUMP) {
		const struct ct_func *in = g ? g : &a->gap_code;
		if (r->target < in->entry || r->target >= in->end)
			CT_VEC_PUSH(a->entered, r->target);
	}
	if (r->kind == CT_REF_ADDR && r->through == CT_THROUGH_CALL && g && map_get(&a->twice, r->target))
		map_put(&a->twice_callers, g->entry, (void *)1);
	size_t s1 = r->kind == CT_REF_ADDR ? (size_t)(uintptr_t)map_get(&a->got_slots, r->target) : 0;
	if (s1 && r->through == CT_THROUGH_CALL) {
		/* `call *slot(%rip)`: a direct call of what the slot holds,
		 * returning to the next instruction as any; the call
		 * instruction is single-stepped, so the function's CHECK
		 * sends the call (emit_function) */
		struct ct_code_ref d = *r;
		d.kind = CT_REF_CALL;
		d.plain = true;
		d.target = a->p->funcs.v[s1 - 1].fn->entry;
		d.through = 0;
		a->c[s1 - 1].slot_calls = true;
		on_ref(a, &d);
		return;
	}
	if (s1 && r->through == CT_THROUGH_JUMP) {
		keep_ret(a, s1 - 1, "entered by a jump through a GOT slot from %s (a tail call, at 0x%llx)",
			 g ? ct_names_show(&g->dm, g->name) : "code outside any known function",
			 (unsigned long long)r->at);
		return;
	}
	if (s1) { /* code loads its address from there: who knows where it goes */
		note_in_data(&a->c[s1 - 1], ".got");
		if (r->why)
			note_taken(a, s1 - 1, "its address is in a GOT slot code reads (at 0x%llx, from 0x%llx: %s, at 0x%llx)",
				   (unsigned long long)r->target, (unsigned long long)r->at, ct_slot_load_why(r->why),
				   (unsigned long long)r->why_at);
		else
			note_taken(a, s1 - 1, "its address is in a GOT slot code reads (at 0x%llx, from 0x%llx)",
				   (unsigned long long)r->target, (unsigned long long)r->at);
		return;
	}
	if (r->kind == CT_REF_JUMP && g && (r->target < g->entry || r->target >= g->end)) {
		const struct ct_func *f = ct_target_func_at(a->t, r->target);
		size_t into = f && f->entry != r->target ? traced(a, f->entry) : 0;
		if (into && (!a->c[into - 1].jumped_into || r->target < a->c[into - 1].jumped_into))
			a->c[into - 1].jumped_into = r->target;
		uint64_t to = f && f->entry == r->target ? 0 : part_at(a, r->target); /* (not a tail call) */
		if (to && to != g->entry)
			CT_VEC_PUSH(a->part_edges, ((struct part_edge){g->entry, to}));
	}
	size_t j1 = traced(a, r->target);
	/* traced or not (a PLT stub can be: -F '*@plt') */
	if (r->kind == CT_REF_CALL && g && map_get(&a->twice, r->target))
		map_put(&a->twice_callers, g->entry, (void *)1);
	if (!j1) {
		/* a -fPIC library calls its own exported functions through
		 * its PLT: a direct call all the same where the return sites
		 * of a call that ends in untraced code are planned (the
		 * function, exported, keeps its RET probes) */
		bool from_gap = !g && a->gap_code.end;
		j1 = r->kind == CT_REF_CALL && r->plain && (g || from_gap) && !(g && (g->flags & CT_FN_NOPROBE))
			     ? (size_t)(uintptr_t)map_get(&a->p->plt_traced, r->target)
			     : 0;
		if (j1 && !g)
			keep_ret(a, j1 - 1, "called from code outside any known function (at 0x%llx)",
				 (unsigned long long)r->at);
		if (j1)
			CT_VEC_PUSH(a->c[j1 - 1].refs, ((struct call_ref){r->at, r->at + r->len, caller_kept(a)}));
		return;
	}
	size_t j = j1 - 1;
	if (!g) {
		keep_ret(a, j, "referenced from code outside any known function (at 0x%llx)", (unsigned long long)r->at);
		/* its RETs see the calls from there; where its call may end in
		 * untraced code, their return sites too */
		if (r->kind == CT_REF_CALL && r->plain && a->gap_code.end)
			CT_VEC_PUSH(a->c[j].refs, ((struct call_ref){r->at, r->at + r->len, caller_kept(a)}));
		return;
	}
	switch (r->kind) {
	case CT_REF_CALL:
		if (!r->plain)
			keep_ret(a, j, "called by a prefixed call instruction in %s (at 0x%llx)",
				 ct_names_show(&g->dm, g->name), (unsigned long long)r->at);
		else if (g->flags & CT_FN_NOPROBE)
			keep_ret(a, j, "called from %s, which is never probed", ct_names_show(&g->dm, g->name));
		else
			CT_VEC_PUSH(a->c[j].refs, ((struct call_ref){r->at, r->at + r->len, caller_kept(a)}));
		break;
	case CT_REF_JUMP:
		if (r->target != g->entry) /* not its own restart jump */
			keep_ret(a, j, "entered by a jump from %s (a tail call, at 0x%llx)",
				 ct_names_show(&g->dm, g->name), (unsigned long long)r->at);
		break;
	case CT_REF_ADDR:
		a->c[j].in_code = true;
		note_taken(a, j, "its address is taken in %s (at 0x%llx)", ct_names_show(&g->dm, g->name),
			   (unsigned long long)r->at);
		break;
	}
}

/* The whole binary's code is scanned for references on a second thread
 * (decoding it is most of the planning time), started before the selected
 * functions' own sites and types are worked out (ct_code_scan_start).  It
 * keeps the references on_ref may act on -- to a selected function, or a
 * call that may reach a returns-twice one (a PLT stub is only known later)
 * -- which ct_callers_plan hands to on_ref afterwards, in order. */

struct ct_code_scan {
	const struct ct_target *t;
	struct ct_map selected; /* entries of the functions that may be traced */
	struct ct_map twice;    /* entries of returns-twice functions */
	struct ct_map slots;    /* GOT slots of those (got_words) */
	const struct ct_func **funcs; /* every function's code, once per address */
	size_t n;
	const struct ct_func *cur;
	/* (in pages of their own, given back when the scan is freed: in the
	 * scan thread's malloc arena, restic's ~5 MB stayed calltrace's
	 * memory to the end) */
	CT_VEC(struct found_ref) refs;
	pthread_t thread;
	bool running;
};

/* Every function with code, once per address (C aliases share one body). */
static const struct ct_func **code_funcs(const struct ct_target *t, size_t *n)
{
	const struct ct_func **v = xcalloc(t->nfuncs ? t->nfuncs : 1, sizeof(*v));
	uint64_t last = UINT64_MAX;
	*n = 0;
	for (size_t i = 0; i < t->nfuncs; i++) {
		const struct ct_func *f = &t->funcs[i];
		if (f->entry == last || f->end <= f->entry)
			continue;
		last = f->entry;
		if (ct_elf_bytes_at(&t->elf, f->entry, f->end - f->entry))
			v[(*n)++] = f;
	}
	return v;
}

static void keep_ref(void *ctx, const struct ct_code_ref *r)
{
	struct ct_code_scan *cs = ctx;
	bool keep = map_get(&cs->selected, r->target) != NULL ||
		    (r->kind == CT_REF_ADDR && map_get(&cs->slots, r->target) != NULL);
	if (!keep && r->kind == CT_REF_CALL) {
		const struct ct_func *f = ct_target_func_at(cs->t, r->target);
		keep = !f || f->entry != r->target || map_get(&cs->twice, r->target);
	} else if (!keep && r->kind == CT_REF_JUMP && (r->target < cs->cur->entry || r->target >= cs->cur->end)) {
		const struct ct_func *f = ct_target_func_at(cs->t, r->target); /* into another part of it (on_ref) */
		keep = !f || f->entry != r->target;
	}
	if (!keep)
		return;
	if (cs->refs.n == cs->refs.cap) {
		size_t cap = cs->refs.cap ? 2 * cs->refs.cap : 4096, sz = sizeof(*cs->refs.v);
		void *m = cs->refs.v ? mremap(cs->refs.v, cs->refs.cap * sz, cap * sz, MREMAP_MAYMOVE)
				     : mmap(NULL, cap * sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			fputs("calltrace: out of memory\n", stderr);
			exit(1);
		}
		cs->refs.v = m;
		cs->refs.cap = cap;
	}
	cs->refs.v[cs->refs.n++] = (struct found_ref){*r, cs->cur};
}

static bool scan_is_slot(void *ctx, uint64_t addr)
{
	return map_get(&((struct ct_code_scan *)ctx)->slots, addr) != NULL;
}

static void *code_scan_run(void *arg)
{
	struct ct_code_scan *cs = arg;
	const struct ct_elf *e = &cs->t->elf;
	for (size_t i = 0; i < cs->n; i++) {
		cs->cur = cs->funcs[i];
		ct_scan_slot_refs(ct_elf_bytes_at(e, cs->cur->entry, cs->cur->end - cs->cur->entry),
				  cs->cur->end - cs->cur->entry, cs->cur->entry, keep_ref, cs, scan_is_slot);
	}
	return NULL;
}

static void scan_slot(void *ctx, uint64_t slot, uint64_t val, const char *sym)
{
	struct ct_code_scan *cs = ctx;
	if (map_get(&cs->selected, val) || (sym && ct_returns_twice(sym, strlen(sym))))
		map_put(&cs->slots, slot, (void *)1);
}

struct ct_code_scan *ct_code_scan_start(const struct ct_target *t, const uint64_t *entries, size_t n)
{
	struct ct_code_scan *cs = xcalloc(1, sizeof(*cs));
	cs->t = t;
	for (size_t i = 0; i < n; i++)
		map_put(&cs->selected, entries[i], (void *)1);
	/* (a PLT stub too, traced or not, when stubs are functions: the
	 * calls of those not selected are kept only so) */
	for (size_t i = 0; i < t->nfuncs; i++)
		if (ct_returns_twice(t->funcs[i].name, ct_func_symbol_len(t->funcs[i].name, t->funcs[i].flags)))
			map_put(&cs->twice, t->funcs[i].entry, (void *)1);
	got_words(&t->elf, scan_slot, cs);
	cs->funcs = code_funcs(t, &cs->n);
	cs->running = pthread_create(&cs->thread, NULL, code_scan_run, cs) == 0;
	if (!cs->running) /* no thread: the scan happens here */
		code_scan_run(cs);
	return cs;
}

void ct_code_scan_free(struct ct_code_scan *cs)
{
	if (!cs)
		return;
	if (cs->running)
		pthread_join(cs->thread, NULL);
	map_free(&cs->selected);
	map_free(&cs->twice);
	map_free(&cs->slots);
	free(cs->funcs);
	if (cs->refs.v)
		munmap(cs->refs.v, cs->refs.cap * sizeof(*cs->refs.v));
	free(cs);
}

static bool analysis_is_slot(void *ctx, uint64_t addr)
{
	struct analysis *a = ctx;
	return map_get(&a->got_slots, addr) || map_get(&a->twice, addr);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static int cmp_found_in(const void *x, const void *y)
{
	const struct found_ref *a = x, *b = y;
	uint64_t ea = a->in ? a->in->entry : 0, eb = b->in ? b->in->entry : 0;
	if (ea != eb)
		return ea < eb ? -1 : 1;
	return a->r.at < b->r.at ? -1 : a->r.at > b->r.at;
}

/* Calls and jumps through a register only ever loaded from a GOT slot
 * (ct_scan_slot_refs) are through the slot, as `call *slot(%rip)` is,
 * where the walk saw every way into the code: in a named function of C
 * (not Go's ABI, where every register may be an argument) with no part
 * split off, which no jump from elsewhere enters but at its entry.
 * Otherwise the loads are addresses taken. */
static void slot_reg_refs(struct analysis *a)
{
	if (!a->reg_refs.n)
		return;
	qsort(a->entered.v, a->entered.n, sizeof(*a->entered.v), cmp_u64);
	qsort(a->reg_refs.v, a->reg_refs.n, sizeof(*a->reg_refs.v), cmp_found_in);
	for (size_t k = 0, end; k < a->reg_refs.n; k = end) {
		const struct ct_func *g = a->reg_refs.v[k].in;
		for (end = k + 1; end < a->reg_refs.n && a->reg_refs.v[end].in == g; end++)
			;
		char why[160] = "";
		size_t np = 0;
		if (!g || g == &a->fde_fn || g == &a->gap_code)
			snprintf(why, sizeof(why), "in code outside any known function");
		else if (a->t->lang == CT_LANG_GO || (g->flags & CT_FN_GO))
			snprintf(why, sizeof(why), "in Go code");
		else if (ct_target_parts_of(a->t, g->entry, &np), np)
			snprintf(why, sizeof(why), "%s has parts split off, which may use the register",
				 ct_names_show(&g->dm, g->name));
		else {
			size_t lo = 0, hi = a->entered.n;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (a->entered.v[mid] <= g->entry)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < a->entered.n && a->entered.v[lo] < g->end)
				snprintf(why, sizeof(why), "code elsewhere jumps into %s (to 0x%llx)",
					 ct_names_show(&g->dm, g->name), (unsigned long long)a->entered.v[lo]);
		}
		a->cur = g;
		for (size_t q = k; q < end; q++) {
			struct ct_code_ref r = a->reg_refs.v[q].r;
			r.via_reg = false;
			if (r.through == CT_THROUGH_LOAD) {
				size_t s1 = (size_t)(uintptr_t)map_get(&a->got_slots, r.target);
				if (why[0] && s1) {
					note_in_data(&a->c[s1 - 1], ".got");
					note_taken(a, s1 - 1, "its address is in a GOT slot code reads (at 0x%llx, from 0x%llx: %s)",
						   (unsigned long long)r.target, (unsigned long long)r.at, why);
				}
				continue;
			}
			if (why[0])
				continue;
			map_put(&a->reg_calls, r.at, (void *)1);
			on_ref(a, &r);
		}
	}
	a->cur = NULL;
}

/* The references in every function's code: what SCAN found, or scanned
 * here. */
static void scan_functions(struct analysis *a, struct ct_code_scan *scan)
{
	const struct ct_target *t = a->t;
	if (scan) {
		if (scan->running)
			pthread_join(scan->thread, NULL);
		scan->running = false;
		for (size_t k = 0; k < scan->refs.n; k++) {
			a->cur = scan->refs.v[k].in;
			on_ref(a, &scan->refs.v[k].r);
		}
	} else {
		size_t n;
		const struct ct_func **funcs = code_funcs(t, &n);
		for (size_t i = 0; i < n; i++) {
			a->cur = funcs[i];
			ct_scan_slot_refs(ct_elf_bytes_at(&t->elf, a->cur->entry, a->cur->end - a->cur->entry),
					  a->cur->end - a->cur->entry, a->cur->entry, on_ref, a, analysis_is_slot);
		}
		free(funcs);
	}
	a->cur = NULL;
}

/* The PLT stubs, by the symbol each jumps to (plt.c). */
static void find_plt_stubs(struct analysis *a)
{
	struct ct_plt_stub *v;
	size_t n = ct_plt_stubs(&a->t->elf, &v);
	for (size_t i = 0; i < n; i++) {
		map_put(&a->plt_stubs, v[i].addr, (void *)v[i].name);
		if (ct_returns_twice(v[i].name, strlen(v[i].name)))
			map_put(&a->twice, v[i].addr, (void *)1);
	}
	free(v);
}

/* [AT, END) of code no symbol covers (its section's bytes CODE, at address
 * BASE) scanned as code outside any known function, or as FN (a->cur) when
 * it is one. */
static void scan_code(struct analysis *a, const uint8_t *code, uint64_t base, uint64_t at, uint64_t end,
		      const struct ct_func *fn)
{
	a->cur = fn;
	a->gap_code = (struct ct_func){.name = "code outside any known function", .entry = at, .end = end, .args = -1};
	a->gap = NULL;
	ct_scan_refs(code + (at - base), end - at, at, on_ref, a);
	a->cur = NULL;
	a->gap_code.end = 0;
	a->gap = NULL;
}

/* A gap between known functions, [AT, END): in it, the functions whose
 * bounds .eh_frame gives (a stripped program's own: an FDE per function,
 * as the compiler emits them) are scanned as functions, their calls
 * planned as a named function's are; the rest -- no FDE (hand-written
 * code, crt's), one running past the gap or into the next one -- is code
 * outside any known function. */
static void scan_gap(struct analysis *a, const uint8_t *code, uint64_t base, uint64_t at, uint64_t end)
{
	/* (C only: a Go binary's gaps are its C code, which calls Go code
	 * through the runtime's assembly) */
	size_t nfdes = a->t->lang == CT_LANG_C ? a->nfdes : 0, lo = 0, hi = nfdes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->fdes[mid].start < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; at < end; i++) {
		while (i < nfdes && a->fdes[i].start < at)
			i++; /* (overlapping ones: inside code scanned already) */
		uint64_t s = i < nfdes && a->fdes[i].start < end ? a->fdes[i].start : end;
		uint64_t e = s < end ? a->fdes[i].end : end;
		bool alone = e <= end && (i + 1 >= nfdes || a->fdes[i + 1].start >= e);
		if (s > at)
			scan_code(a, code, base, at, s, NULL);
		if (s == end)
			break;
		if (!alone) {
			scan_code(a, code, base, s, e < end ? e : end, NULL);
		} else {
			snprintf(a->fde_name, sizeof(a->fde_name), "sub_%llx", (unsigned long long)s);
			a->fde_fn = (struct ct_func){.name = a->fde_name, .entry = s, .end = e, .args = -1};
			scan_code(a, code, base, s, e, &a->fde_fn);
		}
		at = e < end ? e : end;
	}
}

/* Executable code outside every known function but the PLT: .init, gaps
 * (the static functions of a binary whose symbols are only its dynamic
 * ones). */
static void scan_other_code(struct analysis *a)
{
	const struct ct_target *t = a->t;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	if (elf_getshdrstrndx(t->elf.elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(t->elf.elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !sh.sh_size || sh.sh_offset + sh.sh_size > t->elf.size)
			continue;
		const char *name = elf_strptr(t->elf.elf, shstrndx, sh.sh_name);
		const uint8_t *base = t->elf.data + sh.sh_offset;
		if (name && !strncmp(name, ".plt", 4))
			continue;
		/* the gaps between functions */
		uint64_t at = sh.sh_addr, end = sh.sh_addr + sh.sh_size;
		while (at < end) {
			const struct ct_func *f = ct_target_func_at(t, at);
			if (f && f->end > at) {
				at = f->end;
				continue;
			}
			/* the next function's entry (sorted by entry) */
			size_t lo = ct_target_funcs_upto(t, at);
			uint64_t next = lo < t->nfuncs && t->funcs[lo].entry < end ? t->funcs[lo].entry : end;
			scan_gap(a, base, sh.sh_addr, at, next);
			at = next;
		}
	}
}

/* A C function's address in data section NAME: a table only calls
 * through it read (.data*, .rodata*: C++ vtables, arrays of handlers), or
 * elsewhere (the loader's .init_array, the GOT code loads it from). */
static void note_in_data(struct callee *c, const char *name)
{
	if (name && (!strncmp(name, ".data", 5) || !strncmp(name, ".rodata", 7)))
		c->in_table = true;
	else
		c->elsewhere = true;
}

/* The name of the allocated section E holds ADDR in, or NULL. */
static const char *section_at(const struct ct_elf *e, uint64_t addr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) && addr >= sh.sh_addr && addr - sh.sh_addr < sh.sh_size)
			return elf_strptr(e->elf, shstrndx, sh.sh_name);
	}
	return NULL;
}

static bool excluded_data(const char *name)
{
	static const char *const skip[] = {
		".gopclntab", ".data.rel.ro.gopclntab", ".eh_frame", ".eh_frame_hdr", ".gcc_except_table",
		".dynsym", ".dynstr", ".gnu.hash", ".hash", ".gnu.version", ".gnu.version_r", ".gnu.version_d",
		".interp", ".gosymtab", ".go.buildinfo", ".dynamic", NULL,
	};
	if (!name || !strncmp(name, ".note", 5) || !strncmp(name, ".rela", 5) || !strncmp(name, ".rel.", 5) ||
	    !strncmp(name, ".debug", 6) || !strncmp(name, ".zdebug", 7))
		return true;
	for (const char *const *s = skip; *s; s++)
		if (!strcmp(name, *s))
			return true;
	return false;
}

/* Is the Go function's address, a word in data at W, fun[k] of an itab
 * (runtime/runtime2.go: inter, _type, hash uint32, 4 bytes, fun[]), for
 * some k: the word at its start + 16 is the (non-zero) hash of the type it
 * points to at + 8, and its first word points to an interface's type
 * (runtime/type.go: size, ptrdata, hash, tflag, align, fieldAlign, kind:
 * kindInterface)?  Returns k, or -1. */
static int itab_slot(const struct ct_elf *e, uint64_t w)
{
	for (int k = 0; k < 256 && w >= 24 + 8 * (uint64_t)k; k++) {
		uint64_t base = w - 24 - 8 * (uint64_t)k, inter, typ;
		const uint8_t *it = ct_elf_bytes_at(e, base, 24);
		if (!it)
			return -1;
		memcpy(&inter, it, 8);
		memcpy(&typ, it + 8, 8);
		const uint8_t *ty = typ ? ct_elf_bytes_at(e, typ, 24) : NULL;
		const uint8_t *in = inter ? ct_elf_bytes_at(e, inter, 24) : NULL;
		static const uint8_t zero[4];
		if (in && ty && !memcmp(it + 16, ty + 16, 4) && memcmp(it + 16, zero, 4) && (in[23] & 0x1f) == 20)
			return k;
	}
	return -1;
}

/* Addresses in data: 8-byte words (every 4-byte boundary), and for Go
 * 32-bit offsets from runtime.text (method tables). */
static void scan_data(struct analysis *a)
{
	const struct ct_target *t = a->t;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	if (elf_getshdrstrndx(t->elf.elf, &shstrndx))
		return;
	bool go = t->lang == CT_LANG_GO && t->go_text_start;
	while ((scn = elf_nextscn(t->elf.elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR) ||
		    (sh.sh_flags & SHF_COMPRESSED) || sh.sh_type == SHT_NOBITS || sh.sh_size < 4 ||
		    sh.sh_offset + sh.sh_size > t->elf.size)
			continue;
		const char *name = elf_strptr(t->elf.elf, shstrndx, sh.sh_name);
		if (excluded_data(name))
			continue;
		const uint8_t *d = t->elf.data + sh.sh_offset;
		for (uint64_t off = (4 - (sh.sh_addr & 3)) & 3; off + 4 <= sh.sh_size; off += 4) {
			uint32_t w32;
			memcpy(&w32, d + off, 4);
			if (!w32)
				continue;
			size_t j1 = 0;
			if (off + 8 <= sh.sh_size && !map_get(&a->got_slots, sh.sh_addr + off)) {
				uint64_t w;
				memcpy(&w, d + off, 8);
				j1 = traced(a, w);
				int k = j1 && go ? itab_slot(&t->elf, sh.sh_addr + off) : -1;
				if (k >= 0)
					a->c[j1 - 1].itab_slots |= 1ull << (k < 63 ? k : 63);
				else if (j1)
					a->c[j1 - 1].in_funcval = true;
			}
			if (!j1 && go && w32 >= a->textoff_lo && w32 <= a->textoff_hi)
				j1 = (size_t)(uintptr_t)map_get(&a->by_textoff, w32);
			if (j1 && !go)
				note_in_data(&a->c[j1 - 1], name);
			if (j1)
				note_taken(a, j1 - 1, "its address is stored in %s (at 0x%llx)", name,
					   (unsigned long long)(sh.sh_addr + off));
		}
	}
}

/* The words of .got that hold a function's address at run time, SLOT ->
 * VAL (SYM: its symbol's name, or NULL): those a dynamic relocation fills
 * (R_X86_64_RELATIVE, GLOB_DAT, 64: not IRELATIVE, whose value is the
 * ifunc's resolver, not what the slot gets), and in a program that is no
 * PIE those the link filled.  Code that only calls through such a slot
 * calls the function directly for our purposes (on_ref). */
static void got_words(const struct ct_elf *e, got_word_fn fn, void *ctx)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t lo = 0, hi = 0;
	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e->elf, shstrndx, sh.sh_name)) || strcmp(name, ".got"))
			continue;
		lo = sh.sh_addr;
		hi = sh.sh_addr + sh.sh_size;
		const uint8_t *d = !e->pie && sh.sh_type == SHT_PROGBITS ? ct_elf_bytes_at(e, lo, sh.sh_size) : NULL;
		for (uint64_t off = 0; d && off + 8 <= sh.sh_size; off += 8) {
			uint64_t w;
			memcpy(&w, d + off, 8);
			if (w)
				fn(ctx, lo + off, w, NULL);
		}
		break;
	}
	for (scn = NULL; hi > lo && (scn = elf_nextscn(e->elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		Elf_Scn *symscn = elf_getscn(e->elf, sh.sh_link);
		GElf_Shdr symsh;
		Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		bool names = symscn && gelf_getshdr(symscn, &symsh);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; data && i < n; i++) {
			GElf_Rela rel;
			if (!gelf_getrela(data, (int)i, &rel) || rel.r_offset < lo || rel.r_offset >= hi)
				continue;
			uint32_t type = GELF_R_TYPE(rel.r_info), si = GELF_R_SYM(rel.r_info);
			if (type != R_X86_64_RELATIVE && type != R_X86_64_GLOB_DAT && type != R_X86_64_64)
				continue;
			uint64_t val = (uint64_t)rel.r_addend;
			const char *sym = NULL;
			GElf_Sym s;
			if (si && syms && gelf_getsym(syms, (int)si, &s)) {
				sym = names ? elf_strptr(e->elf, symsh.sh_link, s.st_name) : NULL;
				if (s.st_shndx != SHN_UNDEF)
					val += s.st_value;
			}
			fn(ctx, rel.r_offset, val, sym);
		}
	}
}

static void got_slot(void *ctx, uint64_t slot, uint64_t val, const char *sym)
{
	struct analysis *a = ctx;
	size_t j1 = val ? traced(a, val) : 0;
	if (j1)
		map_put(&a->got_slots, slot, (void *)(uintptr_t)j1);
	else if (sym && ct_returns_twice(sym, strlen(sym)))
		map_put(&a->twice, slot, (void *)1);
}

/* Dynamic relocations and symbols; the ELF entry point. */
#define EXPORTED "it is exported (a dynamic symbol: other modules may call it)"

/* Is E a program (an executable, PIE or not), not a shared library? */
static bool is_program(const struct ct_elf *e)
{
	if (!e->pie)
		return true;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(data = elf_getdata(scn, NULL)))
			continue;
		GElf_Dyn d;
		for (int i = 0; sh.sh_entsize && i < (int)(sh.sh_size / sh.sh_entsize) && gelf_getdyn(data, i, &d); i++)
			if (d.d_tag == DT_FLAGS_1)
				return (d.d_un.d_val & DF_1_PIE) != 0;
	}
	return false;
}

static void scan_dynamic(struct analysis *a)
{
	const struct ct_target *t = a->t;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	bool program = is_program(&t->elf);
	if (gelf_getehdr(t->elf.elf, &eh)) {
		size_t j1 = traced(a, eh.e_entry);
		if (j1)
			keep_ret(a, j1 - 1, "it is the program's entry point");
	}
	while ((scn = elf_nextscn(t->elf.elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM) {
			Elf_Data *data = elf_getdata(scn, NULL);
			size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t i = 0; data && i < n; i++) {
				GElf_Sym sym;
				if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
					continue;
				size_t j1 = traced(a, sym.st_value);
				/* (a program's: its own calls are direct, others
				 * are found while recording, ct_callers_plan) */
				if (j1 && program)
					a->c[j1 - 1].exported = true;
				else if (j1)
					keep_ret(a, j1 - 1, "%s", EXPORTED);
			}
			continue;
		}
		if (sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		Elf_Scn *symscn = elf_getscn(t->elf.elf, sh.sh_link);
		Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; data && i < n; i++) {
			GElf_Rela rel;
			if (!gelf_getrela(data, (int)i, &rel))
				continue;
			uint32_t si = GELF_R_SYM(rel.r_info);
			uint64_t val = (uint64_t)rel.r_addend;
			GElf_Sym sym;
			if (si && syms && gelf_getsym(syms, (int)si, &sym) && sym.st_shndx != SHN_UNDEF)
				val += sym.st_value;
			size_t j1 = traced(a, val);
			if (map_get(&a->got_slots, rel.r_offset))
				continue; /* (what code does with it says: on_ref) */
			if (j1 && val && t->lang != CT_LANG_GO)
				note_in_data(&a->c[j1 - 1], section_at(&t->elf, rel.r_offset));
			if (j1 && val)
				note_taken(a, j1 - 1, "its address is in a dynamic relocation (at 0x%llx)",
					   (unsigned long long)rel.r_offset);
		}
	}
}

/* An exception thrown under a call resumes its caller at the call's
 * landing pad (pads.h): the callee would look returned at an exit probe
 * that code may reach (cx_merge), or with a caller it ends with that it may
 * return from.  NULL if the call's exit holds, else why not.  TAIL: the
 * call ends with its caller (in tail position, or where its caller returns
 * to).  A pad that comes back to the call itself is no way back for a call
 * observed from its caller (its CALL, seen again, unwinds the call that
 * threw); it is for one whose callee's own entry probe opens it (CALLEE_SIDE:
 * plan_return_sites), as a new call at the same key is not told from it. */
static const char *pad_rejoins(struct analysis *a, const struct ct_callsite *cs, bool tail, bool callee_side)
{
	const struct ct_fde *f = ct_fde_at(a->fdes, a->nfdes, cs->ret - 1);
	if (!f || !f->lsda)
		return NULL; /* (no exception table: most C code, nothing more to read) */
	if (!a->pads)
		a->pads = ct_pads_new(&a->t->elf, a->t);
	return ct_pads_rejoin(a->pads, callee_side ? 0 : cs->at, cs->ret, tail ? 0 : cs->exit, tail);
}

/* A function split in parts calls setjmp if any part does: a longjmp
 * resumes it in the part after that call, and from there any part may be
 * reached (GCC moves a function's unlikely blocks to `f.cold`, a function
 * of its own for the plan: no symbol, an FDE). */
static void twice_in_parts(struct analysis *a)
{
	for (bool more = a->twice_callers.n > 0; more;) {
		more = false;
		for (size_t i = 0; i < a->part_edges.n; i++) {
			uint64_t x = a->part_edges.v[i].from, y = a->part_edges.v[i].to;
			bool in_x = map_get(&a->twice_callers, x) != NULL, in_y = map_get(&a->twice_callers, y) != NULL;
			if (in_x != in_y) {
				map_put(&a->twice_callers, in_x ? y : x, (void *)1);
				more = true;
			}
		}
	}
}

static int cmp_range(const void *x, const void *y)
{
	const struct ct_fde *a = x, *b = y;
	return (a->start > b->start) - (a->start < b->start);
}

/* p->unproven: the code of the functions (or parts) that call setjmp. */
static void unproven_returns(struct analysis *a)
{
	MAP_FOREACH(&a->twice_callers, i) {
		uint64_t at = a->twice_callers.keys[i], end = 0;
		const struct ct_func *f = ct_target_func_at(a->t, at);
		if (f && f->entry == at)
			end = f->end;
		for (size_t d = 0; !end && d < a->nfdes; d++)
			if (a->fdes[d].start == at)
				end = a->fdes[d].end;
		struct ct_fde r = {at, end > at ? end : at + 1, false};
		CT_VEC_PUSH(a->p->unproven, r);
	}
	if (!a->p->unproven.n)
		return;
	/* sorted, overlaps (a function and a part of it) merged */
	struct ct_fde *v = a->p->unproven.v;
	size_t n = 0;
	qsort(v, a->p->unproven.n, sizeof(*v), cmp_range);
	for (size_t i = 0; i < a->p->unproven.n; i++)
		if (n && v[i].start < v[n - 1].end) {
			if (v[i].end > v[n - 1].end)
				v[n - 1].end = v[i].end;
		} else {
			v[n++] = v[i];
		}
	a->p->unproven.n = n;
}

bool ct_plan_return_unproven(const struct ct_plan *p, uint64_t addr)
{
	size_t lo = 0, hi = p->unproven.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->unproven.v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < p->unproven.v[lo - 1].end;
}

void ct_callsite_set_walk(struct ct_plan *p, struct ct_callsite *cs, const struct ct_exit_walk *w, bool keep)
{
	ct_exit_brief_of(w, &cs->walk);
	cs->full = NULL;
	if (keep) {
		struct ct_exit_walk *k = xmalloc(sizeof(*k));
		*k = *w;
		CT_VEC_PUSH(p->kept_walks, k);
		cs->full = k;
	}
}

const struct ct_exit_walk *ct_callsite_walk(const struct ct_plan *p, const struct ct_callsite *cs,
					    struct ct_exit_walk *buf)
{
	if (cs->full)
		return cs->full;
	const struct ct_func *g = cs->caller;
	const uint8_t *code = g && g->end > cs->ret ? ct_elf_bytes_at(&p->t->elf, cs->ret, g->end - cs->ret) : NULL;
	if (code && cs->walk.how) {
		ct_exit_walk(code, g->end - cs->ret, cs->ret, buf);
		return buf;
	}
	/* (a bug: nothing can be read where nothing was walked) */
	memset(buf, 0, sizeof(*buf));
	for (int r = 0; r < 15; r++)
		buf->loc[r].reg = CT_LOC_LOST;
	buf->mem_written = true;
	return buf;
}

/* Can the results be read at the call's emulated exit probe?  W: its
 * whole walk (ct_callsite_walk). */
static bool results_survive(const struct ct_site_fetch *res, const struct ct_callsite *cs,
			    const struct ct_exit_walk *w)
{
	struct ct_site_fetch f;
	if (ct_fetch_relocate(res, -8 - cs->sp_delta, w, &f))
		return false;
	ct_site_fetch_free(&f);
	return true;
}

/* Are RES (a function's results as at its RET) still in the same
 * registers at its caller's ret, walk W from the return address (nothing
 * written but registers, none of the results' changed), so that they can
 * be read wherever the caller's own results can? */
static bool results_pass_through(const struct ct_site_fetch *res, const struct ct_exit_walk *w)
{
	if (!w->at_ret || w->stack_written || w->mem_written)
		return false;
	for (uint32_t i = 0; i < res->nvals; i++)
		for (uint32_t k = 0; k < res->vals[i].npieces; k++)
			if (res->vals[i].pieces[k].kind == CT_PIECE_XREG)
				return false; /* SSE registers: not followed through a ret */
	for (uint32_t i = 0; i < res->prog.nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *op = &res->prog.ops[i];
		if (op->code == CT_OP_STACK)
			return false; /* in the caller's frame, gone after its ret */
		if (op->code != CT_OP_REG && op->code != CT_OP_REGMEM)
			continue; /* what they point to: read where the caller's are */
		const __typeof__(w->loc[0]) *l = op->reg < 15 ? &w->loc[op->reg] : NULL;
		if (!l || l->reg != op->reg || l->less_word || l->addend || l->width < 8)
			return false;
	}
	return true;
}

/* A call that a wrapper the compiler made (for `go f(x)`, `defer f(x)`, a
 * method value: pclntab's wrapper flag, never traced) makes last ends when
 * the wrapper returns, a few instructions later, none of them a call: its
 * exit can be where the wrapper returns to -- goexit, deferreturn, the
 * deferring function's call of its open-coded defer -- an emulated
 * instruction more often than not, instead of the single-stepped return
 * address.  The wrapper's callers are not known (it is called through its
 * address), so the CHECK reads the wrapper's return address, VIA bytes
 * above its own (the walk knows SP at the wrapper's ret), and looks the call
 * up as one from there: each such place is found while recording as any
 * call site is (ct_plan_found_caller; the first call from there ends
 * unobserved), and where one cannot be planned, ct_plan_unvia.  Not other
 * untraced callers: a user's closure or function is often called from one
 * place, whose first call would go unobserved (a direct call's never did).
 * The results, if read, must be in their registers, unchanged, at the
 * wrapper's ret. */
static bool via_caller_return(const struct ct_plan *p, struct ct_callsite *cs, bool caller_traced, bool results,
			      const struct ct_site_fetch *res)
{
	const struct ct_exit_brief *w = &cs->walk;
	struct ct_exit_walk buf;
	if (caller_traced || w->how != CT_EXIT_TAILPOS || !w->at_ret || w->sp_delta < 0 || w->sp_delta > 0xffff ||
	    !(cs->caller->flags & CT_FN_GO) || !(cs->caller->flags & CT_FN_WRAPPER) ||
	    (cs->caller->flags & CT_FN_NOPROBE) || cs->shared || cs->icall ||
	    cs->closed_by || (results && (!res || !results_pass_through(res, ct_callsite_walk(p, cs, &buf)))))
		return false;
	cs->how = CT_EXIT_VIA;
	cs->exit = 0;
	cs->sp_delta = w->sp_delta;
	cs->exit_site = CT_NOSITE;
	return true;
}

bool ct_plan_tail_results(const struct ct_site_fetch *res, const struct ct_exit_walk *w, bool go,
			  struct ct_site_fetch *out)
{
	if (!w->at_ret || w->mem_written || (w->stack_written && (!go || w->stack_hi > 0)))
		return false;
	for (uint32_t i = 0; i < res->nvals; i++)
		for (uint32_t k = 0; k < res->vals[i].npieces; k++)
			if (res->vals[i].pieces[k].kind == CT_PIECE_XREG)
				return false; /* SSE registers: not followed through a ret */
	for (uint32_t i = 0; i < res->prog.nops && i < CT_MAX_OPS; i++)
		if (res->prog.ops[i].code == CT_OP_STACK)
			return false; /* in the caller's frame, gone after its ret */
	if (ct_fetch_relocate(res, 0, w, out))
		return false;
	/* (the frame its guard is of is gone where they are read: that exit's
	 * own walk guards what it saw written) */
	out->prog.guard_from = out->prog.guard_to = 0;
	for (uint32_t i = 0; i < out->prog.nops && i < CT_MAX_OPS; i++)
		if (out->prog.ops[i].code == CT_OP_STACKWORD || out->prog.ops[i].code == CT_OP_REGDIFF ||
		    out->prog.ops[i].code == CT_OP_MEMWORD) {
			ct_site_fetch_free(out); /* in the frame, or memory not the caller's to keep */
			return false;
		}
	return true;
}

/* Is CC, a call of PC's function, PC's own call of itself in tail position
 * through whose ret RES (a tail call's results in PC) and CRES (PC's own
 * results, if captured) pass as they are?  Then it ends with the call of PC
 * it is in, outermost first, and all of them at the exits of PC's other
 * calls (pass_tail_results makes it a tail call with results itself). */
static bool recursion_passes_through(const struct ct_plan *p, const struct ct_callsite *cc,
				     const struct ct_plan_func *pc, const struct ct_site_fetch *res,
				     const struct ct_site_fetch *cres)
{
	if (cc->caller != pc->fn || cc->walk.how != CT_EXIT_TAILPOS || cc->shared ||
	    (cc->how != CT_EXIT_STEPPED && cc->how != CT_EXIT_TAILPOS))
		return false;
	struct ct_exit_walk buf;
	const struct ct_exit_walk *w = ct_callsite_walk(p, cc, &buf);
	return results_pass_through(res, w) && (!cres || results_pass_through(cres, w));
}

/* Can TV, and CRES if any (PC's own results), be read at CC's exit, a call
 * of PC's emulated there? */
static bool results_survive_both(const struct ct_plan *p, const struct ct_callsite *cc, const struct ct_site_fetch *tv,
				 const struct ct_site_fetch *cres)
{
	struct ct_exit_walk buf;
	const struct ct_exit_walk *w = ct_callsite_walk(p, cc, &buf);
	return results_survive(tv, cc, w) && (!cres || results_survive(cres, cc, w));
}

/* A call in tail position with results (single-stepped at its return
 * address so far) whose caller returns them as they are (`return f(x)`),
 * or in other registers of its own results (`cm.h1 = r.needsH1(); return
 * cm`: ct_plan_tail_results), ends with its caller, its results read where the caller's end is
 * observed: at the exit probe of each of the caller's own calls (the caller
 * observed from its callers), each planned one reading them there (and the
 * caller's own results, so that no exit moves later); those found while
 * recording (an address-taken caller) read them where they can. */
static void pass_tail_results(struct analysis *a, const struct ct_selection *sel)
{
	struct ct_plan *p = a->p;
	for (size_t j = 0; j < p->funcs.n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		struct ct_site_fetch *res = NULL;
		for (size_t k = 0; pf->in_caller && pf->results && sel->args && k < pf->ncalls; k++) {
			struct ct_callsite *cs = &pf->calls[k];
			size_t jc = traced(a, cs->caller->entry);
			const struct ct_plan_func *pc = jc ? &p->funcs.v[jc - 1] : NULL;
			/* (and not where a landing pad may return from the caller) */
			if (cs->how != CT_EXIT_STEPPED || cs->walk.how != CT_EXIT_TAILPOS || cs->shared || !pc ||
			    !pc->in_caller || (!pc->ncalls && !pc->indirect) || pad_rejoins(a, cs, true, false))
				continue;
			if (!res && !(res = ct_plan_results_fetch(p, sel->args, pf->fn)))
				break;
			struct ct_site_fetch tv;
			struct ct_exit_walk buf;
			const struct ct_exit_walk *w = ct_callsite_walk(p, cs, &buf);
			if (!ct_plan_tail_results(res, w, (cs->caller->flags & CT_FN_GO) != 0, &tv))
				continue;
			/* (passed on by a recursive call only where they stay as they are) */
			bool same = results_pass_through(res, w);
			struct ct_site_fetch *cres = pc->results ? ct_plan_results_fetch(p, sel->args, pc->fn) : NULL;
			bool ok = true;
			for (size_t m = 0; m < pc->ncalls && ok; m++) {
				const struct ct_callsite *cc = &pc->calls[m];
				/* (not one in tail position itself: this pass may change
				 * it -- but the caller's own recursive call that returns
				 * these results as they are, which ends with the call
				 * it is in, this pass making it so if it is not yet:
				 * `return isKnown(inner)`; its roles go to the exits of
				 * the others) */
				ok = !cc->shared && !cc->icall && ((cc->how == CT_EXIT_STEPPED && cc->walk.how != CT_EXIT_TAILPOS) ||
						     (cc->how == CT_EXIT_EMULATED && results_survive_both(p, cc, &tv, cres)) ||
						     (same && recursion_passes_through(p, cc, pc, res, cres)));
			}
			ct_site_fetch_free(&tv);
			if (cres) {
				ct_site_fetch_free(cres);
				free(cres);
			}
			if (!ok)
				continue;
			cs->how = CT_EXIT_TAILPOS;
			cs->exit = 0;
			cs->sp_delta = 0;
			cs->tail_results = true;
			cs->tail_caller = (uint32_t)(jc - 1);
		}
		if (res) {
			ct_site_fetch_free(res);
			free(res);
		}
	}
}

/* Is RES one whole 8-byte integer in a register, the payload's first word
 * (its register in *REG)?  The one shape whose values the reconstruction
 * subtracts (pointers are not: a Go stack copy moves what they hold). */
static bool one_int_word(const struct ct_plan *p, const struct ct_site_fetch *res, int *reg)
{
	if (!res || res->nvals != 1 || res->vals[0].npieces != 1 || res->prog.nops != 1 || !p->types)
		return false;
	const struct ct_val_piece *pc = &res->vals[0].pieces[0];
	const struct ct_fetch_op *op = &res->prog.ops[0];
	const struct ct_type *ty = ct_type_get(ct_types_table(p->types), res->vals[0].type);
	if (pc->kind != CT_PIECE_REG || pc->size != 8 || pc->value_off || pc->slot || op->code != CT_OP_REG ||
	    op->dst || op->off || op->reg >= 15 || !ty || (ty->kind != CT_K_INT && ty->kind != CT_K_UINT) ||
	    ty->size != 8)
		return false;
	*reg = op->reg;
	return true;
}

/* Calls in tail position whose one result (an integer word) the caller
 * adds to the one of the call just before it, kept in its frame, and
 * returns the sum (`return fib(n-1) + fib(n-2)`): the sum is read where the
 * caller's end is, the other call's result at its exit, which is this
 * call's instruction; the reconstruction takes one from the other
 * (CT_SITE_TAILDIFF).  Only while nothing but the caller can write its frame
 * (no address in it is taken), and the walk from the return address saw
 * no store before the caller's ret. */
static void derive_tail_results(struct analysis *a, const struct ct_selection *sel)
{
	struct ct_plan *p = a->p;
	for (size_t j = 0; j < p->funcs.n && sel->args; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		struct ct_site_fetch *res = NULL;
		int reg = -1;
		for (size_t k = 0; pf->in_caller && pf->results && k < pf->ncalls; k++) {
			struct ct_callsite *cs = &pf->calls[k];
			size_t jc = traced(a, cs->caller->entry);
			if (cs->how != CT_EXIT_STEPPED || cs->walk.how != CT_EXIT_TAILPOS || cs->shared || !jc ||
			    !cs->walk.at_ret)
				continue;
			struct ct_exit_walk buf;
			const struct ct_exit_walk *w = ct_callsite_walk(p, cs, &buf);
			if (w->stack_written || w->mem_written || !w->left_regs || pad_rejoins(a, cs, true, false))
				continue;
			if (!res && !(res = ct_plan_results_fetch(p, sel->args, pf->fn)))
				break;
			int creg = -1;
			struct ct_site_fetch *cres = ct_plan_results_fetch(p, sel->args, p->funcs.v[jc - 1].fn);
			bool ok = one_int_word(p, res, &reg) && one_int_word(p, cres, &creg) && creg == reg &&
				  (w->left_regs >> reg & 1) && w->left_in[reg] == reg;
			if (cres) {
				ct_site_fetch_free(cres);
				free(cres);
			}
			/* the call before it: its exit is this call's instruction,
			 * where its result is read from the same frame word */
			bool prev = false;
			for (size_t m = 0; ok && !prev && m < p->funcs.n; m++) {
				const struct ct_plan_func *pa = &p->funcs.v[m];
				struct ct_site_fetch *ares = NULL;
				for (size_t q = 0; pa->in_caller && pa->results && q < pa->ncalls && !prev; q++) {
					const struct ct_callsite *ca = &pa->calls[q];
					int areg;
					struct ct_site_fetch f;
					struct ct_exit_walk abuf;
					if (ca->caller != cs->caller || ca->how != CT_EXIT_EMULATED || ca->exit != cs->at ||
					    ca->shared || ca->icall)
						continue;
					if (!ares && !(ares = ct_plan_results_fetch(p, sel->args, pa->fn)))
						break;
					if (!one_int_word(p, ares, &areg) ||
					    ct_fetch_relocate(ares, -8 - ca->sp_delta, ct_callsite_walk(p, ca, &abuf), &f))
						continue;
					prev = f.prog.nops == 1 && f.prog.ops[0].code == CT_OP_STACKWORD &&
					       f.prog.ops[0].off == w->left_off[reg];
					ct_site_fetch_free(&f);
				}
				if (ares) {
					ct_site_fetch_free(ares);
					free(ares);
				}
			}
			if (!prev)
				continue;
			const struct ct_func *g = cs->caller;
			const uint8_t *code = ct_elf_bytes_at(&a->t->elf, g->entry, g->end - g->entry);
			if (!code || ct_frame_address_taken(code, g->end - g->entry, g->entry))
				continue;
			cs->how = CT_EXIT_TAILPOS;
			cs->exit = 0;
			cs->sp_delta = 0;
			cs->tail_less_prev = true;
		}
		if (res) {
			ct_site_fetch_free(res);
			free(res);
		}
	}
}

/* Does the function FS is of have a RET (interim RETs: plan.c)? */
static bool has_rets(const struct ct_fn_sites *fs)
{
	for (size_t e = 0; e < fs->nexits; e++)
		if (fs->exits[e].kind == CT_SITE_RET)
			return true;
	return false;
}

/* Is the first instruction of the function at ENTRY (its sites FS) a RET? */
static bool entry_is_ret(const struct ct_fn_sites *fs, uint64_t entry)
{
	for (size_t e = 0; e < fs->nexits; e++)
		if (fs->exits[e].kind == CT_SITE_RET && fs->exits[e].addr == entry)
			return true;
	return false;
}

/* An address-taken function whose entry the kernel single-steps (a Go
 * leaf without a stack check) gets its CHECK where it emulates one after
 * the prologue, if that runs once a call and every argument can still be
 * read there (ct_check_after_entry), and no other function jumps in on
 * the way: one emulated hit a call, not a single-step. */
static void check_after_entry(struct analysis *a, struct ct_plan_func *pf, const struct callee *c,
			      const struct ct_selection *sel)
{
	const struct ct_func *f = pf->fn;
	size_t len = f->end > f->entry ? f->end - f->entry : 0;
	const uint8_t *code = len ? ct_elf_bytes_at(&a->t->elf, f->entry, len) : NULL;
	struct ct_exit_walk *w = xmalloc(sizeof(*w));
	bool ok = code && ct_check_after_entry(code, len, f->entry, w) &&
		  !(c->jumped_into && c->jumped_into <= w->site);
	struct ct_site_fetch *args = ok && sel->args ? ct_plan_args_fetch(a->p, sel->args, f) : NULL, moved;
	if (args) {
		ok = ct_fetch_relocate(args, -w->sp_delta, w, &moved) == 0;
		if (ok)
			ct_site_fetch_free(&moved);
		ct_site_fetch_free(args);
		free(args);
	}
	if (ok)
		pf->check_walk = w;
	else
		free(w);
}

/* Where the call's end is observed; false if nowhere.  RESULTS: they are
 * read at its exit (which keeps its whole walk: several passes read it). */
static bool choose_exit(struct analysis *a, struct ct_callsite *cs, bool results)
{
	const struct ct_func *g = cs->caller;
	const uint8_t *code = ct_elf_bytes_at(&a->t->elf, cs->ret, g->end - cs->ret);
	if (!code || g->end <= cs->ret)
		return false;
	struct ct_exit_walk walk;
	ct_exit_walk(code, g->end - cs->ret, cs->ret, &walk);
	ct_callsite_set_walk(a->p, cs, &walk, results);
	const struct ct_exit_walk *w = &walk;
	/* Tail position: the caller's own end closes the call, which needs the
	 * caller traced (its end observed) and no results to read. */
	bool caller_traced = traced(a, g->entry) != 0;
	switch (w->how) {
	case CT_EXIT_EMULATED:
	case CT_EXIT_STEPPED:
		cs->how = (uint8_t)w->how;
		cs->exit = w->site;
		cs->sp_delta = w->sp_delta;
		return true;
	case CT_EXIT_TAILPOS:
		if (caller_traced && !results) {
			cs->how = CT_EXIT_TAILPOS;
			return true;
		}
		if (!w->first_site)
			return false;
		cs->how = CT_EXIT_STEPPED;
		cs->exit = w->first_site;
		cs->sp_delta = 0;
		return true;
	default:
		return false;
	}
}

/* PLT stubs that jump to a traced function of this binary (a -fPIC library
 * calls its own exported functions through its PLT): p->plt_traced. */
static void resolve_plt(struct analysis *a)
{
	struct ct_plan *p = a->p;
	struct ct_map by_name = {0}; /* name hash -> plan index + 1 (first one) */
	for (size_t j = 0; j < p->funcs.n; j++) {
		void **slot = map_slot(&by_name, hash_str(p->funcs.v[j].fn->name), true);
		if (!*slot)
			*slot = (void *)(uintptr_t)(j + 1);
	}
	MAP_FOREACH(&a->plt_stubs, i) {
		const char *name = a->plt_stubs.vals[i];
		size_t j1 = (size_t)(uintptr_t)map_get(&by_name, hash_str(name));
		if (j1 && !strcmp(p->funcs.v[j1 - 1].fn->name, name))
			map_put(&p->plt_traced, a->plt_stubs.keys[i], (void *)(uintptr_t)j1);
	}
	map_free(&by_name);
}

size_t ct_plan_traced_at(const struct ct_plan *p, const struct ct_map *by_entry, uint64_t addr)
{
	size_t j1 = (size_t)(uintptr_t)map_get((struct ct_map *)by_entry, addr);
	return j1 ? j1 : (size_t)(uintptr_t)map_get((struct ct_map *)&p->plt_traced, addr);
}

/* Which functions' calls may end in code that is not traced: a tail jump
 * to an untraced function (`bar: jmp usleep@plt`) hands the frame over, and
 * the call ends when that function returns to bar's caller; a jump into
 * another part of the function (goes_on_elsewhere) may return from there.
 * Also those that tail-jump to such a function.  NULL if none. */
static bool *untraced_tails(struct analysis *a, const struct ct_fn_sites *found)
{
	struct ct_plan *p = a->p;
	size_t n = p->funcs.n;
	bool *await = xcalloc(n ? n : 1, sizeof(*await)), any = false;
	for (size_t j = 0; j < n; j++) {
		if (found[j].goes_on_elsewhere)
			any = await[j] = true; /* (its other part may return) */
		for (size_t e = 0; e < found[j].nexits; e++)
			if (found[j].exits[e].kind == CT_SITE_TAIL &&
			    !ct_plan_traced_at(p, &a->by_entry, found[j].exits[e].target))
				any = await[j] = true;
	}
	for (bool more = any; more;) {
		more = false;
		for (size_t j = 0; j < n; j++)
			for (size_t e = 0; e < found[j].nexits && !await[j]; e++) {
				size_t k1 = found[j].exits[e].kind == CT_SITE_TAIL
						    ? ct_plan_traced_at(p, &a->by_entry, found[j].exits[e].target)
						    : 0;
				if (k1 && await[k1 - 1])
					more = await[j] = true;
			}
	}
	if (!any) {
		free(await);
		return NULL;
	}
	return await;
}

/* A function observed at its own entry and RETs whose call may end in
 * untraced code (above) gets an exit probe at the return address of each of
 * its direct calls: that call has ended when it fires.  Not where the return
 * address already has a probe of a traced function (the caller's own RET or
 * tail jump, a function entry after a call that never returns): one probe
 * has one kind for the kernel-side limits. */
static void plan_return_sites(struct analysis *a, const struct ct_fn_sites *found, const bool *await,
			      bool from_callers, bool limits)
{
	struct ct_plan *p = a->p;
	size_t n = p->funcs.n;
	struct ct_map busy = {0}, entries = {0}, kept_rets = {0};
	for (size_t j = 0; j < n; j++) {
		map_put(&busy, found[j].entry_site, (void *)1);
		map_put(&entries, found[j].entry_site, (void *)1);
		for (size_t e = 0; e < found[j].nexits; e++) {
			map_put(&busy, found[j].exits[e].addr, (void *)1);
			if (found[j].exits[e].kind == CT_SITE_RET && !p->funcs.v[j].in_caller)
				map_put(&kept_rets, found[j].exits[e].addr, (void *)1);
		}
	}
	typedef CT_VEC(struct ct_callsite) callsite_vec;
	callsite_vec *keep = xcalloc(n ? n : 1, sizeof(*keep));
	for (size_t j = 0; j < n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		struct callee *c = &a->c[j];
		if (pf->in_caller || !await[j])
			continue;
		calls_of(c);
		for (size_t k = 0; k < c->calls.n; k++) {
			struct ct_callsite *cs = &c->calls.v[k];
			const struct ct_func *g = cs->caller;
			const uint8_t *code = g->end > cs->ret ? ct_elf_bytes_at(&a->t->elf, cs->ret, g->end - cs->ret) : NULL;
			if (!code || ct_plan_return_unproven(p, cs->ret))
				continue; /* (the call's end unobserved there) */
			if (map_get(&busy, cs->ret)) {
				CT_VEC_PUSH(pf->watched, cs->ret); /* that probe sees it */
				continue;
			}
			struct ct_exit_walk walk;
			ct_exit_walk(code, g->end - cs->ret, cs->ret, &walk);
			ct_callsite_set_walk(p, cs, &walk, false); /* (no results read there) */
			/* --exit=auto (FROM_CALLERS): at the first instruction
			 * after it the kernel emulates, as a call observed from
			 * its caller ends (not where results would be read after
			 * the caller moved them, nor where the call's exception
			 * landing pad may go on to: pad_rejoins) */
			cs->exit = cs->walk.site;
			/* (also where the caller has a probe of its own, its
			 * tail jump or RET: the return site is a role of that
			 * probe, the first it plays -- redis's zfree calls
			 * malloc_usable_size@plt, then `lock sub`, which takes
			 * no probe, then tail-jumps to free@plt: no return site
			 * there left 96% of that stub's calls unobserved.  Not
			 * under record-time limits: the kernel's shadow stack
			 * takes a probe for its first role's kind, and such a
			 * probe made the caller's call look unwound) */
			/* (--exit=ret too where the return address takes no
			 * probe: there is nowhere else to see the call end) */
			bool no_ret_probe = cs->walk.first_site != cs->ret;
			if ((from_callers || no_ret_probe) && !pf->results && cs->walk.how == CT_EXIT_EMULATED &&
			    !map_get(limits ? &busy : &entries, cs->walk.site) && !pad_rejoins(a, cs, false, true)) {
				CT_VEC_PUSH(pf->watched, cs->ret);
				cs->how = CT_EXIT_EMULATED;
				cs->exit = cs->walk.site;
				cs->sp_delta = cs->walk.sp_delta;
				CT_VEC_PUSH(keep[j], *cs);
				continue;
			}
			/* (in tail position in a caller that keeps its RETs: a
			 * role of the RET's probe, first, SP moved as far --
			 * redis's zmalloc calls malloc_usable_size@plt, then
			 * `lock add` and pops to its RET: 1,842 of that stub's
			 * calls ended unobserved in 2 s of load) */
			if ((from_callers || no_ret_probe) && !limits && !pf->results && cs->walk.how == CT_EXIT_TAILPOS &&
			    walk.at_ret && map_get(&kept_rets, walk.ret_at)) {
				cs->exit = walk.ret_at;
				if (!pad_rejoins(a, cs, false, true)) {
					CT_VEC_PUSH(pf->watched, cs->ret);
					cs->how = CT_EXIT_STEPPED;
					cs->sp_delta = walk.sp_delta;
					CT_VEC_PUSH(keep[j], *cs);
					continue;
				}
			}
			if (cs->walk.first_site != cs->ret)
				continue; /* the kernel takes no probe there */
			cs->exit = cs->ret;
			if (pad_rejoins(a, cs, false, true))
				continue; /* (a catch may jump there: the call ends unobserved at its jump) */
			CT_VEC_PUSH(pf->watched, cs->ret);
			cs->how = CT_EXIT_STEPPED; /* at the return address: nothing moved yet */
			cs->sp_delta = 0;
			CT_VEC_PUSH(keep[j], *cs);
		}
		CT_VEC_FREE(c->calls);
	}
	/* A call of J may go on in a function J tail-jumps to (directly, or
	 * through untraced code that jumps on: then that function's frame is
	 * the call's, J's ended at its jump), which its jump's probe knows
	 * watched there (plan_tail_watch): its own return site at each of J's
	 * return addresses, a role of the same probe, closes it. */
	uint32_t *queue = xcalloc(n ? n : 1, sizeof(*queue));
	uint32_t *seen = xcalloc(n ? n : 1, sizeof(*seen));
	for (size_t j = 0; j < n; j++) {
		size_t nj = keep[j].n, head = 0, tail = 0;
		if (!nj)
			continue;
		queue[tail++] = (uint32_t)j;
		seen[j] = (uint32_t)j + 1;
		while (head < tail) {
			uint32_t f = queue[head++];
			for (size_t e = 0; e < found[f].nexits; e++) {
				size_t k1 = found[f].exits[e].kind == CT_SITE_TAIL
						    ? ct_plan_traced_at(p, &a->by_entry, found[f].exits[e].target)
						    : 0;
				if (!k1 || seen[k1 - 1] == j + 1 || p->funcs.v[k1 - 1].in_caller || !await[k1 - 1])
					continue;
				seen[k1 - 1] = (uint32_t)j + 1;
				queue[tail++] = (uint32_t)(k1 - 1);
				for (size_t k = 0; k < nj; k++) {
					bool have = false;
					for (size_t m = 0; m < keep[k1 - 1].n && !have; m++)
						have = keep[k1 - 1].v[m].ret == keep[j].v[k].ret;
					if (!have)
						CT_VEC_PUSH(keep[k1 - 1], keep[j].v[k]);
				}
			}
		}
	}
	free(queue);
	free(seen);
	for (size_t j = 0; j < n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		if (pf->in_caller || !await[j])
			continue;
		pf->calls = keep[j].v;
		pf->ncalls = keep[j].n;
		pf->return_sites = keep[j].n > 0;
	}
	free(keep);
	map_free(&busy);
	map_free(&entries);
	map_free(&kept_rets);
}

/* The runtime's own call sites of closures: a goroutine's function returns
 * to goexit + 1 (newproc makes that its return address: goexit's CALL
 * goexit1, past a NOP), a deferred one is called through its funcval by
 * deferreturn (or while panicking by gopanic, deferCallSave).  Planned like
 * direct calls for every closure the runtime may call itself, a func()
 * (register ABI: pclntab args 0; `go`/`defer` of one with arguments or
 * results calls it from a wrapper closure instead), so that the runtime's
 * calls of it end at an exit probe from the first one on: it needs no RET
 * probes.  Other callers of it are found while recording. */
static void find_runtime_calls(struct analysis *a)
{
	const struct ct_target *t = a->t;
	for (size_t i = 0; i < t->nfuncs; i++) {
		const struct ct_func *g = &t->funcs[i];
		bool goexit = ct_go_is_goexit(g->name);
		if (!goexit && !ct_go_runs_closures(g->name))
			continue;
		const uint8_t *code = g->end > g->entry ? ct_elf_bytes_at(&t->elf, g->entry, g->end - g->entry) : NULL;
		if (!code)
			continue;
		uint64_t at[8];
		uint8_t lens[8];
		size_t n = 0;
		if (goexit && code[0] == 0x90 && g->end > g->entry + 1) {
			at[n] = g->entry;
			lens[n++] = 1;
		} else if (!goexit) {
			n = ct_indirect_calls(code, g->end - g->entry, g->entry, at, lens, 8);
			if (n > 8)
				continue; /* not the code this was written for */
		}
		for (size_t k = 0; k < n; k++) {
			struct ct_callsite cs = {.at = at[k], .ret = at[k] + lens[k], .caller = g, .call_site = CT_NOSITE,
						 .exit_site = CT_NOSITE, .shared = true};
			CT_VEC_PUSH(a->p->runtime_calls, cs);
		}
	}
}

/* A Go closure that takes or returns something, under the register ABI:
 * `go` and `defer` never start it directly (the compiler wraps such a
 * call in a closure that takes and returns nothing, which calls it), so
 * its callers are Go code's call sites, like any address-taken
 * function's. */
static bool closure_with_args(const struct ct_target *t, const struct ct_func *fn)
{
	return t->regabi && fn->args > 0 && ct_go_is_closure(fn->name);
}

static int cmp_named_closure(const void *x, const void *y)
{
	uint64_t a = ((const struct named_closure *)x)->parent_hash, b = ((const struct named_closure *)y)->parent_hash;
	return a < b ? -1 : a > b;
}

/* Where the wrappers of `go f(x)` and `defer f(x)` call FN, a closure with
 * arguments (closure_with_args): the closures of the same enclosing
 * function that the compiler made (pclntab's wrapper flag: never traced),
 * that take nothing and call through a register in tail position, the one
 * call they make (but morestack's) -- the wrapper loads f's funcval and x
 * from its own context and calls it.  Appended to OUT as
 * call sites whose exit probe closes whichever call that instruction made
 * (shared: a wrapper of `go g(x)` for a function value g calls what g
 * holds), planned before the program runs: one call a goroutine or defer,
 * which a call site found while recording would not see.  None found:
 * false. */
static bool wrapper_calls(struct analysis *a, const struct ct_func *fn, struct callee *out)
{
	const struct ct_target *t = a->t;
	if (!a->argless_done) {
		a->argless_done = true;
		for (size_t i = 0; i < t->nfuncs; i++) {
			const struct ct_func *g = &t->funcs[i];
			if (g->args || !ct_go_is_closure(g->name) || !(g->flags & CT_FN_GO) || !(g->flags & CT_FN_WRAPPER))
				continue;
			if (!(a->nargless & (a->nargless + 1)))
				a->argless = xrealloc(a->argless, (2 * a->nargless + 1) * sizeof(*a->argless));
			a->argless[a->nargless].parent_hash = hash_strn(g->name, ct_go_closure_parent_len(g->name));
			a->argless[a->nargless++].fn = g;
		}
		if (a->nargless)
			qsort(a->argless, a->nargless, sizeof(*a->argless), cmp_named_closure);
	}
	size_t plen = ct_go_closure_parent_len(fn->name);
	uint64_t h = hash_strn(fn->name, plen);
	size_t lo = 0, hi = a->nargless;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a->argless[mid].parent_hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool any = false;
	for (size_t i = lo; i < a->nargless && a->argless[i].parent_hash == h; i++) {
		const struct ct_func *g = a->argless[i].fn;
		if (ct_go_closure_parent_len(g->name) != plen || strncmp(g->name, fn->name, plen) || g->end <= g->entry)
			continue;
		const uint8_t *code = ct_elf_bytes_at(&t->elf, g->entry, g->end - g->entry);
		uint64_t at[2];
		uint8_t lens[2];
		if (!code || ct_indirect_calls(code, g->end - g->entry, g->entry, at, lens, 2) != 1)
			continue;
		uint64_t ret = at[0] + lens[0];
		struct ct_exit_walk w;
		ct_exit_walk(code + (ret - g->entry), g->end - ret, ret, &w);
		if (w.how != CT_EXIT_TAILPOS)
			continue;
		struct ct_callsite cs = {.at = at[0], .ret = ret, .caller = g, .call_site = CT_NOSITE, .exit_site = CT_NOSITE,
					 .shared = true};
		CT_VEC_PUSH(out->calls, cs);
		any = true;
	}
	return any;
}

/* ---- indirect calls in traced code ----
 * An address-taken Go function's calls from a call site the plan does not
 * know are found while recording: its CHECK reports the return address, the
 * exit probe is in some 25 ms later, and the calls from there until then
 * end unobserved -- all of a loop of calls through an interface shorter
 * than that (restic's DefaultLayout.Paths: 256 calls of Join in ~5 ms,
 * through the method value's -fm wrapper).  An indirect call in traced
 * code most likely reaches traced code, so each is planned before the
 * program runs for the address-taken functions it may call: those of a
 * wrapper the selection names (never traced itself) for the method it is
 * named for; those of a traced function by the shape of the call -- a
 * register loaded from an itab's method slot k (0x18 + 8k) calls a method
 * found at slot k of an itab in data, or in none (an itab the runtime
 * makes: any slot); one loaded from a funcval (at 0) a function whose
 * address is in a funcval or taken in code; anything else any of them.
 * Not a call that may reach more than ICALL_FANOUT of them (generic code:
 * fmt's Stringer, an io.Writer; most likely untraced functions, whose calls
 * would pay the exit probe for nothing), and at most ICALL_PAIRS (call,
 * function) pairs, calls that may reach the fewest first, the rest found
 * while recording as before.  Each pair
 * is a CALL site the function's CHECK sends, with the exit a site found
 * there would have (where its results can be read, else at the
 * return address, single-stepped -- only in a wrapper whose method is
 * mostly traced code's: a step per call made there, traced or not, cost
 * bench/http ~10% a request where conn.Write and bufio's Write went
 * through such calls); the functions of one exit whose results
 * the same program reads ride on the first one's probe (a RETSITE of their
 * own, a companion no chain names: the reconstruction closes their calls
 * with its hits), at most ICALL_PROGRAMS programs a call instruction.  Each
 * exit planned costs a hit per call made there, traced callee or not. */
#define ICALL_PAIRS 4096
#define ICALL_FANOUT 32
#define ICALL_PROGRAMS 4
#define ICALL_MAX 256 /* indirect calls looked at in one function */

/* The method a Go function or wrapper is named for: "M" of `p.(*T).M`,
 * `p.T.M`, `p.I.M-fm` (a method value's wrapper), as LEN bytes at the
 * returned pointer. */
static const char *go_method_of(const char *name, size_t *len)
{
	const char *slash = strrchr(name, '/');
	const char *dot = strrchr(slash ? slash : name, '.');
	const char *m = dot ? dot + 1 : name;
	*len = strlen(m);
	if (*len > 3 && !strcmp(m + *len - 3, "-fm"))
		*len -= 3;
	return m;
}

/* RES read at the exit of CS (as args.c will read them there): true with
 * the program in *OUT, false if they cannot be. */
static bool icall_results(const struct ct_plan *p, const struct ct_site_fetch *res, const struct ct_callsite *cs,
			  struct ct_site_fetch *out)
{
	struct ct_exit_walk buf;
	if (cs->how == CT_EXIT_EMULATED)
		return ct_fetch_relocate(res, -8 - cs->sp_delta, ct_callsite_walk(p, cs, &buf), out) == 0;
	return cs->how == CT_EXIT_STEPPED && cs->exit == cs->walk.first_site && ct_fetch_relocate(res, -8, NULL, out) == 0;
}

/* Are most of the methods named as wrapper W's (`p.I.M-fm` calls an M)
 * in the binary traced ones? */
static bool mostly_traced(struct analysis *a, const struct ct_func *w)
{
	size_t wlen, mlen;
	if (!a->methods_done) {
		a->methods_done = true;
		for (size_t i = 0; i < a->t->nfuncs; i++) {
			const struct ct_func *f = &a->t->funcs[i];
			const char *mm = go_method_of(f->name, &mlen), *slash = strrchr(f->name, '/');
			const char *dot = strchr(slash ? slash : f->name, '.');
			if ((f->flags & CT_FN_WRAPPER) || !dot || !strchr(dot + 1, '.') || ct_go_is_closure(f->name))
				continue; /* not a method */
			size_t *n = map_get(&a->methods, hash_strn(mm, mlen));
			if (!n) {
				n = xcalloc(2, sizeof(*n));
				map_put(&a->methods, hash_strn(mm, mlen), n);
			}
			n[0]++;
			n[1] += traced(a, f->entry) != 0;
		}
	}
	const char *wm = go_method_of(w->name, &wlen);
	const size_t *n = map_get(&a->methods, hash_strn(wm, wlen));
	return n && n[0] && 2 * n[1] >= n[0];
}

/* An indirect call and the functions it may call (cand_at.. in a list). */
struct icall_site {
	const struct ct_func *g;
	uint64_t at;
	uint8_t len;
	uint32_t cand_at, ncand;
};

static int cmp_icall_site(const void *x, const void *y)
{
	const struct icall_site *a = x, *b = y;
	if (a->ncand != b->ncand)
		return a->ncand < b->ncand ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* PF's planned calls go on with the N in V, their return addresses watched. */
static void add_calls(struct ct_plan_func *pf, const struct ct_callsite *v, size_t n)
{
	if (!n)
		return;
	pf->calls = xrealloc(pf->calls, (pf->ncalls + n) * sizeof(*pf->calls));
	memcpy(pf->calls + pf->ncalls, v, n * sizeof(*pf->calls));
	pf->ncalls += n;
	for (size_t k = 0; k < n; k++)
		CT_VEC_PUSH(pf->watched, v[k].ret);
}

static void plan_indirect_sites(struct analysis *a, const struct ct_fn_sites *found, const struct ct_selection *sel)
{
	struct ct_plan *p = a->p;
	size_t n = p->funcs.n;
	CT_VEC(uint32_t) callees = {0};
	for (size_t j = 0; j < n; j++)
		if (p->funcs.v[j].in_caller && p->funcs.v[j].indirect && (p->funcs.v[j].fn->flags & CT_FN_GO))
			CT_VEC_PUSH(callees, (uint32_t)j);
	if (!callees.n)
		return;
	/* the method each callee is named for (a wrapper calls its own), and
	 * the call instructions planned already (wrapper_calls') */
	struct named {
		const char *m;
		size_t len;
	} *method = xcalloc(callees.n, sizeof(*method));
	struct ct_map planned_at = {0};
	for (size_t c = 0; c < callees.n; c++) {
		const struct ct_plan_func *pc = &p->funcs.v[callees.v[c]];
		method[c].m = go_method_of(pc->fn->name, &method[c].len);
		for (size_t q = 0; q < pc->ncalls; q++)
			map_put(&planned_at, pc->calls[q].at, (void *)1);
	}
	/* the callees an itab call through slot K may reach (K 0..63, 63 for
	 * any beyond) and those a funcval call may (reach[64]), in callees'
	 * order: supersets of what the test below keeps, so that it looks at
	 * a few, not every callee for every call (docker: 2 s of 3 in plan) */
	CT_VEC(uint32_t) reach[65] = {{0}};
	CT_VEC(uint32_t) every = {0};
	for (size_t c = 0; c < callees.n; c++) {
		const struct callee *ce = &a->c[callees.v[c]];
		bool itab_only = !ce->in_funcval && !ce->in_code;
		for (int k = 0; k < 64; k++)
			if (ce->itab_slots ? (ce->itab_slots >> k & 1) : itab_only)
				CT_VEC_PUSH(reach[k], (uint32_t)c);
		if (!itab_only)
			CT_VEC_PUSH(reach[64], (uint32_t)c);
		CT_VEC_PUSH(every, (uint32_t)c);
	}
	struct ct_site_fetch **res = xcalloc(n, sizeof(*res));
	bool *res_done = xcalloc(n, sizeof(*res_done));
	typedef CT_VEC(struct ct_callsite) callsite_vec;
	callsite_vec *add = xcalloc(n, sizeof(*add));
	struct ct_icall *ic = xmalloc(ICALL_MAX * sizeof(*ic));
	struct ct_callsite *cs = xmalloc(sizeof(*cs));
	struct ct_exit_walk *wbuf = xmalloc(sizeof(*wbuf));
	/* the callers: traced functions, then the wrappers the selection
	 * names (never traced themselves) */
	CT_VEC(const struct ct_func *) callers = {0};
	for (size_t gi = 0; gi < n; gi++)
		CT_VEC_PUSH(callers, p->funcs.v[gi].fn);
	for (size_t i = 0; i < a->t->nfuncs; i++) {
		const struct ct_func *w = &a->t->funcs[i];
		if ((w->flags & CT_FN_WRAPPER) && !(w->flags & CT_FN_NOPROBE) && ct_plan_names_selected(a->t, w, sel))
			CT_VEC_PUSH(callers, w);
	}
	/* the calls and the functions each may call, planned fewest first
	 * (the most specific: a wrapper's) while the budget lasts */
	CT_VEC(uint32_t) cand = {0};
	CT_VEC(struct icall_site) sites = {0};
	for (size_t gi = 0; gi < callers.n; gi++) {
		const struct ct_func *g = callers.v[gi];
		bool wrapper = (g->flags & CT_FN_WRAPPER) != 0;
		size_t len = g->end > g->entry ? g->end - g->entry : 0;
		const uint8_t *code = len ? ct_elf_bytes_at(&a->t->elf, g->entry, len) : NULL;
		if (!code || !(g->flags & CT_FN_GO) || (g->flags & CT_FN_NOPROBE))
			continue;
		/* a traced function's were found with its sites, a wrapper's
		 * are looked for here */
		size_t m = gi < n ? found[gi].nicalls : ct_indirect_call_shapes(code, len, g->entry, ic, ICALL_MAX);
		for (size_t k_ = 0; gi < n && k_ < m && k_ < ICALL_MAX; k_++)
			ic[k_] = ct_indirect_call_shape(code, len, g->entry, &found[gi].icalls[k_]);
		for (size_t k_ = 0; k_ < m && k_ < ICALL_MAX; k_++) {
			bool slot = ic[k_].via == CT_ICALL_LOADED || ic[k_].via == CT_ICALL_MEM;
			bool itab = slot && ic[k_].disp >= 0x18 && ic[k_].disp % 8 == 0, value = slot && ic[k_].disp == 0;
			if (ic[k_].via == CT_ICALL_RIP || map_get(&a->reg_calls, ic[k_].at))
				continue;
			int k = (ic[k_].disp - 0x18) / 8;
			size_t wlen = 0, first = cand.n;
			const char *wm = wrapper ? go_method_of(g->name, &wlen) : NULL;
			bool seen = map_get(&planned_at, ic[k_].at) != NULL;
			const uint32_t *look = wm ? every.v : itab ? reach[k < 63 ? k : 63].v : value ? reach[64].v : every.v;
			size_t nlook = wm ? every.n : itab ? reach[k < 63 ? k : 63].n : value ? reach[64].n : every.n;
			for (size_t l = 0; l < nlook && cand.n - first <= ICALL_FANOUT; l++) {
				size_t c = look[l];
				const struct callee *ce = &a->c[callees.v[c]];
				/* a wrapper calls the method it is named for */
				if (wm && (method[c].len != wlen || memcmp(method[c].m, wm, wlen)))
					continue;
				/* (a method in no itab in data, only in its type's
				 * method table: in one the runtime makes, any slot) */
				bool itab_only = !ce->in_funcval && !ce->in_code;
				if ((itab && ce->itab_slots && !(ce->itab_slots >> (k < 63 ? k : 63) & 1)) ||
				    (itab && !ce->itab_slots && !itab_only) || (value && itab_only))
					continue;
				/* (not where it is planned already: a wrapper_calls one) */
				const struct ct_plan_func *pc = &p->funcs.v[callees.v[c]];
				size_t q = 0;
				while (seen && q < pc->ncalls && pc->calls[q].at != ic[k_].at)
					q++;
				if (!seen || q == pc->ncalls)
					CT_VEC_PUSH(cand, callees.v[c]);
			}
			if (cand.n == first || cand.n - first > ICALL_FANOUT) {
				cand.n = first; /* a call that may reach that many: generic code, most likely untraced */
				continue;
			}
			struct icall_site is = {g, ic[k_].at, ic[k_].len, (uint32_t)first, (uint32_t)(cand.n - first)};
			CT_VEC_PUSH(sites, is);
		}
	}
	if (sites.n)
		qsort(sites.v, sites.n, sizeof(*sites.v), cmp_icall_site);
	for (size_t si = 0; si < sites.n; si++) {
		const struct icall_site *is = &sites.v[si];
		const uint32_t *cv = cand.v + is->cand_at;
		size_t cn = is->ncand;
		{
			memset(cs, 0, sizeof(*cs));
			cs->at = is->at;
			cs->ret = is->at + is->len;
			cs->caller = is->g;
			cs->call_site = cs->exit_site = CT_NOSITE;
			cs->icall = true;
			/* a single-stepped exit costs a step per call made there,
			 * whatever it calls: only at a wrapper whose method is
			 * mostly traced code's */
			bool stepped_ok = (is->g->flags & CT_FN_WRAPPER) && mostly_traced(a, is->g);
			if (!choose_exit(a, cs, false) || (cs->how == CT_EXIT_STEPPED && !stepped_ok))
				continue;
			if (p->icall_pairs + cn > ICALL_PAIRS) {
				p->icall_left++;
				continue;
			}
			/* the first function of each results program at each exit */
			struct ct_site_fetch lead_prog[ICALL_PROGRAMS];
			bool lead_has[ICALL_PROGRAMS];
			uint64_t lead_exit[ICALL_PROGRAMS];
			uint32_t lead_func[ICALL_PROGRAMS], lead_k[ICALL_PROGRAMS];
			size_t nlead = 0, pairs = 0;
			for (size_t c = 0; c < cn; c++) {
				uint32_t j = cv[c];
				const struct ct_plan_func *pf = &p->funcs.v[j];
				if (!res_done[j]) {
					res[j] = pf->results && sel->args ? ct_plan_results_fetch(p, sel->args, pf->fn) : NULL;
					res_done[j] = true;
				}
				/* its exit as a call site found while recording would
				 * have it: where its results cannot be read (in tail
				 * position, none; lost on the way to an emulated exit),
				 * at the return address, single-stepped */
				bool has = res[j] != NULL;
				if (has && !cs->full) /* (its results are read there) */
					ct_callsite_set_walk(p, cs, ct_callsite_walk(p, cs, wbuf), true);
				CT_VEC_PUSH(add[j], *cs);
				struct ct_callsite *c2 = &add[j].v[add[j].n - 1];
				struct ct_site_fetch f;
				bool read = has && icall_results(p, res[j], c2, &f);
				if (has && !read && c2->walk.first_site && stepped_ok) {
					c2->how = CT_EXIT_STEPPED;
					c2->exit = c2->walk.first_site;
					c2->sp_delta = 0;
					read = icall_results(p, res[j], c2, &f);
				}
				if (has && !read) {
					add[j].n--; /* nowhere: found while recording (its RETs then) */
					continue;
				}
				size_t l = 0;
				while (c2->how != CT_EXIT_TAILPOS && l < nlead &&
				       (lead_exit[l] != c2->exit || !same_program(lead_has[l] ? &lead_prog[l] : NULL, has ? &f : NULL)))
					l++;
				if (c2->how == CT_EXIT_TAILPOS) {
					/* (no exit probe: it ends with its caller) */
				} else if (l < nlead) {
					c2->rides_on = lead_func[l] + 1;
					c2->rides_k = lead_k[l];
					if (has)
						ct_site_fetch_free(&f);
				} else if (nlead < ICALL_PROGRAMS) {
					lead_has[nlead] = has;
					if (has)
						lead_prog[nlead] = f;
					lead_exit[nlead] = c2->exit;
					lead_func[nlead] = j;
					lead_k[nlead++] = (uint32_t)(pf->ncalls + add[j].n - 1);
				} else {
					add[j].n--;
					if (has)
						ct_site_fetch_free(&f);
					continue;
				}
				pairs++;
				p->icall_pairs++;
			}
			for (size_t l = 0; l < nlead; l++)
				if (lead_has[l])
					ct_site_fetch_free(&lead_prog[l]);
			p->icall_sites += pairs > 0;
		}
	}
	for (size_t j = 0; j < n; j++) {
		if (res[j]) {
			ct_site_fetch_free(res[j]);
			free(res[j]);
		}
		add_calls(&p->funcs.v[j], add[j].v, add[j].n);
		CT_VEC_FREE(add[j]);
	}
	CT_VEC_FREE(callers);
	CT_VEC_FREE(cand);
	CT_VEC_FREE(sites);
	free(cs);
	free(wbuf);
	free(ic);
	free(add);
	free(res);
	free(res_done);
	free(method);
	map_free(&planned_at);
	CT_VEC_FREE(callees);
	CT_VEC_FREE(every);
	for (int k = 0; k < 65; k++)
		CT_VEC_FREE(reach[k]);
}

/* W, a walk's state at a call instruction, as it is after the call pushed
 * its return address: what was at SP + off is at SP + off + 8, and the
 * stack below was written. */
static void walk_past_push(struct ct_exit_walk *w)
{
	w->sp_delta -= 8;
	for (int r = 0; r < 15; r++)
		if (w->loc[r].reg == CT_LOC_STACK || (w->loc[r].less_word && !w->loc[r].word_reg))
			w->loc[r].stack_off += 8;
	for (int k = 0; k < 16; k++)
		if (w->xloc[k].base == CT_XLOC_SP)
			w->xloc[k].off += 8;
	w->stack_lo = w->stack_written && w->stack_lo + 8 < 0 ? w->stack_lo + 8 : 0;
	w->stack_hi = w->stack_written && w->stack_hi + 8 > 8 ? w->stack_hi + 8 : 8;
	w->stack_written = true;
}

/* The first instruction of the untraced Go function at ENTRY that the
 * kernel emulates, if every call runs it once, with nothing changed but
 * the flags before it (a stack check's `cmp`): *W the walk there; 0 if
 * none. */
static uint64_t untraced_entry_site(struct analysis *a, uint64_t entry, struct ct_exit_walk *w)
{
	const struct ct_func *f = ct_target_func_at(a->t, entry);
	if (!f || f->entry != entry || f->end <= entry || !(f->flags & CT_FN_GO) || (f->flags & CT_FN_NOPROBE))
		return 0;
	const uint8_t *code = ct_elf_bytes_at(&a->t->elf, entry, f->end - entry);
	if (!code || !ct_check_after_entry(code, f->end - entry, entry, w) || w->sp_delta || w->written ||
	    w->stack_written || w->mem_written)
		return 0;
	return w->site;
}

/* A call whose return site's straight line reaches an indirect call before
 * anything the kernel emulates is seen ending there, single-stepped at its
 * return address -- unless the code shows what that call calls: Go's
 * open-coded defer of a closure in the frame (`defer mu.Unlock()` after
 * `return f()`, ct_go_deferred_closure).  If that closure is traced, with a
 * CHECK at its entry, the indirect call is planned as one of its call sites
 * (a return address its CHECK knows), and the call's exit goes at the
 * indirect call, a probe ct_plan_merge_exits_into_checks moves into that
 * CHECK: its hit from there closes the call, then opens the closure's, as
 * at a direct call's (the kernel runs nothing else in between; the
 * closure's other callers, a panic's or deferreturn's, are other return
 * addresses).  Where the merge is not made, the exit probe at the indirect
 * call is single-stepped, as at the return address. */
static void exits_at_deferred_closures(struct analysis *a, const struct ct_fn_sites *found,
				       const struct ct_selection *sel)
{
	struct ct_plan *p = a->p;
	size_t n = p->funcs.n;
	typedef CT_VEC(struct ct_callsite) callsite_vec;
	callsite_vec *add = xcalloc(n ? n : 1, sizeof(*add));
	struct ct_callsite *trial = xmalloc(sizeof(*trial)), *c2 = xmalloc(sizeof(*c2));
	struct ct_exit_walk *wf = xmalloc(sizeof(*wf)), *wt = xmalloc(sizeof(*wt));
	for (size_t j = 0; j < n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		struct ct_site_fetch *res = NULL;
		bool res_done = false;
		for (size_t k = 0; pf->in_caller && k < pf->ncalls; k++) {
			struct ct_callsite *cs = &pf->calls[k];
			const struct ct_func *g = cs->caller;
			/* (register ABI code only: the analysis takes X15 for zero) */
			if (cs->how != CT_EXIT_STEPPED || !cs->walk.icall_at || cs->icall || cs->shared ||
			    !(g->flags & CT_FN_GO) || (g->flags & CT_FN_ABI0) || g->end <= g->entry)
				continue;
			const uint8_t *code = ct_elf_bytes_at(&a->t->elf, g->entry, g->end - g->entry);
			uint64_t icall = cs->walk.icall_at;
			uint64_t fa = code ? ct_go_deferred_closure(code, g->end - g->entry, g->entry, cs->ret, icall) : 0;
			size_t jf1 = fa ? traced(a, fa) : 0;
			const struct ct_plan_func *pff = jf1 ? &p->funcs.v[jf1 - 1] : NULL;
			uint64_t wrapper_site = fa && !jf1 && !sel->limits ? untraced_entry_site(a, fa, wf) : 0;
			if (!wrapper_site && (!pff || !pff->in_caller || !found[jf1 - 1].entry_emulated || pff->check_walk))
				continue;
			/* the call's exit at the indirect call, its results read there */
			*trial = *cs;
			ct_exit_walk_to(code + (cs->ret - g->entry), g->end - cs->ret, cs->ret, icall, wt);
			if (wt->how != CT_EXIT_EMULATED || wt->site != icall)
				continue;
			trial->how = CT_EXIT_EMULATED;
			trial->exit = icall;
			if (wrapper_site) {
				/* or at the closure's entry, SP 8 lower */
				walk_past_push(wt);
				trial->exit = wrapper_site;
			}
			trial->sp_delta = wt->sp_delta;
			if (!res_done && pf->results && sel->args)
				res = ct_plan_results_fetch(p, sel->args, pf->fn);
			res_done = true;
			if (res && !results_survive(res, trial, wt))
				continue;
			/* (kept: a walk to the indirect call, not the one from the
			 * return address ct_callsite_walk would make again) */
			if (wrapper_site) {
				ct_callsite_set_walk(p, trial, wt, true);
				*cs = *trial;
				continue;
			}
			/* the closure's call there, planned unless it is */
			bool planned = false;
			for (size_t q = 0; q < pff->ncalls && !planned; q++)
				planned = pff->calls[q].at == icall;
			for (size_t q = 0; q < add[jf1 - 1].n && !planned; q++)
				planned = add[jf1 - 1].v[q].at == icall;
			if (!planned) {
				memset(c2, 0, sizeof(*c2));
				c2->at = icall;
				c2->ret = icall + cs->walk.icall_len;
				c2->caller = g;
				c2->call_site = c2->exit_site = CT_NOSITE;
				c2->icall = true;
				if (pff->results || !choose_exit(a, c2, false))
					continue; /* (a deferred closure has none) */
				CT_VEC_PUSH(add[jf1 - 1], *c2);
			}
			ct_callsite_set_walk(p, trial, wt, true);
			*cs = *trial;
			cs->closed_by = (uint32_t)jf1;
		}
		if (res) {
			ct_site_fetch_free(res);
			free(res);
		}
	}
	for (size_t j = 0; j < n; j++) {
		add_calls(&p->funcs.v[j], add[j].v, add[j].n);
		CT_VEC_FREE(add[j]);
	}
	free(add);
	free(trial);
	free(c2);
	free(wf);
	free(wt);
}

/* ---- where a wrapper that makes a call last returns to ----
 * A call a Go wrapper makes last (CT_EXIT_VIA) is looked up again, by its
 * CHECK, as the call from where the wrapper returns to.  Found while
 * recording, each such place costs the first call from there (it ends
 * unobserved: no exit probe yet) and it takes two steps to find where a
 * wrapper's call ends.  So the places the code shows are planned as call
 * sites of the function before the program runs (plan_via_returns), or
 * with the wrapper's call site where that is found while recording
 * (ct_plan_via_places): where the runtime calls closures (goexit for a
 * `go` wrapper; deferreturn, gopanic, deferCallSave for a `defer` one:
 * p->runtime_calls, shared, as every argless closure's) and the open-coded
 * defers of the wrapper in the function it was made in
 * (ct_go_deferred_calls).  Each has the exit a call site found there would
 * have where that is emulated, or in tail position in a traced caller
 * (without results); another place is found while recording, as before.
 * Whatever that call instruction calls, the call of the function looked
 * up from there was made by it: a place planned for nothing costs its exit
 * probe's hits, never a wrong tree. */
#define VIA_PLACES 24 /* places of one wrapper */

/* The function named NAME (LEN bytes), the first of that name; NULL if none. */
static const struct ct_func *func_named(struct ct_plan *p, const char *name, size_t len)
{
	const struct ct_target *t = p->t;
	if (!p->by_name_done) {
		p->by_name_done = true;
		for (size_t i = t->nfuncs; i-- > 0;)
			map_put(&p->by_name, hash_strn(t->funcs[i].name, strlen(t->funcs[i].name)) | 1,
				(void *)(uintptr_t)(i + 1));
	}
	size_t i = (size_t)(uintptr_t)map_get(&p->by_name, hash_strn(name, len) | 1);
	const struct ct_func *f = i ? &t->funcs[i - 1] : NULL;
	return f && strlen(f->name) == len && !strncmp(f->name, name, len) ? f : NULL;
}

/* Where wrapper W may return to, as call sites (at, ret, caller; the
 * runtime's shared): up to MAX in OUT, how many. */
static size_t via_places(struct ct_plan *p, const struct ct_func *w, struct ct_callsite *out, size_t max)
{
	size_t n = 0;
	/* (a method value's wrapper, not made for `go` or `defer`, is
	 * rarely run by the runtime) */
	size_t plen = ct_go_is_closure(w->name) ? ct_go_closure_parent_len(w->name) : 0;
	for (size_t k = 0; plen && k < p->runtime_calls.n && n < max; k++) {
		out[n] = p->runtime_calls.v[k];
		out[n++].via_place = true;
	}
	const struct ct_func *g = plen ? func_named(p, w->name, plen) : NULL;
	const uint8_t *code = g && g->end > g->entry ? ct_elf_bytes_at(&p->t->elf, g->entry, g->end - g->entry) : NULL;
	if (!code || !(g->flags & CT_FN_GO) || (g->flags & CT_FN_NOPROBE))
		return n;
	uint64_t at[VIA_PLACES];
	uint8_t lens[VIA_PLACES];
	size_t nd = ct_go_deferred_calls(code, g->end - g->entry, g->entry, w->entry, at, lens, VIA_PLACES);
	for (size_t k = 0; k < nd && k < VIA_PLACES && n < max; k++)
		out[n++] = (struct ct_callsite){.at = at[k], .ret = at[k] + lens[k], .caller = g, .call_site = CT_NOSITE,
						.exit_site = CT_NOSITE, .via_place = true, .wrapper = w};
	return n;
}

/* C2 (at, ret, caller set) with the exit a call found there would have,
 * where its hits cost no single-step; RES: the results, if captured. */
static bool via_place_exit(struct analysis *a, struct ct_callsite *c2, const struct ct_site_fetch *res)
{
	struct ct_exit_walk buf;
	if (!choose_exit(a, c2, res != NULL))
		return false;
	return c2->how == CT_EXIT_TAILPOS ||
	       (c2->how == CT_EXIT_EMULATED && (!res || results_survive(res, c2, ct_callsite_walk(a->p, c2, &buf))));
}

static void plan_via_returns(struct analysis *a, const struct ct_fn_sites *found, const struct ct_selection *sel)
{
	struct ct_plan *p = a->p;
	struct ct_callsite *place = xmalloc(VIA_PLACES * sizeof(*place));
	CT_VEC(struct ct_callsite) add = {0};
	for (size_t j = 0; j < p->funcs.n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		/* (without a CHECK its calls end at their return addresses) */
		if (!pf->in_caller || !(found[j].entry_emulated || pf->indirect))
			continue;
		struct ct_site_fetch *res = NULL;
		bool res_done = false;
		add.n = 0;
		for (size_t k = 0; k < pf->ncalls; k++) {
			if (pf->calls[k].how != CT_EXIT_VIA)
				continue;
			if (!res_done && pf->results && sel->args)
				res = ct_plan_results_fetch(p, sel->args, pf->fn);
			res_done = true;
			const struct ct_func *w = pf->calls[k].caller;
			size_t n = via_places(p, w, place, VIA_PLACES);
			for (size_t q = 0; q < n; q++) {
				struct ct_callsite *c2 = &place[q];
				bool dup = false;
				for (size_t m = 0; m < pf->ncalls && !dup; m++)
					dup = pf->calls[m].at == c2->at;
				for (size_t m = 0; m < add.n && !dup; m++)
					dup = add.v[m].at == c2->at;
				/* (a shared exit reads no results) */
				c2->icall = !c2->shared || res;
				c2->shared = !c2->icall;
				if (dup || !via_place_exit(a, c2, res))
					continue;
				CT_VEC_PUSH(add, *c2);
			}
		}
		if (res) {
			ct_site_fetch_free(res);
			free(res);
		}
		add_calls(pf, add.v, add.n);
	}
	CT_VEC_FREE(add);
	free(place);
}

void ct_callers_plan(struct ct_plan *p, const struct ct_fn_sites *found, const struct ct_selection *sel,
		     struct ct_code_scan *scan)
{
	const struct ct_target *t = p->t;
	size_t n = p->funcs.n;
	bool from_callers = true;
	if (sel->exits == CT_EXITS_RET) {
		p->exits_note = "--exit=ret";
		from_callers = false;
	} else if (t->gccgo) {
		p->exits_note = "gccgo binary: split stacks move frames, exits stay at RET";
		from_callers = false;
	}
	struct analysis a = {0};
	a.t = t;
	a.p = p;
	a.c = xcalloc(n ? n : 1, sizeof(*a.c));
	for (size_t j = 0; j < n; j++)
		a.c[j].why = a.c[j].taken = (char *)"";
	a.entry_lo = a.textoff_lo = UINT64_MAX;
	for (size_t j = 0; j < n; j++) {
		uint64_t e = p->funcs.v[j].fn->entry;
		map_put(&a.by_entry, e, (void *)(uintptr_t)(j + 1));
		a.entry_lo = e < a.entry_lo ? e : a.entry_lo;
		a.entry_hi = e > a.entry_hi ? e : a.entry_hi;
		if (t->lang == CT_LANG_GO && t->go_text_start && e > t->go_text_start) {
			uint64_t o = e - t->go_text_start;
			map_put(&a.by_textoff, o, (void *)(uintptr_t)(j + 1));
			a.textoff_lo = o < a.textoff_lo ? o : a.textoff_lo;
			a.textoff_hi = o > a.textoff_hi ? o : a.textoff_hi;
		}
	}
	/* (a PLT stub again by its symbol in find_plt_stubs, which knows
	 * every stub, also when stubs are no functions) */
	for (size_t i = 0; i < t->nfuncs; i++)
		if (ct_returns_twice(t->funcs[i].name, ct_func_symbol_len(t->funcs[i].name, t->funcs[i].flags)))
			map_put(&a.twice, t->funcs[i].entry, (void *)1);
	got_words(&t->elf, got_slot, &a);
	scan_dynamic(&a);
	find_plt_stubs(&a);
	resolve_plt(&a);
	a.nfdes = ct_fdes(&t->elf, &a.fdes);
	scan_other_code(&a); /* its calls through the PLT are known now */
	bool *await = t->gccgo ? NULL : untraced_tails(&a, found);
	if (!from_callers && !await)
		goto out;
	scan_functions(&a, scan);
	slot_reg_refs(&a);
	twice_in_parts(&a);
	unproven_returns(&a);
	if (!from_callers)
		goto returns;
	scan_data(&a);
	if (t->lang == CT_LANG_GO)
		find_runtime_calls(&a);

	for (size_t j = 0; j < n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		struct callee *c = &a.c[j];
		/* Address-taken Go code: the CHECK at its entry (single-stepped
		 * where the entry is: then it saves the RETs' single-steps)
		 * reports the calls from sites not planned here, and their
		 * exits are added while recording (ct_plan_found_caller).
		 * C whose address only tables in data hold (a C++ virtual
		 * method, a handler in an array): observed as Go's are, the
		 * calls through those tables found while recording, in this
		 * file or another (a library's call of a virtual method).  So
		 * is one whose address code takes (a callback handed to a
		 * library: main, a thread's start routine, a comparator) while
		 * its interim RETs see the first call from each new place end
		 * (BPF keeps the innermost 4 such calls of a thread: a
		 * comparator's inside main's); without them each would end
		 * unobserved.  Not one the loader calls (.init_array) or code
		 * loads from the GOT. */
		bool c_code = !(pf->fn->flags & CT_FN_GO);
		bool table = c_code && c->in_table && !c->in_code && !c->elsewhere;
		bool callback = c_code && c->in_code && !c->elsewhere && p->interim_rets && t->lang != CT_LANG_GO &&
				has_rets(&found[j]);
		if (c->taken[0] && !c->why[0] && (sel->fixed_sites || (c_code && !table && !callback)))
			keep_ret(&a, j, "%s", c->taken);
		/* A program's exported function (only that): its direct calls
		 * are planned as any, the CHECK at its entry reports those from
		 * other modules (a plugin, an addon), each of whose first call
		 * from a new place ends unobserved and makes its RETs probed
		 * (session.c found_call).  Not one that only they call. */
		bool exported = c->exported && !c->taken[0] && !c->why[0];
		if (exported && sel->fixed_sites)
			keep_ret(&a, j, "%s", EXPORTED);
		/* A call site found while recording observes the calls after
		 * the first from there: few of those that the runtime makes one
		 * a program, goroutine or defer, from a site of its own for
		 * every such function (the first goroutines of each would end
		 * 'unobserved'). */
		if (!c->why[0])
			calls_of(c); /* the direct calls first */
		if (exported && !c->why[0] && !c->calls.n)
			keep_ret(&a, j, "%s, and no direct call of it was found", EXPORTED);
		else if (exported && !c->why[0])
			note_taken(&a, j, "%s", EXPORTED);
		bool go_taken = c->taken[0] && !c->why[0] && (pf->fn->flags & CT_FN_GO);
		if (go_taken && p->runtime_calls.n && ct_go_is_closure(pf->fn->name) && t->regabi && !pf->fn->args)
			for (size_t k = 0; k < p->runtime_calls.n; k++)
				CT_VEC_PUSH(c->calls, p->runtime_calls.v[k]);
		else if (go_taken && closure_with_args(t, pf->fn)) {
			/* results: a wrapper's exit probe is shared by whatever
			 * its call reaches, which reads none */
			if (wrapper_calls(&a, pf->fn, c) && pf->results)
				keep_ret(&a, j, "%s; `go` or `defer` calls it through a wrapper closure, and its results "
					 "are captured", c->taken);
		} else if (go_taken && ct_go_called_by_runtime(pf->fn->name))
			keep_ret(&a, j, "%s; the runtime calls it (main.main, an initializer or a closure)", c->taken);
		pf->indirect = c->taken[0] && !c->why[0];
		if (!c->why[0] && !c->calls.n && !pf->indirect)
			keep_ret(&a, j, "no direct call of it was found");
		struct ct_site_fetch *res = NULL;
		if (!c->why[0] && pf->results && sel->args)
			res = ct_plan_results_fetch(p, sel->args, pf->fn);
		size_t stepped = 0, trapped = 0;
		struct ct_exit_walk wbuf;
		char lost[112] = ""; /* why the first results could not be read at an emulated exit */
		for (size_t k = 0; k < c->calls.n && !c->why[0]; k++) {
			struct ct_callsite *cs = &c->calls.v[k];
			if (map_get(&a.twice_callers, cs->caller->entry)) {
				keep_ret(&a, j, "called from %s, which calls setjmp (a longjmp may resume it past the call)",
					 ct_names_show(&cs->caller->dm, cs->caller->name));
				continue;
			}
			if (!choose_exit(&a, cs, res != NULL)) {
				keep_ret(&a, j, "no instruction after its call in %s (at 0x%llx) can take a probe",
					 ct_names_show(&cs->caller->dm, cs->caller->name), (unsigned long long)cs->at);
				continue;
			}
			bool via = cs->how == CT_EXIT_STEPPED &&
				   via_caller_return(p, cs, traced(&a, cs->caller->entry) != 0, pf->results, res);
			const char *pad = pad_rejoins(&a, cs, cs->how == CT_EXIT_TAILPOS || cs->how == CT_EXIT_VIA, false);
			if (pad)
				keep_ret(&a, j, "called from %s (at 0x%llx), which handles exceptions: %s",
					 ct_names_show(&cs->caller->dm, cs->caller->name), (unsigned long long)cs->at, pad);
			else if (via)
				; /* (no probe of its own) */
			else if (cs->how == CT_EXIT_EMULATED && res && !results_survive(res, cs, ct_callsite_walk(p, cs, &wbuf))) {
				stepped++; /* the results would be read at the return address */
				if (!lost[0])
					snprintf(lost, sizeof(lost), ": %s", ct_error());
			} else
				stepped += cs->how == CT_EXIT_STEPPED;
			trapped += cs->walk.traps;
		}
		if (res) {
			ct_site_fetch_free(res);
			free(res);
		}
		/* Its own cheap entry and RETs cost one emulated and one
		 * single-stepped hit a call; observed from its callers, its
		 * entry's CHECK (which reports the call) and the exit after
		 * the call: the same when that exit is single-stepped, ~20x
		 * less when emulated.  When every call site's exit would be
		 * single-stepped (and its own entry is not), nothing is gained:
		 * its RETs, which see every call whoever makes it.  (Unless its
		 * address is taken: the calls through it may end cheaply.) */
		if (!c->why[0] && c->calls.n && stepped == c->calls.n && pf->entry_emulated && (!pf->indirect || exported))
			keep_ret(&a, j, "the end of each of its %zu calls would be single-stepped%s%s%s: its RETs cost no more",
				 c->calls.n, res ? " (to read its results" : "", lost, res ? ")" : "");
		/* A trap follows each call (ud2: rustc's and clang's mark of a
		 * call that does not return, _Unwind_Resume's 1956 in ripgrep):
		 * no exit probe would ever be hit, and its RETs never are. */
		if (!c->why[0] && c->calls.n && trapped == c->calls.n && !pf->indirect)
			keep_ret(&a, j, "none of its %zu calls returns: a trap (ud2) follows each, as in %s (at 0x%llx)",
				 c->calls.n, ct_names_show(&c->calls.v[0].caller->dm, c->calls.v[0].caller->name),
				 (unsigned long long)c->calls.v[0].at);
		/* Called through a GOT slot, its entry single-stepped: so is the
		 * CHECK that sends those calls, unless one after the prologue
		 * can; with every exit single-stepped too, its RETs cost no more. */
		if (!c->why[0] && c->slot_calls && !pf->entry_emulated) {
			check_after_entry(&a, pf, c, sel);
			if (!pf->check_walk && stepped == c->calls.n)
				keep_ret(&a, j, "called through a GOT slot, its entry and the end of each of its %zu calls "
					 "single-stepped: its RETs cost no more", c->calls.n);
		}
		/* `f: ret` (an empty method called through an interface): a
		 * CHECK at its entry is single-stepped and each call's exit one
		 * more hit, where its entry probe, its RET too, sees both ends
		 * of the call in one hit. */
		if (!c->why[0] && pf->indirect && entry_is_ret(&found[j], pf->fn->entry))
			keep_ret(&a, j, "%s; its first instruction is its RET: one single-stepped hit sees the whole call",
				 c->taken);
		if (c->why[0]) {
			pf->why = xstrdup(c->why);
			pf->indirect = false;
			continue;
		}
		pf->in_caller = true;
		pf->slot_called = c->slot_calls;
		if (pf->indirect)
			pf->why = xstrdup(c->taken);
		if (pf->indirect && !found[j].entry_emulated && !pf->check_walk)
			check_after_entry(&a, pf, c, sel);
		pf->calls = c->calls.v;
		pf->ncalls = c->calls.n;
		if (pf->ncalls > pf->watched.cap - pf->watched.n) { /* (as many: most have a few) */
			pf->watched.cap = pf->watched.n + pf->ncalls;
			pf->watched.v = xrealloc(pf->watched.v, pf->watched.cap * sizeof(*pf->watched.v));
		}
		for (size_t k = 0; k < pf->ncalls; k++)
			CT_VEC_PUSH(pf->watched, pf->calls[k].ret);
		memset(&c->calls, 0, sizeof(c->calls));
		p->in_caller++;
	}
	if (t->lang == CT_LANG_GO) {
		plan_indirect_sites(&a, found, sel);
		exits_at_deferred_closures(&a, found, sel);
		plan_via_returns(&a, found, sel);
	}
	pass_tail_results(&a, sel);
	derive_tail_results(&a, sel);
returns:
	if (await)
		plan_return_sites(&a, found, await, from_callers, sel->limits);
out:
	ct_pads_free(a.pads);
	for (size_t j = 0; j < n; j++) {
		CT_VEC_FREE(a.c[j].refs);
		CT_VEC_FREE(a.c[j].calls);
		if (a.c[j].why[0])
			free(a.c[j].why);
		if (a.c[j].taken[0])
			free(a.c[j].taken);
	}
	free(await);
	free(a.c);
	map_free(&a.by_entry);
	map_free(&a.by_textoff);
	map_free(&a.twice);
	map_free(&a.got_slots);
	map_free(&a.reg_calls);
	CT_VEC_FREE(a.reg_refs);
	CT_VEC_FREE(a.entered);
	map_free(&a.twice_callers);
	map_free(&a.plt_stubs);
	free(a.argless);
	free(a.fdes);
	CT_VEC_FREE(a.part_edges);
	MAP_FOREACH(&a.methods, i) free(a.methods.vals[i]);
	map_free(&a.methods);
}

/* A goroutine's function returns to runtime.goexit: newproc makes its
 * return address goexit + 1, past a NOP, at goexit's CALL goexit1.  Never
 * probed itself, but that call is where the function's call ends. */
static bool is_goexit(const struct ct_func *g)
{
	return ct_go_is_goexit(g->name);
}

/* Go before 1.17 runs a deferred function by jmpdefer, which makes its
 * return address the caller's CALL runtime.deferreturn (run again for the
 * next one): is CODE (LEN bytes at AT) that call? */
static bool deferreturn_at(const struct ct_target *t, const uint8_t *code, size_t len, uint64_t at)
{
	if (len < 5 || code[0] != 0xe8)
		return false;
	int32_t rel;
	memcpy(&rel, code + 1, 4);
	const struct ct_func *f = ct_target_func_at(t, at + 5 + (uint64_t)(int64_t)rel);
	return f && f->entry == at + 5 + (uint64_t)(int64_t)rel && !strcmp(f->name, CT_GO_DEFERRETURN);
}

/* Is the function whose code starts at ENTRY traced (p->funcs is in
 * address order, as the target's functions)? */
static bool plan_traces(const struct ct_plan *p, uint64_t entry)
{
	size_t lo = 0, hi = p->funcs.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->funcs.v[mid].fn->entry < entry)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->funcs.n && p->funcs.v[lo].fn->entry == entry;
}

/* Where a call from RET, found while recording, ends (the walk choose_exit
 * makes for planned calls); false with *WHY if nowhere we can probe.
 * RESULTS: the call's results are captured (they need an exit probe). */
static bool found_exit(struct ct_plan *p, struct ct_callsite *cs, uint32_t func, const char **why)
{
	bool results = p->funcs.v[func].results;
	const struct ct_target *t = p->t;
	const struct ct_func *g = cs->caller;
	const uint8_t *code = ct_elf_bytes_at(&t->elf, g->entry, g->end - g->entry);
	if (!code) {
		*why = "the caller's code is not in the file";
		return false;
	}
	cs->at = ct_call_before(code, g->end - g->entry, g->entry, cs->ret);
	if (!cs->at && is_goexit(g) && cs->ret == g->entry + 1 && code[0] == 0x90)
		cs->at = g->entry; /* newproc's return address: past goexit's NOP */
	if (!cs->at && deferreturn_at(p->t, code + (cs->ret - g->entry), g->end - cs->ret, cs->ret))
		cs->at = cs->ret; /* jmpdefer's: the deferred call returns to CALL deferreturn */
	if (!cs->at) {
		*why = "no call instruction returns there";
		return false;
	}
	struct ct_exit_walk walk;
	ct_exit_walk(code + (cs->ret - g->entry), g->end - cs->ret, cs->ret, &walk);
	ct_callsite_set_walk(p, cs, &walk, results);
	const struct ct_exit_walk *w = &walk;
	/* C and C++ callers: a longjmp or an exception's landing pad may go on
	 * to where the call's end would be seen (planned calls: ct_callers_plan) */
	struct ct_pads *pads = NULL;
	if (!(g->flags & CT_FN_GO)) {
		if (ct_plan_return_unproven(p, cs->ret)) {
			*why = "its caller calls setjmp (a longjmp may resume it past the call)";
			return false;
		}
		pads = p->pads ? p->pads : (p->pads = ct_pads_new(&t->elf, t));
	}
	if (w->how == CT_EXIT_EMULATED || w->how == CT_EXIT_STEPPED) {
		cs->how = (uint8_t)w->how;
		cs->exit = w->site;
		cs->sp_delta = w->sp_delta;
		return !pads || !(*why = ct_pads_rejoin(pads, cs->at, cs->ret, cs->exit, false));
	}
	if (w->how == CT_EXIT_TAILPOS && pads && (*why = ct_pads_rejoin(pads, cs->at, cs->ret, 0, true)))
		return false;
	if (w->how == CT_EXIT_TAILPOS && !results && plan_traces(p, g->entry)) {
		/* in tail position in a traced caller (a deferred closure,
		 * `func f(s I) { s.m() }`): it ends with that caller, as a
		 * planned one does (choose_exit), no probe of its own */
		cs->how = CT_EXIT_TAILPOS;
		return true;
	}
	if (w->how == CT_EXIT_TAILPOS && w->first_site && !p->funcs.v[func].no_via &&
	    via_caller_return(p, cs, plan_traces(p, g->entry), results, p->fetch ? p->funcs.v[func].results_view : NULL))
		return true; /* where the caller returns to */
	if (w->how == CT_EXIT_TAILPOS && w->first_site) {
		/* the caller's end is not observed: the return address */
		cs->how = CT_EXIT_STEPPED;
		cs->exit = w->first_site;
		cs->sp_delta = 0;
		return true;
	}
	*why = "no instruction after the call can take a probe";
	return false;
}

static bool caller_probeable(const struct ct_func *g)
{
	return !(g->flags & CT_FN_NOPROBE) || is_goexit(g);
}

/* The exit probe of CS, a call of function FUNC found while recording: the
 * results of the calls in tail position in FUNC that it returns as they
 * are (pass_tail_results) are roles of that probe, as at the planned ones
 * (plan.c), where they can be read there (else those calls show none). */
static int cmp_tail_user(const void *x, const void *y)
{
	const struct ct_tail_user *a = x, *b = y;
	if (a->caller != b->caller)
		return a->caller < b->caller ? -1 : 1;
	if (a->func != b->func)
		return a->func < b->func ? -1 : 1;
	return (a->call > b->call) - (a->call < b->call);
}

static void make_tail_users(struct ct_plan *p)
{
	p->tail_users_made = true;
	for (size_t j = 0; j < p->funcs.n; j++) {
		const struct ct_plan_func *pf = &p->funcs.v[j];
		for (size_t k = 0; pf->in_caller && k < pf->ncalls; k++)
			if (pf->calls[k].tail_results) {
				struct ct_tail_user u = {pf->calls[k].tail_caller, (uint32_t)j, (uint32_t)k};
				CT_VEC_PUSH(p->tail_users, u);
			}
	}
	/* (in the order the walk over every call had) */
	qsort(p->tail_users.v, p->tail_users.n, sizeof(*p->tail_users.v), cmp_tail_user);
	for (size_t u = p->tail_users.n; u-- > 0;)
		map_put(&p->tail_users_of, (uint64_t)p->tail_users.v[u].caller + 1, (void *)(uintptr_t)(u + 1));
}

static void add_tail_result_roles(struct ct_plan *p, uint32_t func, struct ct_callsite *cs)
{
	uint32_t last = cs->exit_site;
	if (!p->tail_users_made)
		make_tail_users(p);
	size_t first = (uintptr_t)map_get(&p->tail_users_of, (uint64_t)func + 1);
	for (size_t u = first ? first - 1 : p->tail_users.n; u < p->tail_users.n && p->tail_users.v[u].caller == func; u++) {
		uint32_t j = p->tail_users.v[u].func;
		const struct ct_plan_func *pf = &p->funcs.v[j];
		const struct ct_callsite *t = &pf->calls[p->tail_users.v[u].call];
		struct ct_site_fetch f, tv;
		struct ct_exit_walk tbuf, buf;
		const struct ct_site_fetch *res = pf->results_view;
		if (!res || !ct_plan_tail_results(res, ct_callsite_walk(p, t, &tbuf), (t->caller->flags & CT_FN_GO) != 0, &tv))
			continue;
		int rc = ct_fetch_relocate(&tv, cs->how == CT_EXIT_EMULATED ? -8 - cs->sp_delta : -8,
					   cs->how == CT_EXIT_EMULATED ? ct_callsite_walk(p, cs, &buf) : NULL, &f);
		ct_site_fetch_free(&tv);
		if (rc)
			continue;
		ct_site_fetch_free(&f);
		struct ct_plan_site *r = ct_plan_add_site(p, cs->exit, (uint32_t)j, CT_SITE_TAILRES, cs->caller);
		if (!r)
			return;
		r->key_adj = 8 + cs->sp_delta;
		r->call_site = t->call_site;
		r->cs = cs;
		r->flags |= CT_SITEF_COMPANION | CT_SITEF_DYNAMIC;
		uint32_t id = (uint32_t)(p->sites.n - 1);
		p->fetch = xrealloc(p->fetch, p->sites.n * sizeof(*p->fetch));
		p->fetch[id] = ct_plan_results_at_exit(p, r);
		p->sites.v[last].next = id;
		last = id;
	}
	if (last != cs->exit_site)
		ct_plan_share_fetch(p, cs->exit_site);
}

/* FUNC's RETs probed from now on (once), where nothing else is probed. */
static bool probe_rets(struct ct_plan *p, uint32_t func)
{
	struct ct_plan_func *pf = &p->funcs.v[func];
	if (pf->rets_probed)
		return true;
	if (!pf->rets.n)
		return false;
	/* (its interim RETs aside: they go, these stay; session.c) */
	for (size_t i = 0; i < p->sites.n; i++)
		for (size_t k = 0; k < pf->rets.n; k++)
			if (p->sites.v[i].addr == pf->rets.v[k] && !p->sites.v[i].elsewhere && !p->sites.v[i].interim)
				return false;
	size_t first = p->sites.n;
	for (size_t k = 0; k < pf->rets.n; k++)
		if (!ct_plan_add_site(p, pf->rets.v[k], func, CT_SITE_RET, pf->fn)) {
			p->sites.n = first;
			return false;
		}
	if (p->fetch) {
		p->fetch = xrealloc(p->fetch, p->sites.n * sizeof(*p->fetch));
		for (size_t i = first; i < p->sites.n; i++)
			p->fetch[i] = pf->results_view ? ct_site_fetch_clone(pf->results_view) : NULL;
	}
	pf->rets_probed = true;
	pf->interim = false;
	return true;
}

/* A call found while recording whose exit would be single-stepped at an
 * instruction that other paths of its caller reach too (a branch may land
 * between the return address and it: sync.Pool.Get returns what it had,
 * or what New made) pays that hit on every one of them, few of them calls
 * of the function (bench/http, net/http's pool New: ~12 a request, no
 * call).  Its function's own RETs see only its calls: they are probed
 * instead, from now on (the calls from every call site end there, at
 * their frame's key, with their results).  Not where anything else is
 * probed at one of them (the order of the two hits would not be known). */
static bool rets_instead(struct ct_plan *p, uint32_t func, const struct ct_callsite *cs)
{
	struct ct_plan_func *pf = &p->funcs.v[func];
	if (pf->rets_probed)
		return true;
	const struct ct_func *g = cs->caller;
	const uint8_t *code = ct_elf_bytes_at(&p->t->elf, g->entry, g->end - g->entry);
	if (cs->how != CT_EXIT_STEPPED || !pf->rets.n || !code ||
	    !ct_branch_lands(code, g->end - g->entry, g->entry, cs->ret, cs->exit))
		return false;
	return probe_rets(p, func);
}

bool ct_plan_rets_from_now(struct ct_plan *p, uint32_t check_site)
{
	uint32_t func = p->sites.v[check_site].func;
	struct ct_plan_func *pf = &p->funcs.v[func];
	/* A call made last by a wrapper (CT_EXIT_VIA) is keyed at the
	 * wrapper's frame, where the CHECK looked its caller up.  Its interim
	 * RETs look that up again and end it there; a plain RET, at its own
	 * frame, matched no open call and unwound the call's own tail call
	 * (runtime.args, called by rt0_go through its ABI0 wrapper: its tail
	 * call runtime.sysargs).  They stay. */
	bool via = false;
	for (size_t k = 0; k < pf->ncalls && !via; k++)
		via = pf->calls[k].how == CT_EXIT_VIA;
	if (via && pf->interim) {
		pf->interim_kept = true;
		return true;
	}
	return probe_rets(p, func);
}

static bool same_program(const struct ct_site_fetch *a, const struct ct_site_fetch *b)
{
	if (!a || !b)
		return !a && !b;
	const struct ct_fetch *x = &a->prog, *y = &b->prog;
	if (x->nops != y->nops || x->size != y->size || x->guard_lo != y->guard_lo || x->guard_hi != y->guard_hi ||
	    x->guard_from != y->guard_from || x->guard_to != y->guard_to)
		return false;
	for (uint32_t i = 0; i < x->nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *o = &x->ops[i], *q = &y->ops[i];
		if (o->code != q->code || o->reg != q->reg || o->dst != q->dst || o->size != q->size ||
		    o->src != q->src || o->src2 != q->src2 || o->scale != q->scale || o->off != q->off)
			return false;
	}
	return true;
}

/* One call instruction calling several traced functions, found while
 * recording (an interface method's: io.Reader.Read's in encoding/json's
 * refill, (*body).Read and (*cancelTimerBody).Read): the exit probe of the
 * first found there sees the others' calls return too, and reads their
 * results as their own would where its program is theirs (the same
 * signature).  Then the new exit is no probe of its own but a companion
 * that no probe's chain names: the reconstruction closes its calls with
 * that probe's hits, one hit a return instead of one per function. */
static void ride_found_exit(struct ct_plan *p, const struct ct_callsite *cs)
{
	struct ct_plan_site *b = &p->sites.v[cs->exit_site];
	if (b->next != CT_NOSITE)
		return; /* roles of its own (the results of calls in tail position) */
	for (uint32_t i = (uint32_t)p->built_sites; i < cs->exit_site; i++) {
		const struct ct_plan_site *a = &p->sites.v[i];
		if (a->kind != CT_SITE_RETSITE || a->addr != b->addr || a->key_adj != b->key_adj || a->elsewhere || a->gone ||
		    !(a->flags & CT_SITEF_DYNAMIC) || !ct_site_is_probe(a) || a->next != CT_NOSITE ||
		    a->call_site >= p->sites.n || p->sites.v[a->call_site].kind != CT_SITE_CALL ||
		    p->sites.v[a->call_site].addr != cs->at ||
		    !same_program(p->fetch ? p->fetch[i] : NULL, p->fetch ? p->fetch[cs->exit_site] : NULL))
			continue;
		b->flags |= CT_SITEF_COMPANION;
		return;
	}
}

/* The function that return address RET is in where no symbol covers it,
 * as .eh_frame bounds it (a stripped C program's static functions:
 * python3's calls through its type slots), kept with the plan as the
 * callers found in gaps before it ran are (scan_gap); NULL if its FDE is
 * not a function of its own (a named function in its range) or the code
 * is Go's (whose gaps are its C code, scan_gap). */
static const struct ct_func *unnamed_caller(struct ct_plan *p, uint64_t ret)
{
	const struct ct_target *t = p->t;
	if (t->lang != CT_LANG_C)
		return NULL;
	if (!p->pads)
		p->pads = ct_pads_new(&t->elf, t);
	const struct ct_fde *d = ct_pads_fde_at(p->pads, ret - 1);
	if (!d)
		return NULL;
	size_t k = ct_target_funcs_upto(t, d->end - 1);
	if (k && t->funcs[k - 1].end > d->start)
		return NULL; /* (not code of its own) */
	for (size_t i = 0; i < p->gap_callers.n; i++)
		if (p->gap_callers.v[i]->entry == d->start && p->gap_callers.v[i]->end == d->end)
			return p->gap_callers.v[i];
	char name[32];
	int len = snprintf(name, sizeof(name), "sub_%llx", (unsigned long long)d->start) + 1;
	struct ct_func *f = xcalloc(1, sizeof(*f) + (size_t)len);
	*f = (struct ct_func){.name = memcpy(f + 1, name, (size_t)len), .entry = d->start, .end = d->end, .args = -1};
	CT_VEC_PUSH(p->gap_callers, f);
	return f;
}

uint32_t ct_plan_found_caller(struct ct_plan *p, uint32_t check_site, uint64_t ret, struct ct_plan_planned *planned,
			      const char **why)
{
	uint64_t check_addr = p->sites.v[check_site].addr; /* the table may move */
	uint32_t func = p->sites.v[check_site].func;
	/* the CHECK's: whether calls through its address, and its hit's cost */
	uint8_t check_flags = p->sites.v[check_site].flags & (CT_SITEF_INDIRECT | CT_SITEF_STEPPED);
	const struct ct_func *g = ct_target_func_at(p->t, ret);
	if (!g || g->end <= ret || g->entry >= ret)
		g = unnamed_caller(p, ret);
	if (!g) {
		*why = "the return address is in no known function";
		return CT_NOSITE;
	}
	if (!caller_probeable(g)) {
		*why = "the caller is never probed";
		return CT_NOSITE;
	}
	struct ct_callsite *cs = xcalloc(1, sizeof(*cs));
	cs->ret = ret;
	cs->caller = g;
	cs->call_site = cs->exit_site = CT_NOSITE;
	if (!found_exit(p, cs, func, why)) {
		free(cs);
		return CT_NOSITE;
	}
	CT_VEC_PUSH(p->found_calls, cs);
	struct ct_plan_site *s = ct_plan_add_site(p, cs->at, func, CT_SITE_CALL, g);
	if (!s) {
		*why = "the call is not in the file's loadable segments";
		return CT_NOSITE;
	}
	/* like a planned call's CALL site seen at the CHECK (plan.c) */
	s->key_adj = 8;
	s->cs = cs;
	s->flags |= CT_SITEF_ATCHECK | CT_SITEF_DYNAMIC | check_flags;
	cs->call_site = (uint32_t)(p->sites.n - 1);
	bool at_rets = rets_instead(p, func, cs);
	s = &p->sites.v[cs->call_site]; /* (the table may have moved) */
	if (cs->how == CT_EXIT_TAILPOS) {
		s->flags |= CT_SITEF_TAILPOS; /* no exit probe: it ends with its caller */
	} else if (cs->how == CT_EXIT_VIA) {
		; /* its exit is where its caller returns to */
	} else if (!at_rets) {
		s = ct_plan_add_site(p, cs->exit, func, CT_SITE_RETSITE, g);
		if (!s) {
			p->sites.n--; /* the CALL site: no half-planned call */
			*why = "its exit is not in the file's loadable segments";
			return CT_NOSITE;
		}
		s->key_adj = 8 + cs->sp_delta;
		s->call_site = cs->call_site;
		s->cs = cs;
		s->flags |= CT_SITEF_DYNAMIC | (cs->how == CT_EXIT_STEPPED ? CT_SITEF_STEPPED : 0);
		cs->exit_site = (uint32_t)(p->sites.n - 1);
	}
	if (p->fetch) {
		/* the CHECK's capture is sent as the CALL site's (same layout) */
		p->fetch = xrealloc(p->fetch, p->sites.n * sizeof(*p->fetch));
		const struct ct_site_fetch *cf = p->fetch[check_site];
		p->fetch[cs->call_site] = cf ? ct_site_fetch_clone(cf) : NULL;
		if (cs->exit_site != CT_NOSITE) {
			p->fetch[cs->exit_site] = ct_plan_results_at_exit(p, &p->sites.v[cs->exit_site]);
			add_tail_result_roles(p, func, cs);
		}
	}
	if (cs->exit_site != CT_NOSITE)
		ride_found_exit(p, cs);
	*planned = (struct ct_plan_planned){CT_PLANNED_KEY(check_site, (int64_t)(ret - check_addr)),
					    {.site = cs->call_site, .key_delta = -8,
					     .via = cs->how == CT_EXIT_VIA ? 8 + (uint32_t)cs->sp_delta : 0}};
	return cs->call_site;
}

static void unvia(struct ct_plan *p, uint32_t func, uint32_t check_site, struct ct_callsite *cs,
		  struct ct_plan_planned **out, size_t *nout)
{
	if (cs->how != CT_EXIT_VIA || cs->call_site >= p->sites.n)
		return;
	uint64_t check_addr = p->sites.v[check_site].addr;
	struct ct_plan_site *s = ct_plan_add_site(p, cs->walk.first_site, func, CT_SITE_RETSITE, cs->caller);
	if (!s)
		return; /* (in the file's code: it was planned there once) */
	cs->how = CT_EXIT_STEPPED;
	cs->exit = cs->walk.first_site;
	cs->sp_delta = 0;
	s->key_adj = 8;
	s->call_site = cs->call_site;
	s->cs = cs;
	s->flags |= CT_SITEF_DYNAMIC | CT_SITEF_STEPPED;
	cs->exit_site = (uint32_t)(p->sites.n - 1);
	if (p->fetch) {
		p->fetch = xrealloc(p->fetch, p->sites.n * sizeof(*p->fetch));
		p->fetch[cs->exit_site] = ct_plan_results_at_exit(p, &p->sites.v[cs->exit_site]);
	}
	*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
	(*out)[(*nout)++] = (struct ct_plan_planned){CT_PLANNED_KEY(check_site, (int64_t)(cs->ret - check_addr)),
						     {.site = cs->call_site, .key_delta = -8}};
}

void ct_plan_unvia(struct ct_plan *p, uint32_t check_site, struct ct_plan_planned **out, size_t *nout)
{
	uint32_t func = p->sites.v[check_site].func;
	struct ct_plan_func *pf = &p->funcs.v[func];
	if (pf->no_via)
		return;
	pf->no_via = true;
	for (size_t k = 0; k < pf->ncalls; k++)
		unvia(p, func, check_site, &pf->calls[k], out, nout);
	for (size_t k = 0; k < p->found_calls.n; k++) {
		struct ct_callsite *cs = p->found_calls.v[k];
		if (cs->call_site < p->sites.n && p->sites.v[cs->call_site].func == func)
			unvia(p, func, check_site, cs, out, nout);
	}
}

void ct_plan_via_places(struct ct_plan *p, uint32_t check_site, uint32_t call, struct ct_plan_planned **out,
			size_t *nout)
{
	const struct ct_callsite *cs = call < p->sites.n ? p->sites.v[call].cs : NULL;
	uint32_t func = p->sites.v[check_site].func;
	if (!cs || cs->how != CT_EXIT_VIA || p->funcs.v[func].no_via)
		return;
	const struct ct_func *w = cs->caller;
	struct ct_callsite *place = xmalloc(VIA_PLACES * sizeof(*place)), *trial = xmalloc(sizeof(*trial));
	size_t n = via_places(p, w, place, VIA_PLACES);
	for (size_t q = 0; q < n; q++) {
		/* (not where a call of it is planned, or was found) */
		const struct ct_plan_func *pf = &p->funcs.v[func];
		bool dup = false;
		for (size_t m = 0; m < pf->ncalls && !dup; m++)
			dup = pf->calls[m].ret == place[q].ret;
		for (size_t m = 0; m < p->found_calls.n && !dup; m++) {
			const struct ct_callsite *f = p->found_calls.v[m];
			dup = f->ret == place[q].ret && f->call_site < p->sites.n && p->sites.v[f->call_site].func == func;
		}
		const char *why;
		struct ct_exit_walk buf;
		memset(trial, 0, sizeof(*trial));
		trial->ret = place[q].ret;
		trial->caller = place[q].caller;
		/* (its results, if read, where they are still in their places
		 * there: else the exit would move to the return address, args.c) */
		const struct ct_site_fetch *res = p->fetch && pf->results ? pf->results_view : NULL;
		if (dup || !found_exit(p, trial, func, &why) ||
		    (trial->how != CT_EXIT_EMULATED && trial->how != CT_EXIT_TAILPOS) ||
		    (trial->how == CT_EXIT_EMULATED && res && !results_survive(res, trial, ct_callsite_walk(p, trial, &buf))))
			continue; /* (one single-stepped there: found if it is ever hit) */
		struct ct_plan_planned pl;
		if (ct_plan_found_caller(p, check_site, place[q].ret, &pl, &why) == CT_NOSITE)
			continue;
		*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
		(*out)[(*nout)++] = pl;
	}
	free(place);
	free(trial);
}

uint32_t ct_plan_found_return(struct ct_plan *p, uint32_t probe, const struct ct_found_return *fr, bool *busy,
			      const char **why)
{
	*busy = false;
	uint32_t func = CT_NOFUNC, entry = CT_NOSITE;
	for (uint32_t k = probe; func == CT_NOFUNC && k < p->sites.n; k = p->sites.v[k].next) {
		const struct ct_plan_site *s = &p->sites.v[k];
		if (s->kind == CT_SITE_TAIL && s->target_func == CT_NOFUNC && s->func != CT_NOFUNC &&
		    p->funcs.v[s->func].tail_checked)
			func = s->func;
	}
	/* The call returning there is of that function, or of one that
	 * tail-jumped to it: a RETSITE whose call_site is an ENTRY closes the
	 * group of frames at its key that has it (reconstruct.c on_retsite). */
	for (; func != CT_NOFUNC && p->entry_sites_n < p->sites.n; p->entry_sites_n++) {
		const struct ct_plan_site *s = &p->sites.v[p->entry_sites_n];
		if (s->kind == CT_SITE_ENTRY && s->func != CT_NOFUNC && !map_get(&p->entry_site_of, (uint64_t)s->func + 1))
			map_put(&p->entry_site_of, (uint64_t)s->func + 1, (void *)(uintptr_t)(p->entry_sites_n + 1));
	}
	uintptr_t e1 = func != CT_NOFUNC ? (uintptr_t)map_get(&p->entry_site_of, (uint64_t)func + 1) : 0;
	if (e1)
		entry = (uint32_t)(e1 - 1);
	if (entry == CT_NOSITE) {
		*busy = false;
		*why = "not a tail jump to untraced code of a function with an entry probe";
		return CT_NOSITE;
	}
	uint32_t exit = ct_plan_return_elsewhere(p, func, entry, fr, busy, why);
	if (exit != CT_NOSITE)
		p->sites.v[exit].flags |= CT_SITEF_DYNAMIC;
	return exit;
}

/* Where the call of FUNC returning to FR->ret (another file's code) is
 * seen to end, into CS: the first instruction after it the kernel
 * emulates when the walk says the results can be read there, else the
 * return address itself, single-stepped. */
static bool exit_elsewhere(struct ct_plan *p, uint32_t func, const struct ct_found_return *fr, struct ct_callsite *cs,
			   const char **why)
{
	struct ct_exit_walk walk;
	ct_exit_walk(fr->code, fr->len, fr->ret, &walk);
	ct_callsite_set_walk(p, cs, &walk, true); /* (another module's code: not walked again) */
	const struct ct_exit_walk *w = &walk;
	if (w->traps) {
		*why = "a trap (ud2) follows the call: it never returns there";
		return false;
	}
	/* results are read as at the planned exits: where the walk says they
	 * went, or at the return address, where nothing has moved yet */
	const struct ct_site_fetch *res = p->fetch ? p->funcs.v[func].results_view : NULL;
	struct ct_site_fetch f;
	if (w->how == CT_EXIT_EMULATED && fr->probe_at(fr->ctx, w->site) <= CT_THERE_RETSITE &&
	    (!res || ct_fetch_relocate(res, -8 - w->sp_delta, w, &f) == 0)) {
		if (res)
			ct_site_fetch_free(&f);
		cs->how = CT_EXIT_EMULATED;
		cs->exit = w->site;
		cs->sp_delta = w->sp_delta;
		return true;
	}
	if (w->first_site == fr->ret) {
		cs->how = CT_EXIT_STEPPED;
		cs->exit = fr->ret;
		cs->sp_delta = 0;
		return true;
	}
	*why = "the instruction at the return address cannot take a probe";
	return false;
}

/* CS's exit probe there (exit_elsewhere found it): a RETSITE closing the
 * calls opened at CALL_SITE, appended to the site table (and p->fetch). */
static uint32_t add_exit_elsewhere(struct ct_plan *p, uint32_t func, uint32_t call_site, const struct ct_found_return *fr,
				   struct ct_callsite *cs, uint8_t gsrc)
{
	CT_VEC_PUSH(p->found_calls, cs);
	struct ct_plan_site *s = ct_plan_add_site_elsewhere(p, cs->exit, (uint64_t)((int64_t)cs->exit + fr->file_off), func,
							    CT_SITE_RETSITE, gsrc);
	s->key_adj = 8 + cs->sp_delta;
	s->call_site = call_site;
	s->cs = cs;
	const uint8_t *at = fr->code + (cs->exit - fr->ret);
	s->flags |= ct_hit_flags_at(at, fr->len - (size_t)(cs->exit - fr->ret), cs->exit);
	cs->exit_site = (uint32_t)(p->sites.n - 1);
	if (p->fetch) {
		p->fetch = xrealloc(p->fetch, p->sites.n * sizeof(*p->fetch));
		p->fetch[cs->exit_site] = p->funcs.v[func].results_view ? ct_plan_results_at_exit(p, s) : NULL;
	}
	return cs->exit_site;
}

uint32_t ct_plan_return_elsewhere(struct ct_plan *p, uint32_t func, uint32_t entry, const struct ct_found_return *fr,
				  bool *busy, const char **why)
{
	*busy = false;
	switch (fr->probe_at(fr->ctx, fr->ret)) {
	case CT_THERE_EXIT:
		*busy = true; /* that probe sees the call end */
		return CT_NOSITE;
	case CT_THERE_OTHER:
		*why = "a probe of another kind is at the return address";
		return CT_NOSITE;
	default:
		break;
	}
	struct ct_callsite *cs = xcalloc(1, sizeof(*cs));
	cs->ret = fr->ret;
	cs->call_site = entry;
	if (!exit_elsewhere(p, func, fr, cs, why)) {
		free(cs);
		return CT_NOSITE;
	}
	return add_exit_elsewhere(p, func, entry, fr, cs, p->sites.v[entry].gsrc);
}

uint32_t ct_plan_found_caller_elsewhere(struct ct_plan *p, uint32_t check_site, const struct ct_found_return *fr,
					struct ct_planned_call *val, const char **why)
{
	const struct ct_plan_site *check = &p->sites.v[check_site];
	uint32_t func = check->func;
	uint8_t gsrc = check->gsrc, check_flags = check->flags & (CT_SITEF_INDIRECT | CT_SITEF_STEPPED);
	/* (a traced caller's RET or tail jump there ends it first, an entry
	 * or call would take it for unwound) */
	if (fr->probe_at(fr->ctx, fr->ret) >= CT_THERE_EXIT) {
		*why = "another probe is at the return address";
		return CT_NOSITE;
	}
	uint64_t call_at = fr->ret - fr->call_len;
	struct ct_callsite *cs = xcalloc(1, sizeof(*cs));
	cs->at = call_at;
	cs->ret = fr->ret;
	if (!exit_elsewhere(p, func, fr, cs, why)) {
		free(cs);
		return CT_NOSITE;
	}
	/* like a CALL site found in the CHECK's own file (ct_plan_found_caller) */
	struct ct_plan_site *s = ct_plan_add_site_elsewhere(p, call_at, (uint64_t)((int64_t)call_at + fr->file_off), func,
							    CT_SITE_CALL, gsrc);
	s->key_adj = 8;
	s->cs = cs;
	s->flags |= CT_SITEF_ATCHECK | CT_SITEF_DYNAMIC | check_flags;
	cs->call_site = (uint32_t)(p->sites.n - 1);
	p->sites.v[add_exit_elsewhere(p, func, cs->call_site, fr, cs, gsrc)].flags |= CT_SITEF_DYNAMIC;
	if (p->fetch) {
		/* the CHECK's capture is sent as the CALL site's (same layout) */
		const struct ct_site_fetch *cf = p->fetch[check_site];
		p->fetch[cs->call_site] = cf ? ct_site_fetch_clone(cf) : NULL;
	}
	*val = (struct ct_planned_call){.site = cs->call_site, .key_delta = -8};
	return cs->call_site;
}
