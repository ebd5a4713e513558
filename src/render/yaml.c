/* YAML 1.2: one document, a block sequence of the same mappings as the JSON
 * Lines objects, one item per call in entry order:
 *
 *   %YAML 1.2
 *   ---
 *   - ts: 12345
 *     dur: 678
 *     goid: null
 *     func: "main.add"
 *     status: returned
 *     args: [{"name": "a", "type": "int", "value": 40}]
 *
 * Each item is re-laid out from the object json.c builds (so the keys and
 * values cannot drift from the JSON output): top-level keys become block
 * mapping keys, values stay JSON text, which YAML 1.2 reads as flow
 * collections and double-quoted scalars with the same meaning.  A few
 * things valid in JSON are not safe in YAML, and are rewritten here:
 *  - raw characters YAML does not allow in a stream (C1 controls, U+FEFF,
 *    U+FFFE/U+FFFF, ill-formed UTF-8 that got through as raw bytes) and the
 *    characters YAML 1.1 treats as line breaks (U+0085, U+2028, U+2029,
 *    which a quoted scalar would fold into spaces) become \u escapes, an
 *    ill-formed sequence one \u00XX per byte like the JSON encoder's;
 *  - numbers with an exponent but no '.' (1e+300) get ".0" (1.0e+300):
 *    YAML 1.1 parsers such as PyYAML would read them as strings;
 *  - a key longer than YAML's 1024-character limit for implicit keys is
 *    written as an explicit key ("? key");
 *  - a string matching [a-z_][a-z0-9_]* that no YAML version reads as
 *    something else (not null/true/false/yes/no/on/off/y/n) goes unquoted
 *    when it is a whole key or value of the item, for readability.
 * Memory stays bounded like JSON's: one item at a time. */
#include "render/render.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* YAML limits an implicit key ("key": value) to 1024 characters; longer
 * keys (bytes, so counting conservatively) are written as explicit "? key". */
#define MAX_IMPLICIT_KEY 1000

/* End of the JSON string starting at P ('"'): just past its closing quote. */
static const char *string_end(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return end;
}

/* End of the JSON value starting at P: at the ',' or '}' that follows it
 * in the enclosing object. */
static const char *value_end(const char *p, const char *end)
{
	int nesting = 0;
	while (p < end) {
		char c = *p;
		if (c == '"') {
			p = string_end(p, end);
			continue;
		}
		if (c == '{' || c == '[')
			nesting++;
		else if (c == '}' || c == ']') {
			if (nesting == 0)
				return p;
			nesting--;
		} else if (c == ',' && nesting == 0)
			return p;
		p++;
	}
	return p;
}

/* Whether code point CP may appear raw in a YAML double-quoted scalar and
 * mean itself for YAML 1.1 and 1.2 parsers alike. */
static bool yaml_raw_ok(uint32_t cp)
{
	if (cp < 0xa0)
		return cp >= 0x20 && cp < 0x7f; /* C0, DEL, C1 and NEL: escape */
	if (cp == 0x2028 || cp == 0x2029 || cp == 0xfeff)
		return false;
	if (cp >= 0xd800 && cp <= 0xdfff)
		return false;
	return cp <= 0xfffd || (cp >= 0x10000 && cp <= 0x10ffff);
}

static void put_u_escape(struct ct_buf *out, uint32_t cp)
{
	char esc[8];
	snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
	buf_put(out, esc, 6);
}

/* The inside of a JSON string (between its quotes): JSON escapes are YAML
 * escapes too; raw characters YAML cannot carry are escaped. */
static void string_body(struct ct_buf *out, const unsigned char *p, const unsigned char *end)
{
	while (p < end) {
		if (*p == '\\') {
			size_t n = p + 1 < end ? 2 : 1;
			buf_put(out, p, n);
			p += n;
			continue;
		}
		uint32_t cp;
		size_t len = utf8_decode(p, end, &cp);
		if (len && yaml_raw_ok(cp)) {
			buf_put(out, p, len);
			p += len;
		} else if (len) {
			put_u_escape(out, cp); /* never above U+FFFF: those are all allowed */
			p += len;
		} else {
			put_u_escape(out, *p++);
		}
	}
}

/* A JSON value as YAML flow text: strings escaped as above, a space after
 * ',' and ':' between items, exponents given a fraction. */
static void flow_value(struct ct_buf *out, const char *p, const char *end)
{
	while (p < end) {
		char c = *p;
		if (c == '"') {
			const char *q = string_end(p, end);
			if (q < end && *q == ':' && q - p > MAX_IMPLICIT_KEY)
				buf_put(out, "? ", 2);
			buf_put(out, "\"", 1);
			string_body(out, (const unsigned char *)p + 1, (const unsigned char *)q - 1);
			buf_put(out, "\"", 1);
			p = q;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			const char *q = p, *exp = NULL;
			bool dot = false;
			while (q < end && *q && strchr("+-.eE0123456789", *q)) {
				if (*q == '.')
					dot = true;
				else if ((*q == 'e' || *q == 'E') && !exp)
					exp = q;
				q++;
			}
			if (exp && !dot) {
				buf_put(out, p, (size_t)(exp - p));
				buf_put(out, ".0", 2);
				buf_put(out, exp, (size_t)(q - exp));
			} else {
				buf_put(out, p, (size_t)(q - p));
			}
			p = q;
		} else if (c == ',' || c == ':') {
			buf_put(out, p, 1);
			buf_put(out, " ", 1);
			p++;
		} else {
			buf_put(out, p, 1);
			p++;
		}
	}
}

/* Whether the JSON string token P..END (with quotes) can be written as a
 * plain scalar that every YAML version reads back as the same string. */
static bool plain_ok(const char *p, const char *end)
{
	static const char *const special[] = {"null", "true", "false", "yes", "no", "on", "off", "y", "n"};
	size_t n = (size_t)(end - p);
	if (n < 3 || p[0] != '"' || end[-1] != '"')
		return false;
	const char *s = p + 1;
	n -= 2;
	if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	for (size_t i = 0; i < sizeof(special) / sizeof(*special); i++)
		if (strlen(special[i]) == n && !memcmp(special[i], s, n))
			return false;
	return true;
}

static void scalar_or_flow(struct ct_buf *out, const char *p, const char *end)
{
	if (plain_ok(p, end))
		buf_put(out, p + 1, (size_t)(end - p - 2));
	else
		flow_value(out, p, end);
}

void ct_yaml_item_from_json(const char *obj, size_t n, struct ct_buf *out)
{
	const char *p = obj, *end = obj + n;
	while (end > p && end[-1] != '}')
		end--;
	if (p >= end || *p != '{') { /* not an object: keep it as one flow item */
		buf_put(out, "- ", 2);
		flow_value(out, obj, obj + n);
		buf_put(out, "\n", 1);
		return;
	}
	p++;
	end--; /* the closing '}' */
	bool first = true;
	while (p < end) {
		const char *key_end = string_end(p, end);
		const char *val = key_end;
		while (val < end && (*val == ':' || *val == ' '))
			val++;
		const char *val_end = value_end(val, end);
		buf_put(out, first ? "- " : "  ", 2);
		first = false;
		bool explicit_key = key_end - p > MAX_IMPLICIT_KEY;
		if (explicit_key)
			buf_put(out, "? ", 2);
		scalar_or_flow(out, p, key_end);
		buf_put(out, explicit_key ? "\n  : " : ": ", explicit_key ? 5 : 2);
		scalar_or_flow(out, val, val_end);
		buf_put(out, "\n", 1);
		p = val_end < end ? val_end + 1 : end;
	}
	if (first)
		buf_put(out, "- {}\n", 5);
}

struct yaml {
	struct ct_trace *t;
	FILE *out;
	struct ct_json_calls *calls;
	struct ct_buf obj, item;
	bool any;
};

static void emit(struct yaml *y)
{
	y->item.n = 0;
	ct_yaml_item_from_json((const char *)y->obj.p, y->obj.n, &y->item);
	fwrite(y->item.p, 1, y->item.n, y->out);
	y->any = true;
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct yaml *y = ctx;
	y->obj.n = 0;
	ct_json_call_object(y->calls, c, &y->obj);
	emit(y);
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct yaml *y = ctx;
	y->obj.n = 0;
	ct_json_lost_object(y->t, ts, n, &y->obj);
	emit(y);
}

int ct_render_yaml(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct yaml y = {t, o->out, ct_json_calls_new(t), {0}, {0}, false};
	fputs("%YAML 1.2\n---\n", y.out);
	struct ct_recon_ops ops = {on_call_enter, NULL, on_lost, NULL};
	ct_json_calls_run(y.calls, o->filter, &ops, &y);
	if (!y.any)
		fputs("[]\n", y.out); /* an empty list, not a null document */
	ct_json_calls_free(y.calls);
	buf_free(&y.obj);
	buf_free(&y.item);
	return 0;
}
