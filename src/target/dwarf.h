/* DWARF facts read through libdw: the Go compiler's producer string (Go
 * version, register ABI) and the runtime.g / runtime.m member offsets the
 * BPF side needs.  Never hard-code what DWARF can tell. */
#ifndef CT_DWARF_H
#define CT_DWARF_H

#include <stdbool.h>
#include <stdint.h>

struct ct_dwarf_go {
	bool have_dwarf;     /* .debug_info present and readable */
	bool go_producer;    /* some CU says "Go cmd/compile" */
	bool gccgo_producer; /* some CU says "GNU Go" */
	char go_version[32]; /* from the producer, "go1.19.8" */
	char gccgo_version[32]; /* "GNU Go 12.2.0" */
	bool regabi;         /* producer ends with "regabi" */
	/* -1 when not found */
	int goid_off, stack_hi_off, m_off, curg_off, gopc_off;
};

/* Reads the facts from the ELF file at PATH (opened separately: libdw may
 * decompress sections in place).  Never fails hard: missing DWARF just
 * leaves have_dwarf false. */
void ct_dwarf_go_facts(const char *path, struct ct_dwarf_go *out);

/* The process's one libdw handle for the file at PATH (NULL: no DWARF).
 * dwarf_begin decompresses every .debug_* section (zlib in Go binaries:
 * ~45 ms and ~9 MiB for a 7 MB binary), so the target's facts and the types
 * share it instead of each opening their own.  Kept until exit; a file
 * replaced at the same path (another inode or mtime) gets a new handle. */
struct Dwarf *ct_dwarf_shared(const char *path);

#endif
