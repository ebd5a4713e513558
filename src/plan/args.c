/* Which arguments and results each probe site captures, and how: the
 * signature comes from DWARF, the locations from DWARF's entry locations
 * where it has them (they are exact, even around blank `_` params DWARF
 * omits) and from the calling convention otherwise (always for results). */
#include "plan/plan.h"
#include "util/util.h"

#include <string.h>

static enum ct_callconv callconv_of(const struct ct_func *f)
{
	if (!(f->flags & CT_FN_GO))
		return CT_CC_SYSV;
	return (f->flags & CT_FN_ABI0) ? CT_CC_GO_STACK : CT_CC_GO_REG;
}

/* -A 'GLOB@a,b': does F match, and which names (NULL = all)? */
static bool want_args(const struct ct_args_opts *o, const struct ct_func *fn, const char **names)
{
	*names = NULL;
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
	if (!o->nargs && !o->nrets)
		return true;
	for (size_t i = 0; i < o->nrets; i++)
		if (ct_names_match(&fn->dm, fn->name, o->rets[i]))
			return true;
	return false;
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
	struct ct_site_fetch *h = xmalloc(sizeof(*h));
	*h = *f;
	return h;
}

/* Captures of one function: fills ENTRY (args) and RET (results). */
static void plan_func(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn,
		      struct ct_site_fetch **entry, struct ct_site_fetch **ret, bool *incomplete)
{
	const char *names;
	bool wa = want_args(o, fn, &names), wr = want_rets(o, fn);
	enum ct_callconv cc = callconv_of(fn);
	*entry = *ret = NULL;
	*incomplete = false;
	if (!wa && !wr)
		return;
	struct ct_sig sig;
	if (!p->types || !ct_types_sig(p->types, fn->entry, &sig)) {
		/* No description: raw words, Go only (the args width says how
		 * many); a C function without DWARF gives no count to trust. */
		if (wa && (fn->flags & CT_FN_GO) && fn->args > 0) {
			struct ct_site_fetch f;
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
	for (size_t i = 0; i < sig.n; i++) {
		const struct ct_param *pr = &sig.params[i];
		const struct ct_loc *abi = have_lay ? &lay.locs[i] : NULL;
		if (!pr->is_result) {
			if (pr->entry_loc.n)
				locs[i] = pr->entry_loc;
			else if (abi && !*incomplete)
				locs[i] = *abi;
		} else if (abi && (!*incomplete || only_registers(abi))) {
			locs[i] = *abi;
		}
	}
	/* -A f@a,b: keep only the arguments listed (a shallow view of sig) */
	struct ct_sig view = sig;
	view.params = xcalloc(sig.n ? sig.n : 1, sizeof(*view.params));
	struct ct_loc *vlocs = xcalloc(sig.n ? sig.n : 1, sizeof(*vlocs));
	view.n = 0;
	for (size_t i = 0; i < sig.n; i++) {
		if (names && !sig.params[i].is_result && !name_listed(names, sig.params[i].name))
			continue;
		vlocs[view.n] = locs[i];
		view.params[view.n++] = sig.params[i];
	}
	struct ct_site_fetch f;
	if (wa) {
		ct_fetch_build(tt, &view, vlocs, false, &o->fetch, &f);
		for (uint32_t i = 0; i < f.nvals; i++)
			if ((f.vals[i].flags & CT_VAL_NOLOC) && *incomplete)
				f.vals[i].flags |= CT_VAL_INCOMPLETE;
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
	free(locs);
	if (have_lay)
		ct_abi_layout_free(&lay);
	ct_sig_free(&sig);
}

static struct ct_site_fetch *clone_fetch(const struct ct_site_fetch *f)
{
	struct ct_site_fetch *c = xmalloc(sizeof(*c));
	*c = *f;
	c->vals = xcalloc(f->nvals ? f->nvals : 1, sizeof(*c->vals));
	for (uint32_t i = 0; i < f->nvals; i++) {
		c->vals[i] = f->vals[i];
		c->vals[i].name = xstrdup(f->vals[i].name);
		c->vals[i].pieces = xcalloc(f->vals[i].npieces ? f->vals[i].npieces : 1, sizeof(*c->vals[i].pieces));
		memcpy(c->vals[i].pieces, f->vals[i].pieces, f->vals[i].npieces * sizeof(*c->vals[i].pieces));
	}
	return c;
}

void ct_plan_args(struct ct_plan *p, const struct ct_args_opts *o)
{
	if (!o->enabled) {
		p->args_note = "off (--no-args)";
		return;
	}
	const struct ct_target *t = p->t;
	p->fetch = xcalloc(p->sites.n ? p->sites.n : 1, sizeof(*p->fetch));
	if (t->has_dwarf)
		p->types = ct_types_open(t->elf.path, t->lang == CT_LANG_GO);
	if (!p->types)
		p->args_note = t->lang == CT_LANG_GO ? "no DWARF: raw argument words only (build without -ldflags=-w for names and types)"
						     : "no DWARF: arguments not captured (build with -g)";
	size_t s = 0;
	for (size_t j = 0; j < p->funcs.n; j++) {
		struct ct_site_fetch *entry, *ret;
		bool incomplete;
		plan_func(p, o, p->funcs.v[j].fn, &entry, &ret, &incomplete);
		if (entry || ret)
			p->args_funcs++;
		p->args_incomplete += incomplete;
		/* the function's sites are contiguous: entry first, then exits */
		for (; s < p->sites.n && p->sites.v[s].func == j; s++) {
			struct ct_plan_site *site = &p->sites.v[s];
			if (site->kind == CT_SITE_ENTRY && entry) {
				p->fetch[s] = entry;
				entry = NULL;
			} else if (site->kind == CT_SITE_RET && ret) {
				p->fetch[s] = clone_fetch(ret);
			}
		}
		if (entry) {
			ct_site_fetch_free(entry);
			free(entry);
		}
		if (ret) {
			ct_site_fetch_free(ret);
			free(ret);
		}
	}
}
