/* Go facts read straight from a gc-compiled binary's data, so that they are
 * there even when .symtab and DWARF are stripped:
 *   - .go.buildinfo: Go version and main module path
 *   - pclntab: every function's name, extent, args size, funcID and flags
 * Implementation: gobin.c (pclntab, buildinfo).  Pure parsing, no kernel. */
#ifndef CT_GOBIN_H
#define CT_GOBIN_H

#include "target/elf.h"

struct ct_buildinfo {
	char go_version[32]; /* "go1.19.8"; "" if unknown */
	int major, minor;    /* 1, 19; 0, 0 if unknown */
	char *main_module;   /* "example.com/app", NULL if none */
	bool module_from_path; /* a GOPATH build: main_module is the project of
				  its main package's path (main_module_of) */
};

/* Reads .go.buildinfo (by section name, else by scanning writable data for
 * the "\xff Go buildinf:" magic).  Handles the pointer format (Go < 1.18) and
 * the inline-string format (1.18+).  Returns 0, or -1 with ct_fail(). */
/* The project a GOPATH build's main package PATH belongs to (its modinfo
 * has a "path" line and no "mod": Debian's dh-golang builds, old
 * toolchains), standing for the main module: a code host's repository
 * (github.com/OWNER/REPO), else what comes before "/cmd/", else PATH.
 * Malloc'd; NULL for "". */
char *ct_go_project_of_path(const char *path);

int ct_buildinfo_read(const struct ct_elf *e, struct ct_buildinfo *out);
void ct_buildinfo_free(struct ct_buildinfo *bi);

struct ct_go_func {
	char *name;         /* as in pclntab, e.g. "main.(*T).M", "runtime.newproc" */
	uint64_t entry;     /* link-time vaddr */
	uint64_t end;       /* next function's entry (includes INT3 padding) */
	int32_t args;       /* _func.args: arg+result+spill width in bytes */
	uint8_t funcid;     /* _func.funcID; 0 = normal */
	uint8_t flag;       /* _func.flag: CT_GO_FLAG_* (target/goruntime.h) */
	bool wrapper;       /* funcID is the version's FuncID_wrapper */
	const uint8_t *raw; /* its _func record (line tables), in the ELF's bytes */
};

struct ct_pclntab {
	uint32_t magic;      /* 0xfffffffb / fa / f0 / f1 */
	const char *version_range; /* "go1.2-1.15", "go1.16-1.17", "go1.18-1.19", "go1.20+" */
	uint64_t text_start; /* runtime.text: base of entry offsets */
	uint8_t wrapper_funcid; /* this Go version's FuncID_wrapper; 0 if unknown/none */
	struct ct_go_func *funcs; /* sorted by entry */
	size_t nfuncs;
	/* Line tables, for ct_pclntab_pos: byte ranges of the ELF file's
	 * image (valid while it is open), offsets from `data`. */
	const uint8_t *data;
	size_t size;
	size_t pctab, filetab, cutab;
	uint32_t nfiletab;
	uint8_t quantum;
};

/* Finds pclntab (section .gopclntab, else .data.rel.ro.gopclntab, else by
 * searching read-only data for a header that validates), validates it and
 * reads the function table.  The funcID numbering (and so `wrapper`) is
 * chosen by the Go version in .go.buildinfo, checked against the funcIDs of
 * known runtime functions (which alone decide when there is no buildinfo).
 * Returns 0, or -1 with ct_fail() if the binary has no usable pclntab (not a
 * gc Go binary). */
int ct_pclntab_read(const struct ct_elf *e, struct ct_pclntab *out);
void ct_pclntab_free(struct ct_pclntab *t);

/* The function whose code holds PC (link-time address), or NULL. */
const struct ct_go_func *ct_pclntab_func_at(const struct ct_pclntab *t, uint64_t pc);

/* The source position of the instruction at PC (link-time address), as the
 * runtime's own tracebacks give it (funcline: the pcfile and pcln tables of
 * the function holding PC; an inlined call reports the position inside the
 * function it was inlined into, as "created by" lines of Go < 1.21 do).
 * *FN is that function; *FILE NULL when the table does not say.  False if PC
 * is in no function or its line table is unreadable. */
bool ct_pclntab_pos(const struct ct_pclntab *t, uint64_t pc, const struct ct_go_func **fn,
		    const char **file, int32_t *line);

/* How many bytes SP is below the function's entry SP (its return address)
 * at PC, as the runtime's unwinder knows it (the pcsp table); false if PC is
 * in no function or the table does not say. */
bool ct_pclntab_sp_at(const struct ct_pclntab *t, uint64_t pc, int32_t *sp);

/* The TLS offset of g (g at fsbase + *off) as the Go code in [lo, hi)
 * reads it: the most common displacement of its %fs loads.  For binaries
 * without .symtab (runtime.tlsg); false if the code does not say clearly. */
bool ct_go_tls_g_from_code(const struct ct_elf *e, uint64_t lo, uint64_t hi, int64_t *off);

#endif
