#include "target/elf.h"
#include "util/files.h"
#include "util/util.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <zlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void read_build_id(struct ct_elf *e)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const char *name = (const char *)d->d_buf + name_off;
			const uint8_t *id = (const uint8_t *)d->d_buf + desc_off;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				size_t n = nh.n_descsz > 32 ? 32 : nh.n_descsz;
				for (size_t i = 0; i < n; i++)
					sprintf(e->build_id + 2 * i, "%02x", id[i]);
				return;
			}
			/* gc's own note (.note.go.buildid, type 4): a printable id. */
			if (nh.n_type == 4 && nh.n_namesz == 4 && !memcmp(name, "Go", 3) && !e->build_id[0]) {
				size_t n = nh.n_descsz < sizeof(e->build_id) - 1 ? nh.n_descsz : sizeof(e->build_id) - 1;
				memcpy(e->build_id, id, n);
				e->build_id[n] = 0;
			}
		}
	}
}

/* ---- Separate debug files ----
 *
 * Debian's -dbgsym and -dbg packages, and `objcopy --only-keep-debug` with
 * `--add-gnu-debuglink`, keep a stripped binary's .symtab and DWARF in
 * another file.  It is found where GDB looks ("Separate Debug Files" in its
 * manual): by GNU build id, else by the debuglink's name, a candidate
 * checked by build id, or by the link's CRC-32 when the binary has none
 * (a stale copy beside it must not lend wrong addresses). */

#define DEBUG_ROOT "/usr/lib/debug"

/* The file at PATH, mapped (its size in *SIZE); NULL if it is not there. */
static const uint8_t *map_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return NULL;
	void *m = MAP_FAILED;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof(Elf64_Ehdr))
		m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = st.st_size;
	return m;
}

/* Is the file at PATH the debug file of the binary with build id ID (LEN
 * bytes; 0: none, then the debuglink's CRC) and not the binary itself? */
static bool debug_file_matches(const char *path, const char *self, const void *id, ssize_t len, GElf_Word crc)
{
	char a[PATH_MAX], b[PATH_MAX];
	if (!realpath(path, a) || (realpath(self, b) && !strcmp(a, b)))
		return false;
	size_t size;
	const uint8_t *data = map_file(path, &size);
	if (!data)
		return false;
	bool ok;
	if (len > 0) {
		Elf *e = elf_memory((char *)data, size);
		const void *did;
		ok = e && dwelf_elf_gnu_build_id(e, &did) == len && !memcmp(did, id, (size_t)len);
		if (e)
			elf_end(e);
	} else {
		ok = crc32(0, data, (uInt)size) == crc && size <= UINT_MAX;
	}
	munmap((void *)data, size);
	return ok;
}

bool ct_debug_file_find(Elf *elf, const char *path, char *out, size_t n, char *where, size_t wn)
{
	const void *id;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &id);
	if (where && wn)
		where[0] = 0;
	if (len >= 2) {
		int at = snprintf(out, n, DEBUG_ROOT "/.build-id/");
		for (ssize_t i = 0; i < len && at > 0 && (size_t)at < n; i++)
			at += snprintf(out + at, n - (size_t)at, i == 1 ? "/%02x" : "%02x", ((const uint8_t *)id)[i]);
		if (at > 0 && (size_t)at < n)
			snprintf(out + at, n - (size_t)at, ".debug");
		if (where)
			snprintf(where, wn, "%s", out);
		if (!access(out, R_OK))
			return true;
	}
	GElf_Word crc = 0;
	const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (!link || !*link || strchr(link, '/'))
		return false;
	char real[PATH_MAX], dirbuf[PATH_MAX];
	snprintf(dirbuf, sizeof(dirbuf), "%s", realpath(path, real) ? real : path);
	const char *dir = dirname(dirbuf);
	for (int i = 0; i < 3; i++) {
		snprintf(out, n, "%s%s%s/%s", i == 2 ? DEBUG_ROOT : "", dir, i == 1 ? "/.debug" : "", link);
		if (debug_file_matches(out, path, id, len, crc))
			return true;
	}
	if (where) {
		size_t at = strlen(where);
		snprintf(where + at, wn - at, "%sits debuglink %s in %s, its .debug/ or " DEBUG_ROOT "%s",
			 at ? ", nor " : "", link, dir, dir);
	}
	return false;
}

static Elf_Scn *find_symtab_in(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	}
	return NULL;
}

/* A binary without .symtab: open its separate debug file, if it has one
 * with a .symtab (its symbols have the binary's link-time addresses). */
static void open_debug_file(struct ct_elf *e)
{
	char path[PATH_MAX];
	if (find_symtab_in(e->elf, SHT_SYMTAB) || !ct_debug_file_find(e->elf, e->path, path, sizeof(path), NULL, 0))
		return;
	size_t size;
	const uint8_t *data = map_file(path, &size);
	Elf *d = data ? elf_memory((char *)data, size) : NULL;
	GElf_Ehdr eh;
	if (!d || !gelf_getehdr(d, &eh) || eh.e_machine != e->machine || !find_symtab_in(d, SHT_SYMTAB)) {
		if (d)
			elf_end(d);
		if (data)
			munmap((void *)data, size);
		return;
	}
	e->debug_path = xstrdup(path);
	e->debug_data = data;
	e->debug_size = size;
	e->debug_elf = d;
}

static const char *machine_name(unsigned m)
{
	switch (m) {
	case EM_386:
		return "x86 (i386)";
	case EM_X86_64:
		return "x86-64 (x32)";
	case EM_AARCH64:
		return "arm64 (aarch64)";
	case EM_ARM:
		return "arm";
	case EM_RISCV:
		return "riscv";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390x";
	case EM_MIPS:
		return "mips";
	case EM_LOONGARCH:
		return "loong64";
	default:
		return NULL;
	}
}

int ct_elf_open(struct ct_elf *e, const char *path)
{
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	elf_version(EV_CURRENT);
	int fd = ct_input_open(path); /* a FIFO would block */
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st)) {
		close(fd);
		return ct_fail("cannot open %s: %s", path, strerror(errno));
	}
	/* a script: name its interpreter, which is what runs */
	char head[130];
	ssize_t got = st.st_size >= 2 ? pread(fd, head, sizeof(head) - 1, 0) : 0;
	if (got > 2 && !memcmp(head, "#!", 2)) {
		close(fd);
		head[got] = 0;
		char *interp = head + 2 + strspn(head + 2, " \t");
		interp[strcspn(interp, "\r\n")] = 0;
		return ct_fail("%s is a script (#!%s), not an ELF binary: record its interpreter running it (calltrace record [--follow] -- %s %s ...)",
			       path, interp, interp, path);
	}
	if (st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return ct_fail("%s is not an ELF executable (too small)", path);
	}
	void *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return ct_fail("cannot map %s: %s", path, strerror(errno));
	}
	e->fd = fd;
	e->data = m;
	e->size = st.st_size;
	e->path = xstrdup(path);
	if (memcmp(m, ELFMAG, SELFMAG)) {
		ct_elf_close(e);
		return ct_fail("%s is not an ELF executable (no ELF magic); give the program's binary, not a script",
			       path);
	}
	e->elf = elf_memory((char *)m, st.st_size);
	GElf_Ehdr eh;
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh)) {
		ct_elf_close(e);
		return ct_fail("%s: unreadable ELF header", path);
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		const char *what = machine_name(eh.e_machine);
		bool bits32 = eh.e_ident[EI_CLASS] == ELFCLASS32;
		ct_elf_close(e);
		if (what)
			return ct_fail("%s is built for %s%s, not x86-64; calltrace supports linux/amd64 only", path,
				       bits32 ? "32-bit " : "", what);
		return ct_fail("%s is not an x86-64 ELF binary (%s, e_machine %u); calltrace supports linux/amd64 only",
			       path, bits32 ? "32-bit" : "64-bit", (unsigned)eh.e_machine);
	}
	e->machine = eh.e_machine;
	e->pie = eh.e_type == ET_DYN;
	size_t nph = 0;
	elf_getphdrnum(e->elf, &nph);
	e->segs = xcalloc(nph ? nph : 1, sizeof(*e->segs));
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs++] = (struct ct_segment){ph.p_vaddr, ph.p_memsz, ph.p_offset,
							   ph.p_filesz, ph.p_flags};
	}
	if (!e->nsegs) {
		ct_elf_close(e);
		return ct_fail("%s has no loadable segments (not an executable or shared object)", path);
	}
	/* cut short (a copy or download that stopped): its tables read as
	 * missing, which said "stripped", and it would die of SIGBUS */
	uint64_t need = eh.e_shnum ? eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize : 0;
	for (size_t i = 0; i < e->nsegs; i++)
		if (e->segs[i].offset + e->segs[i].filesz > need)
			need = e->segs[i].offset + e->segs[i].filesz;
	if (need > (uint64_t)st.st_size) {
		ct_elf_close(e);
		return ct_fail("%s is truncated: its headers say it is %llu bytes long, the file has %lld (a copy or download that stopped?); use a complete copy",
			       path, (unsigned long long)need, (long long)st.st_size);
	}
	read_build_id(e);
	open_debug_file(e);
	return 0;
}

void ct_elf_close(struct ct_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
	if (e->debug_elf)
		elf_end(e->debug_elf);
	if (e->debug_data)
		munmap((void *)e->debug_data, e->debug_size);
	free(e->debug_path);
	if (e->data)
		munmap((void *)e->data, e->size);
	if (e->fd >= 0)
		close(e->fd);
	free(e->segs);
	free(e->path);
	memset(e, 0, sizeof(*e));
	e->fd = -1;
}

int64_t ct_elf_vaddr_to_offset(const struct ct_elf *e, uint64_t vaddr)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ct_segment *s = &e->segs[i];
		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz)
			return (int64_t)(vaddr - s->vaddr + s->offset);
	}
	return -1;
}

const uint8_t *ct_elf_bytes_at(const struct ct_elf *e, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ct_segment *s = &e->segs[i];
		if (vaddr >= s->vaddr && vaddr + len <= s->vaddr + s->filesz &&
		    s->offset + (vaddr - s->vaddr) + len <= e->size)
			return e->data + s->offset + (vaddr - s->vaddr);
	}
	return NULL;
}

bool ct_elf_section(const struct ct_elf *e, const char *name, GElf_Shdr *shdr,
		    const uint8_t **bytes)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *n = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		if (shdr)
			*shdr = sh;
		if (bytes) {
			bool ok = sh.sh_type != SHT_NOBITS && !(sh.sh_flags & SHF_COMPRESSED) &&
				  sh.sh_offset + sh.sh_size <= e->size;
			*bytes = ok ? e->data + sh.sh_offset : NULL;
		}
		return true;
	}
	return false;
}

/* E's symbol table of TYPE, and the ELF holding it (*ELF): .symtab is the
 * separate debug file's when the binary has none. */
static Elf_Scn *find_symtab(const struct ct_elf *e, Elf64_Word type, Elf **elf)
{
	*elf = e->elf;
	Elf_Scn *scn = find_symtab_in(e->elf, type);
	if (!scn && type == SHT_SYMTAB && e->debug_elf) {
		*elf = e->debug_elf;
		scn = find_symtab_in(e->debug_elf, type);
	}
	return scn;
}

bool ct_elf_has_symtab(const struct ct_elf *e)
{
	Elf *elf;
	return find_symtab(e, SHT_SYMTAB, &elf) != NULL;
}

static size_t each_sym(Elf *elf, Elf_Scn *scn, bool (*fn)(void *, const char *, const GElf_Sym *), void *ctx)
{
	GElf_Shdr sh;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	size_t n = sh.sh_size / sh.sh_entsize, count = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, i, &sym))
			continue;
		const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		count++;
		if (!fn(ctx, name, &sym))
			break;
	}
	return count;
}

struct sym_find {
	const char *name;
	GElf_Sym *out;
	bool found;
};

static bool sym_find_cb(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct sym_find *f = ctx;
	if (strcmp(name, f->name))
		return true;
	*f->out = *sym;
	f->found = true;
	return false;
}

bool ct_elf_symbol(const struct ct_elf *e, const char *name, GElf_Sym *sym)
{
	struct sym_find f = {name, sym, false};
	Elf64_Word types[] = {SHT_SYMTAB, SHT_DYNSYM};
	for (int i = 0; i < 2 && !f.found; i++) {
		Elf *elf;
		Elf_Scn *scn = find_symtab(e, types[i], &elf);
		if (scn)
			each_sym(elf, scn, sym_find_cb, &f);
	}
	return f.found;
}

struct func_iter {
	ct_sym_fn fn;
	void *ctx;
	size_t n;
};

static bool func_cb(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct func_iter *it = ctx;
	if (GELF_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_size && sym->st_shndx != SHN_UNDEF) {
		it->fn(it->ctx, name, sym);
		it->n++;
	}
	return true;
}

size_t ct_elf_each_func(const struct ct_elf *e, ct_sym_fn fn, void *ctx)
{
	struct func_iter it = {fn, ctx, 0};
	Elf *elf;
	Elf_Scn *scn = find_symtab(e, SHT_SYMTAB, &elf);
	if (!scn)
		scn = find_symtab(e, SHT_DYNSYM, &elf);
	if (scn)
		each_sym(elf, scn, func_cb, &it);
	return it.n;
}
