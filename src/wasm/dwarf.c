/* Parameter names from a module's DWARF (clang -g puts .debug_* in custom
 * sections).  libdw reads ELF only, so the sections are copied into a
 * minimal ELF file in the private directory and read through target/types.c
 * like a native binary's.  A function's DW_AT_low_pc is the offset of its
 * body in the code section's contents.  Only names are taken: values stay
 * the wasm values (a pointer is an i32), and a function whose DWARF
 * parameters do not line up one to one with its wasm parameters (structs
 * returned through a hidden pointer, ...) keeps p0, p1, ... */
#include "wasm/wasm.h"
#include "target/types.h"
#include "util/util.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

/* Writes the .debug_* sections of M into a new ELF file at PATH. */
static int debug_elf(const struct ct_wasm_module *m, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	int rc = -1;
	if (!e || !gelf_newehdr(e, ELFCLASS32))
		goto out;
	GElf_Ehdr eh;
	gelf_getehdr(e, &eh);
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_NONE;
	eh.e_version = EV_CURRENT;
	struct ct_buf names = {0};
	buf_put(&names, "", 1);
	CT_VEC(size_t) name_at = {0};
	for (size_t i = 0; i < m->nsecs; i++) {
		const struct ct_wasm_section *s = &m->secs[i];
		if (s->id != WSEC_CUSTOM || strncmp(s->name, ".debug_", 7))
			continue;
		CT_VEC_PUSH(name_at, names.n);
		buf_put(&names, s->name, strlen(s->name) + 1);
		Elf_Scn *scn = elf_newscn(e);
		Elf_Data *d = elf_newdata(scn);
		d->d_buf = (void *)(m->bytes + s->payload);
		d->d_size = s->size;
		d->d_type = ELF_T_BYTE;
		d->d_align = 1;
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		sh.sh_name = (GElf_Word)name_at.v[name_at.n - 1];
		sh.sh_type = SHT_PROGBITS;
		gelf_update_shdr(scn, &sh);
	}
	size_t shstr_name = names.n;
	buf_put(&names, ".shstrtab", 10);
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d = elf_newdata(scn);
	d->d_buf = names.p;
	d->d_size = names.n;
	d->d_type = ELF_T_BYTE;
	d->d_align = 1;
	GElf_Shdr sh;
	gelf_getshdr(scn, &sh);
	sh.sh_name = (GElf_Word)shstr_name;
	sh.sh_type = SHT_STRTAB;
	gelf_update_shdr(scn, &sh);
	eh.e_shstrndx = (GElf_Half)elf_ndxscn(scn);
	gelf_update_ehdr(e, &eh);
	if (elf_update(e, ELF_C_WRITE) >= 0)
		rc = 0;
	buf_free(&names);
	CT_VEC_FREE(name_at);
out:
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

void ct_wasm_dwarf_names(struct ct_wasm_plan *p, const struct ct_wasm_target *t, const char *dir)
{
	const struct ct_wasm_module *m = &t->m;
	const struct ct_wasm_section *code = ct_wasm_section(m, WSEC_CODE, NULL);
	if (!m->has_dwarf || !code || !dir || !*dir)
		return;
	char *path = xasprintf("%s/debug.elf", dir);
	struct ct_types *ts = NULL;
	if (debug_elf(m, path) == 0)
		ts = ct_types_open(path, false);
	size_t named = 0;
	for (size_t i = 0; ts && i < p->fns.n; i++) {
		const struct ct_wasm_instr *in = &p->fns.v[i];
		struct ct_site_fetch *f = in->args ? p->fetch[in->entry_site] : NULL;
		if (!f)
			continue;
		/* low_pc: the body (its locals) from the code section's start */
		uint64_t low = m->funcs[in->func].body - code->payload;
		struct ct_sig sig;
		if (!ct_types_sig(ts, low, &sig))
			continue;
		size_t nargs = 0;
		for (size_t k = 0; k < sig.n; k++)
			nargs += !sig.params[k].is_result;
		if (nargs == f->nvals) {
			for (size_t k = 0, v = 0; k < sig.n; k++) {
				if (sig.params[k].is_result)
					continue;
				if (sig.params[k].name[0]) {
					free(f->vals[v].name);
					f->vals[v].name = xstrdup(sig.params[k].name);
				}
				v++;
			}
			named++;
		}
		ct_sig_free(&sig);
	}
	ct_debug("DWARF: parameter names for %zu functions", named);
	if (ts)
		ct_types_close(ts);
	unlink(path);
	free(path);
}
