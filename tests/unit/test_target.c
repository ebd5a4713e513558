/* Tests for src/target/ on real-world shapes of binaries (fixtures
 * tests/fixtures/go/realworld*, tests/fixtures/c/realworld_libs): runtime.g
 * layout and TLS slot with and without .symtab/DWARF, C functions of cgo
 * binaries, ABI0 bodies in stripped binaries, Go 1.26's text start from
 * moduledata, gccgo detection and demangling, library lookup (libs.c). */
#include "target/gccgo.h"
#include "target/libs.h"
#include "target/target.h"
#include "util/util.h"
#include "unit.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

static const struct ct_func *func_named(const struct ct_target *t, const char *name, uint32_t flags_set)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].name, name) && (t->funcs[i].flags & flags_set) == flags_set)
			return &t->funcs[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* gc binaries */

TEST(target_table_matches_dwarf)
{
	/* The version table stands in for DWARF: both must agree on every
	 * field the probes read, in every shape. */
	static const char *const pairs[][2] = {
		{"realworld", "realworld_stripped"},
		{"realworld_pie", "realworld_pie_stripped"},
		{"realworld_ext", "realworld_ext_stripped"},
		{"realworld_cgo_static", "realworld_cgo_static_stripped"},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct ct_target a, b;
		if (!unit_open_target(pairs[i][0], &a))
			return;
		if (!unit_open_target(pairs[i][1], &b)) {
			ct_target_close(&a);
			return;
		}
		bool ok = !strcmp(a.gcfg_source, "DWARF") && !strcmp(b.gcfg_source, "table") &&
			  a.gcfg.goid_off == b.gcfg.goid_off && a.gcfg.stack_hi_off == b.gcfg.stack_hi_off &&
			  a.gcfg.m_off == b.gcfg.m_off && a.gcfg.curg_off == b.gcfg.curg_off &&
			  a.gcfg.tls_g_off == b.gcfg.tls_g_off && a.regabi && b.regabi;
		if (!ok)
			unit_fail(__FILE__, __LINE__,
				  "%s vs %s: source %s/%s goid %u/%u hi %u/%u m %u/%u curg %u/%u tls %lld/%lld",
				  pairs[i][0], pairs[i][1], a.gcfg_source, b.gcfg_source, a.gcfg.goid_off,
				  b.gcfg.goid_off, a.gcfg.stack_hi_off, b.gcfg.stack_hi_off, a.gcfg.m_off, b.gcfg.m_off,
				  a.gcfg.curg_off, b.gcfg.curg_off, (long long)a.gcfg.tls_g_off,
				  (long long)b.gcfg.tls_g_off);
		ct_target_close(&a);
		ct_target_close(&b);
		if (!ok)
			return;
	}
}

TEST(target_tls_slot_from_symbol_and_code)
{
	/* g's TLS slot: -8 under Go's linker; after libc's TLS block in a
	 * static cgo binary.  The stripped twin finds the same slot in the
	 * code, the unstripped one from runtime.tlsg. */
	static const struct {
		const char *name, *source;
		int64_t off;
	} cases[] = {
		{"realworld", "code", -8},
		{"realworld_stripped", "code", -8},
		{"realworld_pie_stripped", "code", -8},
		{"realworld_ext", "runtime.tlsg", -8},
		{"realworld_ext_stripped", "code", -8},
		{"realworld_cgo", "runtime.tlsg", -8},
		{"realworld_cgo_pie", "runtime.tlsg", -8},
		{"realworld_cgo_static", "runtime.tlsg", 0},
		{"realworld_cgo_static_stripped", "code", 0},
	};
	int64_t static_off = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ct_target t;
		if (!unit_open_target(cases[i].name, &t))
			return;
		int64_t off = t.gcfg.tls_g_off;
		const char *src = t.tls_source;
		ct_target_close(&t);
		if (strcmp(src, cases[i].source)) {
			unit_fail(__FILE__, __LINE__, "%s: TLS slot from %s, expected %s", cases[i].name, src,
				  cases[i].source);
			return;
		}
		if (cases[i].off) {
			CHECK_EQ_I(off, cases[i].off);
		} else if (!static_off) {
			/* glibc's own TLS comes first: g is further down. */
			CHECK(off < -8 && off % 8 == 0);
			static_off = off;
		} else {
			CHECK_EQ_I(off, static_off);
		}
	}
}

TEST(target_cgo_c_functions)
{
	struct ct_target t;
	if (!unit_open_target("realworld_cgo", &t))
		return;
	const struct ct_func *outer = func_named(&t, "c_outer", 0);
	const struct ct_func *inner = func_named(&t, "c_inner", 0);
	const struct ct_func *leaf = func_named(&t, "main.goLeaf", CT_FN_GO);
	bool ok = outer && inner && leaf && !(outer->flags & CT_FN_GO) && !(inner->flags & CT_FN_GO) &&
		  t.ncfuncs > 10 && t.lang == CT_LANG_GO;
	/* Each address once: no C symbol inside a Go function. */
	for (size_t i = 1; ok && i < t.nfuncs; i++)
		ok = t.funcs[i - 1].end <= t.funcs[i].entry || t.funcs[i - 1].entry < t.funcs[i].entry;
	size_t nc = t.ncfuncs;
	ct_target_close(&t);
	CHECK(ok);
	/* A pure Go binary has no C functions. */
	if (!unit_open_target("realworld", &t))
		return;
	nc = t.ncfuncs;
	ct_target_close(&t);
	CHECK_EQ_U(nc, 0);
}

TEST(target_abi0_bodies_without_symtab)
{
	/* cgo's //go:cgo_unsafe_args stubs are compiled for ABI0: .symtab
	 * calls them "X.abi0"; without it, their first instruction (g loaded
	 * from TLS) tells. */
	static const char *const names[] = {"realworld_cgo", "realworld_cgo_stripped", "realworld_cgo_pie",
					    "realworld_cgo_static_stripped"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct ct_target t;
		if (!unit_open_target(names[i], &t))
			return;
		const struct ct_func *f = func_named(&t, "main._Cfunc_c_outer", CT_FN_GO | CT_FN_ABI0);
		const struct ct_func *g = func_named(&t, "main.callC", CT_FN_GO);
		bool ok = f && !(f->flags & CT_FN_WRAPPER) && g && !(g->flags & CT_FN_ABI0);
		ct_target_close(&t);
		if (!ok) {
			unit_fail(__FILE__, __LINE__, "%s: main._Cfunc_c_outer not ABI0 or main.callC ABI0", names[i]);
			return;
		}
	}
}

/* Copies fixture NAME to a temporary file and returns its path. */
static char *copy_fixture(const char *name, uint8_t **bytes, size_t *len)
{
	char *src = ct_fixture(name);
	if (!src)
		return NULL;
	FILE *f = fopen(src, "rb");
	free(src);
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	*bytes = malloc(*len);
	if (fread(*bytes, 1, *len, f) != *len) {
		fclose(f);
		free(*bytes);
		return NULL;
	}
	fclose(f);
	char *path = xasprintf("/tmp/ct-unit-%d-%s", (int)getpid(), name);
	return path;
}

static bool write_file(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(b, 1, n, f) == n;
	if (f)
		fclose(f);
	return ok;
}

TEST(target_text_start_from_moduledata)
{
	/* Go 1.26 writes 0 where pcHeader kept textStart; the base then
	 * comes from moduledata.text.  Simulate it on a stripped 1.19 binary
	 * (same moduledata layout): zero the field, expect the same table. */
	uint8_t *b;
	size_t n;
	char *path = copy_fixture("realworld_stripped", &b, &n);
	CHECK(path);
	struct ct_elf e;
	char *src = ct_fixture("realworld_stripped");
	int rc = ct_elf_open(&e, src);
	free(src);
	CHECK(rc == 0);
	GElf_Shdr sh;
	bool have = ct_elf_section(&e, ".gopclntab", &sh, NULL);
	struct ct_pclntab want;
	rc = have ? ct_pclntab_read(&e, &want) : -1;
	ct_elf_close(&e);
	if (!have || rc) {
		free(b);
		free(path);
		CHECK(have && rc == 0);
	}
	/* pcHeader: magic, pad, minLC, ptrSize, nfunc, nfiles, textStart */
	uint64_t off = sh.sh_offset + 8 + 2 * 8, zero = 0;
	uint64_t was;
	memcpy(&was, b + off, 8);
	memcpy(b + off, &zero, 8);
	bool ok = was == want.text_start && write_file(path, b, n);
	free(b);
	struct ct_pclntab got = {0};
	if (ok && ct_elf_open(&e, path) == 0) {
		ok = ct_pclntab_read(&e, &got) == 0;
		ct_elf_close(&e);
	} else {
		ok = false;
	}
	unlink(path);
	free(path);
	ok = ok && got.text_start == want.text_start && got.nfuncs == want.nfuncs &&
	     got.funcs[got.nfuncs - 1].entry == want.funcs[want.nfuncs - 1].entry;
	ct_pclntab_free(&got);
	ct_pclntab_free(&want);
	CHECK(ok);
}

TEST(target_go_binary_without_pclntab_fails_clearly)
{
	/* A gc binary whose pclntab is damaged must not be traced as C. */
	uint8_t *b;
	size_t n;
	char *path = copy_fixture("realworld_stripped", &b, &n);
	CHECK(path);
	char *src = ct_fixture("realworld_stripped");
	struct ct_elf e;
	int rc = ct_elf_open(&e, src);
	free(src);
	CHECK(rc == 0);
	GElf_Shdr sh;
	bool have = ct_elf_section(&e, ".gopclntab", &sh, NULL);
	ct_elf_close(&e);
	if (!have) {
		free(b);
		free(path);
		CHECK(have);
	}
	/* Break every copy of the magic, so the search finds none either. */
	for (size_t i = 0; i + 8 <= n; i += 4)
		if (b[i] == 0xf0 && b[i + 1] == 0xff && b[i + 2] == 0xff && b[i + 3] == 0xff && !b[i + 4] &&
		    !b[i + 5] && b[i + 7] == 8)
			b[i] = 0;
	bool wrote = write_file(path, b, n);
	free(b);
	struct ct_target t;
	rc = wrote ? ct_target_open(&t, path) : 0;
	unlink(path);
	free(path);
	CHECK(wrote);
	if (rc == 0) {
		ct_target_close(&t);
		CHECK(rc != 0);
	}
	CHECK(strstr(ct_error(), "gc Go binary") && strstr(ct_error(), "pclntab"));
}

/* ------------------------------------------------------------------ */
/* gccgo */

TEST(gccgo_demangle_names)
{
	static const struct {
		const char *sym, *go;
		bool generated;
	} cases[] = {
		{"example_0com_1probe_1lib.T.M", "example.com/probe/lib.T.M", false},
		{"example_0com_1gccgo__probe_1lib.Sum", "example.com/gccgo_probe/lib.Sum", false},
		{"gopkg_0in_1yaml_0v2.Unmarshal", "gopkg.in/yaml.v2.Unmarshal", false},
		{"main.main", "main.main", false},
		{"main.main..func1", "main.main.func1", false},
		{"main.outer..func2..func1", "main.outer.func2.func1", false},
		{"main._61024_7uint8..eq", "main.[1024]uint8..eq", true},
		{"main.struct_4N_bint_5..hash", "main.struct{N int}..hash", true},
		{"main.go..thunk0", "main.go..thunk0", true},
		{"main.f_u00e9", "main.f\xc3\xa9", false},
		{"_x31abc.F", "1abc.F", false},
		{"main.leaf.part.0", "main.leaf.part.0", false},
		{"deregister_tm_clones", NULL, false},
		{"__libc_csu_init", NULL, false},
		{"frame_dummy.cold", NULL, false},
		{"helper.part.0", NULL, false},
		{"go..C27", NULL, false},
		{"bad_q.F", NULL, false},
		{"main", NULL, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool gen = false;
		char *got = ct_gccgo_demangle(cases[i].sym, &gen);
		bool ok = cases[i].go ? got && !strcmp(got, cases[i].go) && gen == cases[i].generated : !got;
		if (!ok)
			unit_fail(__FILE__, __LINE__, "%s -> %s (generated %d), expected %s", cases[i].sym,
				  got ? got : "NULL", gen, cases[i].go ? cases[i].go : "NULL");
		free(got);
		if (!ok)
			return;
	}
	char *pkg = ct_gccgo_package_of_symbol("example_0com_1probe_1lib.T.M");
	CHECK_STR(pkg, "example.com/probe/lib");
	free(pkg);
}

TEST(gccgo_binary)
{
	struct ct_target t;
	if (!unit_open_target("realworld_gccgo", &t))
		return;
	const struct ct_func *add = func_named(&t, "example.com/gccgo_probe/lib.T.Add", 0);
	const struct ct_func *closure = func_named(&t, "main.main.func1", 0);
	bool eq_is_wrapper = false, no_mangled = true;
	for (size_t i = 0; i < t.nfuncs; i++) {
		if (strstr(t.funcs[i].name, "..eq"))
			eq_is_wrapper = (t.funcs[i].flags & CT_FN_WRAPPER) != 0;
		if (strstr(t.funcs[i].name, "_0com"))
			no_mangled = false;
	}
	bool ok = t.gccgo && t.lang == CT_LANG_C && add && !(add->flags & CT_FN_GO) && closure && eq_is_wrapper &&
		  no_mangled && t.main_module && !strcmp(t.main_module, "example.com/gccgo_probe") &&
		  !strncmp(t.go_version, "GNU Go ", 7);
	if (!ok)
		unit_fail(__FILE__, __LINE__, "gccgo %d lang %d T.Add %p func1 %p eq-wrapper %d module %s version %s",
			  t.gccgo, t.lang, (const void *)add, (const void *)closure, eq_is_wrapper,
			  t.main_module ? t.main_module : "NULL", t.go_version);
	ct_target_close(&t);
	if (!ok)
		return;
	/* Stripped: nothing left to name Go functions by; one clear line. */
	char *path = ct_fixture("realworld_gccgo_stripped");
	CHECK(path);
	int rc = ct_target_open(&t, path);
	free(path);
	if (rc == 0)
		ct_target_close(&t);
	CHECK(rc != 0 && strstr(ct_error(), "gccgo") && strstr(ct_error(), "symbol table"));
}

/* ------------------------------------------------------------------ */
/* libs.c */

TEST(libs_name_matching)
{
	CHECK(ct_lib_name_matches("libc.so.6", "libc.so.6"));
	CHECK(ct_lib_name_matches("libc.so", "libc.so.6"));
	CHECK(ct_lib_name_matches("libc", "libc.so.6"));
	CHECK(ct_lib_name_matches("libc", "libc-2.36.so"));
	CHECK(!ct_lib_name_matches("libc", "libcrypto.so.3"));
	CHECK(!ct_lib_name_matches("libc.so.6", "libc.so"));
	CHECK(!ct_lib_name_matches("/lib/libc.so.6", "libc.so.6"));
	CHECK(!ct_lib_name_matches("", "libc.so.6"));
}

/* `ldconfig -p`'s x86-64 path for NAME, malloc'd, or NULL. */
static char *ldconfig_path(const char *name)
{
	FILE *p = popen("/sbin/ldconfig -p 2>/dev/null", "r");
	char line[1024], *out = NULL;
	size_t n = strlen(name);
	while (p && fgets(line, sizeof(line), p)) {
		const char *s = line + strspn(line, " \t");
		const char *arrow = strstr(s, " => ");
		if (!out && arrow && !strncmp(s, name, n) && s[n] == ' ' && strstr(s, "x86-64")) {
			out = xstrdup(arrow + 4);
			out[strcspn(out, "\n")] = 0;
		}
	}
	if (p)
		pclose(p);
	return out;
}

TEST(libs_ld_so_cache)
{
	/* The system cache, against ldconfig's own reading of it. */
	char *want = ldconfig_path("libc.so.6");
	CHECK(want);
	char *got = ct_ldcache_lookup("/etc/ld.so.cache", "libc.so.6");
	bool ok = got && !strcmp(got, want);
	if (!ok)
		unit_fail(__FILE__, __LINE__, "ld.so.cache: libc.so.6 -> %s, ldconfig says %s", got ? got : "NULL", want);
	free(got);
	free(want);
	if (!ok)
		return;
	/* A cache written here: an i386 entry is skipped, the x86-64 one
	 * found; a name it lacks is NULL. */
	uint8_t c[256] = {0};
	memcpy(c, "glibc-ld.so.cache1.1", 20);
	uint32_t nlibs = 2, strings = 48 + 2 * 24;
	memcpy(c + 20, &nlibs, 4);
	const char *k = "libq.so.1", *v32 = "/lib32/libq.so.1", *v64 = "/lib64/libq.so.1";
	uint32_t ko = strings, v32o = ko + (uint32_t)strlen(k) + 1, v64o = v32o + (uint32_t)strlen(v32) + 1;
	strcpy((char *)c + ko, k);
	strcpy((char *)c + v32o, v32);
	strcpy((char *)c + v64o, v64);
	uint32_t e0[3] = {0x0803, ko, v32o}, e1[3] = {0x0303, ko, v64o};
	memcpy(c + 48, e0, 12);
	memcpy(c + 72, e1, 12);
	char *path = xasprintf("/tmp/ct-unit-%d-ld.so.cache", (int)getpid());
	CHECK(write_file(path, c, sizeof(c)));
	got = ct_ldcache_lookup(path, "libq.so.1");
	char *none = ct_ldcache_lookup(path, "libz.so.1");
	unlink(path);
	free(path);
	ok = got && !strcmp(got, v64) && !none;
	free(got);
	free(none);
	CHECK(ok);
}

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return a && b && realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

TEST(libs_resolve_before_start)
{
	char *exe = ct_fixture("realworld_libs_dir/realworld_libs");
	CHECK(exe);
	/* DT_RUNPATH $ORIGIN/lib */
	char *own = ct_lib_resolve_exe(exe, "libctrw.so");
	char *want_own = xasprintf("%s/realworld_libs_dir/lib/libctrw.so", ct_fixture_dir());
	bool ok = same_file(own, want_own);
	if (!ok)
		unit_fail(__FILE__, __LINE__, "libctrw.so -> %s (%s)", own ? own : "NULL", own ? "" : ct_error());
	free(own);
	free(want_own);
	/* the system's, by full and by short name */
	char *libc = ok ? ct_lib_resolve_exe(exe, "libc.so.6") : NULL;
	char *libm = ok ? ct_lib_resolve_exe(exe, "libm") : NULL;
	char *want_libc = ldconfig_path("libc.so.6"), *want_libm = ldconfig_path("libm.so.6");
	if (ok && !(same_file(libc, want_libc) && same_file(libm, want_libm))) {
		unit_fail(__FILE__, __LINE__, "libc -> %s, libm -> %s", libc ? libc : "NULL", libm ? libm : "NULL");
		ok = false;
	}
	free(libc);
	free(libm);
	free(want_libc);
	free(want_libm);
	/* not loaded at all: one clear line */
	char *none = ok ? ct_lib_resolve_exe(exe, "libnothere.so.1") : NULL;
	if (ok && (none || !strstr(ct_error(), "does not load"))) {
		unit_fail(__FILE__, __LINE__, "libnothere.so.1 -> %s / %s", none ? none : "NULL", ct_error());
		ok = false;
	}
	free(none);
	free(exe);
	if (!ok)
		return;
	/* A dependency of a dependency: the unit test binary itself needs
	 * libdw, which needs liblzma. */
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n] = 0;
	char *lzma = ct_lib_resolve_exe(self, "liblzma.so.5");
	char *want = ldconfig_path("liblzma.so.5");
	ok = same_file(lzma, want);
	free(lzma);
	free(want);
	CHECK(ok);
}

TEST(libs_resolve_in_process)
{
	char *shown = NULL;
	char *p = ct_lib_resolve_pid(getpid(), "libelf.so.1", &shown);
	char *prefix = xasprintf("/proc/%d/root/", (int)getpid());
	bool ok = p && shown && !strncmp(p, prefix, strlen(prefix)) && !strcmp(p + strlen(prefix) - 1, shown) &&
		  access(p, R_OK) == 0 && strstr(shown, "libelf");
	if (!ok)
		unit_fail(__FILE__, __LINE__, "libelf.so.1 -> %s (shown %s)", p ? p : ct_error(), shown ? shown : "NULL");
	free(p);
	free(shown);
	free(prefix);
	if (!ok)
		return;
	p = ct_lib_resolve_pid(getpid(), "libz", NULL);
	ok = p && strstr(p, "libz.so");
	free(p);
	CHECK(ok);
	p = ct_lib_resolve_pid(getpid(), "libnothere.so.1", NULL);
	ok = !p && strstr(ct_error(), "no library");
	free(p);
	CHECK(ok);
}
