/* Function names as people read them.  C++ (Itanium ABI, "_Z...") and Rust
 * (legacy "_ZN...17h<hash>E" and v0 "_R...") symbols are demangled with GNU
 * libiberty's demangler; every other name (C, Go) is shown as it is.  gccgo's
 * names follow another scheme and are decoded when the target is read
 * (gccgo.c), because the Go name also decides the default selection.
 *
 * The symbol itself is what the target and the record file keep; the
 * demangled forms are computed from it where names are shown or matched, so
 * `--demangle` can change how a recorded file is shown. */
#ifndef CT_DEMANGLE_H
#define CT_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

enum ct_demangle {
	CT_DEMANGLE_SIMPLE = 0, /* default, like uftrace's: "app::run", "count", no
				   parameters, no Rust hash; a GCC clone keeps its
				   suffix ("down.part.0") */
	CT_DEMANGLE_FULL,       /* "count(std::string const&, int)",
				   "app::run::h0123456789abcdef" */
	CT_DEMANGLE_NO,         /* the symbol as it is: "_Z5counti" */
};

/* How names are shown by this process (--demangle); SIMPLE unless set. */
extern enum ct_demangle ct_demangle_mode;
/* "simple", "full" or "no"; -1 (nothing printed) if S is none of them. */
int ct_demangle_parse(const char *s, enum ct_demangle *out);
/* Help text of the option, for the commands' --help. */
#define CT_DEMANGLE_HELP                                                              \
	"      --demangle MODE   C++/Rust names: simple (default: no parameters, no\n"    \
	"                        Rust hash), full, or no (the mangled symbol)\n"

/* The demangled forms of one symbol; both NULL when it is not mangled. */
struct ct_names {
	char *simple;
	char *full;
};

/* Demangles SYM's first SYMLEN bytes ("BIN:SYM" names of other binaries
 * keep their "BIN:"); the rest, a PLT stub's suffix (ct_func_symbol_len
 * of target.h), follows each form. */
void ct_names_init(struct ct_names *n, const char *sym, size_t symlen);
void ct_names_free(struct ct_names *n);
/* The name to show for SYM under ct_demangle_mode. */
const char *ct_names_show(const struct ct_names *n, const char *sym);
/* Does GLOB match the symbol or one of its demangled forms?  (-F, -N,
 * --root, -A: 'app::*', 'down(int)' and '_Z4downi' all find down.)  A
 * recorded "BIN:function" is also matched by a GLOB for the function.  A
 * GCC clone or part of a function ("look.constprop.0") is matched by its
 * name before the suffixes too, as uftrace does: the user means look. */
bool ct_names_match(const struct ct_names *n, const char *sym, const char *glob);
/* ... by that name only (not by its own): list says so. */
bool ct_names_match_as_clone(const struct ct_names *n, const char *sym, const char *glob);
/* Is NAME exactly the symbol or one of its demangled forms, or those before
 * a GCC clone's suffixes? */
bool ct_names_equal(const struct ct_names *n, const char *sym, const char *name);
/* Is REST (what follows a '.') a suffix GCC gives a clone or part of a
 * function ("part", "isra", "constprop", "cold", "lto_priv", "localalias",
 * alone or followed by '.')? */
bool ct_gcc_suffix(const char *rest);
/* The length of SYM before GCC's suffixes of a clone or part of a function
 * ("look.constprop.0", "f.part.0", "f.cold", chained as in
 * "use.constprop.0.isra.0"), or 0 when it has none. */
size_t ct_clone_base_len(const char *sym);

#endif
