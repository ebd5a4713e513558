/* Arguments passed in SSE registers (issue 17): BPF cannot read XMM
 * registers, so at the entry such an argument is unavailable.  Many
 * functions store them to the stack first thing (every -O0 prologue; -O2
 * code that keeps one across a call): a second probe where the straight line
 * from the entry has stored every one of them (ct_spill_walk proves it from
 * the code: the store takes the register as it was at the entry, nothing
 * overwrote the slot, no branch came before) reads them from memory.  Its
 * event (a SPILL site) supplements the open call's arguments (reconstruct.c);
 * a call that never gets there keeps them unavailable. */
#include "plan/plan.h"
#include "util/util.h"

#include <string.h>

/* Is every piece of the value in an SSE register (a float, a double, a
 * struct of them, a complex)? */
static bool in_sse(const struct ct_val_desc *d)
{
	if (!d->npieces || (d->flags & (CT_VAL_NOLOC | CT_VAL_RAW | CT_VAL_INCOMPLETE)))
		return false;
	for (uint32_t i = 0; i < d->npieces; i++)
		if (d->pieces[i].kind != CT_PIECE_XREG || d->pieces[i].reg < CT_XMM0 || d->pieces[i].reg >= CT_XMM0 + 8)
			return false;
	return true;
}

struct taken {
	struct ct_map at; /* addresses of the plan's other sites */
};

static bool addr_free(void *ctx, uint64_t addr)
{
	return !map_get(&((struct taken *)ctx)->at, addr);
}

struct first_target {
	uint64_t lo, hi, min;
};

static void note_target(void *ctx, const struct ct_code_ref *r)
{
	struct first_target *ft = ctx;
	if (r->kind == CT_REF_JUMP && r->target > ft->lo && r->target < ft->hi && r->target < ft->min)
		ft->min = r->target;
}

/* Plans F's SPILL site from its entry capture ENTRY; false if none. */
static bool plan_one(struct ct_plan *p, uint32_t j, const struct ct_site_fetch *entry, struct taken *tk)
{
	const struct ct_func *fn = p->funcs.v[j].fn;
	struct ct_spill_need needs[16];
	size_t nneeds = 0;
	bool any = false;
	for (uint32_t i = 0; i < entry->nvals; i++) {
		const struct ct_val_desc *d = &entry->vals[i];
		if (!in_sse(d))
			continue;
		any = true;
		for (uint32_t k = 0; k < d->npieces; k++) {
			uint8_t x = (uint8_t)(d->pieces[k].reg - CT_XMM0), sz = (uint8_t)d->pieces[k].size;
			size_t n = 0;
			while (n < nneeds && needs[n].xmm != x)
				n++;
			if (n == nneeds) {
				if (nneeds == 16)
					return false;
				needs[nneeds++] = (struct ct_spill_need){x, sz, 0};
			} else if (needs[n].size < sz) {
				needs[n].size = sz;
			}
		}
	}
	if (!any)
		return false;
	size_t len = fn->end - fn->entry;
	const uint8_t *code = ct_elf_bytes_at(&p->t->elf, fn->entry, len);
	if (!code)
		return false;
	struct first_target ft = {fn->entry, fn->end, fn->end};
	ct_scan_refs(code, len, fn->entry, note_target, &ft);
	struct ct_spill_site site;
	if (!ct_spill_walk(code, len, fn->entry, ft.min, needs, nneeds, addr_free, tk, &site))
		return false;
	/* The capture: the same values in the same order (the reader merges
	 * them by position), those in SSE registers read from their slots. */
	struct ct_sig sig = {0};
	sig.params = xcalloc(entry->nvals, sizeof(*sig.params));
	sig.n = entry->nvals;
	struct ct_loc *locs = xcalloc(entry->nvals, sizeof(*locs));
	for (uint32_t i = 0; i < entry->nvals; i++) {
		const struct ct_val_desc *d = &entry->vals[i];
		sig.params[i].name = d->name;
		sig.params[i].type = d->type;
		if (!in_sse(d))
			continue;
		locs[i].pieces = xcalloc(d->npieces, sizeof(*locs[i].pieces));
		locs[i].n = d->npieces;
		for (uint32_t k = 0; k < d->npieces; k++) {
			size_t n = 0;
			while (needs[n].xmm != d->pieces[k].reg - CT_XMM0)
				n++;
			/* CT_PIECE_STACK is from the CFA as the entry sees it (SP + 8) */
			locs[i].pieces[k] = (struct ct_piece){.kind = CT_PIECE_STACK, .size = d->pieces[k].size,
							      .value_off = d->pieces[k].value_off,
							      .stack_off = needs[n].sp_off - 8};
		}
	}
	struct ct_fetch_opts o = {0};
	struct ct_site_fetch f;
	ct_fetch_build(ct_types_table(p->types), &sig, locs, false, &o, &f);
	for (uint32_t i = 0; i < entry->nvals; i++)
		free(locs[i].pieces);
	free(locs);
	free(sig.params);
	if (f.truncated) {
		ct_site_fetch_free(&f);
		return false;
	}
	struct ct_plan_site s = {0};
	int64_t off = ct_elf_vaddr_to_offset(&p->t->elf, site.addr);
	if (off < 0) {
		ct_site_fetch_free(&f);
		return false;
	}
	s.addr = site.addr;
	s.offset = (uint64_t)off;
	s.func = j;
	s.kind = CT_SITE_SPILL;
	s.target_func = CT_NOFUNC;
	s.gsrc = CT_G_NONE;
	s.key_adj = -site.sp_drop; /* the frame's key is SP's at the entry */
	s.call_site = s.next = CT_NOSITE;
	s.flags = site.emulated ? 0 : CT_SITEF_STEPPED;
	ct_plan_push_site(p, &s);
	map_put(&tk->at, site.addr, (void *)1);
	p->fetch = xrealloc(p->fetch, p->sites.n * sizeof(*p->fetch));
	p->fetch[p->sites.n - 1] = ct_site_fetch_keep(&f);
	p->funcs.v[j].spill_site = (uint32_t)(p->sites.n - 1);
	return true;
}

void ct_plan_spills(struct ct_plan *p)
{
	if (p->no_spills || !p->types || !p->fetch)
		return;
	struct taken tk = {0};
	for (size_t i = 0; i < p->sites.n; i++)
		map_put(&tk.at, p->sites.v[i].addr, (void *)1);
	for (size_t j = 0; j < p->funcs.n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		pf->spill_site = CT_NOSITE;
		if ((pf->fn->flags & CT_FN_GO) || !pf->args_view)
			continue;
		plan_one(p, (uint32_t)j, pf->args_view, &tk);
	}
	map_free(&tk.at);
}
