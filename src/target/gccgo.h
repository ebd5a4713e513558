/* gccgo binaries: Go compiled by GCC's Go front end.  No pclntab, no build
 * info, no goroutine-aware ABI: functions are plain SysV code found in the
 * symbol table under mangled names.  This file recognizes such binaries,
 * turns their symbol names back into Go names, and finds the packages of
 * the program's own directory (the default selection).  Pure parsing. */
#ifndef CT_GCCGO_H
#define CT_GCCGO_H

#include "target/elf.h"

/* Is the ELF file a gccgo program?  Any of: a .go_export section (export
 * data of the packages compiled into it), the __go_init_main symbol, a
 * DT_NEEDED libgo.so, or (GNU_GO_DWARF) a DWARF producer "GNU Go". */
bool ct_gccgo_detect(const struct ct_elf *e, bool gnu_go_dwarf);

/* The Go name of a gccgo assembler symbol, malloc'd, or NULL if SYM is not
 * a Go symbol.  The package path before the first literal '.' and the rest
 * are decoded as gofrontend's go-encode-id.cc encodes them ("_0" '.', "_1"
 * '/', "__" '_', "_2"..."_c" for *,{}[]()"; and space, "_xNN", "_uNNNN",
 * "_UNNNNNNNN"):
 *   example_0com_1probe_1lib.T.M  -> example.com/probe/lib.T.M
 *   main.main..func1              -> main.main.func1  (gc's closure name)
 * Value and pointer methods are both "pkg.T.M" in gccgo.  *GENERATED is set
 * for compiler-generated code (type equality/hash functions "..eq"/"..hash",
 * go/defer thunks "..thunkN", stubs "..stubN").  C symbols (no '.', GCC
 * clone suffixes such as "f.part.0", undecodable names) give NULL. */
char *ct_gccgo_demangle(const char *sym, bool *generated);

/* The package path of a demangled Go name ("example.com/probe/lib.T.M" ->
 * "example.com/probe/lib"), malloc'd; NULL if none. */
char *ct_gccgo_package_of_symbol(const char *sym);

/* The main module of a gccgo program, inferred from DWARF (there is no build
 * info): package main's compile directory is the module's root or below it;
 * a package compiled in the subdirectory REL of it with package path P
 * ending in "/REL" puts the module at P without "/REL".  malloc'd, or NULL
 * (no DWARF, or main alone). */
char *ct_gccgo_main_module(const char *path);

#endif
