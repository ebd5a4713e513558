/* Go facts read from a gc-compiled binary's own data (no .symtab, no DWARF).
 *
 * .go.buildinfo (cmd/link/internal/ld/data.go, debug/buildinfo): a 32-byte
 * header "\xff Go buildinf:", pointer size, flags; then either two pointers
 * to Go string headers (Go < 1.18) or, with flags bit 1, two
 * uvarint-prefixed strings right after the header (1.18+).
 *
 * pclntab (runtime/symtab.go, debug/gosym/pclntab.go): a header, a table of
 * function names, a "functab" of (entry, funcoff) pairs sorted by entry and
 * closed by the end PC of the last function, and one _func record per
 * function.  The four layouts, by magic:
 *   0xfffffffb  Go 1.2-1.15  word nfunc, functab at +8+ptrsize; offsets
 *                            relative to the header; uintptr entries
 *   0xfffffffa  Go 1.16-1.17 pcHeader (nfunc, nfiles, funcname/cu/filetab/
 *                            pctab/pcln offsets); uintptr entries
 *   0xfffffff0  Go 1.18-1.19 pcHeader gains textStart; functab and
 *                            _func.entryoff are uint32 offsets from it
 *   0xfffffff1  Go 1.20+     _func gains startLine, funcID/flag move by 4;
 *                            from 1.26 the header's textStart is 0 and the
 *                            base is moduledata.text
 * Only little-endian 64-bit layouts are accepted: ct_elf_open() admits
 * x86-64 ELF files only.
 *
 * funcID numbering changed many times and the magic alone does not say which
 * numbering a table uses (0xfffffffb covers four), so the Go version from
 * buildinfo picks it and the funcIDs of a few runtime functions whose IDs
 * every numbering fixes (runtime.goexit, runtime.mcall, ...) check it, or
 * pick it when there is no buildinfo (Go < 1.13). */
#include "target/gobin.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The value of an R_X86_64_RELATIVE relocation at link-time address VADDR,
 * or 0.  A PIE's linker may leave a pointer's file bytes zero and put the
 * value only in the relocation's addend. */
static uint64_t relative_reloc_at(const struct ct_elf *e, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			if (gelf_getrela(d, (int)i, &r) && r.r_offset == vaddr &&
			    GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE)
				return (uint64_t)r.r_addend;
		}
	}
	return 0;
}

/* A pointer stored at link-time address VADDR, through its relocation when
 * the file bytes are zero.  False if VADDR is not backed by the file. */
static bool read_addr(const struct ct_elf *e, uint64_t vaddr, uint64_t *out)
{
	const uint8_t *p = ct_elf_bytes_at(e, vaddr, 8);
	if (!p)
		return false;
	*out = le64(p);
	if (!*out && e->pie)
		*out = relative_reloc_at(e, vaddr);
	return true;
}

static bool in_exec_segment(const struct ct_elf *e, uint64_t addr)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ct_segment *s = &e->segs[i];
		if ((s->flags & PF_X) && addr >= s->vaddr && addr < s->vaddr + s->memsz)
			return true;
	}
	return false;
}

/* File bytes of segment S (filesz clipped to the file). */
static const uint8_t *segment_bytes(const struct ct_elf *e, const struct ct_segment *s,
				    size_t *len)
{
	if (s->offset >= e->size) {
		*len = 0;
		return NULL;
	}
	*len = s->filesz < e->size - s->offset ? s->filesz : e->size - s->offset;
	return e->data + s->offset;
}

/* ------------------------------------------------------------------ */
/* .go.buildinfo */

#define BUILDINFO_MAGIC "\xff Go buildinf:"
#define BUILDINFO_MAGIC_LEN 14
#define BUILDINFO_HDR 32
#define BUILDINFO_ALIGN 16

/* The buildinfo header: section .go.buildinfo, else the first 16-byte
 * aligned magic in a writable, non-executable segment (where the linker puts
 * it when there are no section headers).  *avail = bytes from it on, *addr =
 * its link-time address. */
static const uint8_t *find_buildinfo(const struct ct_elf *e, size_t *avail, uint64_t *addr)
{
	GElf_Shdr sh;
	const uint8_t *p;
	if (ct_elf_section(e, ".go.buildinfo", &sh, &p) && p && sh.sh_size >= BUILDINFO_HDR &&
	    !memcmp(p, BUILDINFO_MAGIC, BUILDINFO_MAGIC_LEN)) {
		*avail = sh.sh_size;
		*addr = sh.sh_addr;
		return p;
	}
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ct_segment *s = &e->segs[i];
		if ((s->flags & (PF_W | PF_X)) != PF_W)
			continue;
		size_t len;
		const uint8_t *b = segment_bytes(e, s, &len);
		/* Alignment is of the virtual address; step to the first
		 * aligned one. */
		size_t off = (size_t)((BUILDINFO_ALIGN - s->vaddr % BUILDINFO_ALIGN) % BUILDINFO_ALIGN);
		for (; b && off + BUILDINFO_HDR <= len; off += BUILDINFO_ALIGN) {
			/* The magic also occurs as a string constant (in
			 * anything linking debug/buildinfo); a real header
			 * has a pointer size and only flag bits 0-1. */
			if (!memcmp(b + off, BUILDINFO_MAGIC, BUILDINFO_MAGIC_LEN) &&
			    (b[off + 14] == 4 || b[off + 14] == 8) && !(b[off + 15] & ~3)) {
				*avail = len - off;
				*addr = s->vaddr + off;
				return b + off;
			}
		}
	}
	return NULL;
}

/* A uvarint-length string at *p within [*p, end); NULL if it does not fit.
 * (debug/buildinfo.decodeString) */
static const uint8_t *inline_string(const uint8_t **p, const uint8_t *end, size_t *len)
{
	struct ct_rd r = {*p, end, false};
	uint64_t n = rd_uvar(&r);
	if (r.bad || n > (uint64_t)(end - r.p))
		return NULL;
	const uint8_t *s = rd_bytes(&r, (size_t)n);
	*p = r.p;
	*len = (size_t)n;
	return s;
}

/* A Go string whose {data, len} header is at link-time address HDR
 * (debug/buildinfo.readString). */
static const uint8_t *pointed_string(const struct ct_elf *e, uint64_t hdr, size_t *len)
{
	uint64_t data;
	const uint8_t *lenp = ct_elf_bytes_at(e, hdr + 8, 8);
	if (!lenp || !read_addr(e, hdr, &data))
		return NULL;
	uint64_t n = le64(lenp);
	if (n > e->size)
		return NULL;
	*len = (size_t)n;
	return n ? ct_elf_bytes_at(e, data, (size_t)n) : (const uint8_t *)"";
}

static void parse_go_version(struct ct_buildinfo *bi)
{
	const char *v = bi->go_version;
	if (!strncmp(v, "devel ", 6)) /* "devel go1.22-abcdef Tue ..." */
		v += 6;
	int major, minor;
	if (sscanf(v, "go%d.%d", &major, &minor) == 2 && major > 0 && minor >= 0) {
		bi->major = major;
		bi->minor = minor;
	}
}

char *ct_go_project_of_path(const char *path)
{
	static const char *const hosts[] = {"github.com/", "gitlab.com/", "bitbucket.org/", "golang.org/x/",
					    "go.googlesource.com/", "codeberg.org/", "git.sr.ht/"};
	size_t n = strlen(path);
	for (size_t h = 0; h < sizeof(hosts) / sizeof(*hosts); h++) {
		size_t hl = strlen(hosts[h]);
		if (strncmp(path, hosts[h], hl))
			continue;
		/* the repository: two more elements after the host (one after
		 * golang.org/x/ and go.googlesource.com/) */
		int want = strcmp(hosts[h], "golang.org/x/") && strcmp(hosts[h], "go.googlesource.com/") ? 2 : 1;
		const char *p = path + hl;
		for (int k = 0; k < want && p; k++) {
			const char *slash = strchr(p, '/');
			if (!slash)
				p = NULL; /* the whole path is the repository */
			else if (k + 1 < want)
				p = slash + 1;
			else
				n = (size_t)(slash - path);
		}
		return strndup(path, n);
	}
	const char *cmd = strstr(path, "/cmd/");
	if (cmd)
		n = (size_t)(cmd - path);
	return n ? strndup(path, n) : NULL;
}

/* The main module path: the "mod\t<path>\t<version>..." line of modinfo
 * (runtime/debug.ParseBuildInfo; lines count only when '\n'-terminated);
 * without one, the project of the "path\t<main package>" line
 * (*FROM_PATH set). */
static char *main_module_of(const uint8_t *mod, size_t len, bool *from_path)
{
	/* modinfo is framed by 16-byte sentinels (cmd/go/internal/modload
	 * infoStart/infoEnd); debug/buildinfo recognises the framing by the
	 * newline that ends the last line just before infoEnd. */
	*from_path = false;
	if (len < 33 || mod[len - 17] != '\n')
		return NULL;
	mod += 16;
	len -= 32;
	char *main_path = NULL;
	for (size_t i = 0; i < len;) {
		const uint8_t *nl = memchr(mod + i, '\n', len - i);
		if (!nl)
			break;
		size_t line_len = (size_t)(nl - (mod + i));
		bool is_mod = line_len > 4 && !memcmp(mod + i, "mod\t", 4);
		bool is_path = line_len > 5 && !memcmp(mod + i, "path\t", 5);
		if (is_mod || (is_path && !main_path)) {
			size_t skip = is_mod ? 4 : 5;
			const uint8_t *path = mod + i + skip;
			const uint8_t *tab = memchr(path, '\t', line_len - skip);
			size_t n = tab ? (size_t)(tab - path) : line_len - skip;
			char *s = n ? strndup((const char *)path, n) : NULL;
			if (is_mod) {
				free(main_path);
				return s;
			}
			main_path = s;
		}
		i += line_len + 1;
	}
	char *project = NULL;
	if (main_path && strcmp(main_path, "command-line-arguments"))
		project = ct_go_project_of_path(main_path);
	free(main_path);
	*from_path = project != NULL;
	return project;
}

/* ct_buildinfo_read without the error report: NULL on success, else why. */
static const char *buildinfo_parse(const struct ct_elf *e, struct ct_buildinfo *out)
{
	memset(out, 0, sizeof(*out));
	size_t avail;
	uint64_t at;
	const uint8_t *b = find_buildinfo(e, &avail, &at);
	if (!b)
		return "has no Go build info (.go.buildinfo); not a gc-compiled Go 1.13+ binary";
	uint8_t ptrsize = b[14], flags = b[15];
	const uint8_t *vers, *mod;
	size_t vers_len = 0, mod_len = 0;
	if (flags & 2) {
		const uint8_t *p = b + BUILDINFO_HDR, *end = b + avail;
		vers = inline_string(&p, end, &vers_len);
		mod = vers ? inline_string(&p, end, &mod_len) : NULL;
		if (!mod)
			mod_len = 0;
	} else {
		/* Bit 0 is big-endian; this reader only sees x86-64 files. */
		if (ptrsize != 8 || (flags & 1))
			return "has a .go.buildinfo for another architecture";
		uint64_t vers_hdr, mod_hdr;
		if (!read_addr(e, at + 16, &vers_hdr) || !read_addr(e, at + 24, &mod_hdr))
			return "has an unreadable .go.buildinfo";
		vers = pointed_string(e, vers_hdr, &vers_len);
		mod = pointed_string(e, mod_hdr, &mod_len);
		if (!mod)
			mod_len = 0;
	}
	if (!vers || !vers_len)
		return "has a .go.buildinfo without a Go version";
	size_t n = vers_len < sizeof(out->go_version) - 1 ? vers_len : sizeof(out->go_version) - 1;
	memcpy(out->go_version, vers, n);
	out->go_version[n] = 0;
	parse_go_version(out);
	out->main_module = mod_len ? main_module_of(mod, mod_len, &out->module_from_path) : NULL;
	return NULL;
}

int ct_buildinfo_read(const struct ct_elf *e, struct ct_buildinfo *out)
{
	const char *why = buildinfo_parse(e, out);
	return why ? ct_fail("%s %s", e->path, why) : 0;
}

void ct_buildinfo_free(struct ct_buildinfo *bi)
{
	free(bi->main_module);
	bi->main_module = NULL;
}

/* ------------------------------------------------------------------ */
/* pclntab */

enum {
	MAGIC_GO12 = 0xfffffffb,
	MAGIC_GO116 = 0xfffffffa,
	MAGIC_GO118 = 0xfffffff0,
	MAGIC_GO120 = 0xfffffff1,
};

/* Where each layout keeps things.  _func offsets are for 64-bit pointers. */
static const struct pcln_layout {
	uint32_t magic;
	const char *range;
	size_t hdr_size;     /* header bytes we read */
	bool entry_offsets;  /* functab and _func hold uint32 offsets from textStart */
	size_t func_size;    /* bytes of _func we may read */
	size_t nameoff_at, args_at;
	int id_at, flag_at;  /* funcID and flag in the newest Go using it; -1 = ambiguous */
} layouts[] = {
	/* entry uintptr, nameoff, args, frame|funcID(1.11), pcsp, pcfile,
	 * pcln, npcdata, funcID(1.12+) ... */
	{MAGIC_GO12, "go1.2-1.15", 16, false, 40, 8, 12, -1, -1},
	/* entry uintptr, nameoff, args, deferreturn, pcsp, pcfile, pcln,
	 * npcdata, cuOffset, funcID, flag, _, nfuncdata */
	{MAGIC_GO116, "go1.16-1.17", 8 + 7 * 8, false, 44, 8, 12, 40, 41},
	/* entryoff u32, nameoff, args, deferreturn, pcsp, pcfile, pcln,
	 * npcdata, cuOffset, funcID, flag, _, nfuncdata */
	{MAGIC_GO118, "go1.18-1.19", 8 + 8 * 8, true, 40, 4, 8, 36, 37},
	/* as 1.18 with startLine before funcID */
	{MAGIC_GO120, "go1.20+", 8 + 8 * 8, true, 44, 4, 8, 40, 41},
};

/* Runtime functions whose funcID each numbering fixes; schemes[] gives the
 * expected IDs in this order (0 = not special in that version). */
static const char *const anchor_names[] = {
	"runtime.main", "runtime.goexit", "runtime.mcall",
	"runtime.morestack", "runtime.asyncPreempt", "runtime.systemstack",
};
#define NANCHORS (sizeof(anchor_names) / sizeof(anchor_names[0]))

/* One funcID numbering (cmd/internal/objabi/funcid.go, later
 * internal/abi/symtab.go) and where _func keeps the ID, per table layout. */
static const struct funcid_scheme {
	uint32_t magic;
	int minor;          /* first Go 1.N that writes it */
	int id_at, flag_at; /* byte offsets in _func; -1 = absent */
	bool id_u32;        /* Go 1.11: funcID was a uint32 in the old frame slot */
	uint8_t wrapper;    /* FuncID_wrapper; 0 = none */
	uint8_t anchor_ids[NANCHORS];
} schemes[] = {
	/* 1.2-1.10: no funcID; the slot at +16 holds the frame size */
	{MAGIC_GO12, 2, -1, -1, false, 0, {0}},
	/* 1.11: normal, runtime_main, goexit, jmpdefer, mcall, morestack,
	 * mstart, rt0_go, asmcgocall, sigpanic, runfinq, gcBgMarkWorker,
	 * systemstack_switch, systemstack, ... debugCallV1 */
	{MAGIC_GO12, 11, 16, -1, true, 0, {1, 2, 4, 5, 0, 13}},
	/* 1.12-1.13: + gopanic, panicwrap, wrapper */
	{MAGIC_GO12, 12, 36, -1, false, 20, {1, 2, 4, 5, 0, 13}},
	/* 1.14-1.15: + handleAsyncEvent, asyncPreempt before wrapper */
	{MAGIC_GO12, 14, 36, -1, false, 22, {1, 2, 4, 5, 21, 13}},
	/* 1.16: same numbering (cgocallback_gofunc renamed cgocallback) */
	{MAGIC_GO116, 16, 40, 41, false, 22, {1, 2, 4, 5, 21, 13}},
	/* 1.17: sorted by name: normal, abort, asmcgocall, asyncPreempt,
	 * cgocallback, debugCallV2, gcBgMarkWorker, goexit, gogo, gopanic,
	 * handleAsyncEvent, jmpdefer, mcall, morestack, mstart, panicwrap,
	 * rt0_go, runfinq, runtime_main, sigpanic, systemstack,
	 * systemstack_switch, wrapper */
	{MAGIC_GO116, 17, 40, 41, false, 22, {18, 7, 12, 13, 3, 20}},
	/* 1.18-1.21: jmpdefer gone */
	{MAGIC_GO118, 18, 36, 37, false, 21, {17, 7, 11, 12, 3, 19}},
	{MAGIC_GO120, 20, 40, 41, false, 21, {17, 7, 11, 12, 3, 19}},
	/* 1.22-1.24: + corostart after cgocallback */
	{MAGIC_GO120, 22, 40, 41, false, 22, {18, 8, 12, 13, 3, 20}},
	/* 1.25+: runfinq split into runFinalizers, runCleanups after
	 * runtime_main */
	{MAGIC_GO120, 25, 40, 41, false, 23, {17, 8, 12, 13, 3, 21}},
};
#define NSCHEMES (sizeof(schemes) / sizeof(schemes[0]))

/* A pclntab being read: the bytes from its header to the end of the section
 * or segment that holds it. */
struct pcln {
	const struct pcln_layout *lay;
	const uint8_t *data;
	size_t size;
	uint64_t nfunc;
	size_t functab, funcdata, names; /* offsets from data */
	size_t field;                    /* functab field size: 8, or 4 (1.18+) */
	uint64_t hdr_text_start;         /* 1.18+, as stored (may need relocating) */
	uint64_t hdr_addr;               /* link-time address of the header */
};

static uint64_t functab_field(const struct pcln *t, uint64_t i)
{
	const uint8_t *p = t->data + t->functab + i * t->field;
	return t->field == 8 ? le64(p) : le32(p);
}

/* Reads and bounds-checks the header.  NULL, or why it is not a pclntab. */
static const char *parse_header(struct pcln *t, const uint8_t *data, size_t size)
{
	memset(t, 0, sizeof(*t));
	if (size < 16)
		return "too short";
	uint32_t magic = le32(data);
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].magic == magic)
			t->lay = &layouts[i];
	if (!t->lay)
		return "unknown magic";
	uint8_t min_lc = data[6];
	if (data[4] || data[5] || (min_lc != 1 && min_lc != 2 && min_lc != 4))
		return "bad header";
	if (data[7] != 8)
		return "not a 64-bit table";
	if (size < t->lay->hdr_size)
		return "too short";
	t->data = data;
	t->size = size;
	t->nfunc = le64(data + 8);
	uint64_t names, funcdata;
	switch (magic) {
	case MAGIC_GO12: /* offsets are from the header itself */
		t->field = 8;
		t->functab = 16;
		names = funcdata = 0;
		break;
	case MAGIC_GO116: /* nfunc, nfiles, funcname, cu, filetab, pctab, pcln */
		t->field = 8;
		names = le64(data + 8 + 2 * 8);
		funcdata = le64(data + 8 + 6 * 8);
		t->functab = (size_t)funcdata;
		break;
	default: /* nfunc, nfiles, textStart, funcname, cu, filetab, pctab, pcln */
		t->field = 4;
		t->hdr_text_start = le64(data + 8 + 2 * 8);
		names = le64(data + 8 + 3 * 8);
		funcdata = le64(data + 8 + 7 * 8);
		t->functab = (size_t)funcdata;
		break;
	}
	/* 1.16+ tables follow the header; 1.2's offsets are from the header. */
	if (magic != MAGIC_GO12 && (names < t->lay->hdr_size || names >= size ||
				    funcdata < t->lay->hdr_size || funcdata >= size))
		return "offsets outside the table";
	t->names = (size_t)names;
	t->funcdata = (size_t)funcdata;
	/* nfunc+1 functab entries (the last is the end PC) must fit. */
	if (t->nfunc == 0 || t->nfunc > (size - t->functab) / (2 * t->field) ||
	    (2 * t->nfunc + 1) * t->field > size - t->functab)
		return "function count does not fit the table";
	return NULL;
}

/* funcs[i].name if the name at NAMEOFF is a NUL-terminated printable string
 * inside the table; NULL if not. */
static const char *func_name(const struct pcln *t, int32_t nameoff)
{
	if (nameoff < 0 || (uint64_t)t->names + (uint64_t)nameoff >= t->size)
		return NULL;
	const char *s = (const char *)t->data + t->names + nameoff;
	size_t max = t->size - t->names - (size_t)nameoff;
	const char *nul = memchr(s, 0, max);
	if (!nul || nul == s)
		return NULL;
	for (const char *c = s; c < nul; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return NULL;
	return s;
}

/* runtime.moduledata (runtime/symtab.go), the same from Go 1.18 to 1.27 up
 * to its text field: pcHeader *pcHeader, six slices (funcnametab, cutab,
 * filetab, pctab, pclntable, ftab), findfunctab, minpc, maxpc, text. */
#define MODDATA_MINPC (8 + 6 * 24 + 8)
#define MODDATA_MAXPC (MODDATA_MINPC + 8)
#define MODDATA_TEXT (MODDATA_MAXPC + 8)

/* The moduledata at link-time address MD is the one of table T if it points
 * at T's header and its minpc/maxpc are T's first and last PC relative to its
 * text; then *text is that. */
static bool moduledata_text(const struct ct_elf *e, const struct pcln *t, uint64_t md,
			    uint64_t *text)
{
	uint64_t hdr, minpc, maxpc, tx;
	if (!read_addr(e, md, &hdr) || hdr != t->hdr_addr || !read_addr(e, md + MODDATA_MINPC, &minpc) ||
	    !read_addr(e, md + MODDATA_MAXPC, &maxpc) || !read_addr(e, md + MODDATA_TEXT, &tx))
		return false;
	if (!tx || minpc != tx + functab_field(t, 0) || maxpc != tx + functab_field(t, 2 * t->nfunc))
		return false;
	*text = tx;
	return true;
}

/* Go 1.26 stopped writing textStart into the pclntab header (it needed a
 * relocation); the runtime takes it from moduledata.text.  Find the
 * moduledata: section .go.module (1.26+), else a word pointing at the header
 * in writable data, or in a PIE, a relative relocation whose addend does. */
static bool text_from_moduledata(const struct ct_elf *e, const struct pcln *t, uint64_t *text)
{
	GElf_Shdr sh;
	if (ct_elf_section(e, ".go.module", &sh, NULL) && moduledata_text(e, t, sh.sh_addr, text))
		return true;
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ct_segment *s = &e->segs[i];
		if ((s->flags & (PF_W | PF_X)) != PF_W)
			continue;
		size_t len;
		const uint8_t *b = segment_bytes(e, s, &len);
		for (size_t off = (size_t)((8 - s->vaddr % 8) % 8); b && off + 8 <= len; off += 8)
			if (le64(b + off) == t->hdr_addr && moduledata_text(e, t, s->vaddr + off, text))
				return true;
	}
	if (!e->pie)
		return false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			if (gelf_getrela(d, (int)i, &r) && GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE &&
			    (uint64_t)r.r_addend == t->hdr_addr && moduledata_text(e, t, r.r_offset, text))
				return true;
		}
	}
	return false;
}

/* The base for 1.18+ entry offsets: runtime.text from .symtab when there is
 * one (the header's copy may be unrelocated), else the header's, through its
 * relocation when the file holds zero, else (Go 1.26+, whose header holds
 * zero) moduledata.text.  Each candidate must put the first and last
 * function inside executable code.  Pre-1.18 entries are absolute: base 0. */
static bool text_base(const struct ct_elf *e, const struct pcln *t, uint64_t *base)
{
	if (!t->lay->entry_offsets) {
		*base = 0;
		return in_exec_segment(e, functab_field(t, 0)) &&
		       in_exec_segment(e, functab_field(t, 2 * t->nfunc) - 1);
	}
	uint64_t cand[3];
	size_t n = 0;
	GElf_Sym sym;
	if (ct_elf_symbol(e, "runtime.text", &sym) && sym.st_value)
		cand[n++] = sym.st_value;
	uint64_t hdr = t->hdr_text_start;
	if (!hdr && e->pie)
		hdr = relative_reloc_at(e, t->hdr_addr + 8 + 2 * 8);
	if (hdr)
		cand[n++] = hdr;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (in_exec_segment(e, cand[i] + functab_field(t, 0)) &&
			    in_exec_segment(e, cand[i] + functab_field(t, 2 * t->nfunc) - 1)) {
				*base = cand[i];
				return true;
			}
		}
		/* Only when nothing else fits: the search reads all data. */
		n = 0;
		if (pass == 0 && text_from_moduledata(e, t, &cand[0]))
			n = 1;
	}
	/* Go's wasm port (wasm/gowasm.c) keeps textStart 0: the offsets are
	 * the PCs themselves. */
	*base = 0;
	return in_exec_segment(e, functab_field(t, 0)) && in_exec_segment(e, functab_field(t, 2 * t->nfunc) - 1);
}

/* The funcID of the function whose _func is at FN under scheme S, or -1 if
 * the slot cannot hold one. */
static int funcid_at(const struct funcid_scheme *s, const uint8_t *fn)
{
	if (s->id_at < 0)
		return -1;
	if (s->id_u32) {
		uint32_t v = le32(fn + s->id_at);
		return v > 0xff ? -1 : (int)v;
	}
	return fn[s->id_at];
}

/* How many anchor functions have the funcID scheme S expects (a name may
 * occur twice, e.g. an ABI wrapper and its assembly body: one must match);
 * *bad = how many are present but match nowhere. */
static int score_scheme(const struct funcid_scheme *s, const struct ct_go_func *funcs,
			const uint8_t *const *raw, size_t n, int *bad)
{
	int good = 0;
	*bad = 0;
	if (s->id_at < 0) /* nothing to check */
		return 0;
	for (size_t a = 0; a < NANCHORS; a++) {
		bool seen = false, match = false;
		for (size_t i = 0; i < n && !match; i++) {
			if (strcmp(funcs[i].name, anchor_names[a]))
				continue;
			seen = true;
			match = funcid_at(s, raw[i]) == s->anchor_ids[a];
		}
		if (match)
			good++;
		else if (seen)
			(*bad)++;
	}
	return good;
}

/* Picks the funcID numbering: the one for the buildinfo version if the
 * anchors agree, else the one most anchors agree with (ties go to the older
 * numbering: a newer one's extra anchor, runtime.asyncPreempt, is in every
 * binary it writes).  NULL if none fits: a Go newer than this table knows,
 * or a damaged table. */
static const struct funcid_scheme *choose_scheme(const struct ct_elf *e, uint32_t magic,
						 const struct ct_go_func *funcs,
						 const uint8_t *const *raw, size_t n)
{
	struct ct_buildinfo bi;
	int minor = -1;
	if (!buildinfo_parse(e, &bi) && bi.major == 1)
		minor = bi.minor;
	ct_buildinfo_free(&bi);

	const struct funcid_scheme *by_version = NULL, *best = NULL;
	int best_good = -1;
	for (size_t i = 0; i < NSCHEMES; i++) {
		const struct funcid_scheme *s = &schemes[i];
		if (s->magic != magic)
			continue;
		if (minor >= s->minor)
			by_version = s;
		int bad, good = score_scheme(s, funcs, raw, n, &bad);
		if (!bad && good > best_good && (good > 0 || s->id_at < 0)) {
			best = s;
			best_good = good;
		}
	}
	if (by_version) {
		int bad, good = score_scheme(by_version, funcs, raw, n, &bad);
		if (!bad && (good > 0 || by_version->id_at < 0))
			return by_version;
	}
	return best;
}

/* When no known numbering fits: FuncID_wrapper has always been the last ID
 * and, unlike the special runtime IDs (one or two functions each), it marks
 * hundreds of functions, so take the most common nonzero ID if it is clearly
 * more than a special one. */
static uint8_t most_common_funcid(const struct ct_go_func *funcs, size_t n)
{
	size_t count[256] = {0};
	for (size_t i = 0; i < n; i++)
		count[funcs[i].funcid]++;
	int best = 0;
	for (int id = 1; id < 256; id++)
		if (count[id] > count[best] || (!best && count[id]))
			best = id;
	return best && count[best] > 4 ? (uint8_t)best : 0;
}

static void free_funcs(struct ct_go_func *funcs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(funcs[i].name);
	free(funcs);
}

/* Where the line tables are (debug/gosym's parsePclnTab): 1.2 keeps pcdata
 * offsets from the header and a file table after the functab; 1.16+ name
 * cutab, filetab and pctab in the header.  A table outside the bytes is left
 * 0 (no positions). */
static void line_tables(const struct pcln *t, struct ct_pclntab *out)
{
	out->data = t->data;
	out->size = t->size;
	out->quantum = t->data[6];
	uint64_t filetab = 0, cutab = 0, pctab = 0, nfiles = 0;
	switch (t->lay->magic) {
	case MAGIC_GO12: {
		size_t at = t->functab + (2 * (size_t)t->nfunc + 1) * t->field;
		if (at + 4 > t->size)
			return;
		filetab = le32(t->data + at);
		if (filetab + 4 > t->size)
			return;
		nfiles = le32(t->data + filetab);
		pctab = 0;
		break;
	}
	case MAGIC_GO116: /* nfunc, nfiles, funcname, cu, filetab, pctab, pcln */
		nfiles = le64(t->data + 16);
		cutab = le64(t->data + 8 + 3 * 8);
		filetab = le64(t->data + 8 + 4 * 8);
		pctab = le64(t->data + 8 + 5 * 8);
		break;
	default: /* nfunc, nfiles, textStart, funcname, cu, filetab, pctab, pcln */
		nfiles = le64(t->data + 16);
		cutab = le64(t->data + 8 + 4 * 8);
		filetab = le64(t->data + 8 + 5 * 8);
		pctab = le64(t->data + 8 + 6 * 8);
		break;
	}
	if (filetab >= t->size || cutab >= t->size || pctab >= t->size || nfiles > t->size)
		return;
	out->filetab = (size_t)filetab;
	out->cutab = (size_t)cutab;
	out->pctab = (size_t)pctab;
	out->nfiletab = (uint32_t)nfiles;
}

/* Validates the table at DATA (link-time address ADDR, SIZE bytes to the end
 * of its section or segment) and reads every function.  NULL, or why not. */
static const char *parse_table(const struct ct_elf *e, const uint8_t *data, size_t size,
			       uint64_t addr, struct ct_pclntab *out)
{
	struct pcln t;
	const char *why = parse_header(&t, data, size);
	if (why)
		return why;
	t.hdr_addr = addr;
	size_t n = (size_t)t.nfunc;
	/* Entries must be sorted: the runtime binary-searches them. */
	for (size_t i = 0; i < n; i++)
		if (functab_field(&t, 2 * i) > functab_field(&t, 2 * i + 2))
			return "function table is not sorted";
	uint64_t base;
	if (!text_base(e, &t, &base))
		return "function entries are outside the executable code";

	struct ct_go_func *funcs = xcalloc(n, sizeof(*funcs));
	const uint8_t **raw = xcalloc(n, sizeof(*raw)); /* each _func */
	for (size_t i = 0; i < n; i++) {
		uint64_t entry_field = functab_field(&t, 2 * i);
		uint64_t funcoff = functab_field(&t, 2 * i + 1);
		if (funcoff >= t.size - t.funcdata || t.lay->func_size > t.size - t.funcdata - funcoff) {
			why = "function record outside the table";
			break;
		}
		const uint8_t *fn = t.data + t.funcdata + funcoff;
		/* _func repeats the entry: a cheap, strong check that this
		 * really is a pclntab and that we read it right. */
		uint64_t own_entry = t.lay->entry_offsets ? le32(fn) : le64(fn);
		if (own_entry != entry_field) {
			why = "function record does not match the function table";
			break;
		}
		const char *name = func_name(&t, (int32_t)le32(fn + t.lay->nameoff_at));
		if (!name) {
			why = "bad function name";
			break;
		}
		raw[i] = fn;
		funcs[i].raw = fn;
		funcs[i].name = xstrdup(name);
		funcs[i].entry = base + entry_field;
		funcs[i].end = base + functab_field(&t, 2 * i + 2);
		funcs[i].args = (int32_t)le32(fn + t.lay->args_at);
	}
	if (why) {
		free_funcs(funcs, n);
		free(raw);
		return why;
	}

	const struct funcid_scheme *s = choose_scheme(e, t.lay->magic, funcs, raw, n);
	for (size_t i = 0; i < n; i++) {
		if (s) {
			int id = funcid_at(s, raw[i]);
			funcs[i].funcid = id < 0 ? 0 : (uint8_t)id;
			funcs[i].flag = s->flag_at < 0 ? 0 : raw[i][s->flag_at];
		} else if (t.lay->id_at >= 0) {
			/* Unknown numbering: the slot is still known. */
			funcs[i].funcid = raw[i][t.lay->id_at];
			funcs[i].flag = raw[i][t.lay->flag_at];
		}
	}
	free(raw);
	uint8_t wrapper = s ? s->wrapper : most_common_funcid(funcs, n);
	for (size_t i = 0; i < n; i++)
		funcs[i].wrapper = wrapper && funcs[i].funcid == wrapper;

	memset(out, 0, sizeof(*out));
	line_tables(&t, out);
	out->magic = t.lay->magic;
	out->version_range = t.lay->range;
	out->funcs = funcs;
	out->nfuncs = n;
	out->wrapper_funcid = wrapper;
	if (t.lay->entry_offsets) {
		out->text_start = base;
	} else {
		GElf_Sym sym;
		out->text_start = ct_elf_symbol(e, "runtime.text", &sym) && sym.st_value
					  ? sym.st_value
					  : funcs[0].entry;
	}
	return NULL;
}

static bool magic_at(const uint8_t *p)
{
	uint32_t m = le32(p);
	return (m == MAGIC_GO12 || m == MAGIC_GO116 || m == MAGIC_GO118 || m == MAGIC_GO120) &&
	       !p[4] && !p[5] && p[7] == 8;
}

int ct_pclntab_read(const struct ct_elf *e, struct ct_pclntab *out)
{
	memset(out, 0, sizeof(*out));
	static const char *const sections[] = {".gopclntab", ".data.rel.ro.gopclntab"};
	const char *section_why = NULL, *section_name = NULL;
	for (size_t i = 0; i < 2; i++) {
		GElf_Shdr sh;
		const uint8_t *p;
		if (!ct_elf_section(e, sections[i], &sh, &p) || !p)
			continue;
		const char *why = parse_table(e, p, sh.sh_size, sh.sh_addr, out);
		if (!why)
			return 0;
		if (!section_why) {
			section_why = why;
			section_name = sections[i];
		}
	}
	/* No (usable) section: search the segments for a header that
	 * validates.  The header holds pointer-sized words, so it is 8-byte
	 * aligned.  Read-only data first, then writable (a PIE's relro), then
	 * executable (old Go linkers put rodata in the text segment). */
	static const uint32_t order[][2] = {{PF_R, 0}, {PF_R | PF_W, PF_W}, {PF_X, PF_X}};
	for (size_t pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < e->nsegs; i++) {
			const struct ct_segment *s = &e->segs[i];
			if ((s->flags & (PF_W | PF_X)) != order[pass][1])
				continue;
			size_t len;
			const uint8_t *b = segment_bytes(e, s, &len);
			size_t off = (size_t)((8 - s->vaddr % 8) % 8);
			for (; b && off + 16 <= len; off += 8) {
				if (!magic_at(b + off))
					continue;
				if (!parse_table(e, b + off, len - off, s->vaddr + off, out))
					return 0;
			}
		}
	}
	if (section_why)
		return ct_fail("%s: its Go pclntab (%s) is unreadable: %s", e->path, section_name,
			       section_why);
	return ct_fail("%s has no Go pclntab (not a gc-compiled Go binary)", e->path);
}

/* One step of a pc-value table (runtime.step): a zigzag value delta and a
 * pc delta in instruction quanta, both uvarints; a zero value delta after
 * the first entry ends the table. */
static bool pcvalue_step(const uint8_t **p, const uint8_t *end, uint64_t *pc, int32_t *val, bool first,
			 uint8_t quantum)
{
	uint32_t uv = 0, pcd = 0;
	for (int which = 0; which < 2; which++) {
		uint32_t v = 0;
		for (int shift = 0;; shift += 7) {
			if (*p >= end || shift > 28)
				return false;
			uint8_t b = *(*p)++;
			v |= (uint32_t)(b & 0x7f) << shift;
			if (!(b & 0x80))
				break;
		}
		if (which == 0) {
			uv = v;
			if (!uv && !first)
				return false;
		} else {
			pcd = v;
		}
	}
	*val += (int32_t)((uv & 1) ? ~(uv >> 1) : uv >> 1);
	*pc += (uint64_t)pcd * (quantum ? quantum : 1);
	return true;
}

/* The value the pc-value table at OFF (from pctab) gives TARGET in the
 * function starting at ENTRY; -1 if none. */
static int32_t pcvalue(const struct ct_pclntab *t, uint32_t off, uint64_t entry, uint64_t target)
{
	if (!off || t->pctab + off >= t->size)
		return -1;
	const uint8_t *p = t->data + t->pctab + off, *end = t->data + t->size;
	uint64_t pc = entry;
	int32_t val = -1;
	for (bool first = true; pcvalue_step(&p, end, &pc, &val, first, t->quantum); first = false)
		if (target < pc)
			return val;
	return -1;
}

static const char *string_at(const struct ct_pclntab *t, size_t off)
{
	if (off >= t->size)
		return NULL;
	const char *s = (const char *)t->data + off;
	return memchr(s, 0, t->size - off) ? s : NULL;
}

const struct ct_go_func *ct_pclntab_func_at(const struct ct_pclntab *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->funcs[mid].entry <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < t->funcs[lo - 1].end ? &t->funcs[lo - 1] : NULL;
}

bool ct_pclntab_pos(const struct ct_pclntab *t, uint64_t pc, const struct ct_go_func **fn,
		    const char **file, int32_t *line)
{
	const struct ct_go_func *f = ct_pclntab_func_at(t, pc);
	if (!f || !f->raw || !t->data)
		return false;
	/* _func: entry (uintptr, a uint32 offset from 1.18), then uint32
	 * nameoff, args, deferreturn, pcsp, pcfile, pcln, npcdata, cuOffset */
	size_t first = t->magic == MAGIC_GO12 || t->magic == MAGIC_GO116 ? 8 : 4;
	uint32_t pcfile = le32(f->raw + first + 4 * 4), pcln = le32(f->raw + first + 5 * 4);
	uint32_t cuoff = t->magic == MAGIC_GO12 ? 0 : le32(f->raw + first + 7 * 4);
	int32_t ln = pcvalue(t, pcln, f->entry, pc), fno = pcvalue(t, pcfile, f->entry, pc);
	if (ln < 0)
		return false;
	*fn = f;
	*line = ln;
	*file = NULL;
	if (t->magic == MAGIC_GO12) {
		if (fno > 0 && (uint32_t)fno < t->nfiletab && t->filetab + 4 * (size_t)fno + 4 <= t->size)
			*file = string_at(t, le32(t->data + t->filetab + 4 * (size_t)fno));
	} else if (fno >= 0) {
		size_t at = t->cutab + 4 * ((size_t)cuoff + (uint32_t)fno);
		uint32_t fnoff = at + 4 <= t->size ? le32(t->data + at) : UINT32_MAX;
		if (fnoff != UINT32_MAX)
			*file = string_at(t, t->filetab + fnoff);
	}
	return true;
}

bool ct_pclntab_sp_at(const struct ct_pclntab *t, uint64_t pc, int32_t *sp)
{
	const struct ct_go_func *f = ct_pclntab_func_at(t, pc);
	if (!f || !f->raw || !t->data)
		return false;
	/* _func: entry, nameoff, args, deferreturn (frame before 1.16), pcsp */
	size_t first = t->magic == MAGIC_GO12 || t->magic == MAGIC_GO116 ? 8 : 4;
	*sp = pcvalue(t, le32(f->raw + first + 3 * 4), f->entry, pc);
	return *sp >= 0;
}

void ct_pclntab_free(struct ct_pclntab *t)
{
	free_funcs(t->funcs, t->nfuncs);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------------ */
/* TLS slot of g, from the code */

/* A gc binary keeps exactly one thread-local variable, g, and its code reads
 * it all over (every ABI0 -> ABIInternal transition in Go 1.17+ reloads R14
 * from it).  The two forms an amd64 linker leaves:
 *   mov %fs:DISP32, REG           64 REX.W 8b /r(mod 00, rm 100) 25 disp32
 *   mov $DISP32, R; mov %fs:(R), REG
 *                                 REX.W c7 /0(R) imm32 64 REX.W 8b /r(rm R)
 * Counting DISP over [lo, hi) (the Go text) gives the slot when .symtab is
 * gone (runtime.tlsg is the exact answer, but only in .symtab). */
bool ct_go_tls_g_from_code(const struct ct_elf *e, uint64_t lo, uint64_t hi, int64_t *off)
{
	if (hi <= lo)
		return false;
	const uint8_t *code = ct_elf_bytes_at(e, lo, (size_t)(hi - lo));
	if (!code)
		return false;
	size_t n = (size_t)(hi - lo);
	struct vote {
		int32_t disp;
		size_t count;
	} votes[8] = {{0, 0}};
	size_t nvotes = 0, total = 0;
	for (size_t i = 0; i + 9 <= n; i++) {
		const uint8_t *p = code + i;
		int32_t disp;
		if (p[0] == 0x64 && (p[1] & 0xf8) == 0x48 && p[2] == 0x8b && (p[3] & 0xc7) == 0x04 &&
		    p[4] == 0x25) {
			disp = (int32_t)le32(p + 5);
		} else if ((p[0] & 0xfa) == 0x48 && p[1] == 0xc7 && (p[2] & 0xf8) == 0xc0 && i + 11 <= n &&
			   p[7] == 0x64 && (p[8] & 0xf8) == 0x48 && p[9] == 0x8b && (p[10] & 0xc0) == 0 &&
			   (p[10] & 7) == (p[2] & 7) && (p[10] & 7) != 4 && (p[10] & 7) != 5 &&
			   ((p[8] & 1) == (p[0] & 1))) {
			disp = (int32_t)le32(p + 3);
		} else {
			continue;
		}
		/* g sits below the thread pointer (variant II TLS). */
		if (disp >= 0 || disp < -4096)
			continue;
		total++;
		size_t k = 0;
		while (k < nvotes && votes[k].disp != disp)
			k++;
		if (k == nvotes) {
			if (nvotes == sizeof(votes) / sizeof(votes[0]))
				continue;
			votes[nvotes++] = (struct vote){disp, 0};
		}
		votes[k].count++;
	}
	size_t best = 0;
	for (size_t k = 1; k < nvotes; k++)
		if (votes[k].count > votes[best].count)
			best = k;
	/* A clear majority of a handful of reads at least. */
	if (!nvotes || votes[best].count < 4 || 2 * votes[best].count <= total)
		return false;
	*off = votes[best].disp;
	return true;
}
