#include "wasm/gowasm.h"
#include "target/gobin.h"
#include "target/goruntime.h"
#include "target/target.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

#define GO_FUNC_VALUE_OFFSET 0x1000 /* cmd/link/internal/wasm: PC_F of defined function 0 */
#define GO_GLOBAL_SP 0
#define GO_GLOBAL_G 2

/* The module's linear memory as its active data segments lay it out (Go
 * splits its data at runs of zeros, so tables span many segments), seen as
 * one writable "segment" of an ELF-like view, plus the code's PC range as
 * the executable one: gobin.c's pclntab and buildinfo readers work on it. */
static uint8_t *memory_view(const struct ct_wasm_module *m, struct ct_elf *e)
{
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < m->ndata; i++) {
		if (!m->data[i].active || !m->data[i].size)
			continue;
		if (m->data[i].mem_offset < lo)
			lo = m->data[i].mem_offset;
		if (m->data[i].mem_offset + m->data[i].size > hi)
			hi = m->data[i].mem_offset + m->data[i].size;
	}
	if (lo >= hi || hi - lo > (1ULL << 30))
		lo = hi = 0;
	uint8_t *image = xcalloc(hi - lo + 1, 1);
	for (size_t i = 0; i < m->ndata; i++)
		if (m->data[i].active && m->data[i].size)
			memcpy(image + (m->data[i].mem_offset - lo), m->bytes + m->data[i].file_offset, m->data[i].size);
	e->data = image;
	e->size = hi - lo;
	e->segs = xcalloc(2, sizeof(*e->segs));
	e->segs[0] = (struct ct_segment){lo, hi - lo, 0, hi - lo, PF_R | PF_W};
	e->segs[1] = (struct ct_segment){(uint64_t)GO_FUNC_VALUE_OFFSET << 16,
					 (uint64_t)(m->nfuncs - m->nimported + 1) << 16, hi - lo, 0, PF_R | PF_X};
	e->nsegs = 2;
	return image;
}

/* "go1.19.8" from the producers section (language Go go1.19.8): Go's wasm
 * modules of these versions carry no build info. */
static void producers_version(const struct ct_wasm_module *m, char *out, size_t n)
{
	const struct ct_wasm_section *s = ct_wasm_section(m, WSEC_CUSTOM, "producers");
	if (!s)
		return;
	const char *p = (const char *)m->bytes + s->payload;
	for (size_t i = 0; i + 4 < s->size; i++)
		if (!memcmp(p + i, "go1.", 4)) {
			size_t k = 0;
			while (i + k < s->size && k + 1 < n && (p[i + k] == '.' || (p[i + k] >= '0' && p[i + k] <= '9') ||
								  (p[i + k] >= 'a' && p[i + k] <= 'z')))
				k++;
			snprintf(out, n, "%.*s", (int)k, p + i);
			return;
		}
}

void ct_gowasm_read(const struct ct_wasm_module *m, const char *path, struct ct_gowasm *out)
{
	memset(out, 0, sizeof(*out));
	struct ct_elf e;
	uint8_t *image = memory_view(m, &e);
	e.path = (char *)path;
	struct ct_buildinfo bi;
	if (ct_buildinfo_read(&e, &bi) == 0) {
		snprintf(out->go_version, sizeof(out->go_version), "%s", bi.go_version);
		out->go_minor = bi.major == 1 ? bi.minor : 0;
		out->main_module = bi.main_module ? xstrdup(bi.main_module) : NULL;
		ct_buildinfo_free(&bi);
	} else {
		producers_version(m, out->go_version, sizeof(out->go_version));
		sscanf(out->go_version, "go1.%d", &out->go_minor);
	}
	out->names = xcalloc(m->nfuncs ? m->nfuncs : 1, sizeof(char *));
	out->wrapper = xcalloc(m->nfuncs ? m->nfuncs : 1, sizeof(bool));
	out->names_source = "name section";
	struct ct_pclntab pt;
	if (ct_pclntab_read(&e, &pt) == 0) {
		size_t named = 0;
		for (size_t i = 0; i < pt.nfuncs; i++) {
			uint64_t pcf = pt.funcs[i].entry >> 16;
			if ((pt.funcs[i].entry & 0xffff) || pcf < GO_FUNC_VALUE_OFFSET)
				continue;
			uint64_t idx = m->nimported + pcf - GO_FUNC_VALUE_OFFSET;
			if (idx >= m->nfuncs || out->names[idx])
				continue;
			out->names[idx] = xstrdup(pt.funcs[i].name);
			out->wrapper[idx] = pt.funcs[i].wrapper;
			named++;
		}
		if (named)
			out->names_source = "pclntab";
		ct_pclntab_free(&pt);
	} else {
		ct_debug("%s: Go names from the name section: %s", path, ct_error());
	}
	free(e.segs);
	free(image);
	struct ct_bin_config bc = {0};
	ct_go_offsets_by_version(out->go_minor ? out->go_minor : 19, &bc);
	out->cfg.on = true;
	out->cfg.sp_global = GO_GLOBAL_SP;
	out->cfg.g_global = GO_GLOBAL_G;
	out->cfg.goid_off = bc.goid_off;
	out->cfg.stack_hi_off = bc.stack_hi_off;
	for (uint32_t f = m->nimported; f < m->nfuncs; f++)
		if (ct_go_is_morestack(m->funcs[f].name) && out->cfg.nmorestack < CT_WASM_MAX_MORESTACK)
			out->cfg.morestack[out->cfg.nmorestack++] = f;
}

void ct_gowasm_free(struct ct_gowasm *g, uint32_t nfuncs)
{
	for (uint32_t i = 0; g->names && i < nfuncs; i++)
		free(g->names[i]);
	free(g->names);
	free(g->wrapper);
	free(g->main_module);
	memset(g, 0, sizeof(*g));
}

bool ct_gowasm_traceable(const struct ct_wasm_module *m, const struct ct_gowasm *g, uint32_t func)
{
	const char *goname = g->names ? g->names[func] : NULL;
	if (g->wrapper && g->wrapper[func])
		return false;
	const struct ct_wasm_functype *t = &m->types[m->funcs[func].type];
	if (m->funcs[func].imported || t->nparams != 1 || t->nresults != 1 || t->params[0].code != WT_I32 ||
	    t->results[0].code != WT_I32)
		return false;
	const char *n = goname ? goname : m->funcs[func].name;
	return !ct_go_must_not_probe(n) && strncmp(n, "wasm_", 5) && strcmp(n, "runtime.wasmExit");
}
