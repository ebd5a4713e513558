/* Goroutine lineage: for every goroutine, the goroutine that ran its `go`
 * statement and where that statement is.
 *
 * One probe, on the runtime's creation path at the moment the new g is
 * complete: the `call runtime.runqput` that queues it (newproc's closure
 * runtime.newproc.func1 from Go 1.15, runtime.newproc1 itself before), a
 * plain call the kernel emulates.  That code runs on the system stack, so
 * the probe's usual goroutine lookup finds the creator through g0.m.curg
 * (the same path that names the goroutine of C called through cgo); the new
 * g is runqput's second argument (RBX under the register ABI, 8(SP) under
 * ABI0), and a small fetch program copies its goid and gopc (the `go`
 * statement's return address).  The same works for every Go version the
 * runtime.g table knows, unlike g.parentGoid, which exists from Go 1.21.
 * Goroutines the runtime makes elsewhere (iter.Pull's coroutines, 1.23+)
 * are not seen here.
 *
 * The same hit lets a thread keep the goroutine id it read from a g (one
 * helper call a hit less, calltrace.bpf.c goid_gen): a g's id changes only
 * when newproc1 takes it from the free list for a new goroutine, and the
 * hit comes after that and before the g can run -- where every g newproc1
 * gives an id passes the probe.  The g's of cgo's extra Ms (oneNewExtraM)
 * get theirs from fresh memory, and a g is never freed (allgs), so no
 * thread has an id of that address.
 *
 * With the id, a thread keeps the g's stack.hi (the frame key's base, a
 * read a hit less again): a goroutine's stack bounds change when the
 * runtime moves its stack (runtime.copystack: growth, and the GC's
 * shrinking, possibly from another thread while the goroutine is stopped),
 * and when newproc1 gives a reused g a new stack with its new id.  One more
 * probe, on copystack's call of stackalloc, bumps the same generation:
 * before the moved goroutine runs again.  (g0's and gsignal's bounds change
 * elsewhere, cgo callbacks and signal stacks: id 0, never kept.) */
#include "plan/plan.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* ct_scan_refs callback: the first plain call to *target. */
struct find_call {
	uint64_t target, at;
};

static void find_call_ref(void *ctx, const struct ct_code_ref *r)
{
	struct find_call *fc = ctx;
	if (!fc->at && r->kind == CT_REF_CALL && r->plain && r->target == fc->target)
		fc->at = r->at;
}

static const struct ct_func *func_named(const struct ct_target *t, const char *name)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].name, name))
			return &t->funcs[i];
	return NULL;
}

/* ct_scan_refs callback: the references to NEWPROC1 other than the plain
 * call from the function of the creation probe: each plain call's return
 * address, or (OTHER) where one is not a plain call. */
struct newproc1_refs {
	uint64_t newproc1;
	const struct ct_func *creator, *cur, *other;
	CT_VEC(uint64_t) rets;
};

static void newproc1_ref(void *ctx, const struct ct_code_ref *r)
{
	struct newproc1_refs *o = ctx;
	if (r->target != o->newproc1 || (r->kind == CT_REF_CALL && r->plain && o->cur == o->creator) ||
	    (r->kind == CT_REF_JUMP && o->cur->entry == o->newproc1)) /* its restart after morestack */
		return;
	if (r->kind == CT_REF_CALL && r->plain)
		CT_VEC_PUSH(o->rets, r->at + r->len);
	else
		o->other = o->cur;
}

/* Can CODE (LEN bytes at ADDR) refer to TARGET: 4 bytes that are its
 * address, or its distance from the end of an instruction they may be the
 * displacement of (up to 4 immediate bytes after them)?  A byte scan, so
 * that the runtime's code is decoded only where it may (decoding all of it
 * took 20 ms). */
static bool may_refer(const uint8_t *code, size_t len, uint64_t addr, uint64_t target)
{
	for (size_t i = 0; i + 4 <= len; i++) {
		int32_t d;
		memcpy(&d, code + i, 4);
		int64_t past = (int64_t)(target - (addr + i + 4)) - d;
		if ((uint32_t)d == (uint32_t)target || (past >= 0 && past <= 4))
			return true;
	}
	return false;
}

/* Where a probe sees a call of newproc1 from elsewhere end, before the g it
 * returns can run: the first instruction the kernel emulates after it when
 * only registers and the stack were written before (nothing another thread
 * reads), else the one at the return address. */
static bool newproc1_return_site(const struct ct_target *t, uint64_t ret, uint64_t *at)
{
	const struct ct_func *f = ct_target_func_at(t, ret);
	const uint8_t *code = f && ret < f->end ? ct_elf_bytes_at(&t->elf, ret, f->end - ret) : NULL;
	if (!code)
		return false;
	struct ct_exit_walk w;
	ct_exit_walk(code, f->end - ret, ret, &w);
	*at = w.how == CT_EXIT_EMULATED && !w.mem_written ? w.site : ret;
	return !ct_uprobe_refuses(code + (*at - ret), f->end - *at, *at);
}

/* A site of the creation probe's kind where a goroutine id was given. */
static void push_goid_site(struct ct_plan *p, uint64_t at, int64_t off, uint8_t gsrc)
{
	struct ct_plan_site s = {.addr = at, .offset = (uint64_t)off, .func = CT_NOFUNC,
				 .kind = CT_SITE_GOCREATE, .target_func = CT_NOFUNC, .gsrc = gsrc,
				 .call_site = CT_NOSITE, .next = CT_NOSITE};
	ct_plan_push_site(p, &s);
}

/* Does every g that newproc1 gives a goroutine id pass a probe before it can
 * run?  When the creation probe is in newproc1 (up to Go 1.14), it does; in
 * newproc's closure (from 1.15), the other calls of newproc1 need probes of
 * their own, right after them (before the caller can run the g):
 * debugCallWrap's closure (a debugger's injected call, from 1.14) and
 * newcoro's (iter.Pull, from 1.23; its g runs on the caller's thread at the
 * first coroswitch).  Adds those after the creation probe (P->goid_sites in
 * all).  An unexported runtime function, newproc1 is called from the runtime
 * only. */
static bool see_all_goids(struct ct_plan *p, const struct ct_func *creator)
{
	const struct ct_target *t = p->t;
	const struct ct_func *np1 = func_named(t, "runtime.newproc1");
	if (!np1) {
		snprintf(p->goid_note, sizeof(p->goid_note), "no runtime.newproc1 in the binary");
		return false;
	}
	snprintf(p->goid_note, sizeof(p->goid_note), "%s", creator->name);
	if (creator == np1)
		return true;
	struct newproc1_refs o = {np1->entry, creator, NULL, NULL, {0}};
	for (size_t i = 0; i < t->nfuncs && !o.other; i++) {
		const struct ct_func *f = &t->funcs[i];
		const uint8_t *code = strncmp(f->name, "runtime.", 8) || f->end <= f->entry
					      ? NULL
					      : ct_elf_bytes_at(&t->elf, f->entry, f->end - f->entry);
		o.cur = f;
		if (code && may_refer(code, f->end - f->entry, f->entry, np1->entry))
			ct_scan_refs(code, f->end - f->entry, f->entry, newproc1_ref, &o);
	}
	bool ok = !o.other;
	if (!ok)
		snprintf(p->goid_note, sizeof(p->goid_note), "%s refers to runtime.newproc1 other than by a call",
			 o.other->name);
	size_t first = p->sites.n;
	for (size_t i = 0; ok && i < o.rets.n; i++) {
		uint64_t at;
		int64_t off = -1;
		if (newproc1_return_site(t, o.rets.v[i], &at))
			off = ct_elf_vaddr_to_offset(&t->elf, at);
		if (off < 0) {
			snprintf(p->goid_note, sizeof(p->goid_note), "no probe can go after the call of runtime.newproc1 at 0x%llx",
				 (unsigned long long)o.rets.v[i]);
			ok = false;
			p->sites.n = first;
			break;
		}
		const struct ct_func *in = ct_target_func_at(t, at);
		push_goid_site(p, at, off, in && (in->flags & CT_FN_ABI0) ? CT_G_TLS : CT_G_R14);
		size_t len = strlen(p->goid_note);
		snprintf(p->goid_note + len, sizeof(p->goid_note) - len, ", %s", in ? in->name : "?");
	}
	CT_VEC_FREE(o.rets);
	return ok;
}

/* Does a probe see every move of a goroutine's stack before the goroutine
 * runs again?  One on runtime.copystack's call of stackalloc, the new
 * stack's allocation: every move is a copystack, and the goroutine is not
 * running while it is (its own stack growth runs on g0; the GC shrinks a
 * stopped one's).  Adds it after the goid sites. */
static bool see_stack_moves(struct ct_plan *p)
{
	const struct ct_target *t = p->t;
	const struct ct_func *copystack = func_named(t, "runtime.copystack");
	const struct ct_func *stackalloc = func_named(t, "runtime.stackalloc");
	const uint8_t *code = copystack && stackalloc && copystack->end > copystack->entry
				      ? ct_elf_bytes_at(&t->elf, copystack->entry, copystack->end - copystack->entry)
				      : NULL;
	struct find_call fc = {stackalloc ? stackalloc->entry : 0, 0};
	if (code)
		ct_scan_refs(code, copystack->end - copystack->entry, copystack->entry, find_call_ref, &fc);
	int64_t off = fc.at ? ct_elf_vaddr_to_offset(&t->elf, fc.at) : -1;
	if (off < 0 || ct_uprobe_refuses(code + (fc.at - copystack->entry), copystack->end - fc.at, fc.at)) {
		snprintf(p->goid_note, sizeof(p->goid_note), "no probe on runtime.copystack's call of runtime.stackalloc");
		return false;
	}
	push_goid_site(p, fc.at, off, copystack->flags & CT_FN_ABI0 ? CT_G_TLS : CT_G_R14);
	return true;
}

uint32_t ct_plan_goid_site(const struct ct_plan *p, size_t n)
{
	uint32_t s = p->gocreate_site;
	if (!p->goid_sites || s >= n || s + p->goid_sites > n || s + p->goid_sites > p->sites.n)
		return CT_NOSITE;
	for (uint32_t i = s; i < s + p->goid_sites; i++)
		if (!ct_site_is_probe(&p->sites.v[i]))
			return CT_NOSITE;
	return s;
}

const char *ct_plan_goid_note(const struct ct_plan *p, char *out, size_t n)
{
	if (ct_plan_goid_site(p, p->sites.n) != CT_NOSITE)
		snprintf(out, n, "each thread keeps the one it read from a g until the runtime gives one out (seen in %s), "
			 "and the g's stack.hi until it moves a stack (seen in runtime.copystack)",
			 p->goid_note);
	else if (p->gocreate_site >= p->sites.n)
		snprintf(out, n, "read from the g at each hit (no goroutine creation probe)");
	else if (p->goid_sites)
		snprintf(out, n, "read from the g at each hit (a probe after an id is given plays other roles too)");
	else
		snprintf(out, n, "read from the g at each hit (%s)", p->goid_note);
	return out;
}

void ct_plan_goroutines(struct ct_plan *p)
{
	static const char *const creators[] = {"runtime.newproc.func1", "runtime.newproc1"};
	const struct ct_target *t = p->t;
	p->gocreate_site = CT_NOFUNC;
	p->goid_sites = 0;
	p->goid_note[0] = 0;
	if (t->lang != CT_LANG_GO)
		return;
	const struct ct_func *runqput = func_named(t, "runtime.runqput");
	for (size_t i = 0; runqput && i < sizeof(creators) / sizeof(creators[0]); i++) {
		const struct ct_func *f = func_named(t, creators[i]);
		const uint8_t *code = f ? ct_elf_bytes_at(&t->elf, f->entry, f->end - f->entry) : NULL;
		struct find_call fc = {runqput->entry, 0};
		if (code)
			ct_scan_refs(code, f->end - f->entry, f->entry, find_call_ref, &fc);
		uint64_t at = fc.at;
		int64_t off = at ? ct_elf_vaddr_to_offset(&t->elf, at) : -1;
		if (off < 0)
			continue;
		p->gocreate_site = (uint32_t)p->sites.n;
		p->gocreate_abi0 = (f->flags & CT_FN_ABI0) != 0;
		push_goid_site(p, at, off, p->gocreate_abi0 ? CT_G_TLS : CT_G_R14);
		if (see_all_goids(p, f) && see_stack_moves(p))
			p->goid_sites = (uint32_t)(p->sites.n - p->gocreate_site);
		else /* (the others would run as creation probes) */
			p->sites.n = p->gocreate_site + 1;
		return;
	}
	ct_debug("goroutine lineage: no call of runtime.runqput found in runtime.newproc.func1/newproc1");
}

void ct_plan_goroutine_fetch(struct ct_plan *p)
{
	if (p->gocreate_site == CT_NOFUNC || p->gocreate_site >= p->sites.n)
		return;
	if (!p->fetch)
		p->fetch = xcalloc(p->sites.n, sizeof(*p->fetch));
	const struct ct_bin_config *g = &p->t->gcfg;
	struct ct_site_fetch *f = xcalloc(1, sizeof(*f));
	struct ct_fetch_op *op = f->prog.ops;
	/* the new g (8 bytes at payload offset NEWG), then its goid and gopc
	 * as memory copies: an 8-byte header, the bytes after it */
	uint32_t newg;
	if (p->gocreate_abi0) {
		*op++ = (struct ct_fetch_op){.code = CT_OP_STACK, .dst = 0, .size = 8, .off = 8};
		newg = CT_MEM_HDR;
	} else {
		*op++ = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RBX, .dst = 0};
		newg = 0;
	}
	uint32_t at = newg + 8;
	*op++ = (struct ct_fetch_op){.code = CT_OP_DEREF, .dst = (uint16_t)at, .size = 8, .src = (uint16_t)newg,
				     .off = (int32_t)g->goid_off};
	p->gocreate_goid_at = at + CT_MEM_HDR;
	at += CT_MEM_HDR + 8;
	p->gocreate_gopc_at = 0;
	if (g->gopc_off) {
		*op++ = (struct ct_fetch_op){.code = CT_OP_DEREF, .dst = (uint16_t)at, .size = 8,
					     .src = (uint16_t)newg, .off = (int32_t)g->gopc_off};
		p->gocreate_gopc_at = at + CT_MEM_HDR;
		at += CT_MEM_HDR + 8;
	}
	f->prog.nops = (uint16_t)(op - f->prog.ops);
	f->prog.size = (uint16_t)at;
	p->fetch[p->gocreate_site] = f;
}

bool ct_plan_goroutine_created(const struct ct_plan *p, const uint8_t *raw, size_t len, uint64_t *goid,
			       uint64_t *gopc)
{
	uint16_t ok;
	*goid = *gopc = 0;
	if (!p->gocreate_goid_at || p->gocreate_goid_at + 8 > len)
		return false;
	memcpy(&ok, raw + p->gocreate_goid_at - CT_MEM_HDR, 2);
	if (ok != 8)
		return false;
	memcpy(goid, raw + p->gocreate_goid_at, 8);
	if (p->gocreate_gopc_at && p->gocreate_gopc_at + 8 <= len) {
		memcpy(&ok, raw + p->gocreate_gopc_at - CT_MEM_HDR, 2);
		if (ok == 8)
			memcpy(gopc, raw + p->gocreate_gopc_at, 8);
	}
	return *goid != 0;
}
