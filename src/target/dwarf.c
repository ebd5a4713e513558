#include "target/dwarf.h"
#include "target/elf.h"
#include "util/files.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int member_offset(Dwarf_Die *st, const char *name, Dwarf_Die *type_out)
{
	Dwarf_Die m;
	if (dwarf_child(st, &m) != 0)
		return -1;
	do {
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		const char *n = dwarf_diename(&m);
		if (!n || strcmp(n, name))
			continue;
		Dwarf_Attribute a;
		Dwarf_Word off;
		if (!dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &off))
			return -1;
		if (type_out) {
			Dwarf_Attribute ta;
			if (!dwarf_attr(&m, DW_AT_type, &ta) || !dwarf_formref_die(&ta, type_out))
				return -1;
			/* Go emits "runtime.stack" as a typedef of the struct. */
			while (dwarf_tag(type_out) == DW_TAG_typedef)
				if (!dwarf_attr(type_out, DW_AT_type, &ta) || !dwarf_formref_die(&ta, type_out))
					return -1;
		}
		return (int)off;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

static void read_g(Dwarf_Die *g, struct ct_dwarf_go *out)
{
	Dwarf_Die stack_t;
	out->goid_off = member_offset(g, "goid", NULL);
	out->m_off = member_offset(g, "m", NULL);
	out->gopc_off = member_offset(g, "gopc", NULL);
	int stack = member_offset(g, "stack", &stack_t);
	if (stack >= 0) {
		int hi = member_offset(&stack_t, "hi", NULL);
		if (hi >= 0)
			out->stack_hi_off = stack + hi;
	}
}

static void parse_producer(const char *prod, struct ct_dwarf_go *out)
{
	const char *gnu = strstr(prod, "GNU Go");
	if (gnu) {
		out->gccgo_producer = true;
		if (!out->gccgo_version[0]) {
			/* "GNU Go X.Y.Z -flags...": up to the third space */
			size_t n = 0;
			for (int words = 0; gnu[n] && words < 3; n++)
				if (gnu[n + 1] == ' ' || !gnu[n + 1])
					words++;
			if (n >= sizeof(out->gccgo_version))
				n = sizeof(out->gccgo_version) - 1;
			memcpy(out->gccgo_version, gnu, n);
			out->gccgo_version[n] = 0;
		}
		return;
	}
	const char *p = strstr(prod, "Go cmd/compile ");
	if (!p)
		return;
	out->go_producer = true;
	if (!out->go_version[0]) {
		p += strlen("Go cmd/compile ");
		size_t n = strcspn(p, "; ");
		if (n >= sizeof(out->go_version))
			n = sizeof(out->go_version) - 1;
		memcpy(out->go_version, p, n);
		out->go_version[n] = 0;
	}
	if (strstr(prod, "regabi"))
		out->regabi = true;
}

/* DWARF kept apart from the binary at PATH (open at FD), where Debian's
 * debug packages (-dbg, -dbgsym) or a debuglink put it
 * (ct_debug_file_find).  NULL if there is none. */
static Dwarf *separate_dwarf(int fd, const char *path)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	char dpath[PATH_MAX];
	bool found = e && ct_debug_file_find(e, path, dpath, sizeof(dpath), NULL, 0);
	if (e)
		elf_end(e);
	if (!found)
		return NULL;
	int dfd = open(dpath, O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	Dwarf *dw = dwarf_begin(dfd, DWARF_C_READ); /* keeps dfd open until dwarf_end: never */
	if (!dw)
		close(dfd);
	return dw;
}

struct shared_dw {
	char *path;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	Dwarf *dw; /* NULL: the file has no DWARF */
	struct shared_dw *next;
};

Dwarf *ct_dwarf_shared(const char *path)
{
	static struct shared_dw *all;
	int fd = ct_input_open(path);
	struct stat st;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	for (struct shared_dw *s = all; s; s = s->next)
		if (!strcmp(s->path, path) && s->dev == st.st_dev && s->ino == st.st_ino &&
		    s->mtime.tv_sec == st.st_mtim.tv_sec && s->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			close(fd);
			return s->dw;
		}
	struct shared_dw *s = xcalloc(1, sizeof(*s));
	s->path = xstrdup(path);
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->mtime = st.st_mtim;
	s->dw = dwarf_begin(fd, DWARF_C_READ); /* keeps fd open until dwarf_end: never */
	if (!s->dw) {
		s->dw = separate_dwarf(fd, path);
		close(fd);
	}
	s->next = all;
	all = s;
	return s->dw;
}

void ct_dwarf_go_facts(const char *path, struct ct_dwarf_go *out)
{
	memset(out, 0, sizeof(*out));
	out->goid_off = out->stack_hi_off = out->m_off = out->curg_off = out->gopc_off = -1;
	Dwarf *dw = ct_dwarf_shared(path);
	if (!dw)
		return;
	out->have_dwarf = true;
	Dwarf_Off off = 0, next;
	size_t hsize;
	bool found_g = false, found_m = false;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;
		if (!dwarf_offdie(dw, off + hsize, &cu))
			break;
		off = next;
		Dwarf_Attribute a;
		const char *prod = dwarf_attr(&cu, DW_AT_producer, &a) ? dwarf_formstring(&a) : NULL;
		if (prod)
			parse_producer(prod, out);
		if (found_g && found_m)
			break;
		if (!out->go_producer || dwarf_child(&cu, &d) != 0)
			continue;
		do {
			if (dwarf_tag(&d) != DW_TAG_structure_type)
				continue;
			const char *n = dwarf_diename(&d);
			if (!n)
				continue;
			if (!found_g && !strcmp(n, "runtime.g")) {
				read_g(&d, out);
				found_g = true;
			} else if (!found_m && !strcmp(n, "runtime.m")) {
				out->curg_off = member_offset(&d, "curg", NULL);
				found_m = true;
			}
		} while (!(found_g && found_m) && dwarf_siblingof(&d, &d) == 0);
	}
}
