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
 * are not seen here. */
#include "plan/plan.h"
#include "util/util.h"

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

void ct_plan_goroutines(struct ct_plan *p)
{
	static const char *const creators[] = {"runtime.newproc.func1", "runtime.newproc1"};
	const struct ct_target *t = p->t;
	p->gocreate_site = CT_NOFUNC;
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
		struct ct_plan_site s = {.addr = at, .offset = (uint64_t)off, .func = CT_NOFUNC,
					 .kind = CT_SITE_GOCREATE, .target_func = CT_NOFUNC,
					 .gsrc = (f->flags & CT_FN_ABI0) ? CT_G_TLS : CT_G_R14,
					 .call_site = CT_NOSITE, .next = CT_NOSITE};
		p->gocreate_site = (uint32_t)p->sites.n;
		p->gocreate_abi0 = (f->flags & CT_FN_ABI0) != 0;
		CT_VEC_PUSH(p->sites, s);
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
