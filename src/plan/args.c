/* Which arguments and results each probe site captures, and how: the
 * signature comes from DWARF, the locations from DWARF's entry locations
 * where it has them (they are exact, even around blank `_` params DWARF
 * omits) and from the calling convention otherwise (always for results). */
#include "plan/plan.h"
#include "target/goruntime.h"
#include "util/util.h"

#include <string.h>

/* -A 'GLOB@a,b': does F match, and which names (NULL = all)? */
static bool want_args(const struct ct_args_opts *o, const struct ct_func *fn, const char **names)
{
	*names = NULL;
	if (o->go_parks && !strcmp(fn->name, CT_GO_GOPARK)) {
		*names = "reason"; /* (why it parks; the rest is the runtime's business) */
		return true;
	}
	if (!o->nargs && !o->nrets)
		return true;
	for (size_t i = 0; i < o->nargs; i++) {
		const char *spec = o->args[i], *at = strchr(spec, '@');
		char glob[512];
		snprintf(glob, sizeof(glob), "%.*s", at ? (int)(at - spec) : (int)strlen(spec), spec);
		if (ct_names_match(&fn->dm, fn->name, glob)) {
			*names = at ? at + 1 : NULL;
			return true;
		}
	}
	return false;
}

static bool want_rets(const struct ct_args_opts *o, const struct ct_func *fn)
{
	if (o->go_parks && !strcmp(fn->name, CT_GO_GOPARK))
		return false;
	if (!o->nargs && !o->nrets)
		return true;
	for (size_t i = 0; i < o->nrets; i++)
		if (ct_names_match(&fn->dm, fn->name, o->rets[i]))
			return true;
	return false;
}

/* F's signature (DWARF), an assembly function's result left out unless its
 * code shows RAX set before each RET: DWARF does not say whether it has
 * one, or where (libm's __floor_sse41 returns in XMM0: RAX's word was shown
 * as its value). */
static bool func_sig(struct ct_plan *p, const struct ct_func *f, struct ct_sig *sig)
{
	if (!p->types || !ct_types_sig(p->types, f->entry, sig))
		return false;
	for (size_t i = 0; i < sig->n; i++) {
		if (!sig->params[i].asm_word)
			continue;
		size_t len = f->end > f->entry ? f->end - f->entry : 0;
		const uint8_t *code = len ? ct_elf_bytes_at(&p->t->elf, f->entry, len) : NULL;
		if (code && ct_rets_set_rax(code, len, f->entry))
			continue;
		free(sig->params[i].name);
		free(sig->params[i].entry_loc.pieces);
		memmove(&sig->params[i], &sig->params[i + 1], (sig->n - i - 1) * sizeof(*sig->params));
		sig->n--;
		i--;
	}
	return true;
}

/* Results captured for F's calls?  (DWARF opened here once, kept for
 * ct_plan_args.) */
bool ct_plan_wants_results(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *f)
{
	if (!o->enabled || !want_rets(o, f) || !p->t->has_dwarf)
		return false;
	if (!p->types)
		p->types = ct_types_open(p->t->elf.path, p->t->lang == CT_LANG_GO);
	struct ct_sig sig;
	if (!func_sig(p, f, &sig))
		return false;
	bool any = false;
	for (size_t i = 0; i < sig.n; i++)
		any |= sig.params[i].is_result;
	ct_sig_free(&sig);
	return any;
}

static bool name_listed(const char *names, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = names; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

static bool only_registers(const struct ct_loc *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->pieces[i].kind != CT_PIECE_REG && l->pieces[i].kind != CT_PIECE_XREG)
			return false;
	return l->n > 0;
}

static struct ct_site_fetch *finish(struct ct_site_fetch *f)
{
	if (!f->nvals) {
		ct_site_fetch_free(f);
		return NULL;
	}
	return ct_site_fetch_keep(f);
}

/* Captures of one function: fills ENTRY (args) and RET (results). */
static void plan_func(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn,
		      struct ct_site_fetch **entry, struct ct_site_fetch **ret, bool *incomplete)
{
	const char *names;
	bool wa = want_args(o, fn, &names), wr = want_rets(o, fn);
	enum ct_callconv cc = ct_callconv_of(fn);
	*entry = *ret = NULL;
	*incomplete = false;
	if (!wa && !wr)
		return;
	struct ct_sig sig;
	if (!func_sig(p, fn, &sig)) {
		/* No description: raw words, Go only (the args width says how
		 * many); a C function without DWARF gives no count to trust. */
		if (wa && (fn->flags & CT_FN_GO) && fn->args > 0) {
			struct ct_site_fetch f;
			if (names && !strcmp(fn->name, CT_GO_GOPARK)) /* --parks: gopark(unlockf, lock, reason uint8, ...) */
				ct_fetch_build_raw_one(cc, 2, 1, "reason", &f);
			else
				ct_fetch_build_raw(cc, (uint32_t)fn->args / 8, &f);
			*entry = finish(&f);
		}
		return;
	}
	const struct ct_typetab *tt = ct_types_table(p->types);
	if (sig.rust_abi)
		cc = CT_CC_RUST;
	struct ct_abi_layout lay;
	bool have_lay = ct_abi_assign(tt, &sig, cc, &lay) == 0;
	/* DWARF leaves out blank `_` parameters, which still take registers:
	 * the width the ABI gives must match pclntab's, or the convention's
	 * locations cannot be trusted. */
	*incomplete = have_lay && (fn->flags & CT_FN_GO) && fn->args >= 0 && lay.width != (uint32_t)fn->args;
	struct ct_loc *locs = xcalloc(sig.n ? sig.n : 1, sizeof(*locs));
	bool *gone = xcalloc(sig.n ? sig.n : 1, sizeof(*gone));
	struct ct_piece *nothing = xcalloc(sig.n ? sig.n : 1, sizeof(*nothing));
	/* Optimized C code that does not say where an argument is at the entry:
	 * the convention stands in only where it must hold, at an external
	 * function's own symbol.  A compiler clone ("use.constprop.0.isra.0")
	 * or a unit-local function may have lost or moved the parameter. */
	bool c_convention = !(fn->flags & CT_FN_GO) && !sig.rust_abi && p->t->lang != CT_LANG_GO;
	bool convention_holds = sig.external && !strchr(fn->name, '.');
	for (size_t i = 0; i < sig.n; i++) {
		const struct ct_param *pr = &sig.params[i];
		const struct ct_loc *abi = have_lay ? &lay.locs[i] : NULL;
		const struct ct_type *t = ct_type_get(tt, pr->type);
		if (!pr->is_result) {
			if (pr->entry_loc.n) {
				locs[i] = pr->entry_loc;
			} else if (c_convention && t->kind == CT_K_STRUCT && !t->nfields && t->size <= 1 && !t->by_ref) {
				/* an empty class (C++ `struct empty {}`, a lambda without
				 * captures) is not passed at all: it is {} */
				nothing[i] = (struct ct_piece){.kind = CT_PIECE_CONST, .size = (uint16_t)t->size};
				locs[i] = (struct ct_loc){&nothing[i], 1};
			} else if (c_convention && pr->optimized && !convention_holds)
				gone[i] = true;
			else if (abi && !*incomplete && !pr->constant && !(sig.rust_abi && pr->optimized))
				locs[i] = *abi;
		} else if (abi && (!*incomplete || only_registers(abi))) {
			locs[i] = *abi;
		}
	}
	/* -A f@a,b: keep only the arguments listed (a shallow view of sig) */
	struct ct_sig view = sig;
	view.params = xcalloc(sig.n ? sig.n : 1, sizeof(*view.params));
	struct ct_loc *vlocs = xcalloc(sig.n ? sig.n : 1, sizeof(*vlocs));
	bool *vgone = xcalloc(sig.n ? sig.n : 1, sizeof(*vgone));
	view.n = 0;
	uint32_t nargs = 0;
	for (size_t i = 0; i < sig.n; i++) {
		if (names && !sig.params[i].is_result && !name_listed(names, sig.params[i].name))
			continue;
		vlocs[view.n] = locs[i];
		if (!sig.params[i].is_result) /* the arguments' values come in this order */
			vgone[nargs++] = gone[i];
		view.params[view.n++] = sig.params[i];
	}
	struct ct_site_fetch f;
	if (wa) {
		ct_fetch_build(tt, &view, vlocs, false, &o->fetch, &f);
		for (uint32_t i = 0; i < f.nvals; i++) {
			if ((f.vals[i].flags & CT_VAL_NOLOC) && *incomplete)
				f.vals[i].flags |= CT_VAL_INCOMPLETE;
			if ((f.vals[i].flags & CT_VAL_NOLOC) && vgone[i])
				f.vals[i].flags |= CT_VAL_OPTIMIZED;
		}
		*entry = finish(&f);
	}
	if (wr) {
		ct_fetch_build(tt, &view, vlocs, true, &o->fetch, &f);
		for (uint32_t i = 0; i < f.nvals; i++)
			if ((f.vals[i].flags & CT_VAL_NOLOC) && *incomplete)
				f.vals[i].flags |= CT_VAL_INCOMPLETE;
		*ret = finish(&f);
	}
	free(view.params);
	free(vlocs);
	free(vgone);
	free(gone);
	free(nothing);
	free(locs);
	if (have_lay)
		ct_abi_layout_free(&lay);
	ct_sig_free(&sig);
}

/* plan_func's findings, kept for the next time they are asked for
 * (struct ct_plan.captures): the same for the same options and DWARF. */
struct captures {
	const struct ct_args_opts *o;
	const struct ct_types *types;
	struct ct_site_fetch *entry, *ret;
	bool incomplete;
};

static void captures_clear(struct ct_plan *p, struct captures *c);

static struct ct_site_fetch *clone_or_null(const struct ct_site_fetch *f)
{
	return f ? ct_site_fetch_clone(f) : NULL;
}

/* F (NULL: none) for one more holder: itself if shared, else a copy. */
static struct ct_site_fetch *share(const struct ct_plan *p, struct ct_site_fetch *f)
{
	return !f || ct_plan_fetch_pooled(p, f) ? f : ct_site_fetch_clone(f);
}

/* plan_func, once per function: what it found (shared fetches). */
static const struct captures *captures_get(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn)
{
	struct captures *c = map_get(&p->captures, (uint64_t)(uintptr_t)fn);
	if (!c || c->o != o || c->types != p->types) {
		if (c) {
			captures_clear(p, c);
		} else {
			c = xcalloc(1, sizeof(*c));
			map_put(&p->captures, (uint64_t)(uintptr_t)fn, c);
		}
		c->o = o;
		c->types = p->types;
		plan_func(p, o, fn, &c->entry, &c->ret, &c->incomplete);
		c->entry = ct_plan_fetch_intern_heap(p, c->entry);
		c->ret = ct_plan_fetch_intern_heap(p, c->ret);
	}
	return c;
}

/* ... copies of them (the caller's). */
static void captures_of(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn,
			struct ct_site_fetch **entry, struct ct_site_fetch **ret, bool *incomplete)
{
	const struct captures *c = captures_get(p, o, fn);
	*entry = clone_or_null(c->entry);
	*ret = clone_or_null(c->ret);
	*incomplete = c->incomplete;
}

static void captures_clear(struct ct_plan *p, struct captures *c)
{
	ct_plan_fetch_drop(p, c->entry);
	ct_plan_fetch_drop(p, c->ret);
	c->entry = c->ret = NULL;
}

void ct_plan_captures_free(struct ct_plan *p)
{
	MAP_FOREACH(&p->captures, i)
	{
		captures_clear(p, p->captures.vals[i]);
		free(p->captures.vals[i]);
	}
	map_free(&p->captures);
}

/* FN's capture at its RETs (RESULTS) or at its entry. */
static struct ct_site_fetch *one_capture(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn,
					 bool results)
{
	struct ct_site_fetch *entry, *ret;
	bool incomplete;
	if (!o->enabled)
		return NULL;
	captures_of(p, o, fn, &entry, &ret, &incomplete);
	struct ct_site_fetch *drop = results ? entry : ret;
	if (drop) {
		ct_site_fetch_free(drop);
		free(drop);
	}
	return results ? ret : entry;
}

struct ct_site_fetch *ct_plan_results_fetch(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn)
{
	return one_capture(p, o, fn, true);
}

struct ct_site_fetch *ct_plan_args_fetch(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn)
{
	return one_capture(p, o, fn, false);
}

struct ct_site_fetch *ct_site_fetch_clone(const struct ct_site_fetch *f)
{
	struct ct_site_fetch *c = ct_site_fetch_keep(f);
	c->vals = xcalloc(f->nvals ? f->nvals : 1, sizeof(*c->vals));
	for (uint32_t i = 0; i < f->nvals; i++) {
		c->vals[i] = f->vals[i];
		c->vals[i].name = xstrdup(f->vals[i].name);
		c->vals[i].pieces = xcalloc(f->vals[i].npieces ? f->vals[i].npieces : 1, sizeof(*c->vals[i].pieces));
		memcpy(c->vals[i].pieces, f->vals[i].pieces, f->vals[i].npieces * sizeof(*c->vals[i].pieces));
	}
	return c;
}

/* The shared fetches (struct ct_plan.fetch_pool): of restic's 221,152
 * sites, most read raw argument words like thousands of others, and a copy
 * each (program, values, their names and pieces) was ~35 MB of the plan. */
static size_t prog_bytes(const struct ct_fetch *pr)
{
	uint32_t nops = pr->nops < CT_MAX_OPS ? pr->nops : CT_MAX_OPS;
	return offsetof(struct ct_fetch, ops) + nops * sizeof(pr->ops[0]);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
	return hash64(h ^ x) + 0x9e3779b97f4a7c15ULL;
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t w;
	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = mix(h, w);
	}
	w = 0;
	memcpy(&w, b, n);
	return mix(h, w ^ (uint64_t)n << 56);
}

static uint64_t fetch_hash(const struct ct_site_fetch *f)
{
	uint64_t h = mix_bytes(0, &f->prog, prog_bytes(&f->prog));
	h = mix(mix(mix(h, f->nvals), f->truncated), f->immutable_ops);
	for (uint32_t i = 0; i < f->nvals; i++) {
		const struct ct_val_desc *v = &f->vals[i];
		h = mix_bytes(h, v->name ? v->name : "", v->name ? strlen(v->name) : 0);
		h = mix(h, (uint64_t)v->type << 40 ^ (uint64_t)v->flags << 32 ^ v->npieces ^ (uint64_t)!v->name << 63);
		for (uint32_t k = 0; k < v->npieces; k++) {
			const struct ct_val_piece *q = &v->pieces[k];
			h = mix(h, (uint64_t)q->kind << 56 ^ (uint64_t)q->reg << 48 ^ (uint64_t)q->size << 32 ^ q->value_off);
			h = mix(mix(h, q->slot), q->literal);
		}
	}
	return h;
}

static bool fetch_equal(const struct ct_site_fetch *a, const struct ct_site_fetch *b)
{
	if (a->nvals != b->nvals || a->truncated != b->truncated || a->immutable_ops != b->immutable_ops ||
	    a->prog.nops != b->prog.nops || memcmp(&a->prog, &b->prog, prog_bytes(&a->prog)))
		return false;
	for (uint32_t i = 0; i < a->nvals; i++) {
		const struct ct_val_desc *v = &a->vals[i], *w = &b->vals[i];
		if (v->type != w->type || v->flags != w->flags || v->npieces != w->npieces || !v->name != !w->name ||
		    (v->name && strcmp(v->name, w->name)))
			return false;
		for (uint32_t k = 0; k < v->npieces; k++) {
			const struct ct_val_piece *x = &v->pieces[k], *y = &w->pieces[k];
			if (x->kind != y->kind || x->reg != y->reg || x->size != y->size || x->value_off != y->value_off ||
			    x->slot != y->slot || x->literal != y->literal)
				return false;
		}
	}
	return true;
}

/* The pooled fetch like F, or NULL; *HASH: F's. */
static struct ct_site_fetch *pool_find(struct ct_plan *p, const struct ct_site_fetch *f, uint64_t *hash)
{
	*hash = fetch_hash(f);
	struct ct_site_fetch *c = map_get(&p->fetch_pool, *hash);
	return c && fetch_equal(c, f) ? c : NULL;
}

/* H (on the heap) pooled, unless another fetch has its hash (then H stays
 * the caller's own). */
static struct ct_site_fetch *pool_add(struct ct_plan *p, struct ct_site_fetch *h, uint64_t hash)
{
	void **slot = map_slot(&p->fetch_pool, hash, true);
	if (!*slot) {
		*slot = h;
		map_put(&p->fetch_pooled, (uint64_t)(uintptr_t)h, h);
	}
	return h;
}

struct ct_site_fetch *ct_plan_fetch_intern(struct ct_plan *p, struct ct_site_fetch *f)
{
	uint64_t hash;
	struct ct_site_fetch *c = pool_find(p, f, &hash);
	if (c) {
		ct_site_fetch_free(f);
		return c;
	}
	return pool_add(p, ct_site_fetch_keep(f), hash);
}

struct ct_site_fetch *ct_plan_fetch_intern_heap(struct ct_plan *p, struct ct_site_fetch *h)
{
	if (!h || ct_plan_fetch_pooled(p, h))
		return h;
	uint64_t hash;
	struct ct_site_fetch *c = pool_find(p, h, &hash);
	if (c) {
		ct_site_fetch_free(h);
		free(h);
		return c;
	}
	return pool_add(p, h, hash);
}

bool ct_plan_fetch_pooled(const struct ct_plan *p, const struct ct_site_fetch *f)
{
	return f && map_get((struct ct_map *)&p->fetch_pooled, (uint64_t)(uintptr_t)f) != NULL;
}

void ct_plan_fetch_drop(struct ct_plan *p, struct ct_site_fetch *f)
{
	if (!f || ct_plan_fetch_pooled(p, f))
		return;
	ct_site_fetch_free(f);
	free(f);
}

/* *SLOT (NULL: a fetch without values) with its program replaced by PROG,
 * as ct_site_fetch_set_prog makes it, but shared: the one fetch like it. */
static void set_prog(struct ct_plan *p, struct ct_site_fetch **slot, const struct ct_fetch *prog)
{
	struct ct_site_fetch *old = *slot, f = {0};
	if (old) {
		f.vals = old->vals;
		f.nvals = old->nvals;
		f.truncated = old->truncated;
		f.immutable_ops = old->immutable_ops;
	}
	ct_fetch_copy(&f.prog, prog);
	uint64_t hash;
	struct ct_site_fetch *c = pool_find(p, &f, &hash);
	if (!c) {
		c = ct_site_fetch_keep(&f);
		if (ct_plan_fetch_pooled(p, old)) { /* its values are the pool's: copies */
			struct ct_site_fetch *d = ct_site_fetch_clone(c);
			free(c);
			c = d;
		} else if (old) {
			old->nvals = 0; /* (taken) */
			old->vals = NULL;
		}
		c = pool_add(p, c, hash);
	}
	ct_plan_fetch_drop(p, old);
	*slot = c;
}

/* The results at a call's exit probe: read where the walk from the return
 * address says they went (a register, or the stack slot the caller saved
 * them to).  If some may have changed on the way, the exit probe moves to
 * the return address itself (single-stepped, nothing changed yet); if that
 * cannot take a probe either, they are shown unavailable. */
static struct ct_site_fetch *results_at_exit(const struct ct_plan *p, struct ct_plan_site *site,
					     const struct ct_site_fetch *ret, bool *moved)
{
	struct ct_callsite *cs = site->cs;
	struct ct_site_fetch f;
	struct ct_exit_walk buf;
	if (cs->how == CT_EXIT_EMULATED && ct_fetch_relocate(ret, -8 - cs->sp_delta, ct_callsite_walk(p, cs, &buf), &f) == 0)
		return ct_site_fetch_keep(&f);
	if (cs->walk.first_site && ct_fetch_relocate(ret, -8, NULL, &f) == 0) {
		if (site->addr != cs->walk.first_site) {
			int64_t off = ct_elf_vaddr_to_offset(&p->t->elf, cs->walk.first_site);
			if (off >= 0) {
				site->addr = cs->exit = cs->walk.first_site;
				site->offset = (uint64_t)off;
				site->key_adj = 8;
				site->flags |= CT_SITEF_STEPPED;
				cs->sp_delta = 0;
				cs->how = CT_EXIT_STEPPED;
				*moved = true;
				return ct_site_fetch_keep(&f);
			}
			ct_site_fetch_free(&f);
		} else {
			return ct_site_fetch_keep(&f);
		}
	}
	/* nothing can read them: say so */
	struct ct_site_fetch none = {0}, *u = ct_site_fetch_keep(&none);
	u->vals = xcalloc(ret->nvals ? ret->nvals : 1, sizeof(*u->vals));
	u->nvals = ret->nvals;
	for (uint32_t i = 0; i < ret->nvals; i++) {
		u->vals[i] = ret->vals[i];
		u->vals[i].name = xstrdup(ret->vals[i].name);
		u->vals[i].flags |= CT_VAL_NOLOC;
		u->vals[i].npieces = 0;
		u->vals[i].pieces = xcalloc(1, sizeof(*u->vals[i].pieces));
	}
	return u;
}

/* One probe runs one fetch program: the roles sharing a probe (the exit of a
 * call that is the next call) get one program with all their ops, each role
 * keeping its own values in it. */
/* The sites riding on each probe role (plan.h `rides`): RIDER[i] is the
 * first riding on site i + 1 (0: none), NEXT_RIDER[i] the one after site i. */
struct riders {
	uint32_t *first, *next;
};

static void riders_of(const struct ct_plan *p, struct riders *rd)
{
	rd->first = rd->next = NULL;
	for (size_t i = 0; i < p->sites.n; i++) {
		uint32_t l = p->sites.v[i].rides;
		if (l == CT_NOSITE)
			continue;
		if (!rd->first) {
			rd->first = xcalloc(p->sites.n, sizeof(*rd->first));
			rd->next = xcalloc(p->sites.n, sizeof(*rd->next));
		}
		rd->next[i] = rd->first[l];
		rd->first[l] = (uint32_t)i + 1;
	}
}

static void share_fetch(struct ct_plan *p, size_t i, const struct riders *rd);

/* *SLOT (dropped, if any) replaced by a heap copy of F (taking its values),
 * its own: its program is yet to be set (set_prog). */
static void replace_fetch(struct ct_plan *p, struct ct_site_fetch **slot, const struct ct_site_fetch *f)
{
	ct_plan_fetch_drop(p, *slot);
	*slot = ct_site_fetch_keep(f);
}

/* F's values, none of them read (beyond the capture limits), in *OUT. */
static void cut_values(const struct ct_site_fetch *f, struct ct_site_fetch *out)
{
	memset(out, 0, sizeof(*out));
	out->vals = xcalloc(f->nvals ? f->nvals : 1, sizeof(*out->vals));
	out->nvals = f->nvals;
	for (uint32_t v = 0; v < f->nvals; v++) {
		out->vals[v] = f->vals[v];
		out->vals[v].name = xstrdup(f->vals[v].name);
		out->vals[v].flags |= CT_VAL_NOLOC | CT_VAL_CUT;
		out->vals[v].npieces = 0;
		out->vals[v].pieces = xcalloc(1, sizeof(*out->vals[v].pieces));
	}
}

void ct_plan_share_fetch(struct ct_plan *p, size_t i)
{
	struct riders rd = {NULL, NULL};
	share_fetch(p, i, &rd);
}

/* The riders of site K (their fetches as K's was before the merge) placed
 * in the program as K's values are: merged after ACC, as K's were. */
static void place_riders(struct ct_plan *p, const struct riders *rd, uint32_t k, const struct ct_site_fetch *acc)
{
	for (uint32_t q = rd->first ? rd->first[k] : 0; q; q = rd->next[q - 1]) {
		struct ct_site_fetch *f = p->fetch[q - 1], a, b;
		if (!f || ct_fetch_merge(acc, f, &a, &b))
			continue; /* (it fit for K: the same program) */
		ct_site_fetch_free(&a);
		replace_fetch(p, &p->fetch[q - 1], &b);
	}
}

static void share_fetch(struct ct_plan *p, size_t i, const struct riders *rd)
{
	const struct ct_plan_site *s = &p->sites.v[i];
	if (!ct_site_is_probe(s) || s->next == CT_NOSITE)
		return;
	uint32_t chain[8];
	size_t n = 0, with = 0;
	for (uint32_t k = (uint32_t)i; k != CT_NOSITE && n < 8; k = p->sites.v[k].next) {
		chain[n++] = k;
		with += p->fetch[k] != NULL;
	}
	if (!with)
		return;
	struct ct_site_fetch acc = {0}; /* the program so far (no values) */
	for (size_t k = 0; k < n; k++) {
		struct ct_site_fetch *f = p->fetch[chain[k]];
		if (!f)
			continue;
		struct ct_site_fetch a, b;
		if (ct_fetch_merge(&acc, f, &a, &b) == 0) {
			place_riders(p, rd, chain[k], &acc);
			acc.prog = a.prog;
			ct_site_fetch_free(&a);
		} else { /* does not fit: this role's values beyond the capture limits */
			cut_values(f, &b);
			for (uint32_t q = rd->first ? rd->first[chain[k]] : 0; q; q = rd->next[q - 1]) {
				struct ct_site_fetch c, *g = p->fetch[q - 1];
				if (!g)
					continue;
				cut_values(g, &c);
				replace_fetch(p, &p->fetch[q - 1], &c);
			}
		}
		replace_fetch(p, &p->fetch[chain[k]], &b);
	}
	for (size_t k = 0; k < n; k++) {
		set_prog(p, &p->fetch[chain[k]], &acc.prog);
		for (uint32_t q = rd->first ? rd->first[chain[k]] : 0; q; q = rd->next[q - 1])
			if (p->fetch[q - 1])
				set_prog(p, &p->fetch[q - 1], &acc.prog);
	}
}

/* The capture F of a call's exit at a call instruction, run instead at its
 * callee's CHECK where SP is 8 lower (the return address pushed; registers
 * and the caller's frame as they were): OUT, its stack offsets (and its
 * guard's, of the caller's stack written on the way) moved.  Only ops read
 * relative to SP or through registers other than SP, from the caller's
 * frame up: false otherwise. */
static bool capture_at_callee_entry(const struct ct_site_fetch *f, struct ct_site_fetch *out)
{
	const struct ct_fetch *pr = &f->prog;
	if (pr->guard_from < pr->guard_to && (pr->guard_lo < 0 || pr->guard_hi > INT16_MAX - 8))
		return false;
	*out = (struct ct_site_fetch){0};
	ct_fetch_copy(&out->prog, pr);
	if (pr->guard_from < pr->guard_to) {
		out->prog.guard_lo = (int16_t)(pr->guard_lo + 8);
		out->prog.guard_hi = (int16_t)(pr->guard_hi + 8);
	}
	for (uint32_t i = 0; i < pr->nops && i < CT_MAX_OPS; i++) {
		struct ct_fetch_op *op = &out->prog.ops[i];
		switch (op->code) {
		case CT_OP_STACK:
		case CT_OP_STACKWORD:
			if (op->off < 0)
				return false; /* below SP: the call wrote there */
			op->off += 8;
			break;
		case CT_OP_REG:
		case CT_OP_REGMEM:
			if (op->reg == CT_REG_SP)
				return false;
			break;
		case CT_OP_DEREF:
		case CT_OP_DEREF_LEN:
		case CT_OP_DEREF_STR:
		case CT_OP_DEREF_SPAN:
			break; /* through what earlier ops read */
		default:
			return false;
		}
	}
	return true;
}

/* Is HEAD a probe's first role that only closes calls (RETSITE, TAILRES),
 * none single-stepped?  *VALUES: whether any of them reads something. */
static bool only_exits(const struct ct_plan *p, uint32_t head, bool *values)
{
	size_t n = 0;
	*values = false;
	for (uint32_t k = head; k != CT_NOSITE; k = p->sites.v[k].next, n++) {
		const struct ct_plan_site *s = &p->sites.v[k];
		if (n >= 6 || (s->kind != CT_SITE_RETSITE && s->kind != CT_SITE_TAILRES) ||
		    (s->flags & CT_SITEF_STEPPED) || s->elsewhere)
			return false;
		const struct ct_site_fetch *f = p->fetch ? p->fetch[k] : NULL;
		*values |= f && (f->nvals || f->prog.nops);
	}
	return n > 0;
}

bool ct_plan_site_runs_fetch(const struct ct_plan *p, size_t i)
{
	const struct ct_plan_site *s = &p->sites.v[i];
	return s->kind == CT_SITE_RETSITE && (s->flags & CT_SITEF_ATCHECK) && !(s->flags & CT_SITEF_COMPANION);
}

/* Every role of the probe at HEAD reads the payload by PROG (their own
 * values, if any, placed in it), as the roles of one probe do. */
static void give_roles_program(struct ct_plan *p, uint32_t head, const struct ct_fetch *prog)
{
	struct ct_fetch whole; /* PROG may be a role's own, which a new program reallocates */
	ct_fetch_copy(&whole, prog);
	for (uint32_t k = head; k != CT_NOSITE; k = p->sites.v[k].next)
		set_prog(p, &p->fetch[k], &whole);
}

/* The roles at HEAD (their values over one shared program, placed first)
 * and the call CHECK sends: one program for the CHECK's hit from that
 * call, the exits' ops moved to where the CHECK runs.  False, nothing
 * changed, where they cannot be read there or do not fit. */
static bool merge_fetch_into_check(struct ct_plan *p, uint32_t head, uint32_t check, uint32_t call)
{
	struct ct_site_fetch moved, a, b;
	if (p->sites.v[check].sp_drop || !capture_at_callee_entry(p->fetch[head], &moved))
		return false;
	const struct ct_site_fetch none = {0};
	const struct ct_site_fetch *args = p->fetch[check] ? p->fetch[check] : &none;
	if (ct_fetch_merge(&moved, args, &a, &b))
		return false; /* (too many ops for one program) */
	give_roles_program(p, head, &a.prog); /* the same layout for theirs */
	ct_site_fetch_free(&a);
	/* the arguments, as the CHECK reads them, after */
	ct_plan_fetch_drop(p, p->fetch[call]);
	p->fetch[call] = ct_plan_fetch_intern(p, &b);
	return true;
}

void ct_plan_merge_exits_into_checks(struct ct_plan *p)
{
	/* The kernel-side stacks of record-time limits take a CHECK's event
	 * for a call only. */
	if (p->no_spills)
		return;
	struct ct_map probe_at = {0}; /* address -> the probe's first role + 1 */
	uint8_t *ridden = xcalloc(p->sites.n ? p->sites.n : 1, 1);
	for (size_t i = 0; i < p->sites.n; i++) {
		if (ct_site_is_probe(&p->sites.v[i]) && !p->sites.v[i].elsewhere)
			map_put(&probe_at, p->sites.v[i].addr, (void *)(uintptr_t)(i + 1));
		if (p->sites.v[i].rides < p->sites.n)
			ridden[p->sites.v[i].rides] = 1;
	}
	for (size_t i = 0; i < p->planned.n; i++) {
		struct ct_planned_call *pc = &p->planned.v[i].val;
		uint32_t check = (uint32_t)(p->planned.v[i].key >> 32);
		if (pc->site >= p->sites.n || check >= p->sites.n)
			continue;
		struct ct_plan_site *call = &p->sites.v[pc->site];
		if (call->kind != CT_SITE_CALL || !(call->flags & CT_SITEF_ATCHECK) || call->next != CT_NOSITE)
			continue;
		/* A call a wrapper makes last (via): the CHECK looks it up
		 * again from where the wrapper returns to, and sends that
		 * entry, never this one -- the exits chained here would never
		 * be seen (Go 1.26's runtime.call16: spillArgs, whose exit is
		 * the call of callRet, unwound by it every time). */
		if (pc->via)
			continue;
		size_t head1 = (size_t)(uintptr_t)map_get(&probe_at, call->addr);
		bool values;
		if (!head1 || !only_exits(p, (uint32_t)(head1 - 1), &values))
			continue;
		uint32_t head = (uint32_t)(head1 - 1);
		/* (an indirect call instruction, planned for every function it
		 * may call: only the CHECK of the one a call's exit there was
		 * planned for sees it) */
		bool other = false;
		for (uint32_t k = head; k != CT_NOSITE; k = p->sites.v[k].next) {
			const struct ct_callsite *hc = p->sites.v[k].cs;
			other |= hc && hc->closed_by && hc->closed_by - 1 != call->func;
		}
		if (other)
			continue;
		/* A call instruction runs its callee's entry, and the CHECK
		 * there, every time: that hit closes the calls this probe
		 * would have (same key: SP is the call's), then opens its
		 * own.  (A morestack restart runs the CHECK again: closing
		 * again finds the new call at that key, and leaves it.)  The
		 * results they read: by a program of this call's own, which
		 * the planned entry names, the CHECK's arguments after them. */
		if (values) {
			/* riders read the payload by the program they share
			 * with the exit they ride on: that one stays as it is */
			bool is_ridden = false;
			for (uint32_t k = head; k != CT_NOSITE; k = p->sites.v[k].next)
				is_ridden |= ridden[k] != 0;
			if (is_ridden || !merge_fetch_into_check(p, head, check, pc->site))
				continue;
			pc->fetch = head + 1;
		} else if (p->fetch && p->fetch[pc->site]) {
			/* the hit carries the call's arguments: its program (the
			 * layout its payload is read by) is every role's, none
			 * of their own values */
			give_roles_program(p, head, &p->fetch[pc->site]->prog);
		}
		uint32_t last = head;
		for (uint32_t k = head; k != CT_NOSITE; k = p->sites.v[k].next) {
			p->sites.v[k].flags |= CT_SITEF_ATCHECK;
			last = k;
		}
		p->sites.v[last].next = pc->site;
		call->flags |= CT_SITEF_COMPANION;
		/* the hit is the CHECK's: priced as the CALL it sent was */
		p->sites.v[head].flags |= call->flags & CT_SITEF_STEPPED;
		pc->site = head;
		map_put(&probe_at, call->addr, NULL);
		p->exits_at_checks++;
	}
	free(ridden);
	map_free(&probe_at);
}

static void share_probe_fetches(struct ct_plan *p)
{
	struct riders rd;
	riders_of(p, &rd);
	for (size_t i = 0; i < p->sites.n; i++)
		share_fetch(p, i, &rd);
	free(rd.first);
	free(rd.next);
}

/* RET (a function's results as at its RET) read at SITE, its exit probe
 * -- or, a TAILRES role, as its caller's ret left them (in the registers it
 * copied them to) at that caller's call's exit. */
static struct ct_site_fetch *results_at_role(const struct ct_plan *p, struct ct_plan_site *site,
					     const struct ct_site_fetch *ret, bool *moved)
{
	const struct ct_callsite *tc = site->kind == CT_SITE_TAILRES && site->call_site < p->sites.n
					       ? p->sites.v[site->call_site].cs
					       : NULL;
	struct ct_site_fetch tv;
	struct ct_exit_walk buf;
	if (!tc || !ct_plan_tail_results(ret, ct_callsite_walk(p, tc, &buf), (tc->caller->flags & CT_FN_GO) != 0, &tv))
		return results_at_exit(p, site, ret, moved);
	struct ct_site_fetch *f = results_at_exit(p, site, &tv, moved);
	ct_site_fetch_free(&tv);
	return f;
}

struct ct_site_fetch *ct_plan_results_at_exit(struct ct_plan *p, struct ct_plan_site *site)
{
	const struct ct_site_fetch *ret = p->funcs.v[site->func].results_view;
	bool moved = false;
	return ret ? results_at_role(p, site, ret, &moved) : NULL;
}

void ct_plan_args(struct ct_plan *p, const struct ct_args_opts *o)
{
	if (!o->enabled) {
		p->args_note = "off (--no-args)";
		ct_plan_goroutine_fetch(p);
		ct_plan_merge_exits_into_checks(p);
		return;
	}
	const struct ct_target *t = p->t;
	p->fetch = xcalloc(p->sites.n ? p->sites.n : 1, sizeof(*p->fetch));
	if (t->has_dwarf && !p->types)
		p->types = ct_types_open(t->elf.path, t->lang == CT_LANG_GO);
	if (!p->types)
		p->args_note = t->lang == CT_LANG_GO ? "no DWARF: raw argument words only (build without -ldflags=-w for names and types)"
						     : "no DWARF: arguments not captured (build with -g)";
	size_t s = 0;
	bool moved = false;
	for (size_t j = 0; j < p->funcs.n; j++) {
		struct ct_plan_func *pf = &p->funcs.v[j];
		/* (shared, each site's a share of them) */
		const struct captures *c = captures_get(p, o, pf->fn);
		struct ct_site_fetch *entry = c->entry, *ret = c->ret;
		if (entry || ret)
			p->args_funcs++;
		p->args_incomplete += c->incomplete;
		/* the function's sites are contiguous (plan.c emit_function) */
		for (; s < p->sites.n && p->sites.v[s].func == j; s++) {
			struct ct_plan_site *site = &p->sites.v[s];
			struct ct_site_fetch f;
			switch (site->kind) {
			case CT_SITE_CHECK: /* sends only for an unplanned call */
				if (entry && pf->check_walk) { /* after the prologue (callers.c checked it) */
					if (ct_fetch_relocate(entry, -pf->check_walk->sp_delta, pf->check_walk, &f) == 0)
						p->fetch[s] = ct_plan_fetch_intern(p, &f);
					break;
				}
				/* fall through */
			case CT_SITE_ENTRY:
				p->fetch[s] = share(p, entry);
				break;
			case CT_SITE_RET:
				p->fetch[s] = share(p, ret);
				break;
			case CT_SITE_CALL: /* SP is 8 higher: the return address is not pushed yet */
				if (entry && ct_fetch_relocate(entry, -8, NULL, &f) == 0) {
					/* probed a few instructions sooner: read there as the
					 * walk to the call says (ahead.c made sure it can) */
					struct ct_site_fetch ahead;
					bool ahead_ok = (site->flags & CT_SITEF_AHEAD) && ct_plan_ahead_fetch(p, &f, (uint32_t)s, &ahead);
					if (site->flags & CT_SITEF_AHEAD) {
						ct_site_fetch_free(&f);
						if (!ahead_ok)
							break; /* (never read where the values are not) */
						f = ahead;
					}
					p->fetch[s] = ct_plan_fetch_intern(p, &f);
				}
				break;
			case CT_SITE_RETSITE:
			case CT_SITE_TAILRES: /* the results of a tail call, as its caller's call's exit reads them */
				if (ret)
					p->fetch[s] = ct_plan_fetch_intern_heap(p, results_at_role(p, site, ret, &moved));
				break;
			case CT_SITE_TAILDIFF: /* the result word as at its RET, for the reconstruction's */
				p->fetch[s] = share(p, ret);
				break;
			default:
				break;
			}
		}
		pf->args_view = share(p, entry); /* the callee's view, for list */
		pf->results_view = share(p, ret);
	}
	if (moved)
		ct_plan_link_roles(p);
	ct_plan_spills(p);
	share_probe_fetches(p);
	ct_plan_goroutine_fetch(p);
	ct_plan_merge_exits_into_checks(p);
}
