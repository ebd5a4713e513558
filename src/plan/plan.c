#include "plan/plan.h"
#include "util/util.h"

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

static bool matches_any(const struct ct_func *f, const char **globs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ct_names_match(&f->dm, f->name, globs[i]))
			return true;
	return false;
}

static bool is_morestack(void *ctx, uint64_t target)
{
	const struct ct_func *f = ct_target_func_at(ctx, target);
	return f && f->entry == target && has_prefix(f->name, "runtime.morestack");
}

static enum ct_abi abi_of(const struct ct_target *t, const struct ct_func *f)
{
	if (!(f->flags & CT_FN_GO))
		return CT_ABI_C;
	return (f->flags & CT_FN_ABI0) ? CT_ABI_GO_STACK : CT_ABI_GO_REG;
}

static uint8_t gsrc_of(const struct ct_target *t, const struct ct_func *f)
{
	/* C code of a cgo binary: TLS g is g0 while Go calls C (the probe
	 * then reports m.curg's goroutine), NULL on threads C created. */
	if (!(f->flags & CT_FN_GO))
		return t->lang == CT_LANG_GO ? CT_G_TLS : CT_G_NONE;
	return (f->flags & CT_FN_ABI0) ? CT_G_TLS : CT_G_R14;
}

static int add_site(struct ct_plan *p, uint64_t addr, uint32_t func, uint8_t kind, uint64_t target,
		    uint8_t gsrc)
{
	int64_t off = ct_elf_vaddr_to_offset(&p->t->elf, addr);
	if (off < 0)
		return ct_fail("address 0x%llx is not in the file's loadable segments", (unsigned long long)addr);
	struct ct_plan_site s = {addr, (uint64_t)off, func, kind, target, CT_NOFUNC, gsrc};
	CT_VEC_PUSH(p->sites, s);
	return 0;
}

/* Decodes F and appends its sites.  FUNC is its plan index (CT_NOFUNC for
 * the goexit marker, which only gets an entry site of kind GOEXIT). */
static int plan_function(struct ct_plan *p, const struct ct_func *f, uint32_t func)
{
	const struct ct_target *t = p->t;
	size_t len = f->end - f->entry;
	const uint8_t *code = ct_elf_bytes_at(&t->elf, f->entry, len);
	if (!code || !len)
		return ct_fail("function %s has no code in the file", f->name);
	struct ct_fn_sites fs;
	if (ct_find_sites(code, len, f->entry, abi_of(t, f), is_morestack, (void *)t, &fs)) {
		char why[256];
		snprintf(why, sizeof(why), "%s", ct_error()); /* ct_fail reuses that buffer */
		return ct_fail("function %s cannot be probed: %s", f->name, why);
	}
	uint8_t gsrc = gsrc_of(t, f);
	if (func == CT_NOFUNC) {
		int rc = add_site(p, fs.entry_site, CT_NOFUNC, CT_SITE_GOEXIT, 0, gsrc);
		ct_fn_sites_free(&fs);
		return rc;
	}
	struct ct_plan_func pf = {f, fs.entry_site, fs.entry_emulated, (uint32_t)fs.nexits};
	size_t first_site = p->sites.n;
	if (add_site(p, fs.entry_site, func, CT_SITE_ENTRY, 0, gsrc))
		goto fail;
	for (size_t i = 0; i < fs.nexits; i++) {
		if (add_site(p, fs.exits[i].addr, func, fs.exits[i].kind, fs.exits[i].target, gsrc))
			goto fail;
	}
	CT_VEC_PUSH(p->funcs, pf);
	if (fs.entry_emulated)
		p->cheap_entries++;
	else
		p->slow_entries++;
	ct_fn_sites_free(&fs);
	return 0;
fail:
	p->sites.n = first_site;
	ct_fn_sites_free(&fs);
	return -1;
}

int ct_plan_build(struct ct_plan *p, const struct ct_target *t, const struct ct_selection *sel)
{
	memset(p, 0, sizeof(*p));
	p->t = t;
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
			}
		if (!found)
			return ct_fail("no function named %s in %s; see: calltrace list %s", g, t->elf.path,
				       t->elf.path);
	}
	struct ct_map planned = {0}; /* entries already planned: aliases probe once */
	for (size_t j = 0; j < t->nfuncs; j++) {
		const struct ct_func *f = &t->funcs[j];
		if (f->flags & (CT_FN_NOPROBE | CT_FN_WRAPPER))
			continue;
		if (map_get(&planned, f->entry + 1))
			continue;
		bool sel_ok = sel->ntrace ? matches_any(f, sel->trace, sel->ntrace)
					  : ct_plan_default_selected(t, f);
		if (!sel_ok || matches_any(f, sel->exclude, sel->nexclude))
			continue;
		map_put(&planned, f->entry + 1, (void *)1);
		if (plan_function(p, f, (uint32_t)p->funcs.n)) {
			bool exact = false;
			for (size_t i = 0; i < sel->ntrace; i++)
				exact |= ct_names_equal(&f->dm, f->name, sel->trace[i]);
			if (exact) {
				map_free(&planned);
				ct_plan_free(p);
				return -1;
			}
			ct_debug("skipping %s", ct_error());
			const char *why = ct_error(), *colon = strstr(why, " cannot be probed: ");
			struct ct_plan_skip sk = {f, xstrdup(colon ? colon + 19 : why)};
			CT_VEC_PUSH(p->skipped, sk);
		}
	}
	map_free(&planned);
	if (!p->funcs.n) {
		ct_plan_free(p);
		if (sel->ntrace) {
			char pats[512] = "";
			for (size_t i = 0; i < sel->ntrace; i++)
				snprintf(pats + strlen(pats), sizeof(pats) - strlen(pats), "%s'%s'",
					 i ? ", " : "", sel->trace[i]);
			return ct_fail("no traceable function matches %s in %s; see: calltrace list %s", pats,
				       t->elf.path, t->elf.path);
		}
		return ct_fail("no traceable function in %s%s; choose some with -F GLOB (see: calltrace list %s)",
			       t->elf.path,
			       t->lang == CT_LANG_GO || t->gccgo ? " (nothing in package main or the main module)" : "",
			       t->elf.path);
	}
	/* Resolve tail-jump targets to traced functions. */
	struct ct_map by_entry = {0};
	for (size_t j = 0; j < p->funcs.n; j++)
		map_put(&by_entry, p->funcs.v[j].fn->entry, (void *)(uintptr_t)(j + 1));
	for (size_t i = 0; i < p->sites.n; i++) {
		struct ct_plan_site *s = &p->sites.v[i];
		uintptr_t j = s->kind == CT_SITE_TAIL ? (uintptr_t)map_get(&by_entry, s->target_addr) : 0;
		if (j)
			s->target_func = (uint32_t)(j - 1);
	}
	map_free(&by_entry);
	/* Goroutine ends: lets reconstruction close frames left by Goexit. */
	if (t->lang == CT_LANG_GO) {
		for (size_t j = 0; j < t->nfuncs; j++) {
			if (strcmp(t->funcs[j].name, "runtime.goexit1"))
				continue;
			if (plan_function(p, &t->funcs[j], CT_NOFUNC))
				ct_debug("no goexit marker: %s", ct_error());
			break;
		}
	}
	return 0;
}

void ct_plan_free(struct ct_plan *p)
{
	if (p->fetch)
		for (size_t i = 0; i < p->sites.n; i++)
			if (p->fetch[i]) {
				ct_site_fetch_free(p->fetch[i]);
				free(p->fetch[i]);
			}
	free(p->fetch);
	p->fetch = NULL;
	if (p->types)
		ct_types_close(p->types);
	p->types = NULL;
	for (size_t i = 0; i < p->skipped.n; i++)
		free(p->skipped.v[i].why);
	CT_VEC_FREE(p->skipped);
	CT_VEC_FREE(p->funcs);
	CT_VEC_FREE(p->sites);
}

char *ct_plan_skipped_names(const struct ct_plan *p, size_t max)
{
	struct ct_buf b = {0};
	for (size_t i = 0; i < p->skipped.n && i < max; i++) {
		if (i)
			buf_put(&b, ", ", 2);
		buf_put(&b, p->skipped.v[i].fn->name, strlen(p->skipped.v[i].fn->name));
	}
	if (p->skipped.n > max) {
		char more[48];
		buf_put(&b, more, (size_t)snprintf(more, sizeof(more), " (and %zu more)", p->skipped.n - max));
	}
	buf_put(&b, "", 1);
	return (char *)b.p;
}

void ct_plan_file_tables(const struct ct_plan *p, struct ct_file_func **funcs, struct ct_file_site **sites)
{
	*funcs = xcalloc(p->funcs.n, sizeof(**funcs));
	for (size_t i = 0; i < p->funcs.n; i++) {
		const struct ct_func *f = p->funcs.v[i].fn;
		(*funcs)[i] = (struct ct_file_func){.id = (uint32_t)i, .name = f->name, .entry = f->entry,
						    .size = f->end - f->entry, .flags = f->flags};
	}
	*sites = xcalloc(p->sites.n, sizeof(**sites));
	for (size_t i = 0; i < p->sites.n; i++) {
		const struct ct_plan_site *s = &p->sites.v[i];
		(*sites)[i] = (struct ct_file_site){(uint32_t)i, s->addr, s->func, s->kind, s->target_func};
	}
}
