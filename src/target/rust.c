#include "target/rust.h"
#include "target/dwarf.h"
#include "target/target.h"

#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <string.h>

bool ct_rust_crate_of(const char *path, char *out, size_t cap)
{
	const char *p = path;
	if (*p == '<')
		p++; /* "<m::T as Trait>::f", v0's "<m::T>::f" */
	size_t n = 0;
	while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_'))
		n++;
	if (!n || n >= cap || strncmp(p + n, "::", 2))
		return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}

/* "src/main.rs/@/app.5d1e3f-cgu.0" (rustc's CU name: the crate root, then the
 * crate name and codegen unit) -> "app". */
static bool cu_crate(const char *cu_name, char *out, size_t cap)
{
	const char *at = cu_name ? strstr(cu_name, "/@/") : NULL;
	if (!at)
		return false;
	at += 3;
	size_t n = strcspn(at, ".");
	if (!n || n >= cap)
		return false;
	memcpy(out, at, n);
	out[n] = 0;
	return true;
}

static bool has_crate(const struct ct_rust *r, const char *c)
{
	for (size_t i = 0; i < r->ncrates; i++)
		if (!strcmp(r->crates[i], c))
			return true;
	return false;
}

static void add_crate(struct ct_rust *r, const char *c)
{
	if (has_crate(r, c))
		return;
	r->crates = xrealloc(r->crates, (r->ncrates + 1) * sizeof(*r->crates));
	r->crates[r->ncrates++] = xstrdup(c);
}

static const char *cu_str(Dwarf_Die *cu, unsigned at)
{
	Dwarf_Attribute a;
	return dwarf_attr(cu, at, &a) ? dwarf_formstring(&a) : NULL;
}

/* Functions without a linkage name (#[no_mangle], extern "C") defined in a
 * program CU, looked for in its namespaces too. */
static void note_unmangled(struct ct_rust *r, Dwarf_Die *d, int depth)
{
	do {
		int tag = dwarf_tag(d);
		Dwarf_Attribute a;
		Dwarf_Addr lo;
		if (tag == DW_TAG_subprogram && !dwarf_attr(d, DW_AT_linkage_name, &a) &&
		    dwarf_lowpc(d, &lo) == 0)
			map_put(&r->unmangled, lo + 1, (void *)1);
		Dwarf_Die c;
		if (tag == DW_TAG_namespace && depth < 8 && dwarf_child(d, &c) == 0)
			note_unmangled(r, &c, depth + 1);
	} while (dwarf_siblingof(d, d) == 0);
}

/* With DWARF: the crates whose units were compiled in the directory of the
 * main crate's units (a cargo workspace compiles its members from its root;
 * std's units name "library/..." or a toolchain's source directory). */
static void workspace_crates(const char *path, struct ct_rust *r, const char *main_crate)
{
	Dwarf *dw = ct_dwarf_shared(path);
	if (!dw)
		return;
	const char *main_dir = NULL; /* owned by libdw */
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t ut;
	char crate[128];
	while (!main_dir && dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, NULL) == 0)
		if (dwarf_srclang(&cudie) == DW_LANG_Rust &&
		    cu_crate(cu_str(&cudie, DW_AT_name), crate, sizeof(crate)) && !strcmp(crate, main_crate))
			main_dir = cu_str(&cudie, DW_AT_comp_dir);
	if (!main_dir)
		return;
	for (cu = NULL; dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, NULL) == 0;) {
		const char *dir = cu_str(&cudie, DW_AT_comp_dir);
		const char *name = cu_str(&cudie, DW_AT_name);
		if (dwarf_srclang(&cudie) != DW_LANG_Rust || !dir || strcmp(dir, main_dir) ||
		    !cu_crate(name, crate, sizeof(crate)) || !strncmp(name, "library/", 8))
			continue;
		add_crate(r, crate);
		Dwarf_Die c;
		if (dwarf_child(&cudie, &c) == 0)
			note_unmangled(r, &c, 0);
	}
}

void ct_rust_read(const char *path, const struct ct_func *funcs, size_t n, struct ct_rust *out)
{
	memset(out, 0, sizeof(*out));
	/* Rust's main: the C main calls std::rt::lang_start with the crate's
	 * "CRATE::main" (a path of two components). */
	char main_crate[128] = "";
	for (size_t i = 0; i < n; i++) {
		const char *s = funcs[i].dm.simple;
		if (!s)
			continue;
		if (!strncmp(s, "std::rt::lang_start", 19))
			out->is_rust = true;
		size_t l = strlen(s);
		char crate[128];
		if (!main_crate[0] && l > 6 && !strcmp(s + l - 6, "::main") && ct_rust_crate_of(s, crate, sizeof(crate)) &&
		    strlen(crate) + 6 == l && strcmp(crate, "std") && strcmp(crate, "core"))
			snprintf(main_crate, sizeof(main_crate), "%s", crate);
	}
	if (!out->is_rust || !main_crate[0]) {
		out->is_rust = out->is_rust && main_crate[0];
		return;
	}
	add_crate(out, main_crate);
	workspace_crates(path, out, main_crate);
}

void ct_rust_free(struct ct_rust *r)
{
	for (size_t i = 0; i < r->ncrates; i++)
		free(r->crates[i]);
	free(r->crates);
	map_free(&r->unmangled);
	memset(r, 0, sizeof(*r));
}

bool ct_rust_own(const struct ct_rust *r, const struct ct_func *f)
{
	char crate[128];
	if (!f->dm.simple)
		return map_get((struct ct_map *)&r->unmangled, f->entry + 1) != NULL;
	return ct_rust_crate_of(f->dm.simple, crate, sizeof(crate)) && has_crate(r, crate);
}
