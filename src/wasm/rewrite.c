#include "wasm/rewrite.h"

#include <string.h>

const char *const ct_wasm_hook_names[WH_COUNT] = {
	"enter", "exit", "depth", "unwind", "arg_i32", "arg_i64", "arg_f32", "arg_f64",
	"enter1", "enter2", "enter3", "enter4", "exit1",
	"genter", "gexit", "grestart",
};

/* Signatures of the hooks, as (params, results) value-type strings. */
static const struct {
	const char *params, *results;
} hook_sigs[WH_COUNT] = {
	{"\x7f", ""}, {"\x7f", ""}, {"", "\x7f"}, {"\x7f", ""},
	{"\x7f", ""}, {"\x7e", ""}, {"\x7d", ""}, {"\x7c", ""},
	{"\x7f\x7e", ""}, {"\x7f\x7e\x7e", ""}, {"\x7f\x7e\x7e\x7e", ""}, {"\x7f\x7e\x7e\x7e\x7e", ""},
	{"\x7f\x7e", ""},
	{"\x7f\x7f\x7e\x7e", ""}, {"\x7f\x7f\x7e\x7e", ""}, {"\x7f\x7e\x7e", ""},
};

struct rw {
	const struct ct_wasm_module *m;
	const struct ct_wasm_go *go;
	uint32_t shift;          /* hooks added before the defined functions */
	uint32_t hook_type0;     /* type index of hook 0's signature */
	uint32_t ntypes_added;
	CT_VEC(uint32_t) multi;  /* function types needing a ()->(results) block type */
	uint32_t multi_type0;
};

static void put_u(struct ct_buf *b, uint64_t v)
{
	uint8_t t[10];
	buf_put(b, t, ct_leb_put(t, v));
}

static void put_s(struct ct_buf *b, int64_t v)
{
	for (;;) {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
		buf_u8(b, byte | (done ? 0 : 0x80));
		if (done)
			return;
	}
}

static uint32_t shift_func(const struct rw *w, uint32_t idx)
{
	return idx >= w->m->nimported ? idx + w->shift : idx;
}

static uint32_t hook_index(const struct rw *w, enum ct_wasm_hook h)
{
	return w->m->nimported + (uint32_t)h;
}

static void call_hook(struct ct_buf *b, const struct rw *w, enum ct_wasm_hook h)
{
	buf_u8(b, 0x10);
	put_u(b, hook_index(w, h));
}

static void i32_const(struct ct_buf *b, int64_t v)
{
	buf_u8(b, 0x41);
	put_s(b, (int32_t)v);
}

/* Copies instructions from *P until the `end` closing depth 0 (a constant
 * expression) or END, shifting function indices. */
static int copy_insns(const struct rw *w, const uint8_t **p, const uint8_t *end, struct ct_buf *out, bool expr)
{
	int depth = 0;
	while (*p < end) {
		struct ct_wasm_insn in;
		if (ct_wasm_next_insn(p, end, &in))
			return -1;
		if (in.kind == WI_CALL || in.kind == WI_RETURN_CALL || in.kind == WI_REF_FUNC) {
			buf_put(out, in.start, (size_t)(in.index_at - in.start));
			put_u(out, shift_func(w, in.index));
			buf_put(out, in.index_end, (size_t)(in.end - in.index_end));
		} else {
			buf_put(out, in.start, (size_t)(in.end - in.start));
		}
		if (in.kind == WI_BLOCK)
			depth++;
		else if (in.kind == WI_END || in.kind == WI_DELEGATE) {
			if (depth-- == 0 && expr)
				return 0;
		}
	}
	return expr ? ct_fail("constant expression without end") : 0;
}

static bool rd_leb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	bool bad = false;
	*v = ct_leb_u(p, end, &bad);
	return !bad;
}

/* ---- the code of one function ---- */

struct fn_ctx {
	const struct ct_wasm_instr *ins;
	const struct ct_wasm_functype *t;
	uint32_t nlocals;      /* params + declared locals */
	uint32_t saved_local;  /* WASI: depth at entry (functions with handlers) */
	uint32_t res_local0;   /* results saved for capture */
	uint32_t go_r_local;   /* Go: the result */
	bool has_handlers, capture_rets, capture_args;
};

static bool numeric(uint8_t code)
{
	return code == WT_I32 || code == WT_I64 || code == WT_F32 || code == WT_F64;
}

static enum ct_wasm_hook arg_hook(uint8_t code)
{
	return code == WT_I32 ? WH_ARG_I32 : code == WT_I64 ? WH_ARG_I64 : code == WT_F32 ? WH_ARG_F32 : WH_ARG_F64;
}

/* The most values an entry hook takes along (WH_ENTER1..WH_ENTER4); the
 * values before those go through arg hooks. */
#define FUSED_MAX 4

/* The numeric value on the stack, of type CODE, as the i64 an arg hook of
 * its type would store: i32 and f32 bits zero-extended, f64 bits. */
static void widen_to_i64(struct ct_buf *b, uint8_t code)
{
	if (code == WT_F32)
		buf_u8(b, 0xbc); /* i32.reinterpret_f32 */
	if (code == WT_I32 || code == WT_F32)
		buf_u8(b, 0xad); /* i64.extend_i32_u */
	else if (code == WT_F64)
		buf_u8(b, 0xbd); /* i64.reinterpret_f64 */
}

/* Go: push goid and key (g.stack.hi - SP, + ADJ) for the hooks. */
static void go_ident(struct ct_buf *b, const struct ct_wasm_go *go, int adj)
{
	/* goid = *(u64 *)(g + goid_off) */
	buf_u8(b, 0x23);
	put_u(b, go->g_global);
	buf_u8(b, 0xa7); /* i32.wrap_i64 */
	buf_u8(b, 0x29); /* i64.load align=3 */
	put_u(b, 3);
	put_u(b, go->goid_off);
	/* key = *(u64 *)(g + stack_hi_off) - SP + adj */
	buf_u8(b, 0x23);
	put_u(b, go->g_global);
	buf_u8(b, 0xa7);
	buf_u8(b, 0x29);
	put_u(b, 3);
	put_u(b, go->stack_hi_off);
	buf_u8(b, 0x23);
	put_u(b, go->sp_global);
	buf_u8(b, 0xad); /* i64.extend_i32_u */
	buf_u8(b, 0x7d); /* i64.sub */
	if (adj) {
		buf_u8(b, 0x42);
		put_s(b, adj < 0 ? -adj : adj);
		buf_u8(b, adj < 0 ? 0x7d : 0x7c);
	}
}

static void emit_unwind(struct ct_buf *b, const struct rw *w, const struct fn_ctx *fc)
{
	buf_u8(b, 0x20);
	put_u(b, fc->saved_local);
	call_hook(b, w, WH_UNWIND);
}

static void emit_exit(struct ct_buf *b, const struct rw *w, const struct fn_ctx *fc, bool with_rets)
{
	const struct ct_wasm_instr *ins = fc->ins;
	if (ins->exit_site == CT_WASM_NOSITE)
		return; /* an entry-only marker (Go's goexit1) */
	if (w->go->on) {
		/* [r] -> [r] */
		buf_u8(b, 0x22);
		put_u(b, fc->go_r_local);
		i32_const(b, ins->exit_site);
		buf_u8(b, 0x20);
		put_u(b, fc->go_r_local);
		go_ident(b, w->go, 8); /* RET popped the return address */
		call_hook(b, w, WH_GEXIT);
		return;
	}
	if (with_rets && fc->capture_rets) {
		/* the results saved, all but the last through arg hooks, the
		 * last with the exit, then put back */
		uint32_t n = fc->t->nresults;
		for (uint32_t i = n; i-- > 0;) {
			buf_u8(b, 0x21);
			put_u(b, fc->res_local0 + i);
		}
		for (uint32_t i = 0; i + 1 < n; i++) {
			buf_u8(b, 0x20);
			put_u(b, fc->res_local0 + i);
			call_hook(b, w, arg_hook(fc->t->results[i].code));
		}
		i32_const(b, ins->exit_site);
		buf_u8(b, 0x20);
		put_u(b, fc->res_local0 + n - 1);
		widen_to_i64(b, fc->t->results[n - 1].code);
		call_hook(b, w, WH_EXIT1);
		for (uint32_t i = 0; i < n; i++) {
			buf_u8(b, 0x20);
			put_u(b, fc->res_local0 + i);
		}
		return;
	}
	i32_const(b, ins->exit_site);
	call_hook(b, w, WH_EXIT);
}

static void emit_entry(struct ct_buf *b, const struct rw *w, const struct fn_ctx *fc)
{
	const struct ct_wasm_instr *ins = fc->ins;
	if (w->go->on) {
		i32_const(b, ins->entry_site);
		buf_u8(b, 0x20);
		put_u(b, 0); /* the resume point: 0 for a call */
		go_ident(b, w->go, 0);
		call_hook(b, w, WH_GENTER);
		return;
	}
	if (fc->has_handlers) {
		call_hook(b, w, WH_DEPTH);
		buf_u8(b, 0x21);
		put_u(b, fc->saved_local);
	}
	if (!fc->capture_args) {
		i32_const(b, ins->entry_site);
		call_hook(b, w, WH_ENTER);
		return;
	}
	/* the last FUSED_MAX parameters go with the entry, any before them
	 * through arg hooks: one import call per entry in most functions */
	uint32_t n = fc->t->nparams, fused = n < FUSED_MAX ? n : FUSED_MAX;
	for (uint32_t i = 0; i < n - fused; i++) {
		buf_u8(b, 0x20);
		put_u(b, i);
		call_hook(b, w, arg_hook(fc->t->params[i].code));
	}
	i32_const(b, ins->entry_site);
	for (uint32_t i = n - fused; i < n; i++) {
		buf_u8(b, 0x20);
		put_u(b, i);
		widen_to_i64(b, fc->t->params[i].code);
	}
	call_hook(b, w, (enum ct_wasm_hook)(WH_ENTER1 + fused - 1));
}

static bool is_morestack(const struct rw *w, uint32_t f)
{
	for (uint32_t i = 0; i < w->go->nmorestack; i++)
		if (w->go->morestack[i] == f)
			return true;
	return false;
}

/* The block type wrapping a body with the results of type T. */
static void emit_blocktype(struct ct_buf *b, const struct rw *w, uint32_t type)
{
	const struct ct_wasm_functype *t = &w->m->types[type];
	if (t->nresults == 0) {
		buf_u8(b, 0x40);
	} else if (t->nresults == 1) {
		buf_put(b, t->results[0].p, t->results[0].len);
	} else {
		for (size_t i = 0; i < w->multi.n; i++)
			if (w->multi.v[i] == type)
				put_s(b, w->multi_type0 + (uint32_t)i);
	}
}

static int rewrite_body(const struct rw *w, uint32_t fidx, const struct ct_wasm_instr *ins, struct ct_buf *out)
{
	const struct ct_wasm_module *m = w->m;
	const struct ct_wasm_func *f = &m->funcs[fidx];
	const uint8_t *p = m->bytes + f->body, *end = p + f->body_size;
	uint64_t ngroups;
	if (!rd_leb(&p, end, &ngroups))
		return ct_fail("function %s: bad locals", f->name);
	const uint8_t *locals_start = p;
	uint64_t nlocals = 0;
	for (uint64_t i = 0; i < ngroups; i++) {
		uint64_t c;
		if (!rd_leb(&p, end, &c) || !ct_wasm_skip_valtype(&p, end))
			return ct_fail("function %s: bad locals", f->name);
		nlocals += c;
	}
	const uint8_t *locals_end = p, *code = p;
	struct ct_buf body = {0};
	if (!ins) {
		/* Not instrumented: the same code, with function indices shifted. */
		buf_put(&body, m->bytes + f->body, (size_t)(code - (m->bytes + f->body)));
		if (copy_insns(w, &p, end, &body, false)) {
			buf_free(&body);
			return ct_fail("function %s: %s", f->name, ct_error());
		}
		put_u(out, body.n);
		buf_put(out, body.p, body.n);
		buf_free(&body);
		return 0;
	}
	struct fn_ctx fc = {0};
	fc.ins = ins;
	fc.t = &m->types[f->type];
	fc.nlocals = fc.t->nparams + (uint32_t)nlocals;
	/* Does it have exception handlers (WASI depth restore)? */
	const uint8_t *q = code;
	while (q < end) {
		struct ct_wasm_insn in;
		if (ct_wasm_next_insn(&q, end, &in)) {
			buf_free(&body);
			return ct_fail("function %s: %s", f->name, ct_error());
		}
		if (in.catch_arm || in.ntry_table_labels)
			fc.has_handlers = true;
	}
	bool all_numeric_params = true, all_numeric_results = true;
	for (uint32_t i = 0; i < fc.t->nparams; i++)
		all_numeric_params &= numeric(fc.t->params[i].code);
	for (uint32_t i = 0; i < fc.t->nresults; i++)
		all_numeric_results &= numeric(fc.t->results[i].code);
	fc.capture_args = !w->go->on && ins->args && fc.t->nparams && all_numeric_params;
	fc.capture_rets = !w->go->on && ins->rets && fc.t->nresults && all_numeric_results;
	/* New locals go after the declared ones: nothing is renumbered. */
	struct ct_buf extra = {0};
	uint32_t nextra_groups = 0, next = fc.nlocals;
	if (w->go->on) {
		fc.go_r_local = next++;
		put_u(&extra, 1);
		buf_u8(&extra, WT_I32);
		nextra_groups++;
	} else {
		if (fc.has_handlers && !w->go->on) {
			fc.saved_local = next++;
			put_u(&extra, 1);
			buf_u8(&extra, WT_I32);
			nextra_groups++;
		}
		if (fc.capture_rets) {
			fc.res_local0 = next;
			for (uint32_t i = 0; i < fc.t->nresults; i++) {
				put_u(&extra, 1);
				buf_u8(&extra, fc.t->results[i].code);
				nextra_groups++;
				next++;
			}
		}
	}
	put_u(&body, ngroups + nextra_groups);
	buf_put(&body, locals_start, (size_t)(locals_end - locals_start));
	buf_put(&body, extra.p, extra.n);
	buf_free(&extra);

	emit_entry(&body, w, &fc);
	buf_u8(&body, 0x02);
	emit_blocktype(&body, w, f->type);
	/* The original instructions; labels counted from our block. */
	uint32_t depth = 0;
	CT_VEC(uint8_t) landing = {0}; /* per open label: a try_table catch lands after its end */
	bool closed = false, epilogue_unwind = false;
	p = code;
	while (p < end) {
		struct ct_wasm_insn in;
		if (ct_wasm_next_insn(&p, end, &in)) {
			CT_VEC_FREE(landing);
			buf_free(&body);
			return ct_fail("function %s: %s", f->name, ct_error());
		}
		switch (in.kind) {
		case WI_BLOCK:
			buf_put(&body, in.start, (size_t)(in.end - in.start));
			/* try_table's catch labels count from outside it */
			for (uint32_t k = 0; k < in.ntry_table_labels; k++) {
				uint32_t l = in.try_table_labels[k];
				if (l < landing.n)
					landing.v[landing.n - 1 - l] = 1;
				else
					epilogue_unwind = true;
			}
			CT_VEC_PUSH(landing, 0);
			depth++;
			continue;
		case WI_ELSE:
			buf_put(&body, in.start, (size_t)(in.end - in.start));
			if (in.catch_arm && fc.has_handlers)
				emit_unwind(&body, w, &fc);
			continue;
		case WI_END:
		case WI_DELEGATE:
			if (depth == 0) {
				if (in.kind != WI_END || p != end) {
					CT_VEC_FREE(landing);
					buf_free(&body);
					return ct_fail("function %s: code after its end", f->name);
				}
				closed = true;
				buf_u8(&body, 0x0b); /* ends our block */
				continue;
			}
			buf_put(&body, in.start, (size_t)(in.end - in.start));
			depth--;
			if (landing.v[--landing.n] && fc.has_handlers)
				emit_unwind(&body, w, &fc);
			continue;
		case WI_RETURN:
			buf_u8(&body, 0x0c); /* br to our block: one exit path */
			put_u(&body, depth);
			continue;
		case WI_RETURN_CALL:
		case WI_RETURN_CALL_OTHER:
			emit_exit(&body, w, &fc, false);
			break;
		case WI_CALL:
			if (w->go->on && ins->restart_site != CT_WASM_NOSITE && is_morestack(w, in.index)) {
				/* SP is 8 below the entry's (the return address) */
				i32_const(&body, ins->restart_site);
				go_ident(&body, w->go, -8);
				call_hook(&body, w, WH_GRESTART);
			}
			break;
		default:
			break;
		}
		if (in.kind == WI_CALL || in.kind == WI_RETURN_CALL || in.kind == WI_REF_FUNC) {
			buf_put(&body, in.start, (size_t)(in.index_at - in.start));
			put_u(&body, shift_func(w, in.index));
			buf_put(&body, in.index_end, (size_t)(in.end - in.index_end));
		} else {
			buf_put(&body, in.start, (size_t)(in.end - in.start));
		}
	}
	CT_VEC_FREE(landing);
	if (!closed) {
		buf_free(&body);
		return ct_fail("function %s: body without end", f->name);
	}
	if (epilogue_unwind && fc.has_handlers)
		emit_unwind(&body, w, &fc);
	emit_exit(&body, w, &fc, true);
	buf_u8(&body, 0x0b);
	put_u(out, body.n);
	buf_put(out, body.p, body.n);
	buf_free(&body);
	return 0;
}

/* ---- sections ---- */

static void put_section(struct ct_buf *out, uint8_t id, const struct ct_buf *payload)
{
	buf_u8(out, id);
	put_u(out, payload->n);
	buf_put(out, payload->p, payload->n);
}

static void put_sig(struct ct_buf *b, const uint8_t *params, size_t np, const struct ct_wasm_valtype *res,
		    const char *resbytes, size_t nr)
{
	buf_u8(b, 0x60);
	put_u(b, np);
	buf_put(b, params, np);
	put_u(b, nr);
	for (size_t i = 0; i < nr; i++) {
		if (res)
			buf_put(b, res[i].p, res[i].len);
		else
			buf_u8(b, (uint8_t)resbytes[i]);
	}
}

static int types_section(struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	struct ct_buf b = {0};
	const uint8_t *p = s ? w->m->bytes + s->payload : NULL, *end = s ? p + s->size : NULL;
	uint64_t n = 0;
	if (s && !rd_leb(&p, end, &n))
		return ct_fail("damaged type section");
	/* GC rec groups count as one entry but may define several types. */
	uint32_t entries_added = WH_COUNT + (uint32_t)w->multi.n;
	put_u(&b, n + entries_added);
	if (s)
		buf_put(&b, p, (size_t)(end - p));
	w->hook_type0 = w->m->ntypes;
	for (int h = 0; h < WH_COUNT; h++)
		put_sig(&b, (const uint8_t *)hook_sigs[h].params, strlen(hook_sigs[h].params), NULL,
			hook_sigs[h].results, strlen(hook_sigs[h].results));
	w->multi_type0 = w->m->ntypes + WH_COUNT;
	for (size_t i = 0; i < w->multi.n; i++) {
		const struct ct_wasm_functype *t = &w->m->types[w->multi.v[i]];
		put_sig(&b, NULL, 0, t->results, NULL, t->nresults);
	}
	put_section(out, WSEC_TYPE, &b);
	buf_free(&b);
	return 0;
}

static int imports_section(struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	struct ct_buf b = {0};
	const uint8_t *p = s ? w->m->bytes + s->payload : NULL, *end = s ? p + s->size : NULL;
	uint64_t n = 0;
	if (s && !rd_leb(&p, end, &n))
		return ct_fail("damaged import section");
	put_u(&b, n + WH_COUNT);
	if (s)
		buf_put(&b, p, (size_t)(end - p));
	for (int h = 0; h < WH_COUNT; h++) {
		buf_str(&b, "calltrace");
		buf_str(&b, ct_wasm_hook_names[h]);
		buf_u8(&b, 0x00);
		put_u(&b, w->hook_type0 + (uint32_t)h);
	}
	put_section(out, WSEC_IMPORT, &b);
	buf_free(&b);
	return 0;
}

/* Sections whose items mention function indices through constant
 * expressions or plain indices. */
static int global_section(const struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	const uint8_t *p = w->m->bytes + s->payload, *end = p + s->size;
	struct ct_buf b = {0};
	uint64_t n;
	if (!rd_leb(&p, end, &n))
		goto bad;
	put_u(&b, n);
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *t = p;
		if (!ct_wasm_skip_valtype(&p, end))
			goto bad;
		p++; /* mutability */
		if (p > end)
			goto bad;
		buf_put(&b, t, (size_t)(p - t));
		if (copy_insns(w, &p, end, &b, true))
			goto bad;
	}
	put_section(out, WSEC_GLOBAL, &b);
	buf_free(&b);
	return 0;
bad:
	buf_free(&b);
	return ct_fail("damaged global section");
}

static int table_section(const struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	const uint8_t *p = w->m->bytes + s->payload, *end = p + s->size;
	struct ct_buf b = {0};
	uint64_t n;
	if (!rd_leb(&p, end, &n))
		goto bad;
	put_u(&b, n);
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *t = p;
		bool init = p + 1 < end && p[0] == 0x40 && p[1] == 0x00;
		if (init)
			p += 2;
		if (!ct_wasm_skip_valtype(&p, end))
			goto bad;
		uint64_t fl, v;
		if (p >= end)
			goto bad;
		fl = *p++; /* limits */
		if (!rd_leb(&p, end, &v) || ((fl & 1) && !rd_leb(&p, end, &v)))
			goto bad;
		buf_put(&b, t, (size_t)(p - t));
		if (init && copy_insns(w, &p, end, &b, true))
			goto bad;
	}
	put_section(out, WSEC_TABLE, &b);
	buf_free(&b);
	return 0;
bad:
	buf_free(&b);
	return ct_fail("damaged table section");
}

static int export_section(const struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	const uint8_t *p = w->m->bytes + s->payload, *end = p + s->size;
	struct ct_buf b = {0};
	uint64_t n, len, idx;
	if (!rd_leb(&p, end, &n))
		goto bad;
	put_u(&b, n);
	for (uint64_t i = 0; i < n; i++) {
		if (!rd_leb(&p, end, &len) || len + 1 > (uint64_t)(end - p))
			goto bad;
		put_u(&b, len);
		buf_put(&b, p, len + 1);
		uint8_t kind = p[len];
		p += len + 1;
		if (!rd_leb(&p, end, &idx))
			goto bad;
		put_u(&b, kind == 0 ? shift_func(w, (uint32_t)idx) : idx);
	}
	put_section(out, WSEC_EXPORT, &b);
	buf_free(&b);
	return 0;
bad:
	buf_free(&b);
	return ct_fail("damaged export section");
}

static int start_section(const struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	const uint8_t *p = w->m->bytes + s->payload, *end = p + s->size;
	uint64_t idx;
	if (!rd_leb(&p, end, &idx))
		return ct_fail("damaged start section");
	struct ct_buf b = {0};
	put_u(&b, shift_func(w, (uint32_t)idx));
	put_section(out, WSEC_START, &b);
	buf_free(&b);
	return 0;
}

static int element_section(const struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	const uint8_t *p = w->m->bytes + s->payload, *end = p + s->size;
	struct ct_buf b = {0};
	uint64_t n, flags, v, k;
	if (!rd_leb(&p, end, &n))
		goto bad;
	put_u(&b, n);
	for (uint64_t i = 0; i < n; i++) {
		if (!rd_leb(&p, end, &flags) || flags > 7)
			goto bad;
		put_u(&b, flags);
		bool active = !(flags & 1), explicit_table = flags & 2, exprs = flags & 4;
		if (active && explicit_table) {
			if (!rd_leb(&p, end, &v))
				goto bad;
			put_u(&b, v);
		}
		if (active && copy_insns(w, &p, end, &b, true))
			goto bad;
		if (!active || explicit_table) { /* elemkind or reftype */
			if (p >= end)
				goto bad;
			const uint8_t *t = p;
			if (!ct_wasm_skip_valtype(&p, end))
				goto bad;
			buf_put(&b, t, (size_t)(p - t));
		}
		if (!rd_leb(&p, end, &k))
			goto bad;
		put_u(&b, k);
		for (uint64_t j = 0; j < k; j++) {
			if (exprs) {
				if (copy_insns(w, &p, end, &b, true))
					goto bad;
			} else {
				if (!rd_leb(&p, end, &v))
					goto bad;
				put_u(&b, shift_func(w, (uint32_t)v));
			}
		}
	}
	put_section(out, WSEC_ELEMENT, &b);
	buf_free(&b);
	return 0;
bad:
	buf_free(&b);
	return ct_fail("damaged element section");
}

static int code_section(const struct rw *w, const struct ct_wasm_instr *fns, size_t nfns, struct ct_buf *out)
{
	const struct ct_wasm_module *m = w->m;
	struct ct_buf b = {0};
	uint32_t ndef = m->nfuncs - m->nimported;
	buf_reserve(&b, ct_wasm_section(m, WSEC_CODE, NULL)->size + ndef * 24 + 64);
	put_u(&b, ndef);
	size_t k = 0;
	for (uint32_t i = m->nimported; i < m->nfuncs; i++) {
		while (k < nfns && fns[k].func < i)
			k++;
		const struct ct_wasm_instr *ins = k < nfns && fns[k].func == i ? &fns[k] : NULL;
		if (rewrite_body(w, i, ins, &b)) {
			buf_free(&b);
			return -1;
		}
	}
	put_section(out, WSEC_CODE, &b);
	buf_free(&b);
	return 0;
}

/* The name section with function indices shifted (function names, local
 * names and labels are keyed by function). */
static void name_section(const struct rw *w, const struct ct_wasm_section *s, struct ct_buf *out)
{
	const uint8_t *p = w->m->bytes + s->payload, *end = p + s->size;
	struct ct_buf b = {0};
	buf_str(&b, "name");
	while (p < end) {
		uint8_t id = *p++;
		uint64_t size;
		if (!rd_leb(&p, end, &size) || size > (uint64_t)(end - p))
			break;
		const uint8_t *q = p, *qe = p + size;
		p += size;
		if (id != 1 && id != 2 && id != 3) {
			buf_u8(&b, id);
			put_u(&b, size);
			buf_put(&b, q, size);
			continue;
		}
		struct ct_buf sub = {0};
		uint64_t n, idx;
		bool ok = rd_leb(&q, qe, &n);
		put_u(&sub, n);
		for (uint64_t i = 0; ok && i < n; i++) {
			ok = rd_leb(&q, qe, &idx);
			put_u(&sub, shift_func(w, (uint32_t)idx));
			const uint8_t *rest = q;
			if (id == 1) {
				uint64_t len;
				ok = ok && rd_leb(&q, qe, &len) && len <= (uint64_t)(qe - q);
				if (ok)
					q += len;
			} else {
				uint64_t m2, li, len;
				ok = ok && rd_leb(&q, qe, &m2);
				for (uint64_t j = 0; ok && j < m2; j++) {
					ok = rd_leb(&q, qe, &li) && rd_leb(&q, qe, &len) && len <= (uint64_t)(qe - q);
					if (ok)
						q += len;
				}
			}
			if (ok)
				buf_put(&sub, rest, (size_t)(q - rest));
		}
		if (ok) {
			buf_u8(&b, id);
			put_u(&b, sub.n);
			buf_put(&b, sub.p, sub.n);
		}
		buf_free(&sub);
	}
	put_section(out, WSEC_CUSTOM, &b);
	buf_free(&b);
}

static int order_of(uint8_t id)
{
	static const int8_t order[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 11, 6};
	return id < sizeof(order) ? order[id] : 99;
}

int ct_wasm_rewrite(const struct ct_wasm_module *m, const struct ct_wasm_instr *fns, size_t n,
		    const struct ct_wasm_go *go, struct ct_buf *out)
{
	if (m->is_object)
		return ct_fail("this is a relocatable wasm object file (it has linking/reloc sections): link it into a module first (e.g. wasm-ld)");
	static const struct ct_wasm_go nogo = {0};
	struct rw w = {m, go ? go : &nogo, WH_COUNT, 0, 0, {0}, 0};
	for (size_t i = 0; i < n; i++) {
		const struct ct_wasm_functype *t = &m->types[m->funcs[fns[i].func].type];
		if (fns[i].func < m->nimported || fns[i].func >= m->nfuncs)
			return ct_fail("internal: function %u cannot be instrumented", fns[i].func);
		if (t->nresults > 1) {
			bool seen = false;
			for (size_t k = 0; k < w.multi.n; k++)
				seen |= w.multi.v[k] == m->funcs[fns[i].func].type;
			if (!seen)
				CT_VEC_PUSH(w.multi, m->funcs[fns[i].func].type);
		}
	}
	buf_put(out, m->bytes, 8);
	bool types_done = false, imports_done = false;
	int rc = 0;
	for (size_t i = 0; i <= m->nsecs && rc == 0; i++) {
		const struct ct_wasm_section *s = i < m->nsecs ? &m->secs[i] : NULL;
		int ord = s ? (s->id == WSEC_CUSTOM ? -1 : order_of(s->id)) : 99;
		/* a module without a type or import section still gets ours */
		if (!types_done && ord > order_of(WSEC_TYPE)) {
			rc = types_section(&w, NULL, out);
			types_done = true;
		}
		if (rc == 0 && !imports_done && ord > order_of(WSEC_IMPORT)) {
			rc = imports_section(&w, NULL, out);
			imports_done = true;
		}
		if (!s || rc)
			break;
		struct ct_buf raw = {0};
		switch (s->id) {
		case WSEC_TYPE:
			rc = types_section(&w, s, out);
			types_done = true;
			break;
		case WSEC_IMPORT:
			rc = imports_section(&w, s, out);
			imports_done = true;
			break;
		case WSEC_TABLE:
			rc = table_section(&w, s, out);
			break;
		case WSEC_GLOBAL:
			rc = global_section(&w, s, out);
			break;
		case WSEC_EXPORT:
			rc = export_section(&w, s, out);
			break;
		case WSEC_START:
			rc = start_section(&w, s, out);
			break;
		case WSEC_ELEMENT:
			rc = element_section(&w, s, out);
			break;
		case WSEC_CODE:
			rc = code_section(&w, fns, n, out);
			break;
		case WSEC_CUSTOM:
			if (!strcmp(s->name, "name")) {
				name_section(&w, s, out);
				break;
			}
			if (!strncmp(s->name, ".debug_", 7) || !strcmp(s->name, "sourceMappingURL") ||
			    !strcmp(s->name, "external_debug_info"))
				break; /* code offsets would be stale */
			/* fallthrough */
		default:
			buf_put(out, m->bytes + s->start, s->payload + s->size - s->start);
			break;
		}
		buf_free(&raw);
	}
	CT_VEC_FREE(w.multi);
	return rc;
}
