#include "wasm/module.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

uint64_t ct_leb_u(const uint8_t **p, const uint8_t *end, bool *bad)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (*p >= end) {
			*bad = true;
			return 0;
		}
		uint8_t b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	*bad = true;
	return 0;
}

int64_t ct_leb_s(const uint8_t **p, const uint8_t *end, bool *bad)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		if (*p >= end || shift >= 70) {
			*bad = true;
			return 0;
		}
		b = *(*p)++;
		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= (int64_t)(~0ULL << shift);
	return v;
}

size_t ct_leb_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		out[n++] = b | (v ? 0x80 : 0);
	} while (v);
	return n;
}

const char *ct_wasm_valtype_name(uint8_t code)
{
	switch (code) {
	case WT_I32:
		return "i32";
	case WT_I64:
		return "i64";
	case WT_F32:
		return "f32";
	case WT_F64:
		return "f64";
	case 0x7b:
		return "v128";
	case 0x70:
		return "funcref";
	case 0x6f:
		return "externref";
	case 0x69:
		return "exnref";
	default:
		return "ref";
	}
}

/* A value type at *P: one byte, or 0x63/0x64 (ref null? ht) + a heap type. */
static bool read_valtype(const uint8_t **p, const uint8_t *end, struct ct_wasm_valtype *vt)
{
	bool bad = false;
	const uint8_t *s = *p;
	if (s >= end)
		return false;
	vt->code = *s;
	(*p)++;
	if (vt->code == 0x63 || vt->code == 0x64)
		ct_leb_s(p, end, &bad);
	vt->p = s;
	vt->len = (uint8_t)(*p - s);
	return !bad;
}

bool ct_wasm_skip_valtype(const uint8_t **p, const uint8_t *end)
{
	struct ct_wasm_valtype vt;
	return read_valtype(p, end, &vt);
}

/* A block type: empty (0x40), a value type, or a type index (s33). */
static bool skip_blocktype(const uint8_t **p, const uint8_t *end)
{
	if (*p >= end)
		return false;
	uint8_t b = **p;
	if (b == 0x40) {
		(*p)++;
		return true;
	}
	if ((b & 0xc0) == 0x40) { /* a negative one-byte s33: a value type */
		struct ct_wasm_valtype vt;
		return read_valtype(p, end, &vt);
	}
	bool bad = false;
	ct_leb_s(p, end, &bad);
	return !bad;
}

static bool skip_memarg(const uint8_t **p, const uint8_t *end)
{
	bool bad = false;
	uint64_t align = ct_leb_u(p, end, &bad);
	if (align & 0x40) /* multi-memory: a memory index follows */
		ct_leb_u(p, end, &bad);
	ct_leb_u(p, end, &bad);
	return !bad;
}

static bool skip_bytes(const uint8_t **p, const uint8_t *end, size_t n)
{
	if ((size_t)(end - *p) < n)
		return false;
	*p += n;
	return true;
}

static bool skip_u(const uint8_t **p, const uint8_t *end, int n)
{
	bool bad = false;
	while (n--)
		ct_leb_u(p, end, &bad);
	return !bad;
}

static bool gc_insn(uint32_t sub, const uint8_t **p, const uint8_t *end)
{
	bool bad = false;
	switch (sub) {
	case 0: case 1: case 6: case 7: case 11: case 12: case 13: case 14: case 16:
		return skip_u(p, end, 1);
	case 2: case 3: case 4: case 5: case 8: case 9: case 10: case 17: case 18: case 19:
		return skip_u(p, end, 2);
	case 15: case 26: case 27: case 28: case 29: case 30:
		return true;
	case 20: case 21: case 22: case 23: /* ref.test / ref.cast: heap type */
		ct_leb_s(p, end, &bad);
		return !bad;
	case 24: case 25: /* br_on_cast(_fail): flags, label, ht1, ht2 */
		if (!skip_bytes(p, end, 1) || !skip_u(p, end, 1))
			return false;
		ct_leb_s(p, end, &bad);
		ct_leb_s(p, end, &bad);
		return !bad;
	default:
		return false;
	}
}

static bool fc_insn(uint32_t sub, const uint8_t **p, const uint8_t *end)
{
	switch (sub) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:
		return true;
	case 8: case 10: case 12: case 14:
		return skip_u(p, end, 2);
	case 9: case 11: case 13: case 15: case 16: case 17:
		return skip_u(p, end, 1);
	default:
		return false;
	}
}

static bool simd_insn(uint32_t sub, const uint8_t **p, const uint8_t *end)
{
	if (sub <= 0x0b || sub == 0x5c || sub == 0x5d)
		return skip_memarg(p, end);
	if (sub == 0x0c || sub == 0x0d)
		return skip_bytes(p, end, 16);
	if (sub >= 0x15 && sub <= 0x22)
		return skip_bytes(p, end, 1);
	if (sub >= 0x54 && sub <= 0x5b)
		return skip_memarg(p, end) && skip_bytes(p, end, 1);
	return sub <= 0x113;
}

static bool atomic_insn(uint32_t sub, const uint8_t **p, const uint8_t *end)
{
	if (sub == 0x03)
		return skip_bytes(p, end, 1);
	if (sub <= 0x02 || (sub >= 0x10 && sub <= 0x4e))
		return skip_memarg(p, end);
	return false;
}

int ct_wasm_next_insn(const uint8_t **pp, const uint8_t *end, struct ct_wasm_insn *in)
{
	const uint8_t *p = *pp;
	bool bad = false, ok = true;
	memset(in, 0, sizeof(*in));
	in->start = p;
	if (p >= end)
		return ct_fail("function body ends inside an instruction");
	uint8_t op = *p++;
	in->op = op;
	switch (op) {
	case 0x02: case 0x03: case 0x04: case 0x06:
		in->kind = WI_BLOCK;
		ok = skip_blocktype(&p, end);
		break;
	case 0x1f: { /* try_table bt vec(catch) */
		in->kind = WI_BLOCK;
		ok = skip_blocktype(&p, end);
		uint64_t n = ct_leb_u(&p, end, &bad);
		for (uint64_t i = 0; ok && !bad && i < n; i++) {
			if (p >= end) {
				ok = false;
				break;
			}
			uint8_t k = *p++;
			if (k > 3) {
				ok = false;
				break;
			}
			if (k < 2)
				ct_leb_u(&p, end, &bad); /* tag */
			uint32_t l = (uint32_t)ct_leb_u(&p, end, &bad);
			if (in->ntry_table_labels < 16)
				in->try_table_labels[in->ntry_table_labels++] = l;
		}
		break;
	}
	case 0x05:
		in->kind = WI_ELSE;
		break;
	case 0x07: /* catch tag */
		in->kind = WI_ELSE;
		in->catch_arm = true;
		ok = skip_u(&p, end, 1);
		break;
	case 0x19: /* catch_all */
		in->kind = WI_ELSE;
		in->catch_arm = true;
		break;
	case 0x0b:
		in->kind = WI_END;
		break;
	case 0x18: /* delegate label */
		in->kind = WI_DELEGATE;
		ok = skip_u(&p, end, 1);
		break;
	case 0x0f:
		in->kind = WI_RETURN;
		break;
	case 0x10: case 0x12: case 0xd2:
		in->kind = op == 0x10 ? WI_CALL : op == 0x12 ? WI_RETURN_CALL : WI_REF_FUNC;
		in->index_at = p;
		in->index = (uint32_t)ct_leb_u(&p, end, &bad);
		in->index_end = p;
		break;
	case 0x13: /* return_call_indirect type table */
		in->kind = WI_RETURN_CALL_OTHER;
		ok = skip_u(&p, end, 2);
		break;
	case 0x15: /* return_call_ref type */
		in->kind = WI_RETURN_CALL_OTHER;
		ok = skip_u(&p, end, 1);
		break;
	case 0x00: case 0x01: case 0x0a: case 0x1a: case 0x1b: case 0xd1: case 0xd3: case 0xd4:
		break;
	case 0x08: case 0x09: case 0x0c: case 0x0d: case 0x14: case 0xd5: case 0xd6:
	case 0x20: case 0x21: case 0x22: case 0x23: case 0x24: case 0x25: case 0x26:
		ok = skip_u(&p, end, 1);
		break;
	case 0x0e: { /* br_table vec(l) l */
		uint64_t n = ct_leb_u(&p, end, &bad);
		if (!bad && n > (uint64_t)(end - p))
			bad = true;
		for (uint64_t i = 0; !bad && i <= n; i++)
			ct_leb_u(&p, end, &bad);
		break;
	}
	case 0x11:
		ok = skip_u(&p, end, 2);
		break;
	case 0x1c: { /* select t* */
		uint64_t n = ct_leb_u(&p, end, &bad);
		for (uint64_t i = 0; ok && !bad && i < n; i++) {
			struct ct_wasm_valtype vt;
			ok = read_valtype(&p, end, &vt);
		}
		break;
	}
	case 0x3f: case 0x40:
		ok = skip_u(&p, end, 1);
		break;
	case 0x41:
		ct_leb_s(&p, end, &bad);
		break;
	case 0x42:
		ct_leb_s(&p, end, &bad);
		break;
	case 0x43:
		ok = skip_bytes(&p, end, 4);
		break;
	case 0x44:
		ok = skip_bytes(&p, end, 8);
		break;
	case 0xd0:
		ct_leb_s(&p, end, &bad);
		break;
	case 0xfb: case 0xfc: case 0xfd: case 0xfe: {
		uint32_t sub = (uint32_t)ct_leb_u(&p, end, &bad);
		in->sub = sub;
		if (bad)
			break;
		ok = op == 0xfb ? gc_insn(sub, &p, end)
		     : op == 0xfc ? fc_insn(sub, &p, end)
		     : op == 0xfd ? simd_insn(sub, &p, end)
				  : atomic_insn(sub, &p, end);
		if (!ok)
			return ct_fail("unknown instruction 0x%02x %u at byte %td of a function body", op, sub,
				       in->start - *pp);
		break;
	}
	default:
		if (op >= 0x28 && op <= 0x3e) {
			ok = skip_memarg(&p, end);
			break;
		}
		if (op >= 0x45 && op <= 0xc4)
			break;
		return ct_fail("unknown instruction 0x%02x", op);
	}
	if (bad || !ok)
		return ct_fail("truncated immediates of instruction 0x%02x", op);
	in->end = p;
	*pp = p;
	return 0;
}

/* ------------------------------------------------------------------ */

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t r_u(struct reader *r)
{
	return ct_leb_u(&r->p, r->end, &r->bad);
}

static const uint8_t *r_name(struct reader *r, uint32_t *len)
{
	uint64_t n = r_u(r);
	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		*len = 0;
		return NULL;
	}
	const uint8_t *s = r->p;
	r->p += n;
	*len = (uint32_t)n;
	return s;
}

static bool r_skip_expr(struct reader *r)
{
	for (;;) {
		struct ct_wasm_insn in;
		if (ct_wasm_next_insn(&r->p, r->end, &in))
			return false;
		if (in.kind == WI_END)
			return true;
	}
}

static bool r_limits(struct reader *r)
{
	if (r->p >= r->end)
		return false;
	uint8_t fl = *r->p++;
	r_u(r);
	if (fl & 1)
		r_u(r);
	return !r->bad;
}

static int parse_types(struct ct_wasm_module *m, struct reader *r)
{
	uint64_t n = r_u(r);
	CT_VEC(struct ct_wasm_functype) v = {0};
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		if (r->p >= r->end)
			break;
		uint8_t form = *r->p++;
		uint64_t group = 1;
		if (form == 0x4e) { /* rec group */
			group = r_u(r);
			if (r->p >= r->end)
				break;
			form = *r->p++;
		}
		for (uint64_t g = 0; g < group && !r->bad; g++) {
			if (g) {
				if (r->p >= r->end)
					break;
				form = *r->p++;
			}
			if (form == 0x50 || form == 0x4f) { /* sub (final)? supertypes comptype */
				uint64_t ns = r_u(r);
				for (uint64_t k = 0; k < ns; k++)
					r_u(r);
				if (r->p >= r->end)
					break;
				form = *r->p++;
			}
			struct ct_wasm_functype ft = {0};
			if (form == 0x60) {
				ft.is_func = true;
				for (int side = 0; side < 2 && !r->bad; side++) {
					uint64_t k = r_u(r);
					if (k > (uint64_t)(r->end - r->p)) {
						r->bad = true;
						break;
					}
					struct ct_wasm_valtype *vt = xcalloc(k ? k : 1, sizeof(*vt));
					for (uint64_t j = 0; j < k; j++)
						if (!read_valtype(&r->p, r->end, &vt[j]))
							r->bad = true;
					if (side == 0) {
						ft.params = vt;
						ft.nparams = (uint32_t)k;
					} else {
						ft.results = vt;
						ft.nresults = (uint32_t)k;
					}
				}
			} else if (form == 0x5f) { /* struct: fields (storage type, mut) */
				uint64_t k = r_u(r);
				for (uint64_t j = 0; j < k && !r->bad; j++) {
					struct ct_wasm_valtype vt;
					if (r->p < r->end && (*r->p == 0x78 || *r->p == 0x77))
						r->p++;
					else if (!read_valtype(&r->p, r->end, &vt))
						r->bad = true;
					r->p++;
				}
			} else if (form == 0x5e) { /* array: one field */
				struct ct_wasm_valtype vt;
				if (r->p < r->end && (*r->p == 0x78 || *r->p == 0x77))
					r->p++;
				else if (!read_valtype(&r->p, r->end, &vt))
					r->bad = true;
				r->p++;
			} else {
				r->bad = true;
			}
			CT_VEC_PUSH(v, ft);
		}
	}
	m->types = v.v;
	m->ntypes = (uint32_t)v.n;
	return r->bad ? -1 : 0;
}

static char *dup_name(const uint8_t *s, uint32_t n)
{
	char *o = xmalloc(n + 1);
	memcpy(o, s, n);
	o[n] = 0;
	return o;
}

typedef CT_VEC(struct ct_wasm_func) funcvec;

static int parse_imports(struct ct_wasm_module *m, struct reader *r, funcvec *fv)
{
	uint64_t n = r_u(r);
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		uint32_t ml, fl;
		const uint8_t *mod = r_name(r, &ml), *field = r_name(r, &fl);
		if (r->bad || r->p >= r->end)
			return -1;
		uint8_t kind = *r->p++;
		if (ml == 22 && !memcmp(mod, "wasi_snapshot_preview1", 22))
			m->wasi = true;
		if (ml == 2 && !memcmp(mod, "go", 2))
			m->go_js = true;
		if (ml == 4 && !memcmp(mod, "gojs", 4)) /* Go 1.21+ js glue */
			m->go_js = true;
		switch (kind) {
		case 0: {
			struct ct_wasm_func f = {0};
			f.type = (uint32_t)r_u(r);
			f.imported = true;
			f.import_module = (const char *)mod;
			f.import_module_len = ml;
			f.import_field = (const char *)field;
			f.import_field_len = fl;
			CT_VEC_PUSH(*fv, f);
			break;
		}
		case 1: { /* table: reftype limits */
			struct ct_wasm_valtype vt;
			if (!read_valtype(&r->p, r->end, &vt) || !r_limits(r))
				return -1;
			break;
		}
		case 2:
			if (!r_limits(r))
				return -1;
			break;
		case 3: {
			struct ct_wasm_valtype vt;
			if (!read_valtype(&r->p, r->end, &vt) || r->p >= r->end)
				return -1;
			r->p++;
			m->nimported_globals++;
			break;
		}
		case 4: /* tag: attribute, type */
			r->p++;
			r_u(r);
			break;
		default:
			return -1;
		}
	}
	return r->bad ? -1 : 0;
}

static void parse_names(struct ct_wasm_module *m, struct reader *r)
{
	while (r->p < r->end && !r->bad) {
		uint8_t id = *r->p++;
		uint64_t size = r_u(r);
		if (r->bad || size > (uint64_t)(r->end - r->p))
			return;
		struct reader sub = {r->p, r->p + size, false};
		r->p += size;
		if (id != 1)
			continue;
		uint64_t n = r_u(&sub);
		for (uint64_t i = 0; i < n && !sub.bad; i++) {
			uint64_t idx = r_u(&sub);
			uint32_t len;
			const uint8_t *s = r_name(&sub, &len);
			if (sub.bad || idx >= m->nfuncs || !len)
				continue;
			free(m->funcs[idx].name);
			m->funcs[idx].name = dup_name(s, len);
		}
	}
}

static void parse_exports(struct ct_wasm_module *m, struct reader *r)
{
	uint64_t n = r_u(r);
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		uint32_t len;
		const uint8_t *s = r_name(r, &len);
		if (r->bad || r->p >= r->end)
			return;
		uint8_t kind = *r->p++;
		uint64_t idx = r_u(r);
		if (kind == 0 && idx < m->nfuncs && !m->funcs[idx].name && len)
			m->funcs[idx].name = dup_name(s, len);
	}
}

static void parse_data(struct ct_wasm_module *m, struct reader *r)
{
	uint64_t n = r_u(r);
	CT_VEC(struct ct_wasm_data) v = {0};
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		struct ct_wasm_data d = {0};
		uint64_t flags = r_u(r);
		if (flags == 2)
			r_u(r);
		if (flags == 0 || flags == 2) {
			/* the usual offset: i32.const N end */
			if (r->p + 1 < r->end && r->p[0] == 0x41) {
				const uint8_t *q = r->p + 1;
				bool bad = false;
				int64_t off = ct_leb_s(&q, r->end, &bad);
				if (!bad && q < r->end && *q == 0x0b) {
					d.active = true;
					d.mem_offset = (uint32_t)off;
				}
			}
			if (!r_skip_expr(r))
				break;
		}
		uint64_t size = r_u(r);
		if (r->bad || size > (uint64_t)(r->end - r->p))
			break;
		d.file_offset = (size_t)(r->p - m->bytes);
		d.size = size;
		r->p += size;
		CT_VEC_PUSH(v, d);
	}
	m->data = v.v;
	m->ndata = v.n;
}

const struct ct_wasm_section *ct_wasm_section(const struct ct_wasm_module *m, uint8_t id, const char *name)
{
	for (size_t i = 0; i < m->nsecs; i++)
		if (m->secs[i].id == id && (!name || !strcmp(m->secs[i].name, name)))
			return &m->secs[i];
	return NULL;
}

int ct_wasm_parse(struct ct_wasm_module *m, const uint8_t *bytes, size_t size, const char *path)
{
	memset(m, 0, sizeof(*m));
	m->bytes = bytes;
	m->size = size;
	if (size < 8 || memcmp(bytes, CT_WASM_MAGIC, 4))
		return ct_fail("%s is not a WebAssembly module", path);
	if (bytes[4] != 1 || bytes[5] || bytes[6] || bytes[7])
		return ct_fail("%s is a WebAssembly binary of version %u, not 1 (a component or a newer format)", path,
			       bytes[4] | bytes[5] << 8);
	struct reader r = {bytes + 8, bytes + size, false};
	CT_VEC(struct ct_wasm_section) secs = {0};
	while (r.p < r.end) {
		struct ct_wasm_section s = {0};
		s.start = (size_t)(r.p - bytes);
		s.id = *r.p++;
		uint64_t n = r_u(&r);
		if (r.bad || n > (uint64_t)(r.end - r.p)) {
			CT_VEC_FREE(secs);
			return ct_fail("%s: section %u at byte %zu runs past the end of the file (damaged module)", path,
				       s.id, s.start);
		}
		s.payload = (size_t)(r.p - bytes);
		s.size = n;
		if (s.id == WSEC_CUSTOM) {
			struct reader nr = {r.p, r.p + n, false};
			uint32_t len;
			const uint8_t *nm = r_name(&nr, &len);
			if (!nr.bad)
				snprintf(s.name, sizeof(s.name), "%.*s", (int)len, (const char *)nm);
			s.payload = (size_t)(nr.p - bytes);
			s.size = n - (size_t)(nr.p - r.p);
		} else if (s.id > WSEC_TAG) {
			CT_VEC_FREE(secs);
			return ct_fail("%s: unknown section id %u (damaged module?)", path, s.id);
		}
		r.p += n;
		CT_VEC_PUSH(secs, s);
	}
	m->secs = secs.v;
	m->nsecs = secs.n;

	funcvec fv = {0};
	const char *what = NULL;
	for (size_t i = 0; i < m->nsecs && !what; i++) {
		const struct ct_wasm_section *s = &m->secs[i];
		struct reader sr = {bytes + s->payload, bytes + s->payload + s->size, false};
		switch (s->id) {
		case WSEC_CUSTOM:
			if (!strcmp(s->name, "linking") || !strncmp(s->name, "reloc.", 6))
				m->is_object = true;
			if (!strcmp(s->name, ".debug_info"))
				m->has_dwarf = true;
			if (!strcmp(s->name, "go.buildid") || !strcmp(s->name, "go:buildid"))
				m->go_buildid = true;
			break;
		case WSEC_TYPE:
			if (parse_types(m, &sr))
				what = "type";
			break;
		case WSEC_IMPORT:
			if (parse_imports(m, &sr, &fv))
				what = "import";
			m->nimported = (uint32_t)fv.n;
			break;
		case WSEC_FUNCTION: {
			uint64_t n = r_u(&sr);
			for (uint64_t k = 0; k < n && !sr.bad; k++) {
				struct ct_wasm_func f = {0};
				f.type = (uint32_t)r_u(&sr);
				CT_VEC_PUSH(fv, f);
			}
			if (sr.bad)
				what = "function";
			break;
		}
		case WSEC_GLOBAL: {
			uint64_t n = r_u(&sr);
			m->nglobals = (uint32_t)n;
			break;
		}
		case WSEC_CODE: {
			uint64_t n = r_u(&sr);
			if (n != fv.n - m->nimported) {
				what = "code (its count differs from the function section's)";
				break;
			}
			for (uint64_t k = 0; k < n && !sr.bad; k++) {
				uint64_t len = r_u(&sr);
				if (sr.bad || len > (uint64_t)(sr.end - sr.p)) {
					sr.bad = true;
					break;
				}
				fv.v[m->nimported + k].body = (size_t)(sr.p - bytes);
				fv.v[m->nimported + k].body_size = len;
				sr.p += len;
			}
			if (sr.bad)
				what = "code";
			break;
		}
		}
	}
	m->funcs = fv.v;
	m->nfuncs = (uint32_t)fv.n;
	m->nglobals += m->nimported_globals;
	if (what)
		return ct_fail("%s: damaged %s section", path, what);
	for (uint32_t i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].type >= m->ntypes || !m->types[m->funcs[i].type].is_func)
			return ct_fail("%s: function %u has no valid type (damaged module)", path, i);
	/* Names: the name section, else exports, else the index. */
	const struct ct_wasm_section *ns = ct_wasm_section(m, WSEC_CUSTOM, "name");
	if (ns) {
		struct reader nr = {bytes + ns->payload, bytes + ns->payload + ns->size, false};
		parse_names(m, &nr);
	}
	const struct ct_wasm_section *es = ct_wasm_section(m, WSEC_EXPORT, NULL);
	if (es) {
		struct reader er = {bytes + es->payload, bytes + es->payload + es->size, false};
		parse_exports(m, &er);
	}
	for (uint32_t i = 0; i < m->nfuncs; i++)
		if (!m->funcs[i].name)
			m->funcs[i].name = m->funcs[i].imported
						   ? xasprintf("%.*s.%.*s", (int)m->funcs[i].import_module_len,
							       m->funcs[i].import_module, (int)m->funcs[i].import_field_len,
							       m->funcs[i].import_field)
						   : xasprintf("wasm-function[%u]", i);
	const struct ct_wasm_section *ds = ct_wasm_section(m, WSEC_DATA, NULL);
	if (ds) {
		struct reader dr = {bytes + ds->payload, bytes + ds->payload + ds->size, false};
		parse_data(m, &dr);
	}
	return 0;
}

void ct_wasm_free(struct ct_wasm_module *m)
{
	for (uint32_t i = 0; i < m->ntypes; i++) {
		free(m->types[i].params);
		free(m->types[i].results);
	}
	free(m->types);
	for (uint32_t i = 0; i < m->nfuncs; i++)
		free(m->funcs[i].name);
	free(m->funcs);
	free(m->secs);
	free(m->data);
	memset(m, 0, sizeof(*m));
}

char *ct_wasm_sig(const struct ct_wasm_module *m, uint32_t func)
{
	const struct ct_wasm_functype *t = &m->types[m->funcs[func].type];
	struct ct_buf b = {0};
	buf_cstr(&b, "(");
	for (uint32_t i = 0; i < t->nparams; i++) {
		if (i)
			buf_cstr(&b, ", ");
		buf_cstr(&b, ct_wasm_valtype_name(t->params[i].code));
	}
	buf_cstr(&b, ")");
	if (t->nresults) {
		buf_cstr(&b, " -> ");
		if (t->nresults > 1)
			buf_cstr(&b, "(");
		for (uint32_t i = 0; i < t->nresults; i++) {
			if (i)
				buf_cstr(&b, ", ");
			buf_cstr(&b, ct_wasm_valtype_name(t->results[i].code));
		}
		if (t->nresults > 1)
			buf_cstr(&b, ")");
	}
	buf_put(&b, "", 1);
	return (char *)b.p;
}
