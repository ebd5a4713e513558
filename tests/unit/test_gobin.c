/* Tests for src/target/gobin.c against the gobin fixture
 * (tests/fixtures/go/gobin): buildinfo and pclntab on normal, stripped, PIE
 * and cgo builds, pclntab against .symtab, the segment-search fallbacks, and
 * clean failure on non-Go and damaged files. */
#include "target/gobin.h"
#include "target/goruntime.h"
#include "util/util.h"
#include "unit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

static const char *const variants[] = {"gobin", "gobin_stripped", "gobin_pie",
				       "gobin_pie_stripped", "gobin_cgo"};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* Opens fixture NAME; on failure records why (the test then returns). */
static bool open_fixture(const char *name, struct ct_elf *e)
{
	char *path = ct_fixture(name);
	if (!path) {
		unit_fail(__FILE__, __LINE__, "fixture %s/%s not built (run sh tests/fixtures/build.sh)",
			  ct_fixture_dir(), name);
		return false;
	}
	int rc = ct_elf_open(e, path);
	if (rc)
		unit_fail(__FILE__, __LINE__, "%s", ct_error());
	free(path);
	return rc == 0;
}

static bool read_pclntab(const struct ct_elf *e, struct ct_pclntab *t)
{
	if (ct_pclntab_read(e, t) == 0)
		return true;
	unit_fail(__FILE__, __LINE__, "%s", ct_error());
	return false;
}

/* The fixture NAME open with its pclntab read (both to free), or false. */
static bool open_pclntab(const char *name, struct ct_elf *e, struct ct_pclntab *t)
{
	if (!open_fixture(name, e))
		return false;
	if (read_pclntab(e, t))
		return true;
	ct_elf_close(e);
	return false;
}

static const struct ct_go_func *find_func(const struct ct_pclntab *t, const char *name)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].name, name))
			return &t->funcs[i];
	return NULL;
}

/* The fixtures are built by whatever `go` is installed; the expectations on
 * args sizes and funcID numbers below are Go 1.19's (Debian bookworm's
 * golang-go, which `make deps` installs). */
static char toolchain_version[64];
static const char *go_toolchain_version(void)
{
	if (toolchain_version[0])
		return toolchain_version;
	FILE *p = popen("go env GOVERSION 2>/dev/null", "r");
	if (p) {
		if (!fgets(toolchain_version, sizeof(toolchain_version), p))
			toolchain_version[0] = 0;
		pclose(p);
	}
	toolchain_version[strcspn(toolchain_version, "\n")] = 0;
	return toolchain_version;
}

/* Whole-file helpers for damaged copies. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (n <= 0 || fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Writes LEN bytes to a new temp file; returns its malloc'd path. */
static char *write_temp(const uint8_t *b, size_t len)
{
	const char *dir = getenv("TMPDIR");
	char *path = xasprintf("%s/ct_gobin_XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	bool ok = write(fd, b, len) == (ssize_t)len;
	close(fd);
	if (!ok) {
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Fixture NAME's bytes and the file offset and address of SECTION. */
static uint8_t *fixture_bytes(const char *name, const char *section, size_t *len,
			      uint64_t *sec_off, uint64_t *sec_addr)
{
	struct ct_elf e;
	if (!open_fixture(name, &e))
		return NULL;
	GElf_Shdr sh;
	bool found = ct_elf_section(&e, section, &sh, NULL);
	uint8_t *b = found ? slurp(e.path, len) : NULL;
	if (!b)
		unit_fail(__FILE__, __LINE__, "%s: no section %s or unreadable", name, section);
	*sec_off = sh.sh_offset;
	*sec_addr = sh.sh_addr;
	ct_elf_close(&e);
	return b;
}

static bool same_funcs(const struct ct_pclntab *a, const struct ct_pclntab *b)
{
	if (a->magic != b->magic || a->nfuncs != b->nfuncs || a->text_start != b->text_start ||
	    a->wrapper_funcid != b->wrapper_funcid) {
		unit_fail(__FILE__, __LINE__, "tables differ: %zu/%zu funcs, text %#" PRIx64 "/%#" PRIx64,
			  a->nfuncs, b->nfuncs, a->text_start, b->text_start);
		return false;
	}
	for (size_t i = 0; i < a->nfuncs; i++) {
		const struct ct_go_func *x = &a->funcs[i], *y = &b->funcs[i];
		if (strcmp(x->name, y->name) || x->entry != y->entry || x->end != y->end ||
		    x->args != y->args || x->funcid != y->funcid || x->flag != y->flag ||
		    x->wrapper != y->wrapper) {
			unit_fail(__FILE__, __LINE__, "func %zu differs: %s@%#" PRIx64 " vs %s@%#" PRIx64, i,
				  x->name, x->entry, y->name, y->entry);
			return false;
		}
	}
	return true;
}

/* ---------------------------------------------------------------- */

TEST(gobin_buildinfo_all_variants)
{
	const char *want = go_toolchain_version();
	for (size_t i = 0; i < NVARIANTS; i++) {
		struct ct_elf e;
		if (!open_fixture(variants[i], &e))
			return;
		struct ct_buildinfo bi;
		int rc = ct_buildinfo_read(&e, &bi);
		ct_elf_close(&e);
		if (rc) {
			unit_fail(__FILE__, __LINE__, "%s", ct_error());
			return;
		}
		if (*want)
			CHECK_STR(bi.go_version, want);
		CHECK(!strncmp(bi.go_version, "go1.19", 6)); /* see go_toolchain_version() */
		CHECK_EQ_I(bi.major, 1);
		CHECK_EQ_I(bi.minor, 19);
		CHECK_STR(bi.main_module, "example.com/gobin");
		ct_buildinfo_free(&bi);
	}
}

/* Go < 1.18 wrote two pointers to Go string headers instead of inline
 * strings.  Rewrite a copy that way: the string headers go at the start of
 * .noptrdata and point at the inline strings' bytes. */
/* A GOPATH build has no main module: its main package's project stands
 * for it (what calltrace traces by default). */
TEST(gobin_project_of_gopath_main_package)
{
	static const char *const cases[][2] = {
		{"github.com/restic/restic/cmd/restic", "github.com/restic/restic"},
		{"github.com/junegunn/fzf", "github.com/junegunn/fzf"},
		{"gitlab.com/owner/repo/sub/pkg", "gitlab.com/owner/repo"},
		{"golang.org/x/tools/cmd/stringer", "golang.org/x/tools"},
		{"golang.org/x/tools", "golang.org/x/tools"},
		{"go.googlesource.com/thing/cmd/x", "go.googlesource.com/thing"},
		{"example.org/acme/tool/cmd/tool", "example.org/acme/tool"},
		{"example.org/acme/tool", "example.org/acme/tool"},
		{"github.com/owner", "github.com/owner"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *got = ct_go_project_of_path(cases[i][0]);
		CHECK_STR(got, cases[i][1]);
		free(got);
	}
	CHECK(ct_go_project_of_path("") == NULL);
}

TEST(gobin_buildinfo_pointer_format)
{
	size_t len;
	uint64_t bi_off, bi_addr, nd_off, nd_addr;
	uint8_t *b = fixture_bytes("gobin", ".go.buildinfo", &len, &bi_off, &bi_addr);
	if (!b)
		return;
	free(b);
	b = fixture_bytes("gobin", ".noptrdata", &len, &nd_off, &nd_addr);
	if (!b)
		return;
	CHECK(b[bi_off + 15] & 2); /* inline format to start with */
	struct ct_rd r = {b + bi_off + 32, b + len, false};
	uint64_t vers_len = rd_uvar(&r);
	const uint8_t *vers = rd_bytes(&r, (size_t)vers_len);
	uint64_t mod_len = rd_uvar(&r);
	const uint8_t *mod = rd_bytes(&r, (size_t)mod_len);
	CHECK(!r.bad && vers && mod);
	put64(b + nd_off, bi_addr + (uint64_t)(vers - (b + bi_off)));
	put64(b + nd_off + 8, vers_len);
	put64(b + nd_off + 16, bi_addr + (uint64_t)(mod - (b + bi_off)));
	put64(b + nd_off + 24, mod_len);
	b[bi_off + 15] = 0; /* pointer format, little-endian */
	put64(b + bi_off + 16, nd_addr);
	put64(b + bi_off + 24, nd_addr + 16);
	char *path = write_temp(b, len);
	free(b);
	CHECK(path);

	struct ct_elf e;
	struct ct_buildinfo bi = {0};
	int rc = ct_elf_open(&e, path);
	if (!rc) {
		rc = ct_buildinfo_read(&e, &bi);
		ct_elf_close(&e);
	}
	unlink(path);
	free(path);
	if (rc) {
		unit_fail(__FILE__, __LINE__, "%s", ct_error());
		return;
	}
	CHECK(!strncmp(bi.go_version, "go1.19", 6));
	CHECK_EQ_I(bi.minor, 19);
	CHECK_STR(bi.main_module, "example.com/gobin");
	ct_buildinfo_free(&bi);
}

TEST(gobin_pclntab_stripped_matches_unstripped)
{
	static const char *const pairs[][2] = {{"gobin", "gobin_stripped"},
					       {"gobin_pie", "gobin_pie_stripped"}};
	for (size_t i = 0; i < 2; i++) {
		struct ct_elf full, stripped;
		struct ct_pclntab tf, ts;
		if (!open_fixture(pairs[i][0], &full))
			return;
		if (!open_fixture(pairs[i][1], &stripped)) {
			ct_elf_close(&full);
			return;
		}
		GElf_Sym sym;
		bool stripped_has_symtab = ct_elf_symbol(&stripped, "runtime.text", &sym);
		bool ok = read_pclntab(&full, &tf);
		if (ok && !read_pclntab(&stripped, &ts)) {
			ct_pclntab_free(&tf);
			ok = false;
		}
		ct_elf_close(&full);
		ct_elf_close(&stripped);
		if (!ok)
			return;
		ok = same_funcs(&tf, &ts);
		ct_pclntab_free(&tf);
		ct_pclntab_free(&ts);
		if (!ok)
			return;
		CHECK(!stripped_has_symtab);
	}
}

/* .symtab names vs pclntab names: the linker shortens type arguments in
 * pclntab ("F[go.shape.int_0]" -> "F[...]"), and gives assembly (ABI0)
 * functions an ".abi0" suffix in .symtab only. */
static void pclntab_name_of(const char *sym, char *out, size_t cap)
{
	size_t n = 0;
	int depth = 0;
	for (const char *c = sym; *c && n + 6 < cap; c++) {
		if (*c == '[') {
			if (!depth++) {
				memcpy(out + n, "[...]", 5);
				n += 5;
			}
		} else if (*c == ']') {
			depth--;
		} else if (!depth) {
			out[n++] = *c;
		}
	}
	out[n] = 0;
}

struct symtab_check {
	const struct ct_pclntab *t;
	uint64_t lo, hi; /* Go text: [first entry, last end) */
	size_t go_syms, matched;
	char bad[512];
};

static void check_symbol(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct symtab_check *c = ctx;
	if (sym->st_value < c->lo || sym->st_value >= c->hi)
		return; /* C code of a cgo binary */
	c->go_syms++;
	char want[1024];
	pclntab_name_of(name, want, sizeof(want));
	size_t wl = strlen(want);
	/* First function at or after the symbol's address. */
	size_t lo = 0, hi = c->t->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->t->funcs[mid].entry < sym->st_value)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < c->t->nfuncs && c->t->funcs[i].entry == sym->st_value; i++) {
		const struct ct_go_func *f = &c->t->funcs[i];
		bool same = !strcmp(f->name, want) ||
			    (wl > 5 && !strcmp(want + wl - 5, ".abi0") &&
			     strlen(f->name) == wl - 5 && !strncmp(f->name, want, wl - 5));
		if (same && sym->st_size <= f->end - f->entry) {
			c->matched++;
			return;
		}
	}
	if (!c->bad[0])
		snprintf(c->bad, sizeof(c->bad), "%s at %#" PRIx64 " size %" PRIu64 " has no pclntab match",
			 name, (uint64_t)sym->st_value, (uint64_t)sym->st_size);
}

TEST(gobin_pclntab_matches_symtab)
{
	static const char *const names[] = {"gobin", "gobin_pie", "gobin_cgo"};
	for (size_t v = 0; v < 3; v++) {
		struct ct_elf e;
		struct ct_pclntab t;
		if (!open_fixture(names[v], &e))
			return;
		if (!read_pclntab(&e, &t)) {
			ct_elf_close(&e);
			return;
		}
		struct symtab_check c = {&t, t.funcs[0].entry, t.funcs[t.nfuncs - 1].end, 0, 0, ""};
		ct_elf_each_func(&e, check_symbol, &c);
		/* Sorted, and each function ends where the next begins. */
		size_t unchained = 0;
		for (size_t i = 0; i + 1 < t.nfuncs; i++)
			unchained += t.funcs[i].end != t.funcs[i + 1].entry ||
				     t.funcs[i].end < t.funcs[i].entry;
		size_t nfuncs = t.nfuncs;
		ct_pclntab_free(&t);
		ct_elf_close(&e);
		if (c.bad[0]) {
			unit_fail(__FILE__, __LINE__, "%s: %s", names[v], c.bad);
			return;
		}
		CHECK_EQ_U(unchained, 0);
		CHECK_EQ_U(c.matched, c.go_syms);
		/* And nearly every pclntab function has its symbol. */
		CHECK(c.matched * 100 >= nfuncs * 99);
	}
}

TEST(gobin_known_functions)
{
	struct ct_elf e;
	struct ct_pclntab t;
	if (!open_fixture("gobin", &e))
		return;
	bool ok = read_pclntab(&e, &t);
	ct_elf_close(&e);
	if (!ok)
		return;
	struct {
		const char *name;
		int32_t args;
		bool wrapper;
	} want[] = {
		/* Go 1.19 register ABI: args = stack-passed args and results
		 * plus spill slots for register-passed args; results returned
		 * in registers take no slot.  `go build -gcflags=-S` prints
		 * the same: main.Add args=0x10, main.Sum3 args=0x18. */
		{"main.Add", 16, false},   /* func(a, b int) int */
		{"main.Sum3", 24, false},  /* func(a, b, c int64) int64 */
		{"main.NoArgs", 0, false}, /* func() */
		{"main.(*counter).Inc", 8, false},
		{"main.apply", 16, false}, /* func(f func(int) int, x int) int */
		{"main.main", 0, false},
		{"main.main.func1", 8, false}, /* closure func(x int) int */
		{"example.com/gobin/shapes.Map[...]", 40, false}, /* dict + slice + func */
		{"example.com/gobin/shapes.(*Stack[...]).Push", 32, false},
		{"example.com/gobin/shapes.Rect.Area", 16, false},
		/* Autogenerated: pointer-receiver wrapper for the itab, method
		 * value wrapper. */
		{"example.com/gobin/shapes.(*Rect).Area", 8, true},
		{"main.counter.Get-fm", 0, true},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct ct_go_func *f = find_func(&t, want[i].name);
		if (!f) {
			unit_fail(__FILE__, __LINE__, "%s not in pclntab", want[i].name);
			break;
		}
		if (f->args != want[i].args || f->wrapper != want[i].wrapper) {
			unit_fail(__FILE__, __LINE__, "%s: args %d wrapper %d, want %d %d", f->name, f->args,
				  f->wrapper, want[i].args, want[i].wrapper);
			break;
		}
	}
	const struct ct_go_func *goexit = find_func(&t, "runtime.goexit");
	const struct ct_go_func *mcall = find_func(&t, "runtime.mcall");
	const struct ct_go_func *rtmain = find_func(&t, "runtime.main");
	uint32_t magic = t.magic;
	const char *range = t.version_range;
	uint8_t wrapper_id = t.wrapper_funcid;
	bool failed = unit_failed_now();
	uint8_t goexit_id = goexit ? goexit->funcid : 0, goexit_flag = goexit ? goexit->flag : 0;
	uint8_t mcall_id = mcall ? mcall->funcid : 0, main_id = rtmain ? rtmain->funcid : 0;
	ct_pclntab_free(&t);
	if (failed)
		return;
	/* Go 1.18-1.21 numbering (internal/abi FuncID): goexit 7, mcall
	 * 11, runtime_main 17, wrapper 21. */
	CHECK_EQ_U(magic, 0xfffffff0);
	CHECK_STR(range, "go1.18-1.19");
	CHECK_EQ_U(wrapper_id, 21);
	CHECK_EQ_U(goexit_id, 7);
	CHECK(goexit_flag & CT_GO_FLAG_TOPFRAME);
	CHECK_EQ_U(mcall_id, 11);
	CHECK_EQ_U(main_id, 17);
}

TEST(gobin_cgo_text_start)
{
	struct ct_elf e;
	struct ct_pclntab t;
	if (!open_fixture("gobin_cgo", &e))
		return;
	GElf_Sym text_sym;
	GElf_Shdr text_sec;
	bool have_sym = ct_elf_symbol(&e, "runtime.text", &text_sym);
	bool have_sec = ct_elf_section(&e, ".text", &text_sec, NULL);
	bool ok = read_pclntab(&e, &t);
	ct_elf_close(&e);
	if (!ok)
		return;
	uint64_t text_start = t.text_start, first = t.funcs[0].entry;
	ct_pclntab_free(&t);
	CHECK(have_sym && have_sec);
	CHECK_EQ_U(text_start, text_sym.st_value);
	/* C code (crt, the cgo helpers) comes first in .text. */
	CHECK(text_start != text_sec.sh_addr);
	CHECK(first >= text_start);
}

TEST(gobin_pie_pclntab_in_relro)
{
	for (size_t i = 0; i < 2; i++) {
		const char *name = i ? "gobin_pie_stripped" : "gobin_pie";
		struct ct_elf e;
		struct ct_pclntab t;
		if (!open_fixture(name, &e))
			return;
		GElf_Shdr relro;
		bool in_relro = ct_elf_section(&e, ".data.rel.ro.gopclntab", &relro, NULL);
		bool has_plain = ct_elf_section(&e, ".gopclntab", NULL, NULL);
		bool pie = e.pie;
		bool ok = read_pclntab(&e, &t);
		ct_elf_close(&e);
		if (!ok)
			return;
		uint64_t text_start = t.text_start;
		uint64_t last_end = t.funcs[t.nfuncs - 1].end;
		ct_pclntab_free(&t);
		CHECK(pie && in_relro && !has_plain);
		CHECK(relro.sh_flags & SHF_WRITE); /* relro: writable until relocated */
		CHECK(text_start && last_end > text_start);
	}
}

/* With the section headers gone, both readers must find their data by
 * searching the segments, and read the same things. */
TEST(gobin_search_without_section_headers)
{
	static const char *const names[] = {"gobin_stripped", "gobin_pie_stripped", "gobin_cgo"};
	for (size_t v = 0; v < 3; v++) {
		struct ct_elf e;
		struct ct_pclntab want, got;
		struct ct_buildinfo bi;
		if (!open_fixture(names[v], &e))
			return;
		size_t len;
		uint8_t *b = slurp(e.path, &len);
		bool ok = read_pclntab(&e, &want);
		ct_elf_close(&e);
		if (!ok || !b) {
			free(b);
			if (ok)
				ct_pclntab_free(&want);
			CHECK(ok && b);
		}
		Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
		eh->e_shoff = 0;
		eh->e_shnum = 0;
		eh->e_shstrndx = 0;
		char *path = write_temp(b, len);
		free(b);
		int rc = path ? ct_elf_open(&e, path) : -1;
		int bi_rc = -1, pc_rc = -1;
		bool no_sections = false;
		if (!rc) {
			no_sections = !ct_elf_section(&e, ".gopclntab", NULL, NULL) &&
				      !ct_elf_section(&e, ".go.buildinfo", NULL, NULL);
			bi_rc = ct_buildinfo_read(&e, &bi);
			pc_rc = bi_rc ? -1 : ct_pclntab_read(&e, &got);
			ct_elf_close(&e);
		}
		if (path)
			unlink(path);
		free(path);
		if (rc || bi_rc || pc_rc) {
			unit_fail(__FILE__, __LINE__, "%s without section headers: %s", names[v],
				  ct_error());
			if (!bi_rc)
				ct_buildinfo_free(&bi);
			ct_pclntab_free(&want);
			return;
		}
		ok = same_funcs(&want, &got);
		ct_pclntab_free(&want);
		ct_pclntab_free(&got);
		bool module_ok = bi.main_module && !strcmp(bi.main_module, "example.com/gobin");
		int minor = bi.minor;
		ct_buildinfo_free(&bi);
		if (!ok)
			return;
		CHECK(no_sections);
		CHECK(module_ok);
		CHECK_EQ_I(minor, 19);
	}
}

/* Without buildinfo the funcID numbering comes from the runtime's own
 * functions alone, and must come out the same. */
TEST(gobin_funcids_without_buildinfo)
{
	size_t len;
	uint64_t off, addr;
	uint8_t *b = fixture_bytes("gobin", ".go.buildinfo", &len, &off, &addr);
	if (!b)
		return;
	b[off] = 0; /* break the magic */
	char *path = write_temp(b, len);
	free(b);
	CHECK(path);
	struct ct_elf orig, e;
	struct ct_pclntab want, got;
	struct ct_buildinfo bi;
	bool ok = open_fixture("gobin", &orig);
	if (ok) {
		ok = read_pclntab(&orig, &want);
		ct_elf_close(&orig);
	}
	int rc = ok ? ct_elf_open(&e, path) : -1;
	int bi_rc = 0;
	if (!rc) {
		bi_rc = ct_buildinfo_read(&e, &bi);
		if (!bi_rc)
			ct_buildinfo_free(&bi);
		rc = ct_pclntab_read(&e, &got);
		ct_elf_close(&e);
	}
	unlink(path);
	free(path);
	if (!ok)
		return;
	if (rc) {
		unit_fail(__FILE__, __LINE__, "%s", ct_error());
		ct_pclntab_free(&want);
		return;
	}
	ok = same_funcs(&want, &got);
	ct_pclntab_free(&want);
	ct_pclntab_free(&got);
	if (!ok)
		return;
	CHECK(bi_rc != 0);
}

TEST(gobin_not_go_fails_cleanly)
{
	struct ct_elf e;
	CHECK_EQ_I(ct_elf_open(&e, "/bin/true"), 0);
	struct ct_buildinfo bi;
	struct ct_pclntab t;
	int bi_rc = ct_buildinfo_read(&e, &bi);
	char bi_err[256];
	snprintf(bi_err, sizeof(bi_err), "%s", ct_error());
	int pc_rc = ct_pclntab_read(&e, &t);
	ct_elf_close(&e);
	CHECK_EQ_I(bi_rc, -1);
	CHECK(strstr(bi_err, "/bin/true has no Go build info"));
	CHECK_EQ_I(pc_rc, -1);
	CHECK(strstr(ct_error(), "/bin/true has no Go pclntab (not a gc-compiled Go binary)"));
	CHECK(!strchr(ct_error(), '\n'));
	CHECK(t.funcs == NULL && t.nfuncs == 0);
}

/* Reads a damaged copy; a clean failure or a table whose functions are
 * still sorted and non-empty are both fine.  Returns -1, 0, or 2 if the
 * copy could not be made. */
static int read_damaged(const uint8_t *b, size_t len)
{
	char *path = write_temp(b, len);
	if (!path)
		return 2;
	struct ct_elf e;
	struct ct_pclntab t;
	int rc = ct_elf_open(&e, path);
	if (!rc) {
		rc = ct_pclntab_read(&e, &t);
		if (!rc) {
			for (size_t i = 0; i + 1 < t.nfuncs; i++)
				if (t.funcs[i].entry > t.funcs[i + 1].entry || !t.funcs[i].name[0])
					rc = 3;
			ct_pclntab_free(&t);
		}
		ct_elf_close(&e);
	}
	unlink(path);
	free(path);
	return rc;
}

TEST(gobin_damaged_pclntab_fails_cleanly)
{
	size_t len;
	uint64_t off, addr;
	uint8_t *orig = fixture_bytes("gobin", ".gopclntab", &len, &off, &addr);
	if (!orig)
		return;
	uint8_t *b = malloc(len);
	/* pcHeader words (1.18): nfunc, nfiles, textStart, funcnameOffset,
	 * cuOffset, filetabOffset, pctabOffset, pclnOffset. */
	struct {
		const char *what;
		size_t at;
		uint64_t value; /* 64-bit word; ~0 = zero the magic instead */
	} damage[] = {
		{"magic", 0, ~0ULL},
		{"nfunc huge", 8, 0x7fffffffffffULL},
		{"nfunc zero", 8, 0},
		{"funcname offset", 8 + 3 * 8, 0x7fffffff},
		{"pcln offset inside header", 8 + 7 * 8, 8},
		{"pcln offset past end", 8 + 7 * 8, 1ULL << 40},
		{"textStart (with .symtab)", 8 + 2 * 8, 0x1000},
	};
	for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
		memcpy(b, orig, len);
		if (damage[i].value == ~0ULL)
			memset(b + off, 0, 4);
		else
			put64(b + off + damage[i].at, damage[i].value);
		int rc = read_damaged(b, len);
		bool recovers = strstr(damage[i].what, "textStart") != NULL;
		if (rc != (recovers ? 0 : -1)) {
			unit_fail(__FILE__, __LINE__, "%s: rc %d", damage[i].what, rc);
			break;
		}
		if (rc == -1 && (!strstr(ct_error(), "pclntab") || strchr(ct_error(), '\n'))) {
			unit_fail(__FILE__, __LINE__, "%s: message \"%s\"", damage[i].what, ct_error());
			break;
		}
	}
	/* Unsorted functab: swap the first two entries' entry offsets. */
	if (!unit_failed_now()) {
		memcpy(b, orig, len);
		uint64_t pcln = get64(b + off + 8 + 7 * 8);
		uint8_t tmp[4];
		memcpy(tmp, b + off + pcln, 4);
		memcpy(b + off + pcln, b + off + pcln + 8, 4);
		memcpy(b + off + pcln + 8, tmp, 4);
		int rc = read_damaged(b, len);
		if (rc != -1 || !strstr(ct_error(), "not sorted"))
			unit_fail(__FILE__, __LINE__, "unsorted: rc %d \"%s\"", rc, ct_error());
	}
	/* Truncated in the middle of the pclntab. */
	if (!unit_failed_now()) {
		int rc = read_damaged(orig, (size_t)off + 4096);
		if (rc != -1)
			unit_fail(__FILE__, __LINE__, "truncated: rc %d", rc);
	}
	/* Random byte damage in the header, functab and first records:
	 * whatever comes out, nothing may crash or read out of bounds
	 * (run under valgrind). */
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	for (int round = 0; round < 24 && !unit_failed_now(); round++) {
		memcpy(b, orig, len);
		for (int k = 0; k < 4; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t span = round % 2 ? 72 : 65536;
			size_t at = (size_t)(seed >> 33) % span;
			b[off + at] ^= (uint8_t)(1u << ((seed >> 20) & 7));
		}
		int rc = read_damaged(b, len);
		if (rc != 0 && rc != -1)
			unit_fail(__FILE__, __LINE__, "random damage round %d: rc %d", round, rc);
	}
	free(b);
	free(orig);
}

/* Source positions from the pclntab's line tables (ct_pclntab_pos) against
 * the DWARF line table libdw reads from the same binary, at every 16th
 * byte of every function: both come from the compiler's one position table. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>

struct drow {
	uint64_t addr;
	const char *file;
	int line;
	bool end;
};

static int cmp_drow(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)x->end - (int)y->end; /* an end before a start at one address */
}

/* The DWARF row in effect at PC (the last at or before it), or NULL. */
static const struct drow *drow_at(const struct drow *v, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && !v[lo - 1].end ? &v[lo - 1] : NULL;
}

TEST(gobin_positions_match_dwarf)
{
	struct ct_elf e;
	struct ct_pclntab t;
	if (!open_pclntab("gobin", &e, &t))
		return;
	int fd = open(e.path, O_RDONLY);
	Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	CT_VEC(struct drow) rows = {0};
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				Dwarf_Addr a;
				bool end;
				struct drow r = {0};
				if (dwarf_lineaddr(l, &a) || dwarf_lineno(l, &r.line) || dwarf_lineendsequence(l, &end))
					continue;
				r.addr = a;
				r.end = end;
				r.file = dwarf_linesrc(l, NULL, NULL);
				CT_VEC_PUSH(rows, r);
			}
		}
		off = next;
	}
	qsort(rows.v, rows.n, sizeof(*rows.v), cmp_drow);
	size_t tried = 0, same = 0, main_same = 0;
	char bad[512] = "";
	for (size_t i = 0; i < t.nfuncs; i++) {
		const struct ct_go_func *f = &t.funcs[i];
		for (uint64_t pc = f->entry; pc < f->end; pc += 16) {
			const struct drow *d = drow_at(rows.v, rows.n, pc);
			if (!d || !d->file)
				continue;
			const struct ct_go_func *fn;
			const char *file;
			int32_t line;
			tried++;
			/* DWARF names the compiler's generated code "./<autogenerated>" */
			const char *dfile = !strncmp(d->file, "./<", 3) ? d->file + 2 : d->file;
			if (ct_pclntab_pos(&t, pc, &fn, &file, &line) && fn == f && file && !strcmp(file, dfile) &&
			    line == d->line) {
				same++;
				main_same += !strncmp(f->name, "main.", 5);
			} else if (!bad[0]) {
				snprintf(bad, sizeof(bad), "%s+%#" PRIx64 ": pclntab %s:%d, DWARF %s:%d", f->name,
					 pc - f->entry, file ? file : "?", line, d->file, d->line);
			}
		}
	}
	CT_VEC_FREE(rows);
	if (dw)
		dwarf_end(dw);
	if (fd >= 0)
		close(fd);
	ct_pclntab_free(&t);
	ct_elf_close(&e);
	if (tried <= 10000 || main_same <= 10 || same < tried - tried / 100)
		unit_fail(__FILE__, __LINE__, "%zu of %zu positions agree (%zu in main); first difference: %s", same,
			  tried, main_same, bad);
}

/* The pcsp table: how far SP is below the entry's at a PC.  0 at the entry;
 * after a Go prologue's `sub $N, %rsp` (the whole frame: the caller's BP is
 * saved inside it), N -- what the code itself says, read from its bytes. */
TEST(gobin_sp_at)
{
	struct ct_elf e;
	struct ct_pclntab t;
	if (!open_pclntab("gobin", &e, &t))
		return;
	const struct ct_go_func *f = find_func(&t, "main.main");
	const uint8_t *code = f ? ct_elf_bytes_at(&e, f->entry, 64) : NULL;
	int32_t sp = -1;
	size_t sub = 0;
	for (size_t i = 0; code && i + 7 <= 64 && !sub; i++)
		if (code[i] == 0x48 && (code[i + 1] == 0x83 || code[i + 1] == 0x81) && code[i + 2] == 0xec)
			sub = i;
	CHECK(sub > 0);
	if (sub) {
		CHECK(ct_pclntab_sp_at(&t, f->entry, &sp));
		CHECK_EQ_I(sp, 0);
		int32_t n = code[sub + 1] == 0x83 ? (int8_t)code[sub + 3]
						  : (int32_t)(code[sub + 3] | code[sub + 4] << 8 | code[sub + 5] << 16 |
							      (uint32_t)code[sub + 6] << 24);
		size_t len = code[sub + 1] == 0x83 ? 4 : 7;
		CHECK(ct_pclntab_sp_at(&t, f->entry + sub + len, &sp));
		CHECK_EQ_I(sp, n);
	}
	CHECK(!ct_pclntab_sp_at(&t, 1, &sp)); /* in no function */
	ct_pclntab_free(&t);
	ct_elf_close(&e);
}
