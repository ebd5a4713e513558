/* Rust and C++ types from DWARF (target/types.c) on the fixtures
 * tests/fixtures/rust/app and cpp/app: counted sequences, enums with
 * variants, references, characters, enumerators, base classes, and which
 * C++ classes go by hidden reference. */
#include "target/target.h"
#include "target/types.h"
#include "unit.h"

#include <stdlib.h>

struct rfx {
	struct ct_target t;
	struct ct_types *ts;
	struct ct_sig sig;
	const struct ct_typetab *tt;
};

static bool rfx_open(struct rfx *f, const char *name)
{
	memset(f, 0, sizeof(*f));
	char *path = ct_fixture(name);
	if (!path || ct_target_open(&f->t, path)) {
		unit_fail(__FILE__, __LINE__, "fixture %s: %s", name, path ? ct_error() : "not built");
		free(path);
		return false;
	}
	f->ts = ct_types_open(path, false);
	free(path);
	return f->ts != NULL;
}

/* The signature of the function whose demangled name is NAME. */
static bool rfx_sig(struct rfx *f, const char *name)
{
	ct_sig_free(&f->sig);
	for (size_t i = 0; i < f->t.nfuncs; i++)
		if (ct_names_equal(&f->t.funcs[i].dm, f->t.funcs[i].name, name) &&
		    ct_types_sig(f->ts, f->t.funcs[i].entry, &f->sig)) {
			f->tt = ct_types_table(f->ts);
			return true;
		}
	unit_fail(__FILE__, __LINE__, "no signature for %s", name);
	return false;
}

static const struct ct_type *rty(struct rfx *f, size_t i)
{
	return i < f->sig.n ? ct_type_get(f->tt, f->sig.params[i].type) : ct_type_get(NULL, 0);
}

static void rfx_close(struct rfx *f)
{
	ct_sig_free(&f->sig);
	ct_types_close(f->ts);
	ct_target_close(&f->t);
}

static bool has_parts(const struct ct_type *t, const char *a, const char *b, const char *c)
{
	return t->kind == CT_K_SEQ && ct_type_field(t, a) && ct_type_field(t, b) && (!c || ct_type_field(t, c));
}

TEST(types_rust_kinds)
{
	struct rfx f;
	if (!rfx_open(&f, "rust_app"))
		return;
	CHECK(rfx_sig(&f, "rsapp::app::leaf") && f.sig.rust_abi);
	CHECK(has_parts(rty(&f, 0), "ptr", "len", NULL) && rty(&f, 0)->is_text && !ct_type_field(rty(&f, 0), "cap"));
	CHECK(rfx_sig(&f, "rsapp::app::owned"));
	CHECK(has_parts(rty(&f, 0), "ptr", "len", "cap") && rty(&f, 0)->is_text);
	CHECK(rfx_sig(&f, "rsapp::app::take_vec"));
	CHECK(has_parts(rty(&f, 0), "ptr", "len", "cap") && !rty(&f, 0)->is_text);
	CHECK_STR(ct_type_get(f.tt, rty(&f, 0)->elem)->name, "u16");
	CHECK(rfx_sig(&f, "rsapp::app::total"));
	CHECK(rty(&f, 0)->kind == CT_K_REF && ct_type_get(f.tt, rty(&f, 0)->elem)->kind == CT_K_SEQ);
	CHECK(rfx_sig(&f, "rsapp::app::opt"));
	const struct ct_type *o = rty(&f, 0);
	CHECK(o->kind == CT_K_VARIANT && o->nfields == 2 && o->len == 0);
	CHECK_STR(o->fields[0].name, "None");
	CHECK_STR(o->fields[1].name, "Some");
	CHECK(o->fields[0].value == 0 && o->fields[1].value == 1 && !o->fields[1].flags);
	CHECK(rfx_sig(&f, "rsapp::app::maybe_ref"));
	o = rty(&f, 0);
	CHECK(o->kind == CT_K_VARIANT && (o->fields[1].flags & CT_FIELD_DEFAULT)); /* Some holds the niche */
	CHECK(rfx_sig(&f, "rsapp::app::level"));
	CHECK(rty(&f, 0)->kind == CT_K_ENUM && rty(&f, 0)->nfields == 2);
	CHECK(!strcmp(rty(&f, 0)->fields[1].name, "High") && rty(&f, 0)->fields[1].value == 7);
	CHECK(rfx_sig(&f, "rsapp::app::many"));
	CHECK(rty(&f, 5)->kind == CT_K_CHAR && rty(&f, 5)->size == 4);
	CHECK(rfx_sig(&f, "rsapp::app::boxed"));
	CHECK(rty(&f, 0)->kind == CT_K_REF);
	rfx_close(&f);
}

TEST(types_cxx_kinds)
{
	struct rfx f;
	if (!rfx_open(&f, "cpp_app"))
		return;
	CHECK(rfx_sig(&f, "app::count") && !f.sig.rust_abi);
	const struct ct_type *s = ct_type_get(f.tt, rty(&f, 0)->elem);
	CHECK(rty(&f, 0)->kind == CT_K_REF && has_parts(s, "ptr", "len", NULL) && s->is_text && s->by_ref);
	CHECK(rfx_sig(&f, "app::vbyval"));
	CHECK(has_parts(rty(&f, 0), "ptr", "end", "cap_end") && rty(&f, 0)->by_ref);
	CHECK(rfx_sig(&f, "app::norm"));
	CHECK(rty(&f, 0)->kind == CT_K_STRUCT && !rty(&f, 0)->by_ref);
	CHECK(rfx_sig(&f, "app::item"));
	const struct ct_type *it = ct_type_get(f.tt, rty(&f, 0)->elem);
	/* the base class is a field; a std::string member makes Item non-trivial */
	CHECK(it->nfields == 3 && !strcmp(it->fields[0].name, "Base") && it->by_ref);
	CHECK(rfx_sig(&f, "app::paint"));
	CHECK(rty(&f, 0)->kind == CT_K_ENUM && ct_type_field(rty(&f, 0), "Green") &&
	      ct_type_field(rty(&f, 0), "Green")->value == 2);
	rfx_close(&f);
}

/* Values DWARF gives as constants (or with parts left out) at the entry:
 * the compiler specialized the function for them, so no calling
 * convention may say where they are.  A value computed from a register
 * (rustc: a bool as `r8 & 1`; gcc -Os: the entry value of RDI) is not one. */
TEST(types_constant_parameters)
{
	struct rfx f;
	if (!rfx_open(&f, "rust_app_s"))
		return;
	CHECK(rfx_sig(&f, "rsapp::app::leaf")); /* s = {<left out>, 3}, n = 2 */
	CHECK(f.sig.params[0].constant && f.sig.params[1].constant && !f.sig.params[0].entry_loc.n);
	rfx_close(&f);
	if (!rfx_open(&f, "rust_app"))
		return;
	CHECK(rfx_sig(&f, "rsapp::app::many"));
	for (size_t i = 0; i < f.sig.n; i++)
		CHECK(!f.sig.params[i].constant);
	rfx_close(&f);
	if (!rfx_open(&f, "cpp_app_clang"))
		return;
	CHECK(rfx_sig(&f, "names()::$_0::operator()") && f.sig.n >= 2);
	CHECK(!f.sig.params[0].constant && f.sig.params[1].constant); /* this; x = 1 */
	rfx_close(&f);
	if (!rfx_open(&f, "cpp_app"))
		return;
	CHECK(rfx_sig(&f, "app::spin") && !f.sig.params[0].constant);
	rfx_close(&f);
}
