/* Demangled names (target/demangle.c) and Rust crate paths (target/rust.c). */
#include "target/demangle.h"
#include "target/rust.h"
#include "target/target.h"
#include "unit.h"

/* SYM the name of a function with CT_FN_* FLAGS */
static void check_names_of(const char *sym, uint32_t flags, const char *simple, const char *full)
{
	struct ct_names n;
	ct_names_init(&n, sym, ct_func_symbol_len(sym, flags));
	if (!simple) {
		if (n.simple || n.full)
			unit_fail(__FILE__, __LINE__, "%s: demangled to %s", sym, n.simple ? n.simple : n.full);
	} else if (!n.simple || strcmp(n.simple, simple) || !n.full || strcmp(n.full, full)) {
		unit_fail(__FILE__, __LINE__, "%s: got %s / %s, want %s / %s", sym, n.simple ? n.simple : "NULL",
			  n.full ? n.full : "NULL", simple, full);
	}
	ct_names_free(&n);
}

static void check_names(const char *sym, const char *simple, const char *full)
{
	check_names_of(sym, 0, simple, full);
}

TEST(demangle_cxx_rust_and_plain)
{
	check_names("_Z4downi", "down", "down(int)");
	check_names("_ZN3app7Counter3addEi", "app::Counter::add", "app::Counter::add(int)");
	check_names("_Z4downi.part.0", "down.part.0", "down(int) [clone .part.0]");
	check_names("_ZN1m3app4leaf17h379058df5d5fb041E", "m::app::leaf", "m::app::leaf::h379058df5d5fb041");
	check_names("_RNvCs1234_1m3mid", "m::mid", "m[3c1c0]::mid");
	/* other binaries' functions keep their prefix */
	check_names("libstdc++.so.6:_ZNSt6vectorIiSaIiEE9push_backERKi",
		    "libstdc++.so.6:std::vector<int, std::allocator<int> >::push_back",
		    "libstdc++.so.6:std::vector<int, std::allocator<int> >::push_back(int const&)");
	/* C, Go and not-quite-mangled names stay as they are */
	check_names("main", NULL, NULL);
	check_names("main.main.func1", NULL, NULL);
	check_names("_Zbogus", NULL, NULL);
	check_names("_Rlower", NULL, NULL);
	check_names("_start", NULL, NULL);
	/* a PLT stub's (CT_FN_PLT): its symbol's names, the suffix after each;
	 * a name ending so without the flag is not a stub's */
	check_names_of("_ZNSt13runtime_errorC1EPKc@plt", CT_FN_PLT, "std::runtime_error::runtime_error@plt",
		       "std::runtime_error::runtime_error(char const*)@plt");
	check_names_of("puts@plt", CT_FN_PLT, NULL, NULL);
	CHECK(ct_func_symbol_len("_setjmp@plt", CT_FN_PLT) == 7 && ct_func_symbol_len("_setjmp@plt", 0) == 11);
	CHECK(ct_func_symbol_len("@plt", CT_FN_PLT) == 4);
}

TEST(demangle_show_and_match)
{
	struct ct_names n;
	ct_names_init(&n, "_Z4downi", 8);
	enum ct_demangle saved = ct_demangle_mode;
	CHECK_STR(ct_names_show(&n, "_Z4downi"), "down");
	ct_demangle_mode = CT_DEMANGLE_FULL;
	CHECK_STR(ct_names_show(&n, "_Z4downi"), "down(int)");
	ct_demangle_mode = CT_DEMANGLE_NO;
	CHECK_STR(ct_names_show(&n, "_Z4downi"), "_Z4downi");
	ct_demangle_mode = saved;
	CHECK(ct_names_match(&n, "_Z4downi", "do*"));
	CHECK(ct_names_match(&n, "_Z4downi", "down(int)"));
	CHECK(ct_names_match(&n, "_Z4downi", "_Z4*"));
	CHECK(!ct_names_match(&n, "_Z4downi", "down(long)"));
	CHECK(ct_names_equal(&n, "_Z4downi", "down"));
	CHECK(!ct_names_equal(&n, "_Z4downi", "dow"));
	enum ct_demangle m;
	CHECK(ct_demangle_parse("full", &m) == 0 && m == CT_DEMANGLE_FULL);
	CHECK(ct_demangle_parse("pretty", &m) < 0);
	ct_names_free(&n);
	struct ct_names plain;
	ct_names_init(&plain, "c_fib", 5);
	CHECK_STR(ct_names_show(&plain, "c_fib"), "c_fib");
	CHECK(ct_names_match(&plain, "c_fib", "c_*"));
	ct_names_free(&plain);
	/* a recorded library or exec'd binary function, "BIN:function" */
	struct ct_names q = {0};
	CHECK(ct_names_match(&q, "libt.so:foo", "libt.so:foo"));
	CHECK(ct_names_match(&q, "libt.so:foo", "foo"));
	CHECK(ct_names_match(&q, "prog:main", "ma*"));
	CHECK(!ct_names_match(&q, "libt.so:foo", "other.so:foo"));
	CHECK(!ct_names_match(&q, "app::down", ":down"));
	CHECK(!ct_names_match(&q, "type:.eq.main.T", ".eq.main.T"));
}

/* GCC's clones and parts are matched by the name before their suffixes, as
 * the user means it (-F look finds look.constprop.0), and say so. */
TEST(demangle_gcc_clones_match_their_name)
{
	CHECK_EQ_U(ct_clone_base_len("look.constprop.0"), 4);
	CHECK_EQ_U(ct_clone_base_len("use.constprop.0.isra.0"), 3);
	CHECK_EQ_U(ct_clone_base_len("f.part.12"), 1);
	CHECK_EQ_U(ct_clone_base_len("f.isra.0.cold"), 1);
	CHECK_EQ_U(ct_clone_base_len("f.lto_priv.0"), 1);
	CHECK_EQ_U(ct_clone_base_len("f.cold"), 1);
	CHECK_EQ_U(ct_clone_base_len("libc.so.6:f.part.0"), 11);
	/* not clones: no suffix, a Go name, an unnumbered part, a leading dot */
	CHECK_EQ_U(ct_clone_base_len("look"), 0);
	CHECK_EQ_U(ct_clone_base_len("main.part"), 0);
	CHECK_EQ_U(ct_clone_base_len("main.(*T).isra"), 0);
	CHECK_EQ_U(ct_clone_base_len("f.constprop.x"), 0);
	CHECK_EQ_U(ct_clone_base_len("f.partial.0"), 0);
	CHECK_EQ_U(ct_clone_base_len(".part.0"), 0);
	struct ct_names c = {0};
	CHECK(ct_names_match(&c, "look.constprop.0", "look"));
	CHECK(ct_names_match(&c, "look.constprop.0", "lo?k"));
	CHECK(ct_names_match_as_clone(&c, "look.constprop.0", "look"));
	CHECK(ct_names_match(&c, "look.constprop.0", "look.*"));
	CHECK(!ct_names_match_as_clone(&c, "look.constprop.0", "look.*")); /* its own name */
	CHECK(!ct_names_match(&c, "look.constprop.0", "loo"));
	CHECK(!ct_names_match_as_clone(&c, "look", "look"));
	CHECK(ct_names_equal(&c, "look.constprop.0", "look"));
	CHECK(ct_names_equal(&c, "look.isra.0.part.0", "look"));
	CHECK(!ct_names_equal(&c, "looking.part.0", "look"));
	CHECK(ct_names_match(&c, "libz.so.1:inflate.part.0", "inflate"));
	/* C++: every form, the full one's "[clone .part.0]" too */
	struct ct_names n;
	ct_names_init(&n, "_Z4downi.part.0", 15);
	CHECK_STR(n.simple, "down.part.0");
	CHECK(ct_names_match(&n, "_Z4downi.part.0", "down"));
	CHECK(ct_names_match(&n, "_Z4downi.part.0", "down(int)"));
	CHECK(ct_names_match(&n, "_Z4downi.part.0", "_Z4downi"));
	CHECK(ct_names_equal(&n, "_Z4downi.part.0", "down(int)"));
	CHECK(!ct_names_match(&n, "_Z4downi.part.0", "down(long)"));
	ct_names_free(&n);
}

TEST(rust_crate_of_paths)
{
	char c[64];
	CHECK(ct_rust_crate_of("m::app::run", c, sizeof(c)) && !strcmp(c, "m"));
	CHECK(ct_rust_crate_of("<app_core::T as core::fmt::Debug>::fmt", c, sizeof(c)) && !strcmp(c, "app_core"));
	CHECK(ct_rust_crate_of("<m::T>::new", c, sizeof(c)) && !strcmp(c, "m"));
	CHECK(ct_rust_crate_of("core::ptr::drop_in_place<m::T>", c, sizeof(c)) && !strcmp(c, "core"));
	CHECK(!ct_rust_crate_of("<&T as core::fmt::Debug>::fmt", c, sizeof(c)));
	CHECK(!ct_rust_crate_of("<[T] as core::fmt::Debug>::fmt", c, sizeof(c)));
	CHECK(!ct_rust_crate_of("main", c, sizeof(c)));
	CHECK(!ct_rust_crate_of("averyveryverylongcratename::f", c, 8));
}
