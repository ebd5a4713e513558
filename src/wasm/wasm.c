#include "wasm/wasm.h"
#include "plan/sites.h"
#include "target/goruntime.h"
#include "target/target.h"
#include "util/files.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool ct_wasm_is_module(const char *path)
{
	int fd = ct_input_open(path); /* a FIFO must not block */
	if (fd < 0)
		return false;
	char magic[4];
	bool yes = read(fd, magic, 4) == 4 && !memcmp(magic, CT_WASM_MAGIC, 4);
	close(fd);
	return yes;
}

int ct_wasm_target_open(struct ct_wasm_target *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	int fd = ct_input_open(path);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) || st.st_size < 8) {
		close(fd);
		return ct_fail("%s is not a WebAssembly module (too short)", path);
	}
	t->size = (size_t)st.st_size;
	t->bytes = xmalloc(t->size);
	size_t got = 0;
	while (got < t->size) {
		ssize_t n = read(fd, t->bytes + got, t->size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	t->path = xstrdup(path);
	if (got != t->size) {
		ct_wasm_target_close(t);
		return ct_fail("cannot read %s", path);
	}
	if (ct_wasm_parse(&t->m, t->bytes, t->size, path)) {
		ct_wasm_target_close(t);
		return -1;
	}
	/* Go code (its calling convention): the js port, or a WASI module with
	 * Go's build id (GOOS=wasip1, Go 1.21+; runs on node:wasi) */
	t->go = t->m.go_js || (t->m.wasi && t->m.go_buildid);
	if (t->go)
		ct_gowasm_read(&t->m, path, &t->gw);
	t->traceable = xcalloc(t->m.nfuncs ? t->m.nfuncs : 1, sizeof(bool));
	for (uint32_t i = t->m.nimported; i < t->m.nfuncs; i++)
		t->traceable[i] = t->go ? ct_gowasm_traceable(&t->m, &t->gw, i) : true;
	return 0;
}

void ct_wasm_target_close(struct ct_wasm_target *t)
{
	if (t->go)
		ct_gowasm_free(&t->gw, t->m.nfuncs);
	ct_wasm_free(&t->m);
	free(t->bytes);
	free(t->path);
	free(t->traceable);
	memset(t, 0, sizeof(*t));
}

const char *ct_wasm_name(const struct ct_wasm_target *t, uint32_t f)
{
	if (t->go && t->gw.names && t->gw.names[f])
		return t->gw.names[f];
	return t->m.funcs[f].name;
}

static bool matches_any(const char *name, const char **globs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (glob_match(globs[i], name))
			return true;
	return false;
}

/* Default selection, by the same rule as native binaries. */
static bool default_selected(const struct ct_wasm_target *t, const char *name)
{
	struct ct_target view = {0};
	struct ct_func f = {0};
	view.lang = t->go ? CT_LANG_GO : CT_LANG_C;
	view.main_module = t->gw.main_module;
	f.name = (char *)name;
	return ct_plan_default_selected(&view, &f);
}

static bool selected(const struct ct_wasm_target *t, uint32_t i, const struct ct_selection *sel)
{
	const char *name = ct_wasm_name(t, i);
	bool yes = sel->ntrace ? matches_any(name, sel->trace, sel->ntrace) : default_selected(t, name);
	return yes && !matches_any(name, sel->exclude, sel->nexclude);
}

static void wasm_types(struct ct_typetab *tt)
{
	static const struct {
		enum ct_kind kind;
		const char *name;
		uint32_t size;
	} base[] = {{CT_K_UNKNOWN, "?", 0}, {CT_K_INT, "i32", 4}, {CT_K_INT, "i64", 8},
		    {CT_K_FLOAT, "f32", 4}, {CT_K_FLOAT, "f64", 8}};
	tt->n = 5;
	tt->v = xcalloc(tt->n, sizeof(*tt->v));
	for (size_t i = 0; i < tt->n; i++) {
		tt->v[i].kind = base[i].kind;
		tt->v[i].name = xstrdup(base[i].name);
		tt->v[i].size = base[i].size;
	}
}

static uint32_t type_id(uint8_t code)
{
	return code == WT_I32 ? 1 : code == WT_I64 ? 2 : code == WT_F32 ? 3 : 4;
}

/* Values travel as 8-byte words in order (the recorder's arg_* hooks):
 * described as register pieces so replay's decoder reads them as it does
 * native ones. */
static struct ct_site_fetch *values_fetch(const struct ct_wasm_valtype *vt, uint32_t n, bool results)
{
	struct ct_site_fetch *f = xcalloc(1, sizeof(*f));
	f->prog.nops = (uint16_t)n;
	f->prog.size = (uint16_t)(8 * n);
	f->vals = xcalloc(n, sizeof(*f->vals));
	f->nvals = n;
	for (uint32_t i = 0; i < n; i++) {
		f->prog.ops[i] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = (uint8_t)i, .dst = (uint16_t)(8 * i)};
		struct ct_val_desc *v = &f->vals[i];
		v->name = n == 1 && results ? xstrdup("") : xasprintf("%s%u", results ? "r" : "p", i);
		v->type = type_id(vt[i].code);
		v->flags = results ? CT_VAL_RESULT : 0;
		v->npieces = 1;
		v->pieces = xcalloc(1, sizeof(*v->pieces));
		v->pieces[0] = (struct ct_val_piece){CT_PIECE_REG, (uint8_t)i,
						     (uint16_t)(vt[i].code == WT_I32 || vt[i].code == WT_F32 ? 4 : 8), 0,
						     (uint16_t)(8 * i), 0};
	}
	return f;
}

static bool all_numeric(const struct ct_wasm_valtype *vt, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (vt[i].code != WT_I32 && vt[i].code != WT_I64 && vt[i].code != WT_F32 && vt[i].code != WT_F64)
			return false;
	return n <= 32;
}

/* -A GLOB[@names] / -R GLOB, as for native functions (names: p0, p1, ...). */
static bool wants(const char **globs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		char g[512];
		snprintf(g, sizeof(g), "%s", globs[i]);
		char *at = strchr(g, '@');
		if (at)
			*at = 0;
		if (glob_match(g, name))
			return true;
	}
	return false;
}

int ct_wasm_plan_build(struct ct_wasm_plan *p, const struct ct_wasm_target *t, const struct ct_selection *sel,
		       const struct ct_args_opts *ao)
{
	memset(p, 0, sizeof(*p));
	const struct ct_wasm_module *m = &t->m;
	for (size_t i = 0; !sel->lenient && i < sel->ntrace; i++) {
		const char *g = sel->trace[i];
		if (strpbrk(g, "*?["))
			continue;
		bool found = false;
		for (uint32_t f = m->nimported; f < m->nfuncs && !found; f++)
			if (!strcmp(ct_wasm_name(t, f), g)) {
				found = true;
				if (!t->traceable[f])
					return ct_fail("%s switches stacks or does not follow Go's wasm calling convention; it cannot be traced",
						       g);
			}
		if (!found)
			return ct_fail("no function named %s in %s; see: calltrace list %s", g, t->path, t->path);
	}
	bool capture = !ao || ao->enabled;
	CT_VEC(struct ct_file_func) ff = {0};
	CT_VEC(struct ct_file_site) fs = {0};
	CT_VEC(struct ct_site_fetch *) fetch = {0};
	for (uint32_t f = m->nimported; f < m->nfuncs; f++) {
		if (!t->traceable[f] || !selected(t, f, sel))
			continue;
		const struct ct_wasm_functype *ty = &m->types[m->funcs[f].type];
		const char *name = ct_wasm_name(t, f);
		uint32_t fid = (uint32_t)ff.n;
		struct ct_file_func cf = {fid, (char *)name, f, m->funcs[f].body_size, t->go ? CT_FN_GO : 0};
		CT_VEC_PUSH(ff, cf);
		struct ct_wasm_instr in = {f, (uint32_t)fs.n, (uint32_t)fs.n + 1, CT_WASM_NOSITE, false, false};
		bool any = !ao || (!ao->nargs && !ao->nrets);
		in.args = capture && !t->go && ty->nparams && all_numeric(ty->params, ty->nparams) &&
			  (any || wants(ao->args, ao->nargs, name));
		in.rets = capture && !t->go && ty->nresults && all_numeric(ty->results, ty->nresults) &&
			  (any || wants(ao->rets, ao->nrets, name));
		struct ct_file_site se = {(uint32_t)fs.n, m->funcs[f].body, fid, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0};
		CT_VEC_PUSH(fs, se);
		CT_VEC_PUSH(fetch, in.args ? values_fetch(ty->params, ty->nparams, false) : NULL);
		struct ct_file_site sx = {(uint32_t)fs.n, m->funcs[f].body + m->funcs[f].body_size - 1, fid, CT_SITE_RET,
					  CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0};
		CT_VEC_PUSH(fs, sx);
		CT_VEC_PUSH(fetch, in.rets ? values_fetch(ty->results, ty->nresults, true) : NULL);
		if (t->go && t->gw.cfg.nmorestack) {
			in.restart_site = (uint32_t)fs.n;
			struct ct_file_site sr = {(uint32_t)fs.n, m->funcs[f].body, fid, CT_SITE_RESTART, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0};
			CT_VEC_PUSH(fs, sr);
			CT_VEC_PUSH(fetch, NULL);
		}
		CT_VEC_PUSH(p->fns, in);
	}
	/* Go: the goroutine ends at runtime.goexit1 (also after Goexit, with
	 * frames open): an entry-only marker, as for native Go */
	for (uint32_t f = m->nimported; t->go && f < m->nfuncs; f++) {
		if (strcmp(ct_wasm_name(t, f), CT_GO_GOEXIT1) || selected(t, f, sel) || !t->traceable[f])
			continue;
		struct ct_wasm_instr in = {f, (uint32_t)fs.n, CT_WASM_NOSITE, CT_WASM_NOSITE, false, false};
		struct ct_file_site sg = {(uint32_t)fs.n, m->funcs[f].body, CT_NOFUNC, CT_SITE_GOEXIT, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0};
		CT_VEC_PUSH(fs, sg);
		CT_VEC_PUSH(fetch, NULL);
		size_t at = p->fns.n;
		CT_VEC_PUSH(p->fns, in);
		while (at > 0 && p->fns.v[at - 1].func > f) { /* keep them sorted */
			p->fns.v[at] = p->fns.v[at - 1];
			p->fns.v[--at] = in;
		}
		break;
	}
	p->funcs = ff.v;
	p->nfuncs = ff.n;
	p->sites = fs.v;
	p->nsites = fs.n;
	p->fetch = fetch.v;
	wasm_types(&p->types);
	if (t->go)
		p->args_note = "Go wasm: arguments live on Go's stack in memory; not captured";
	else if (!capture)
		p->args_note = "off (--no-args)";
	if (!p->nfuncs) {
		ct_wasm_plan_free(p);
		if (sel->ntrace)
			return ct_fail("no traceable function matches -F in %s; see: calltrace list %s", t->path, t->path);
		return ct_fail("no traceable function in %s%s; choose some with -F GLOB (see: calltrace list %s)", t->path,
			       t->go ? " (nothing in package main or the main module)" : "", t->path);
	}
	return 0;
}

void ct_wasm_plan_free(struct ct_wasm_plan *p)
{
	for (size_t i = 0; p->fetch && i < p->nsites; i++)
		if (p->fetch[i]) {
			ct_site_fetch_free(p->fetch[i]);
			free(p->fetch[i]);
		}
	free(p->fetch);
	for (size_t i = 0; i < p->types.n; i++)
		free(p->types.v[i].name);
	free(p->types.v);
	free(p->funcs);
	free(p->sites);
	CT_VEC_FREE(p->fns);
	memset(p, 0, sizeof(*p));
}

int ct_wasm_list(const char *path, const char **globs, size_t nglobs, const char **excl, size_t nexcl)
{
	struct ct_wasm_target t;
	if (ct_wasm_target_open(&t, path))
		return -1;
	struct ct_selection sel = {.trace = globs, .ntrace = nglobs, .exclude = excl, .nexclude = nexcl, .lenient = true};
	printf("# %s: WebAssembly module, %s, %u functions (%u imported)%s\n", path,
	       t.m.go_js ? "Go js/wasm" : t.go ? "Go WASI" : t.m.wasi ? "WASI" : "no WASI imports", t.m.nfuncs,
	       t.m.nimported,
	       t.m.has_dwarf ? ", DWARF" : "");
	if (t.go)
		printf("# Go %s, module %s, names from the %s\n", t.gw.go_version[0] ? t.gw.go_version : "unknown",
		       t.gw.main_module ? t.gw.main_module : "-", t.gw.names_source);
	size_t shown = 0;
	for (uint32_t f = t.m.nimported; f < t.m.nfuncs; f++) {
		if (!selected(&t, f, &sel))
			continue;
		char *sig = ct_wasm_sig(&t.m, f);
		printf("%-50s %s%s\n", ct_wasm_name(&t, f), sig, t.traceable[f] ? "" : "   (not traceable)");
		free(sig);
		shown++;
	}
	if (!shown)
		printf("(no function matches)\n");
	ct_wasm_target_close(&t);
	return 0;
}
