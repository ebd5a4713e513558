/* OTLP spans from calls (see otlp.h for ids and times).
 *
 * A request is built incrementally as calls end: spans of one process go
 * into one ResourceSpans (service.name, process.pid, host.name, the
 * binary's build id, ...) with one ScopeSpans (scope "calltrace"); when the
 * next span is of another process (record --follow) a new ResourceSpans
 * starts, so memory is one request, whatever the trace's length.
 *
 * Span attributes use the OpenTelemetry semantic conventions where one
 * exists: code.function.name (the fully qualified function, as Go names
 * it), thread.id (the OS thread the call started on).  calltrace's own:
 * calltrace.goroutine.id, calltrace.arg.NAME / calltrace.result[.NAME] (the
 * value as the text tree shows it), calltrace.status (unwound|unfinished|exited|lost|unobserved),
 * calltrace.tail_call, calltrace.system_stack, calltrace.dur_below_ns (a
 * returned call's corrected duration too short to tell from none: what it
 * is below, the text's "< N"), calltrace.dur_max_ns (an unobserved
 * call's, whose span ends at the event that showed it over: it lasted at
 * most that, JSON's dur_max), calltrace.off_cpu.preempted_ns and
 * .blocked_ns (its thread's time off CPU while it ran, JSON's off_cpu); a goroutine's root spans
 * calltrace.goroutine.parent_id and calltrace.goroutine.created_by ("F at
 * FILE:LINE", the `go` statement) when its creation was seen: attributes,
 * not links, as the creating span lies in another trace whose ids the
 * creation does not name (a creation outside any traced call has none).  An unwound call (panic,
 * Goexit, longjmp) has status ERROR; an unfinished one (still running at
 * the end) ends at the end of the trace with status UNSET.
 *
 * Encodings (opentelemetry-proto, collector/trace/v1): OTLP/JSON as its
 * specification maps proto3 JSON (lowerCamelCase keys, hex ids, enums as
 * integers, 64-bit integers as decimal strings, default values omitted),
 * and binary protobuf written directly (a few messages: nested lengths are
 * patched in once their contents are known). */
#include "render/otlp.h"
#include "render/values.h"
#include "util/util.h"

#include <inttypes.h>
#include <string.h>

#define DEFAULT_MAX_SPANS 512
#define DEFAULT_MAX_BYTES (1u << 20)

enum attr_type { A_STR, A_INT, A_BOOL };

struct attr {
	size_t key, keylen; /* offsets into struct ct_otlp.scratch */
	size_t str, strlen;
	int64_t i;
	enum attr_type type;
};

struct ct_otlp {
	struct ct_trace *t;
	struct ct_otlp_opts o;
	struct ct_values *vals;
	uint64_t run;
	uint64_t start_ns, realtime_ns;
	char *service, *host, *exe_path, *exe_name, *cmdline, *build_id, *version;
	bool build_id_go;
	struct ct_map stacks; /* thread key -> struct seqs: seq of each open shown frame */
	/* the request being built */
	struct ct_buf req;
	size_t nest[8];       /* protobuf: open messages (offsets of their length byte); 5 deep at most */
	unsigned depth;
	bool in_resource;
	bool resource_empty;  /* no span in the open ResourceSpans yet */
	uint32_t pid;         /* of the open ResourceSpans */
	uint64_t req_spans, spans, lost;
	bool failed;
	/* one span's attributes */
	struct ct_buf scratch;
	CT_VEC(struct attr) attrs;
};

struct seqs {
	CT_VEC(uint64_t) v;
};

#define fmix64 hash64 /* util.c: murmur3's finalizer, part of the documented ids */

static uint64_t span_id(const struct ct_otlp *x, uint64_t seq)
{
	uint64_t id = fmix64(x->run ^ fmix64(seq + 1));
	return id ? id : 1;
}

static uint64_t unix_ns(const struct ct_otlp *x, uint64_t ts)
{
	return x->realtime_ns + (ts - x->start_ns); /* wraps correctly for ts < start */
}

static char *meta_dup(const struct ct_trace *t, const char *key)
{
	const char *v = ct_trace_meta(t, key);
	return xstrdup(v ? v : "");
}

struct ct_otlp *ct_otlp_new(struct ct_trace *t, const struct ct_otlp_opts *o)
{
	const char *real = ct_trace_meta(t, "clock.realtime_ns"), *start = ct_trace_meta(t, "clock.start_ns");
	if (!real || !start) {
		ct_fail("%s has no wall-clock time (META clock.realtime_ns), which OTLP spans need; record it again",
			t->path);
		return NULL;
	}
	struct ct_otlp *x = xcalloc(1, sizeof(*x));
	x->t = t;
	x->o = *o;
	if (!x->o.max_spans)
		x->o.max_spans = DEFAULT_MAX_SPANS;
	if (!x->o.max_bytes)
		x->o.max_bytes = DEFAULT_MAX_BYTES;
	x->realtime_ns = strtoull(real, NULL, 10);
	x->start_ns = strtoull(start, NULL, 10);
	x->host = meta_dup(t, "host.name");
	char *run = xasprintf("%s\n%s\n%s", x->host, real, start);
	x->run = hash_str(run);
	free(run);
	x->exe_path = meta_dup(t, "target.path");
	const char *slash = strrchr(x->exe_path, '/');
	x->exe_name = xstrdup(slash ? slash + 1 : x->exe_path);
	x->service = xstrdup(o->service ? o->service : x->exe_name[0] ? x->exe_name : "calltrace");
	x->cmdline = meta_dup(t, "record.cmdline");
	x->build_id = meta_dup(t, "target.build_id");
	x->build_id_go = strspn(x->build_id, "0123456789abcdef") != strlen(x->build_id);
	x->version = meta_dup(t, "calltrace.version");
	if (o->with_values)
		x->vals = ct_values_new(t);
	return x;
}

void ct_otlp_free(struct ct_otlp *x)
{
	if (!x)
		return;
	MAP_FOREACH(&x->stacks, i)
	{
		struct seqs *s = x->stacks.vals[i];
		CT_VEC_FREE(s->v);
		free(s);
	}
	map_free(&x->stacks);
	ct_values_free(x->vals);
	buf_free(&x->req);
	buf_free(&x->scratch);
	CT_VEC_FREE(x->attrs);
	free(x->service);
	free(x->host);
	free(x->exe_path);
	free(x->exe_name);
	free(x->cmdline);
	free(x->build_id);
	free(x->version);
	free(x);
}

/* ---- protobuf ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static void pb_tag(struct ct_buf *b, unsigned field, unsigned wt)
{
	buf_uvar(b, (uint64_t)field << 3 | wt);
}

static void pb_bytes(struct ct_buf *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, WT_LEN);
	buf_uvar(b, n);
	buf_put(b, p, n);
}

/* Length of the well-formed UTF-8 sequence at P (RFC 3629: no overlongs,
 * surrogates or code points past U+10FFFF), 0 if there is none. */
static size_t utf8_len(const uint8_t *p, const uint8_t *end)
{
	unsigned c = *p;
	size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
	if (len <= 1 || p + len > end)
		return len == 1;
	uint32_t cp = c & (0x7f >> len);
	for (size_t k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
	return cp >= min_cp[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? len : 0;
}

/* A string field: protobuf wants valid UTF-8 (the collector refuses
 * anything else), so a byte that is not part of a well-formed sequence
 * stands for the code point U+0080..U+00FF, as in calltrace's JSON. */
static void pb_string(struct ct_buf *b, unsigned field, const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s, *end = p + n;
	size_t bad = 0;
	for (const uint8_t *q = p; q < end;) {
		size_t l = utf8_len(q, end);
		bad += !l;
		q += l ? l : 1;
	}
	if (!bad) {
		pb_bytes(b, field, s, n);
		return;
	}
	pb_tag(b, field, WT_LEN);
	buf_uvar(b, n + bad); /* each bad byte becomes two */
	while (p < end) {
		size_t l = utf8_len(p, end);
		if (l) {
			buf_put(b, p, l);
			p += l;
		} else {
			uint8_t two[2] = {(uint8_t)(0xc0 | *p >> 6), (uint8_t)(0x80 | (*p & 0x3f))};
			buf_put(b, two, 2);
			p++;
		}
	}
}

static void pb_varint(struct ct_buf *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	buf_uvar(b, v);
}

static void pb_fixed64(struct ct_buf *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, WT_I64);
	buf_u64(b, v); /* little-endian, as protobuf's fixed64 */
}

/* A nested message: its length is not known until it ends; one byte is
 * reserved and the contents moved up if the length needs more. */
static void pb_begin(struct ct_otlp *x, unsigned field)
{
	pb_tag(&x->req, field, WT_LEN);
	x->nest[x->depth++] = x->req.n;
	buf_u8(&x->req, 0);
}

static void pb_end(struct ct_otlp *x)
{
	size_t at = x->nest[--x->depth];
	size_t len = x->req.n - at - 1;
	uint8_t v[10];
	size_t n = 0;
	uint64_t l = len;
	do {
		v[n++] = (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
		l >>= 7;
	} while (l);
	if (n > 1) {
		buf_reserve(&x->req, n - 1);
		memmove(x->req.p + at + n, x->req.p + at + 1, len);
		x->req.n += n - 1;
	}
	memcpy(x->req.p + at, v, n);
}

/* ---- attributes ---- */

static void attr_key(struct ct_otlp *x, struct attr *a, const char *prefix, const char *name)
{
	a->key = x->scratch.n;
	buf_cstr(&x->scratch, prefix);
	buf_cstr(&x->scratch, name);
	a->keylen = x->scratch.n - a->key;
}

static void add_str(struct ct_otlp *x, const char *key, const char *val)
{
	struct attr a = {.type = A_STR};
	attr_key(x, &a, key, "");
	a.str = x->scratch.n;
	buf_cstr(&x->scratch, val);
	a.strlen = x->scratch.n - a.str;
	CT_VEC_PUSH(x->attrs, a);
}

static void add_int(struct ct_otlp *x, const char *key, int64_t v)
{
	struct attr a = {.type = A_INT, .i = v};
	attr_key(x, &a, key, "");
	CT_VEC_PUSH(x->attrs, a);
}

static void add_bool(struct ct_otlp *x, const char *key, bool v)
{
	struct attr a = {.type = A_BOOL, .i = v};
	attr_key(x, &a, key, "");
	CT_VEC_PUSH(x->attrs, a);
}

/* calltrace.arg.NAME / calltrace.result[.NAME]: each captured value. */
static void add_values(struct ct_otlp *x, const struct ct_call *c, bool results)
{
	if (!x->vals || !(results ? ct_values_load(x->vals, c->exit_site, c->ret, c->ret_len) : ct_values_load_args(x->vals, c)))
		return;
	size_t n = ct_values_count(x->vals);
	for (size_t i = 0; i < n; i++) {
		bool is_result;
		const char *name = ct_values_name(x->vals, i, &is_result);
		if (is_result != results)
			continue;
		struct attr a = {.type = A_STR};
		char idx[24];
		snprintf(idx, sizeof(idx), "%zu", i);
		bool unnamed = !name[0] || name[0] == '~' || !strcmp(name, "_");
		if (results && n == 1 && unnamed)
			attr_key(x, &a, "calltrace.result", "");
		else
			attr_key(x, &a, results ? "calltrace.result." : "calltrace.arg.", unnamed ? idx : name);
		a.str = x->scratch.n;
		ct_values_text_one(x->vals, i, &x->scratch);
		a.strlen = x->scratch.n - a.str;
		CT_VEC_PUSH(x->attrs, a);
	}
}

static void json_attrs(struct ct_otlp *x)
{
	struct ct_buf *b = &x->req;
	const char *s = (const char *)x->scratch.p;
	buf_cstr(b, "\"attributes\":[");
	for (size_t i = 0; i < x->attrs.n; i++) {
		const struct attr *a = &x->attrs.v[i];
		buf_cstr(b, i ? ",{\"key\":" : "{\"key\":");
		ct_buf_json_string(b, s + a->key, a->keylen);
		switch (a->type) {
		case A_STR:
			buf_cstr(b, ",\"value\":{\"stringValue\":");
			ct_buf_json_string(b, s + a->str, a->strlen);
			buf_cstr(b, "}}");
			break;
		case A_INT:
			buf_cstr(b, ",\"value\":{\"intValue\":\"");
			buf_sdec(b, a->i);
			buf_cstr(b, "\"}}");
			break;
		case A_BOOL:
			buf_cstr(b, a->i ? ",\"value\":{\"boolValue\":true}}" : ",\"value\":{\"boolValue\":false}}");
			break;
		}
	}
	buf_cstr(b, "]");
}

/* KeyValue messages as field FIELD of the open message. */
static void pb_attrs(struct ct_otlp *x, unsigned field)
{
	const char *s = (const char *)x->scratch.p;
	for (size_t i = 0; i < x->attrs.n; i++) {
		const struct attr *a = &x->attrs.v[i];
		pb_begin(x, field);
		pb_string(&x->req, 1, s + a->key, a->keylen);
		pb_begin(x, 2); /* AnyValue */
		if (a->type == A_STR)
			pb_string(&x->req, 1, s + a->str, a->strlen);
		else
			pb_varint(&x->req, a->type == A_BOOL ? 2 : 3, (uint64_t)a->i);
		pb_end(x);
		pb_end(x);
	}
}

static void clear_attrs(struct ct_otlp *x)
{
	x->attrs.n = 0;
	x->scratch.n = 0;
}

/* ---- requests ---- */

static void open_resource(struct ct_otlp *x, uint32_t pid)
{
	clear_attrs(x);
	add_str(x, "service.name", x->service);
	add_int(x, "process.pid", pid);
	add_str(x, "process.executable.name", x->exe_name);
	add_str(x, "process.executable.path", x->exe_path);
	if (x->cmdline[0])
		add_str(x, "process.command_line", x->cmdline);
	if (x->build_id[0])
		add_str(x, x->build_id_go ? "process.executable.build_id.go" : "process.executable.build_id.gnu",
			x->build_id);
	add_str(x, "host.name", x->host);
	add_str(x, "host.arch", "amd64");
	add_str(x, "os.type", "linux");
	if (x->o.proto) {
		pb_begin(x, 1); /* ExportTraceServiceRequest.resource_spans */
		pb_begin(x, 1); /* ResourceSpans.resource */
		pb_attrs(x, 1);
		pb_end(x);
		pb_begin(x, 2); /* ResourceSpans.scope_spans */
		pb_begin(x, 1); /* ScopeSpans.scope */
		pb_bytes(&x->req, 1, "calltrace", 9);
		pb_string(&x->req, 2, x->version, strlen(x->version));
		pb_end(x);
	} else {
		buf_cstr(&x->req, x->req.n ? ",{\"resource\":{" : "{\"resourceSpans\":[{\"resource\":{");
		json_attrs(x);
		buf_cstr(&x->req, "},\"scopeSpans\":[{\"scope\":{\"name\":\"calltrace\",\"version\":");
		ct_buf_json_string(&x->req, x->version, strlen(x->version));
		buf_cstr(&x->req, "},\"spans\":[");
	}
	x->in_resource = true;
	x->resource_empty = true;
	x->pid = pid;
}

static void close_resource(struct ct_otlp *x)
{
	if (!x->in_resource)
		return;
	if (x->o.proto) {
		pb_end(x); /* scope_spans */
		pb_end(x); /* resource_spans */
	} else {
		buf_cstr(&x->req, "]}]}");
	}
	x->in_resource = false;
}

int ct_otlp_flush(struct ct_otlp *x)
{
	if (x->failed)
		return -1;
	if (!x->req_spans)
		return 0;
	close_resource(x);
	if (!x->o.proto)
		buf_cstr(&x->req, "]}\n");
	int rc = x->o.request(x->o.ctx, x->req.p, x->req.n, x->req_spans);
	x->req.n = 0;
	x->req_spans = 0;
	if (rc)
		x->failed = true;
	return rc;
}

/* ---- spans ---- */

static void put_hex(struct ct_buf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char s[16];
	for (int i = 15; i >= 0; i--, v >>= 4)
		s[i] = digits[v & 15];
	buf_put(b, s, 16);
}

static void be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static struct seqs *stack_of(struct ct_otlp *x, const struct ct_call *c, bool create)
{
	void **slot = map_slot(&x->stacks, ct_call_thread_key(c), create);
	if (!slot)
		return NULL;
	if (!*slot)
		*slot = xcalloc(1, sizeof(struct seqs));
	return *slot;
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct ct_otlp *x = ctx;
	struct seqs *s = stack_of(x, c, true);
	CT_VEC_GROW(s->v, (size_t)c->depth + 1);
	s->v.v[c->depth] = c->seq;
	s->v.n = (size_t)c->depth + 1;
}

static void on_call_exit(void *ctx, const struct ct_call *c)
{
	struct ct_otlp *x = ctx;
	if (x->failed)
		return;
	struct seqs *s = stack_of(x, c, false);
	uint64_t root = c->seq, parent = 0;
	bool has_parent = false;
	if (s && c->depth < s->v.n && s->v.v[c->depth] == c->seq) {
		root = s->v.v[0];
		if (c->depth) {
			parent = s->v.v[c->depth - 1];
			has_parent = true;
		}
		s->v.n = c->depth;
		if (!c->depth) {
			CT_VEC_FREE(s->v);
			free(s);
			map_del(&x->stacks, ct_call_thread_key(c));
		}
	}
	if (x->in_resource && x->pid != c->pid)
		close_resource(x);
	if (!x->in_resource)
		open_resource(x, c->pid);
	const char *name = ct_func_name(x->t, c->func);
	clear_attrs(x);
	add_str(x, "code.function.name", name);
	add_int(x, "thread.id", c->tid);
	if (c->goid)
		add_int(x, "calltrace.goroutine.id", (int64_t)c->goid);
	if (!c->depth && ct_origin_shown(c->origin)) {
		const struct ct_goroutine_origin *o = c->origin;
		const struct ct_pcpos *pos = o->pc ? ct_trace_pcpos(x->t, o->site, o->pid, o->pc) : NULL;
		add_int(x, "calltrace.goroutine.parent_id", (int64_t)o->parent);
		if (pos) {
			char *at = xasprintf("%s at %s:%u", pos->func, pos->file, pos->line);
			add_str(x, "calltrace.goroutine.created_by", at);
			free(at);
		}
	}
	if (c->tail)
		add_bool(x, "calltrace.tail_call", true);
	if (c->sysstack)
		add_bool(x, "calltrace.system_stack", true);
	if (c->context)
		add_int(x, "calltrace.context", c->context);
	if (c->status != CT_CALL_RETURNED)
		add_str(x, "calltrace.status", ct_status_name(c->status));
	/* the span ends at the event that showed an unobserved call over: it
	 * lasted at most that long (JSON's dur_max) */
	if (c->status == CT_CALL_UNOBSERVED && c->end_bound)
		add_int(x, "calltrace.dur_max_ns", (int64_t)ct_dur_max(c->ts_exit - c->ts_entry, c->raw_exit - c->raw_entry));
	/* its thread's time off CPU while it ran (JSON's off_cpu) */
	if (c->off_preempted || c->off_blocked) {
		add_int(x, "calltrace.off_cpu.preempted_ns", (int64_t)c->off_preempted);
		add_int(x, "calltrace.off_cpu.blocked_ns", (int64_t)c->off_blocked);
	}
	if (c->status == CT_CALL_RETURNED) {
		/* the span is as long as the corrected duration: where that is too
		 * short to tell from none, what it is below (the text's "< N") */
		uint64_t below = ct_dur_below(c->ts_exit - c->ts_entry, c->raw_exit - c->raw_entry);
		if (below)
			add_int(x, "calltrace.dur_below_ns", (int64_t)below);
	}
	add_values(x, c, false);
	if (c->status == CT_CALL_RETURNED)
		add_values(x, c, true);
	uint64_t sid = span_id(x, c->seq), tid_hi = fmix64(x->run ^ fmix64(~root)), tid_lo = span_id(x, root);
	uint64_t start = unix_ns(x, c->ts_entry), end = unix_ns(x, c->ts_exit > c->ts_entry ? c->ts_exit : c->ts_entry);
	static const char unwound_msg[] = "unwound: the call never returned (panic, runtime.Goexit or longjmp)";
	struct ct_buf *b = &x->req;
	if (x->o.proto) {
		uint8_t id[16];
		pb_begin(x, 2); /* ScopeSpans.spans */
		be64(id, tid_hi);
		be64(id + 8, tid_lo);
		pb_bytes(b, 1, id, 16);
		be64(id, sid);
		pb_bytes(b, 2, id, 8);
		if (has_parent) {
			be64(id, span_id(x, parent));
			pb_bytes(b, 4, id, 8);
		}
		pb_string(b, 5, name, strlen(name));
		pb_varint(b, 6, 1); /* SPAN_KIND_INTERNAL */
		pb_fixed64(b, 7, start);
		pb_fixed64(b, 8, end);
		pb_attrs(x, 9);
		if (c->status == CT_CALL_UNWOUND) {
			pb_begin(x, 15);
			pb_string(b, 2, unwound_msg, sizeof(unwound_msg) - 1);
			pb_varint(b, 3, 2); /* STATUS_CODE_ERROR */
			pb_end(x);
		}
		pb_end(x);
	} else {
		/* the first span of a resource opened mid-request has no comma */
		buf_cstr(b, x->resource_empty ? "{\"traceId\":\"" : ",{\"traceId\":\"");
		x->resource_empty = false;
		put_hex(b, tid_hi);
		put_hex(b, tid_lo);
		buf_cstr(b, "\",\"spanId\":\"");
		put_hex(b, sid);
		if (has_parent) {
			buf_cstr(b, "\",\"parentSpanId\":\"");
			put_hex(b, span_id(x, parent));
		}
		buf_cstr(b, "\",\"name\":");
		ct_buf_json_string(b, name, strlen(name));
		buf_cstr(b, ",\"kind\":1,\"startTimeUnixNano\":\"");
		buf_dec(b, start);
		buf_cstr(b, "\",\"endTimeUnixNano\":\"");
		buf_dec(b, end);
		buf_cstr(b, "\",");
		json_attrs(x);
		if (c->status == CT_CALL_UNWOUND) {
			buf_cstr(b, ",\"status\":{\"message\":");
			ct_buf_json_string(b, unwound_msg, sizeof(unwound_msg) - 1);
			buf_cstr(b, ",\"code\":2}");
		}
		buf_cstr(b, "}");
	}
	x->req_spans++;
	x->spans++;
	if (x->req_spans >= x->o.max_spans || x->req.n >= x->o.max_bytes)
		ct_otlp_flush(x);
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct ct_otlp *x = ctx;
	x->lost += n;
}

const struct ct_recon_ops ct_otlp_ops = {on_call_enter, on_call_exit, on_lost, NULL};

uint64_t ct_otlp_spans(const struct ct_otlp *x)
{
	return x->spans;
}

uint64_t ct_otlp_lost(const struct ct_otlp *x)
{
	return x->lost;
}

int ct_render_otlp(struct ct_trace *t, const struct ct_render_opts *ro, const struct ct_otlp_opts *o,
		   uint64_t *nspans, uint64_t *lost)
{
	struct ct_otlp *x = ct_otlp_new(t, o);
	if (!x)
		return -1;
	ct_filter_run(t, ro->filter, &ct_otlp_ops, x);
	int rc = ct_otlp_flush(x);
	if (nspans)
		*nspans = ct_otlp_spans(x);
	if (lost)
		*lost = ct_otlp_lost(x);
	ct_otlp_free(x);
	return rc;
}
