#include "target/demangle.h"
#include "util/util.h"

#include <ctype.h>
#include <libiberty/demangle.h>
#include <string.h>

enum ct_demangle ct_demangle_mode = CT_DEMANGLE_SIMPLE;

int ct_demangle_parse(const char *s, enum ct_demangle *out)
{
	static const char *const modes[] = {"simple", "full", "no"};
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, modes[i])) {
			*out = (enum ct_demangle)i;
			return 0;
		}
	return -1;
}

/* "_Z..." (Itanium C++, and Rust's legacy scheme, which borrows it) or
 * "_R" + an uppercase letter (Rust v0). */
static bool looks_mangled(const char *s)
{
	return s[0] == '_' && (s[1] == 'Z' || (s[1] == 'R' && isupper((unsigned char)s[2])));
}

static char *prefixed(const char *prefix, size_t plen, char *name, const char *suffix)
{
	if (!name)
		return NULL;
	if (!plen && !suffix)
		return name;
	char *s = xasprintf("%.*s%s%s", (int)plen, prefix, name, suffix ? suffix : "");
	free(name);
	return s;
}

void ct_names_init(struct ct_names *n, const char *sym, size_t symlen)
{
	if (sym[symlen]) {
		char *bare = xasprintf("%.*s", (int)symlen, sym);
		ct_names_init(n, bare, symlen);
		free(bare);
		n->simple = prefixed("", 0, n->simple, sym + symlen);
		n->full = prefixed("", 0, n->full, sym + symlen);
		return;
	}
	n->simple = n->full = NULL;
	/* "BIN:_Z..." names functions of other binaries (libraries, --follow);
	 * a mangled symbol never contains ':' itself. */
	const char *colon = strrchr(sym, ':');
	const char *body = colon ? colon + 1 : sym;
	if (!looks_mangled(body))
		return;
	size_t plen = (size_t)(body - sym);
	/* Rust first: its legacy symbols are valid Itanium names too, and only
	 * the Rust demangler knows the trailing "::h<hash>" is no path part.
	 * DMGL_VERBOSE keeps the hash (and v0's crate disambiguators). */
	char *simple = rust_demangle(body, 0);
	if (simple) {
		n->simple = prefixed(sym, plen, simple, NULL);
		n->full = prefixed(sym, plen, rust_demangle(body, DMGL_VERBOSE), NULL);
		return;
	}
	simple = cplus_demangle_v3(body, DMGL_ANSI);
	if (!simple)
		return;
	/* GCC's clones ("f.part.0", "f.isra.0", "f.constprop.0") are other
	 * functions than f: the short form keeps the suffix ('.' does not occur
	 * in an Itanium name); the full one says "[clone .part.0]". */
	n->simple = prefixed(sym, plen, simple, strchr(body, '.'));
	n->full = prefixed(sym, plen, cplus_demangle_v3(body, DMGL_ANSI | DMGL_PARAMS), NULL);
}

void ct_names_free(struct ct_names *n)
{
	free(n->simple);
	free(n->full);
	n->simple = n->full = NULL;
}

const char *ct_names_show(const struct ct_names *n, const char *sym)
{
	switch (ct_demangle_mode) {
	case CT_DEMANGLE_SIMPLE:
		return n->simple ? n->simple : sym;
	case CT_DEMANGLE_FULL:
		return n->full ? n->full : n->simple ? n->simple : sym;
	default:
		return sym;
	}
}

/* GLOB against the symbol and its demangled forms as they are. */
static bool match_forms(const struct ct_names *n, const char *sym, const char *glob)
{
	if (glob_match(glob, sym) || (n->simple && glob_match(glob, n->simple)) ||
	    (n->full && glob_match(glob, n->full)))
		return true;
	/* A record file names a library's or an exec'd binary's function
	 * "BIN:function"; a glob without a binary matches the function, as
	 * record's -F does.  (Not C++'s "::", nor Go's "type:.eq.T".) */
	const char *c = strchr(sym, ':');
	return c && c > sym && c[1] && c[1] != ':' && c[1] != '.' && !strchr(glob, ':') && glob_match(glob, c + 1);
}

bool ct_gcc_suffix(const char *rest)
{
	static const char *const sfx[] = {"part", "isra", "constprop", "cold", "lto_priv", "localalias", NULL};
	for (const char *const *p = sfx; *p; p++) {
		size_t n = strlen(*p);
		if (!strncmp(rest, *p, n) && (!rest[n] || rest[n] == '.'))
			return true;
	}
	return false;
}

size_t ct_clone_base_len(const char *sym)
{
	for (const char *d = *sym ? strchr(sym + 1, '.') : NULL; d; d = strchr(d + 1, '.')) {
		/* each part: ".WORD", then ".N" -- gcc numbers all but cold and
		 * localalias (a Go name "pkg.part" is no clone) */
		const char *p = d;
		bool ok = true;
		while (ok && *p == '.') {
			const char *w = p + 1;
			if (!ct_gcc_suffix(w))
				break;
			p = strchr(w, '.') ? strchr(w, '.') : w + strlen(w);
			if (*p == '.' && isdigit((unsigned char)p[1]))
				for (p++; isdigit((unsigned char)*p); p++)
					;
			else
				ok = !strncmp(w, "cold", 4) || !strncmp(w, "localalias", 10);
		}
		if (ok && p != d && !*p)
			return (size_t)(d - sym);
	}
	return 0;
}

/* SYM and its forms N before GCC's clone suffixes, in *BSYM and *BASE
 * (false: it has none); the caller frees them. */
static bool clone_base(const struct ct_names *n, const char *sym, struct ct_names *base, char **bsym)
{
	size_t len = ct_clone_base_len(sym);
	if (!len)
		return false;
	*bsym = xasprintf("%.*s", (int)len, sym);
	base->simple = n->simple && ct_clone_base_len(n->simple) ? xasprintf("%.*s", (int)ct_clone_base_len(n->simple), n->simple) : NULL;
	/* C++'s full form says "f(int) [clone .part.0]" */
	const char *cl = n->full ? strstr(n->full, " [clone .") : NULL;
	base->full = cl ? xasprintf("%.*s", (int)(cl - n->full), n->full) : NULL;
	return true;
}

static bool equal_forms(const struct ct_names *n, const char *sym, const char *name)
{
	return !strcmp(name, sym) || (n->simple && !strcmp(name, n->simple)) ||
	       (n->full && !strcmp(name, n->full));
}

/* TEST(forms, symbol, S) on N, SYM's forms before GCC's clone suffixes
 * (false when it has none). */
static bool on_base(const struct ct_names *n, const char *sym, const char *s,
		    bool (*test)(const struct ct_names *, const char *, const char *))
{
	struct ct_names base;
	char *bsym;
	if (!clone_base(n, sym, &base, &bsym))
		return false;
	bool r = test(&base, bsym, s);
	free(bsym);
	ct_names_free(&base);
	return r;
}

bool ct_names_match_as_clone(const struct ct_names *n, const char *sym, const char *glob)
{
	return !match_forms(n, sym, glob) && on_base(n, sym, glob, match_forms);
}

bool ct_names_match(const struct ct_names *n, const char *sym, const char *glob)
{
	return match_forms(n, sym, glob) || on_base(n, sym, glob, match_forms);
}

bool ct_names_equal(const struct ct_names *n, const char *sym, const char *name)
{
	return equal_forms(n, sym, name) || on_base(n, sym, name, equal_forms);
}
