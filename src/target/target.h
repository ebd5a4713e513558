/* A traceable program: its ELF, its language, its functions, and for Go the
 * facts the probes need (ABI, runtime.g layout).  First stage of the data
 * flow: target -> plan -> probes -> record file -> reconstruction -> render. */
#ifndef CT_TARGET_H
#define CT_TARGET_H

#include <string.h>

#include "probes/event.h"
#include "target/demangle.h"
#include "target/elf.h"
#include "target/gobin.h"
#include "target/rust.h"

enum ct_lang {
	CT_LANG_C = 0, /* SysV code: threads, key from SP */
	CT_LANG_GO = 1 /* gc-compiled Go: goroutines */
};

#define CT_FN_GO 0x01      /* compiled by gc (has a pclntab entry) */
#define CT_FN_ABI0 0x02    /* Go stack ABI: g comes from TLS, not R14 */
#define CT_FN_ASM 0x04     /* Go assembly */
#define CT_FN_WRAPPER 0x08 /* compiler-generated wrapper, skipped by default */
#define CT_FN_NOPROBE 0x10 /* runtime stack-switching code: never probed */
#define CT_FN_FALLS 0x20   /* set by the plan: its code runs on into the function
			      at its end (no exit ends it; record file FUNCS) */
#define CT_FN_PLT 0x40     /* a PLT stub, "NAME@plt": the program's calls of a
			      library function (plan/plt.c, ct_plt_add_funcs) */
#define CT_FN_PARKS 0x80   /* set by the plan: runtime.gopark, traced for record
			      --parks alone (record file FUNCS): its calls that
			      no traced call holds are not shown */
#define CT_FN_WRITABLE 0x100 /* its code is in a writable segment, where the
			       kernel puts no uprobe: never probed */
#define CT_PLT_SUFFIX "@plt" /* after a PLT stub's symbol, its function's name */

struct ct_func {
	char *name;          /* the symbol (gccgo: its Go name) */
	uint64_t entry, end; /* link-time [entry, end) */
	int32_t args;        /* Go: pclntab args width; -1 unknown */
	uint32_t flags;      /* CT_FN_* */
	struct ct_names dm;  /* demangled forms (C++, Rust); set by ct_target_open */
};

/* How much of NAME, a function's with CT_FN_* FLAGS, is the symbol it
 * stands for: a PLT stub's less CT_PLT_SUFFIX (demangled, matched against
 * setjmp's names as that symbol), else all of it. */
static inline size_t ct_func_symbol_len(const char *name, uint32_t flags)
{
	size_t n = strlen(name), s = sizeof(CT_PLT_SUFFIX) - 1;
	return (flags & CT_FN_PLT) && n > s && !strcmp(name + n - s, CT_PLT_SUFFIX) ? n - s : n;
}

struct ct_target {
	struct ct_elf elf;
	enum ct_lang lang;
	char go_version[32]; /* "go1.19.8"; gccgo: "GNU Go 12.2.0"; or "" */
	int go_minor;        /* 19 for go1.19.x; 0 unknown */
	char *main_module;   /* Go main module path, or NULL (gccgo: from DWARF) */
	bool module_from_path; /* ... a GOPATH build's: its main package's project */
	bool gccgo;          /* lang C: Go compiled by gccgo (SysV ABI, threads);
				names demangled to Go names */
	bool regabi;         /* Go >= 1.17 register ABI */
	struct ct_bin_config gcfg;
	const char *gcfg_source; /* "DWARF" or "table" */
	const char *tls_source;  /* gcfg.tls_g_off from: "runtime.tlsg", "code", "default" */
	const char *funcs_source; /* "pclntab+symtab", "pclntab", "symtab", "dynsym" */
	bool has_dwarf;
	struct ct_rust rust;   /* lang C: a Rust program, and its own crates */
	uint64_t go_text_start; /* Go: runtime.text, the base of method tables' text offsets */
	struct ct_func *funcs; /* sorted by entry */
	size_t nfuncs;
	size_t ncfuncs;        /* Go binaries: C functions among them (cgo) */
	struct ct_pclntab pcln; /* gc Go: the function table, for source positions */
	/* C: the parts split off functions ("F.cold", BOLT's "F.warm"): no
	 * functions of their own, entered by jumps; sorted by their
	 * function's entry (ct_target_parts_of) */
	struct ct_part *parts;
	size_t nparts;
};

struct ct_part {
	uint64_t of;         /* the entry of the function it is a part of */
	uint64_t entry, end;
};

/* The parts split off the function at ENTRY (*N of them, or none). */
const struct ct_part *ct_target_parts_of(const struct ct_target *t, uint64_t entry, size_t *n);

int ct_target_open(struct ct_target *t, const char *path);
void ct_target_close(struct ct_target *t);
/* What kind of program T is, for people: "Go", "gccgo (SysV ABI, traced
 * per thread)", "Rust", "C++/SysV" (a C program with C++ names), "C/SysV". */
const char *ct_target_kind(const struct ct_target *t);
/* Adds the N functions ADD (their names are taken over) to T's table, which
 * stays sorted by entry. */
void ct_target_add_funcs(struct ct_target *t, struct ct_func *add, size_t n);

/* How many functions (sorted by entry) start at or below ADDR: the index of
 * the first one that starts above it. */
size_t ct_target_funcs_upto(const struct ct_target *t, uint64_t addr);
/* The function containing ADDR (link-time), or NULL. */
const struct ct_func *ct_target_func_at(const struct ct_target *t, uint64_t addr);

#endif
