#include "target/gccgo.h"
#include "target/demangle.h"
#include "util/files.h"
#include "util/util.h"

#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool needs_libgo(const struct ct_elf *e)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			const char *lib = elf_strptr(e->elf, sh.sh_link, dyn.d_un.d_val);
			if (lib && !strncmp(lib, "libgo.so", 8))
				return true;
		}
	}
	return false;
}

bool ct_gccgo_detect(const struct ct_elf *e, bool gnu_go_dwarf)
{
	GElf_Sym sym;
	return gnu_go_dwarf || ct_elf_section(e, ".go_export", NULL, NULL) ||
	       ct_elf_symbol(e, "__go_init_main", &sym) || needs_libgo(e);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* go_decode_id (go-encode-id.cc) over [s, s+n) into B; false if the text
 * is not an encoded Go name (a character outside [A-Za-z0-9_.], or an
 * escape it does not know). */
static bool decode(const char *s, size_t n, struct ct_buf *b)
{
	static const char keys[] = "_0123456789abc", vals[] = "_./*,{}[]()\" ;";
	for (size_t i = 0; i < n;) {
		char c = s[i];
		if (c != '_') {
			if (!isalnum((unsigned char)c) && c != '.')
				return false;
			buf_u8(b, (uint8_t)c);
			i++;
			continue;
		}
		if (i + 1 >= n)
			return false;
		char k = s[i + 1];
		const char *code = k ? strchr(keys, k) : NULL;
		if (code) {
			buf_u8(b, (uint8_t)vals[code - keys]);
			i += 2;
		} else if (k == 'x' || k == 'u' || k == 'U') {
			size_t nd = k == 'x' ? 2 : k == 'u' ? 4 : 8;
			if (i + 2 + nd > n)
				return false;
			uint32_t v = 0;
			for (size_t j = 0; j < nd; j++) {
				int h = hexval(s[i + 2 + j]);
				if (h < 0)
					return false;
				v = v << 4 | (uint32_t)h;
			}
			buf_utf8(b, v);
			i += 2 + nd;
		} else {
			return false;
		}
	}
	return true;
}

static bool generated_name(const char *name)
{
	static const char *const gen[] = {"..eq", "..hash", "..thunk", "..stub", NULL};
	for (const char *const *p = gen; *p; p++)
		if (strstr(name, *p))
			return true;
	return false;
}

char *ct_gccgo_demangle(const char *sym, bool *generated)
{
	*generated = false;
	const char *dot = strchr(sym, '.');
	/* "pkg.Name": a package path, then a name; "..": gccgo's own
	 * symbols such as "go..C27" are not functions of a package. */
	if (!dot || dot == sym || !dot[1] || dot[1] == '.' || ct_gcc_suffix(dot + 1))
		return NULL;
	struct ct_buf b = {0};
	if (!decode(sym, strlen(sym), &b)) {
		buf_free(&b);
		return NULL;
	}
	buf_u8(&b, 0);
	char *name = (char *)b.p;
	/* Closures: gccgo "F..funcN", gc "F.funcN". */
	char *f;
	while ((f = strstr(name, "..func")) && isdigit((unsigned char)f[6]))
		memmove(f, f + 1, strlen(f + 1) + 1);
	*generated = generated_name(name);
	return name;
}

char *ct_gccgo_package_of_symbol(const char *sym)
{
	const char *dot = strchr(sym, '.');
	if (!dot || dot == sym)
		return NULL;
	struct ct_buf b = {0};
	if (!decode(sym, (size_t)(dot - sym), &b)) {
		buf_free(&b);
		return NULL;
	}
	buf_u8(&b, 0);
	return (char *)b.p;
}

/* The package path of a Go CU: from the linkage name of its first function
 * with code here.  Not from an inlined one's abstract instance (a CU of
 * package main that calls runtime.Gosched starts with the DIE of
 * runtime.checkTimeouts, inlined into it) nor a declaration. */
static char *cu_package(Dwarf_Die *cu)
{
	Dwarf_Die d;
	if (dwarf_child(cu, &d) != 0)
		return NULL;
	do {
		if (dwarf_tag(&d) != DW_TAG_subprogram || dwarf_hasattr(&d, DW_AT_inline) ||
		    dwarf_hasattr(&d, DW_AT_declaration) ||
		    !(dwarf_hasattr(&d, DW_AT_low_pc) || dwarf_hasattr(&d, DW_AT_ranges)))
			continue;
		Dwarf_Attribute a;
		/* The linkage name is the symbol; gccgo leaves it out when
		 * it equals the name (nothing to encode, e.g. "main.f"). */
		const char *ln = dwarf_attr(&d, DW_AT_linkage_name, &a) ? dwarf_formstring(&a)
				 : dwarf_attr(&d, DW_AT_name, &a)      ? dwarf_formstring(&a)
								       : NULL;
		bool gen;
		char *name = ln ? ct_gccgo_demangle(ln, &gen) : NULL;
		if (!name)
			continue;
		free(name);
		return ct_gccgo_package_of_symbol(ln);
	} while (dwarf_siblingof(&d, &d) == 0);
	return NULL;
}

/* If DIR = ROOT/REL and PKG = MOD/REL (same REL, at least one component),
 * with ROOT a prefix of MAIN_DIR (at a component boundary), MOD. */
static char *module_from(const char *dir, const char *pkg, const char *main_dir)
{
	size_t dl = strlen(dir), pl = strlen(pkg);
	size_t k = 0; /* common suffix length ending at a '/' in both */
	size_t best = 0;
	while (k < dl && k < pl && dir[dl - 1 - k] == pkg[pl - 1 - k]) {
		k++;
		if (k < dl && k < pl && dir[dl - 1 - k] == '/' && pkg[pl - 1 - k] == '/')
			best = k + 1; /* includes the '/' */
	}
	if (!best)
		return NULL;
	size_t rl = dl - best, ml = pl - best;
	size_t mdl = strlen(main_dir);
	if (!rl || !ml || mdl < rl || strncmp(main_dir, dir, rl) || (main_dir[rl] && main_dir[rl] != '/'))
		return NULL;
	char *m = xmalloc(ml + 1);
	memcpy(m, pkg, ml);
	m[ml] = 0;
	return m;
}

char *ct_gccgo_main_module(const char *path)
{
	int fd = ct_input_open(path);
	if (fd < 0)
		return NULL;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return NULL;
	}
	CT_VEC(char *) dirs = {0};
	CT_VEC(char *) pkgs = {0};
	char *main_dir = NULL;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		if (!dwarf_offdie(dw, off + hsize, &cu))
			break;
		off = next;
		Dwarf_Attribute a;
		const char *prod = dwarf_attr(&cu, DW_AT_producer, &a) ? dwarf_formstring(&a) : NULL;
		const char *dir = dwarf_attr(&cu, DW_AT_comp_dir, &a) ? dwarf_formstring(&a) : NULL;
		if (!prod || !strstr(prod, "GNU Go") || !dir)
			continue;
		char *pkg = cu_package(&cu);
		if (!pkg)
			continue;
		if (!strcmp(pkg, "main") && !main_dir) {
			main_dir = xstrdup(dir);
			free(pkg);
			continue;
		}
		CT_VEC_PUSH(dirs, xstrdup(dir));
		CT_VEC_PUSH(pkgs, pkg);
	}
	char *mod = NULL;
	for (size_t i = 0; main_dir && i < pkgs.n && !mod; i++)
		mod = module_from(dirs.v[i], pkgs.v[i], main_dir);
	for (size_t i = 0; i < pkgs.n; i++) {
		free(dirs.v[i]);
		free(pkgs.v[i]);
	}
	CT_VEC_FREE(dirs);
	CT_VEC_FREE(pkgs);
	free(main_dir);
	dwarf_end(dw);
	close(fd);
	return mod;
}
