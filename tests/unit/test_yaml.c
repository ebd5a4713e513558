/* The YAML item writer (render/yaml.c) on JSON objects with what is hard to
 * carry into YAML; tests/e2e/test_report_yaml.py reads real output back with
 * a YAML parser. */
#include "render/render.h"
#include "unit.h"

#include <stdlib.h>

/* YAML item of OBJ as a NUL-terminated string (static buffer). */
static const char *item(const char *obj)
{
	static struct ct_buf b;
	b.n = 0;
	ct_yaml_item_from_json(obj, strlen(obj), &b);
	buf_put(&b, "", 1);
	return (const char *)b.p;
}

TEST(yaml_block_mapping_per_call)
{
	CHECK_STR(item("{\"ts\":1,\"dur\":null,\"goid\":7,\"func\":\"main.x\",\"status\":\"returned\",\"tail\":true}"),
		  "- ts: 1\n  dur: null\n  goid: 7\n  func: \"main.x\"\n  status: returned\n  tail: true\n");
	CHECK_STR(item("{\"ts\":5,\"lost\":3}"), "- ts: 5\n  lost: 3\n");
}

TEST(yaml_plain_only_when_unambiguous)
{
	CHECK_STR(item("{\"a\":\"null\",\"b\":\"y\",\"c\":\"ok_1\",\"d\":\"Ok\",\"e\":\"1x\",\"f\":\"\",\"g\":\"no\"}"),
		  "- a: \"null\"\n  b: \"y\"\n  c: ok_1\n  d: \"Ok\"\n  e: \"1x\"\n  f: \"\"\n  g: \"no\"\n");
}

TEST(yaml_nested_values_stay_json)
{
	CHECK_STR(item("{\"args\":[{\"name\":\"a: b, c\",\"value\":{\"X\":1e+22,\"Y\":[-1,2.5e-05,3,5E-324],\"Z\":{}}}]}"),
		  "- args: [{\"name\": \"a: b, c\", \"value\": {\"X\": 1.0e+22, \"Y\": [-1, 2.5e-05, 3, 5.0E-324], \"Z\": {}}}]\n");
	/* JSON escapes are YAML escapes: passed through unchanged */
	CHECK_STR(item("{\"s\":\"q\\\"\\\\\\n\\t\\u0001:,{\"}"), "- s: \"q\\\"\\\\\\n\\t\\u0001:,{\"\n");
}

TEST(yaml_escapes_what_yaml_cannot_carry)
{
	/* NEL, LS, PS (YAML 1.1 line breaks), BOM, U+FFFE, C1: \u escapes;
	 * ill-formed UTF-8 (overlong, surrogate, > U+10FFFF, lone byte):
	 * \u00XX per byte; well-formed text stays as is */
	CHECK_STR(item("{\"s\":\"\xc2\x85\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf\xef\xbf\xbe\xc2\x80\"}"),
		  "- s: \"\\u0085\\u2028\\u2029\\ufeff\\ufffe\\u0080\"\n");
	CHECK_STR(item("{\"s\":\"\xc0\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xc3\"}"),
		  "- s: \"\\u00c0\\u0080|\\u00ed\\u00a0\\u0080|\\u00f4\\u0090\\u0080\\u0080|\\u00c3\"\n");
	CHECK_STR(item("{\"s\":\"\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\xc2\xa0\"}"),
		  "- s: \"\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\xc2\xa0\"\n");
}

TEST(yaml_long_keys_are_explicit)
{
	char key[1101], obj[2400], want[2400];
	memset(key, 'k', 1100);
	key[1100] = 0;
	snprintf(obj, sizeof(obj), "{\"%s\":1,\"v\":{\"%s\":2}}", key, key);
	snprintf(want, sizeof(want), "- ? %s\n  : 1\n  v: {? \"%s\": 2}\n", key, key);
	CHECK_STR(item(obj), want);
}
