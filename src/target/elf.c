#include "target/elf.h"
#include "util/files.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
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
	read_build_id(e);
	return 0;
}

void ct_elf_close(struct ct_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
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

static Elf_Scn *find_symtab(const struct ct_elf *e, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	}
	return NULL;
}

static size_t each_sym(const struct ct_elf *e, Elf_Scn *scn,
		       bool (*fn)(void *, const char *, const GElf_Sym *), void *ctx)
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
		const char *name = elf_strptr(e->elf, sh.sh_link, sym.st_name);
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
		Elf_Scn *scn = find_symtab(e, types[i]);
		if (scn)
			each_sym(e, scn, sym_find_cb, &f);
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
	Elf_Scn *scn = find_symtab(e, SHT_SYMTAB);
	if (!scn)
		scn = find_symtab(e, SHT_DYNSYM);
	if (scn)
		each_sym(e, scn, func_cb, &it);
	return it.n;
}
