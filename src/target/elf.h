/* An ELF file opened for reading: its loadable segments (to turn link-time
 * addresses into file offsets for uprobes), sections, symbols, build id. */
#ifndef CT_ELF_H
#define CT_ELF_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ct_segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags; /* PF_X, PF_W, PF_R */
};

struct ct_elf {
	char *path;
	int fd;
	const uint8_t *data; /* the whole file, mmap'd read-only */
	size_t size;
	Elf *elf;
	bool pie;     /* ET_DYN */
	uint16_t machine;
	struct ct_segment *segs;
	size_t nsegs;
	char build_id[128]; /* GNU build id in hex, else Go's build id; "" if none */
	/* A stripped binary's symbols kept in a separate debug file
	 * (ct_debug_file_find), open when the binary has no .symtab: its
	 * path, bytes and ELF; NULL if there is none. */
	char *debug_path;
	const uint8_t *debug_data;
	size_t debug_size;
	Elf *debug_elf;
};

/* Opens PATH; fails with one clear line (missing, not an ELF, not x86-64). */
int ct_elf_open(struct ct_elf *e, const char *path);
void ct_elf_close(struct ct_elf *e);

/* Link-time virtual address -> file offset (what uprobes take); -1 if the
 * address is not backed by file bytes. */
int64_t ct_elf_vaddr_to_offset(const struct ct_elf *e, uint64_t vaddr);
/* Pointer to file bytes for [vaddr, vaddr+len), or NULL. */
const uint8_t *ct_elf_bytes_at(const struct ct_elf *e, uint64_t vaddr, size_t len);

/* A section by name: its header and file bytes (NULL for SHT_NOBITS or
 * compressed sections; use libelf for those). */
bool ct_elf_section(const struct ct_elf *e, const char *name, GElf_Shdr *shdr,
		    const uint8_t **bytes);

/* The separate debug file of the ELF ELF (at PATH), as GDB finds it: by GNU
 * build id under /usr/lib/debug/.build-id/, else by its .gnu_debuglink
 * name next to it, in its .debug/ folder or under /usr/lib/debug + its
 * folder (checked by build id, else by the link's CRC-32).  Its path in
 * OUT; false if there is none.  WHERE (if not NULL) gets where it looked,
 * for an error message. */
bool ct_debug_file_find(Elf *elf, const char *path, char *out, size_t n, char *where, size_t wn);

/* Symbol lookup in .symtab (the separate debug file's when the binary has
 * none), then .dynsym; returns false if absent. */
bool ct_elf_symbol(const struct ct_elf *e, const char *name, GElf_Sym *sym);

/* Calls fn for every STT_FUNC symbol with nonzero size in .symtab (the
 * separate debug file's when the binary has none; else .dynsym). */
typedef void (*ct_sym_fn)(void *ctx, const char *name, const GElf_Sym *sym);
size_t ct_elf_each_func(const struct ct_elf *e, ct_sym_fn fn, void *ctx);
/* Has it a .symtab, of its own or in its separate debug file? */
bool ct_elf_has_symtab(const struct ct_elf *e);

#endif
