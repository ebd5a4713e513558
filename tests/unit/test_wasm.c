/* The wasm backend's pure parts: LEB128, the instruction decoder (every
 * opcode family's immediates), the rewriter's index shifting on a real
 * module built by the test run (wasi_shift.wasm, from shift.wat), and the
 * Go facts of a real Go js/wasm module (go_app.wasm). */
#include "unit.h"

#include <stdlib.h>

#include "util/util.h"
#include "wasm/gowasm.h"
#include "wasm/module.h"
#include "wasm/rewrite.h"
#include "wasm/wasm.h"
#include "wasm/wire.h"

TEST(wasm_leb128)
{
	uint8_t b[16];
	bool bad = false;
	const uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, 0xffffffffULL, UINT64_MAX};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t n = ct_leb_put(b, vals[i]);
		const uint8_t *p = b;
		CHECK_EQ_U(ct_leb_u(&p, b + n, &bad), vals[i]);
		CHECK_EQ_U(p - b, n);
		CHECK(!bad);
	}
	/* signed: -1, -64, -65, 63, 64, INT32_MIN */
	const uint8_t m1[] = {0x7f}, m64[] = {0x40}, m65[] = {0xbf, 0x7f}, p63[] = {0x3f}, p64[] = {0xc0, 0x00},
		      imin[] = {0x80, 0x80, 0x80, 0x80, 0x78};
	const uint8_t *p = m1;
	CHECK_EQ_I(ct_leb_s(&p, m1 + 1, &bad), -1);
	p = m64;
	CHECK_EQ_I(ct_leb_s(&p, m64 + 1, &bad), -64);
	p = m65;
	CHECK_EQ_I(ct_leb_s(&p, m65 + 2, &bad), -65);
	p = p63;
	CHECK_EQ_I(ct_leb_s(&p, p63 + 1, &bad), 63);
	p = p64;
	CHECK_EQ_I(ct_leb_s(&p, p64 + 2, &bad), 64);
	p = imin;
	CHECK_EQ_I(ct_leb_s(&p, imin + 5, &bad), INT32_MIN);
	CHECK(!bad);
	/* truncated: a continuation bit at the end */
	const uint8_t cut[] = {0x80, 0x80};
	p = cut;
	ct_leb_u(&p, cut + 2, &bad);
	CHECK(bad);
}

/* Decodes BYTES as one instruction; returns its length, -1 on failure. */
static long insn_len(const uint8_t *bytes, size_t n, struct ct_wasm_insn *in)
{
	const uint8_t *p = bytes;
	if (ct_wasm_next_insn(&p, bytes + n, in))
		return -1;
	return p - bytes;
}

TEST(wasm_decoder_immediates)
{
	struct ct_wasm_insn in;
	static const struct {
		uint8_t b[24];
		uint8_t len;
	} cases[] = {
		{{0x02, 0x40}, 2},                            /* block (empty) */
		{{0x03, 0x7f}, 2},                            /* loop (result i32) */
		{{0x04, 0x85, 0x01}, 3},                      /* if (type 133) */
		{{0x02, 0x63, 0x70}, 3},                      /* block (result (ref null func)) */
		{{0x0e, 0x02, 0x00, 0x01, 0x02}, 5},          /* br_table 0 1 2 */
		{{0x11, 0x81, 0x01, 0x00}, 4},                /* call_indirect type 129 table 0 */
		{{0x1c, 0x01, 0x7f}, 3},                      /* select (result i32) */
		{{0x28, 0x02, 0x80, 0x08}, 4},                /* i32.load align=2 offset=1024 */
		{{0x29, 0x43, 0x01, 0x10}, 4},                /* i64.load with memory index 1 */
		{{0x41, 0x80, 0x80, 0x80, 0x80, 0x78}, 6},    /* i32.const INT32_MIN */
		{{0x43, 0, 0, 0x80, 0x3f}, 5},                /* f32.const 1.0 */
		{{0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 9},    /* f64.const 1.0 */
		{{0xd0, 0x70}, 2},                            /* ref.null func */
		{{0xfc, 0x08, 0x01, 0x00}, 4},                /* memory.init 1 0 */
		{{0xfc, 0x0e, 0x00, 0x01}, 4},                /* table.copy 0 1 */
		{{0xfc, 0x02}, 2},                            /* i32.trunc_sat_f64_s */
		{{0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 18}, /* v128.const */
		{{0xfd, 0x0d, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 18},  /* i8x16.shuffle */
		{{0xfd, 0x15, 0x03}, 3},                      /* i8x16.extract_lane_s 3 */
		{{0xfd, 0x54, 0x00, 0x04, 0x07}, 5},          /* v128.load8_lane offset=4 lane 7 */
		{{0xfd, 0x5c, 0x02, 0x00}, 4},                /* v128.load32_zero */
		{{0xfd, 0xae, 0x01}, 3},                      /* i32x4.add (two-byte sub-opcode) */
		{{0xfe, 0x03, 0x00}, 3},                      /* atomic.fence */
		{{0xfe, 0x48, 0x02, 0x00}, 4},                /* i32.atomic.rmw.cmpxchg */
		{{0xfb, 0x02, 0x05, 0x01}, 4},                /* struct.get 5 1 */
		{{0xfb, 0x18, 0x03, 0x00, 0x70, 0x6e}, 6},    /* br_on_cast flags l ht ht */
		{{0x06, 0x40}, 2},                            /* try */
		{{0x07, 0x00}, 2},                            /* catch tag 0 */
		{{0x18, 0x01}, 2},                            /* delegate 1 */
		{{0x1f, 0x40, 0x02, 0x00, 0x00, 0x01, 0x03, 0x02}, 8}, /* try_table: catch 0 1, catch_all 2 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long n = insn_len(cases[i].b, sizeof(cases[i].b), &in);
		if (n != cases[i].len) {
			unit_fail(__FILE__, __LINE__, "case %zu (0x%02x): length %ld, want %u", i, cases[i].b[0], n,
				  cases[i].len);
			return;
		}
	}
	/* the kinds the rewriter acts on */
	const uint8_t call[] = {0x10, 0x85, 0x01}, rc[] = {0x12, 0x07}, rf[] = {0xd2, 0x03}, rci[] = {0x13, 0, 0},
		      ret[] = {0x0f}, ca[] = {0x19}, tt[] = {0x1f, 0x40, 0x01, 0x02, 0x05};
	CHECK_EQ_I(insn_len(call, 3, &in), 3);
	CHECK(in.kind == WI_CALL && in.index == 133 && in.index_at == call + 1 && in.index_end == call + 3);
	CHECK_EQ_I(insn_len(rc, 2, &in), 2);
	CHECK(in.kind == WI_RETURN_CALL && in.index == 7);
	CHECK_EQ_I(insn_len(rf, 2, &in), 2);
	CHECK(in.kind == WI_REF_FUNC && in.index == 3);
	CHECK_EQ_I(insn_len(rci, 3, &in), 3);
	CHECK(in.kind == WI_RETURN_CALL_OTHER);
	CHECK_EQ_I(insn_len(ret, 1, &in), 1);
	CHECK(in.kind == WI_RETURN);
	CHECK_EQ_I(insn_len(ca, 1, &in), 1);
	CHECK(in.kind == WI_ELSE && in.catch_arm);
	CHECK_EQ_I(insn_len(tt, 5, &in), 5);
	CHECK(in.kind == WI_BLOCK && in.ntry_table_labels == 1 && in.try_table_labels[0] == 5);
	/* unknown and truncated */
	const uint8_t unk[] = {0xc5}, unk2[] = {0xfc, 0x40}, trunc[] = {0x44, 0, 0};
	CHECK_EQ_I(insn_len(unk, 1, &in), -1);
	CHECK_EQ_I(insn_len(unk2, 2, &in), -1);
	CHECK_EQ_I(insn_len(trunc, 3, &in), -1);
}

/* ---- a tiny section reader for checking the rewritten module ---- */
static const uint8_t *section(const struct ct_wasm_module *m, uint8_t id, const uint8_t **end)
{
	const struct ct_wasm_section *s = ct_wasm_section(m, id, NULL);
	if (!s)
		return NULL;
	*end = m->bytes + s->payload + s->size;
	return m->bytes + s->payload;
}

static uint64_t u(const uint8_t **p, const uint8_t *end)
{
	bool bad = false;
	return ct_leb_u(p, end, &bad);
}

static uint32_t by_name(const struct ct_wasm_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].name, name))
			return i;
	return UINT32_MAX;
}

/* Does the body of F call function TARGET (a `call` instruction)? */
static bool calls(const struct ct_wasm_module *m, uint32_t f, uint32_t target)
{
	const uint8_t *p = m->bytes + m->funcs[f].body, *end = p + m->funcs[f].body_size;
	uint64_t ng = u(&p, end);
	for (uint64_t i = 0; i < ng; i++) {
		u(&p, end);
		p++;
	}
	while (p < end) {
		struct ct_wasm_insn in;
		if (ct_wasm_next_insn(&p, end, &in))
			return false;
		if (in.kind == WI_CALL && in.index == target)
			return true;
	}
	return false;
}

TEST(wasm_rewrite_shifts_every_function_index)
{
	char *path = ct_fixture("wasi_shift.wasm");
	if (!path) {
		unit_skip("fixture wasi_shift.wasm not built");
		return;
	}
	struct ct_wasm_target t;
	CHECK(ct_wasm_target_open(&t, path) == 0);
	free(path);
	const struct ct_wasm_module *m = &t.m;
	CHECK_EQ_U(m->nimported, 1);
	uint32_t a = by_name(m, "a"), b = by_name(m, "b"), c = by_name(m, "c"), init = by_name(m, "init"),
		 main_ = by_name(m, "main");
	CHECK(a == 1 && b == 2 && c == 3 && init == 4 && main_ == 5);
	CHECK(calls(m, b, a));
	/* instrument b and main */
	struct ct_wasm_instr fns[] = {{b, 0, 1, CT_WASM_NOSITE, true, true}, {main_, 2, 3, CT_WASM_NOSITE, false, false}};
	struct ct_buf out = {0};
	CHECK(ct_wasm_rewrite(m, fns, 2, NULL, &out) == 0);
	struct ct_wasm_module r;
	CHECK(ct_wasm_parse(&r, out.p, out.n, "rewritten") == 0);
	const uint32_t k = WH_COUNT;
	CHECK_EQ_U(r.nimported, 1 + k);
	CHECK_EQ_U(r.nfuncs, m->nfuncs + k);
	for (int h = 0; h < WH_COUNT; h++) {
		CHECK(!strncmp(r.funcs[1 + h].import_module, "calltrace", 9));
		CHECK(!strncmp(r.funcs[1 + h].import_field, ct_wasm_hook_names[h], strlen(ct_wasm_hook_names[h])));
	}
	/* names kept, at shifted indices */
	CHECK_STR(r.funcs[a + k].name, "a");
	CHECK_STR(r.funcs[c + k].name, "c");
	CHECK_STR(r.funcs[main_ + k].name, "main");
	/* calls: b -> a; the instrumented b also calls the hooks */
	CHECK(calls(&r, b + k, a + k));
	CHECK(calls(&r, b + k, 1 + WH_ENTER)); /* no parameters */
	CHECK(calls(&r, b + k, 1 + WH_EXIT1)); /* its i32 result goes with the exit */
	CHECK(!calls(&r, b + k, 1 + WH_EXIT) && !calls(&r, b + k, 1 + WH_ARG_I32));
	CHECK(calls(&r, main_ + k, c + k));
	CHECK(!calls(&r, a + k, 1 + WH_ENTER)); /* not selected: untouched */
	/* exports */
	const uint8_t *end, *p = section(&r, WSEC_EXPORT, &end);
	CHECK(p);
	uint64_t n = u(&p, end);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t len = u(&p, end);
		char name[32];
		snprintf(name, sizeof(name), "%.*s", (int)len, (const char *)p);
		p += len;
		uint8_t kind = *p++;
		uint64_t idx = u(&p, end);
		if (kind != 0)
			continue;
		if (!strcmp(name, "a"))
			CHECK_EQ_U(idx, a + k);
		else if (!strcmp(name, "c"))
			CHECK_EQ_U(idx, c + k);
		else if (!strcmp(name, "_start"))
			CHECK_EQ_U(idx, main_ + k);
	}
	/* start */
	p = section(&r, WSEC_START, &end);
	CHECK(p && u(&p, end) == init + k);
	/* element segments: active ones, a declared one (flags 3) */
	p = section(&r, WSEC_ELEMENT, &end);
	CHECK(p);
	n = u(&p, end);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(u(&p, end), 0);
	CHECK(p[0] == 0x41 && p[2] == 0x0b);
	p += 3;
	CHECK_EQ_U(u(&p, end), 2);
	CHECK_EQ_U(u(&p, end), a + k);
	CHECK_EQ_U(u(&p, end), b + k);
	uint64_t flags = u(&p, end); /* wat2wasm writes (ref.func $c) as an index */
	CHECK(flags == 0 || flags == 4);
	p += 3; /* i32.const 2 end */
	CHECK_EQ_U(u(&p, end), 1);
	if (flags == 4)
		CHECK(*p++ == 0xd2);
	CHECK_EQ_U(u(&p, end), c + k);
	/* the global's initialiser: ref.func c */
	p = section(&r, WSEC_GLOBAL, &end);
	CHECK(p);
	u(&p, end);
	p += 2; /* funcref, immutable */
	CHECK(*p++ == 0xd2);
	CHECK_EQ_U(u(&p, end), c + k);
	/* the original module parsed the same functions and types */
	CHECK_EQ_U(r.ntypes, m->ntypes + WH_COUNT);
	ct_wasm_free(&r);
	buf_free(&out);
	ct_wasm_target_close(&t);
}

TEST(wasm_refuses_objects_and_non_modules)
{
	struct ct_wasm_module m;
	const uint8_t elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
	CHECK(ct_wasm_parse(&m, elf, sizeof(elf), "x") != 0);
	CHECK(strstr(ct_error(), "not a WebAssembly module"));
	const uint8_t v2[] = {0, 'a', 's', 'm', 0x0d, 0, 1, 0};
	CHECK(ct_wasm_parse(&m, v2, sizeof(v2), "c") != 0);
	CHECK(strstr(ct_error(), "not 1"));
	/* a section that runs past the end */
	const uint8_t cut[] = {0, 'a', 's', 'm', 1, 0, 0, 0, 1, 0x20, 0x60};
	CHECK(ct_wasm_parse(&m, cut, sizeof(cut), "cut") != 0);
	CHECK(strstr(ct_error(), "damaged"));
	/* a relocatable object: custom section "linking" */
	const uint8_t obj[] = {0, 'a', 's', 'm', 1, 0, 0, 0, 0, 0x09, 0x07, 'l', 'i', 'n', 'k', 'i', 'n', 'g', 0x02};
	CHECK(ct_wasm_parse(&m, obj, sizeof(obj), "obj.o") == 0);
	CHECK(m.is_object);
	struct ct_buf out = {0};
	CHECK(ct_wasm_rewrite(&m, NULL, 0, NULL, &out) != 0);
	CHECK(strstr(ct_error(), "relocatable"));
	buf_free(&out);
	ct_wasm_free(&m);
}

TEST(wasm_go_names_from_pclntab)
{
	char *path = ct_fixture("go_app.wasm");
	if (!path) {
		unit_skip("fixture go_app.wasm not built");
		return;
	}
	struct ct_wasm_target t;
	CHECK(ct_wasm_target_open(&t, path) == 0);
	free(path);
	CHECK(t.go);
	CHECK(!strncmp(t.gw.go_version, "go1.", 4));
	CHECK_STR(t.gw.names_source, "pclntab");
	bool handle = false, mangled = false;
	uint32_t traceable = 0, go_funcs = 0;
	for (uint32_t i = t.m.nimported; i < t.m.nfuncs; i++) {
		const char *n = ct_wasm_name(&t, i);
		handle |= !strcmp(n, "main.(*Worker).Handle");
		mangled |= !strcmp(n, "main.__Worker_.Handle");
		go_funcs += t.gw.names[i] != NULL;
		traceable += t.traceable[i];
	}
	CHECK(handle && !mangled);
	CHECK(go_funcs > 1000);
	CHECK(traceable > 1000);
	/* the name section's lossy form is still there for the runtime */
	uint32_t h = UINT32_MAX;
	for (uint32_t i = 0; i < t.m.nfuncs; i++)
		if (!strcmp(t.m.funcs[i].name, "main.__Worker_.Handle"))
			h = i;
	CHECK(h != UINT32_MAX);
	CHECK_STR(ct_wasm_name(&t, h), "main.(*Worker).Handle");
	/* neither are compiler-generated wrappers (go statements' here) */
	for (uint32_t i = t.m.nimported; i < t.m.nfuncs; i++)
		if (!strcmp(ct_wasm_name(&t, i), "main.main.func1"))
			CHECK(t.gw.wrapper[i] && !t.traceable[i]);
	/* stack-switching runtime code is never instrumented */
	for (uint32_t i = t.m.nimported; i < t.m.nfuncs; i++) {
		const char *n = ct_wasm_name(&t, i);
		if (!strcmp(n, "runtime.gogo") || !strcmp(n, "runtime.mcall") || !strcmp(n, "wasm_pc_f_loop"))
			CHECK(!t.traceable[i]);
	}
	CHECK(t.gw.cfg.nmorestack == 2);
	CHECK_EQ_U(t.gw.cfg.goid_off, 152);
	ct_wasm_target_close(&t);
}

/* ---- the recorder's stream (wire.h), decoded by run.c ---- */
struct wire_seen {
	struct ct_event ev[16];
	uint64_t val[16];
	int n;
};

static int wire_collect(void *ctx, const struct ct_event *e, const void *payload)
{
	struct wire_seen *s = ctx;
	if (s->n < 16) {
		s->ev[s->n] = *e;
		s->val[s->n] = 0;
		if (payload)
			memcpy(&s->val[s->n], payload, 8);
		s->n++;
	}
	return 0;
}

static void wire_put(uint64_t *buf, size_t *words, uint32_t site, uint16_t flags, int32_t dts, uint32_t key,
		     const uint64_t *payload, uint16_t nvals)
{
	struct ct_wire_event w = {site, (uint16_t)(nvals * 8), flags, dts, key};
	memcpy(buf + *words, &w, sizeof(w));
	*words += sizeof(w) / 8;
	if (nvals) /* (PAYLOAD NULL then) */
		memcpy(buf + *words, payload, nvals * 8u);
	*words += nvals;
}

TEST(wasm_wire_stream_decodes_escapes_at_any_split)
{
	uint64_t buf[64], t0 = 1000000000000ull, goid = 7, big = 1ull << 40, v = 99, t1 = t0 + (5ull << 30);
	uint64_t g0 = 0, counters[3] = {11, 12, 13};
	size_t w = 0;
	wire_put(buf, &w, CT_WIRE_THREAD, 0, 0, 42, &goid, 1);
	wire_put(buf, &w, CT_WIRE_TIME, 0, 0, 0, &t0, 1);
	wire_put(buf, &w, 1, 0, 0, 3, &v, 1);                 /* at t0 */
	wire_put(buf, &w, 2, CT_EV_MARKER, 100, 4, NULL, 0);  /* t0 + 100 */
	wire_put(buf, &w, CT_WIRE_KEY, 0, 0, 0, &big, 1);
	wire_put(buf, &w, 1, CT_EV_DELAYED, -60, 5, NULL, 0); /* sent late: t0 + 40, key 2^40 */
	wire_put(buf, &w, 2, 0, 1, 6, NULL, 0);               /* t0 + 41, key 6 again */
	wire_put(buf, &w, CT_WIRE_THREAD, 0, 0, 43, &g0, 1);
	wire_put(buf, &w, CT_WIRE_TIME, 0, 0, 0, &t1, 1);
	wire_put(buf, &w, 1, 0, 0, 8, NULL, 0);               /* at t1 (5 s later) */
	wire_put(buf, &w, CT_WIRE_STATS, 0, 0, 0, counters, 3);
	const uint8_t *p = (const uint8_t *)buf;
	size_t n = w * 8;
	for (size_t split = 0; split <= n; split++) {
		struct wire_seen s = {0};
		struct ct_wire_reader rd = {0};
		int events = 0;
		/* a read that ends inside a record: the rest comes with the next */
		uint8_t in[sizeof(buf)] __attribute__((aligned(8)));
		memcpy(in, p, split);
		size_t used = ct_wasm_wire_decode(&rd, in, split, wire_collect, &s, &events);
		CHECK(used <= split && split - used < 16 + 3 * 8);
		size_t rest = n - used;
		memcpy(in, p + used, rest);
		CHECK_EQ_U(ct_wasm_wire_decode(&rd, in, rest, wire_collect, &s, &events), rest);
		CHECK_EQ_I(events, 5);
		CHECK_EQ_I(s.n, 5);
		const uint64_t ts[] = {t0, t0 + 100, t0 + 40, t0 + 41, t1};
		const uint64_t keys[] = {3, 4, big, 6, 8};
		const uint32_t sites[] = {1, 2, 1, 2, 1};
		for (int i = 0; i < 5; i++) {
			CHECK_EQ_U(s.ev[i].ts, ts[i]);
			CHECK_EQ_U(s.ev[i].key, keys[i]);
			CHECK_EQ_U(s.ev[i].site, sites[i]);
			CHECK_EQ_U(s.ev[i].pid, i < 4 ? 42 : 43);
			CHECK_EQ_U(s.ev[i].tid, s.ev[i].pid);
			CHECK_EQ_U(s.ev[i].goid, i < 4 ? 7 : 0);
		}
		CHECK_EQ_U(s.ev[0].len, 8);
		CHECK_EQ_U(s.val[0], 99);
		CHECK_EQ_U(s.ev[1].flags, CT_EV_MARKER);
		CHECK_EQ_U(s.ev[2].flags, CT_EV_DELAYED);
		CHECK_EQ_U(s.ev[3].len, 0);
		CHECK_EQ_U(rd.counters[0], 11);
		CHECK_EQ_U(rd.counters[2], 13);
		CHECK_EQ_U(rd.counters[3], 0);
	}
}
