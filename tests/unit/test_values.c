/* Value decoding for Rust and C++ (render/values.c) on synthetic inputs:
 * a hand-built type table and signature, the locations of plan/abi.c, the
 * capture program of plan/fetch.c run here over made-up registers and
 * memory as the BPF side runs it (fetchsim.h), the payload
 * compacted as the file keeps it, then decoded as text and JSON.  The
 * layouts are those of the fixtures (tests/fixtures/{rust,cpp}/app: rustc
 * 1.63, g++ 12) that test_types_rustcpp.c reads from DWARF. */
#include "unit.h"
#include "fetchsim.h"
#include "typetab.h"

#include "plan/abi.h"
#include "plan/fetch.h"
#include "format/tracefile.h"
#include "render/values.h"
#include "target/target.h" /* CT_FN_GO */

/* A site's capture planned, run and loaded: what replay holds for one hit. */
struct loaded {
	struct ct_site_fetch f;
	struct ct_site_fetch *sites[1];
	struct ct_file_func func; /* the site's function: Go code under Go's conventions */
	struct ct_file_site site;
	struct ct_trace t;
	struct ct_values *v;
};

/* Plans SIG's capture (arguments, or RESULTS) by convention CC, runs it
 * over PR (NULL: the hit copied nothing) and loads it into L->v. */
static bool load(struct loaded *l, struct ct_typetab *tt, struct sigb *b, enum ct_callconv cc, bool results,
		 const struct sim_proc *pr)
{
	struct ct_abi_layout lay;
	memset(l, 0, sizeof(*l));
	b->sig.rust_abi = cc == CT_CC_RUST;
	if (ct_abi_assign(tt, &b->sig, cc, &lay) != 0)
		return false;
	struct ct_fetch_opts o = {.max_string = 64, .max_items = 8, .max_depth = 3};
	ct_fetch_build(tt, &b->sig, lay.locs, results, &o, &l->f);
	ct_abi_layout_free(&lay);
	static uint8_t raw[CT_MAX_PAYLOAD], compact[CT_MAX_PAYLOAD];
	memset(raw, 0xa5, sizeof(raw)); /* what no op wrote is not read */
	size_t len = 0;
	if (pr) {
		sim_run_fetch(pr, &l->f.prog, raw);
		len = ct_fetch_compact(&l->f.prog, raw, l->f.prog.size, compact, sizeof(compact));
	}
	l->sites[0] = &l->f;
	l->func.flags = cc == CT_CC_GO_REG || cc == CT_CC_GO_STACK ? CT_FN_GO : 0;
	l->t = (struct ct_trace){.types = *tt, .fetch = l->sites, .nsites = 1, .sites = &l->site,
				 .funcs = &l->func, .nfuncs = 1};
	l->v = ct_values_new(&l->t);
	return ct_values_load(l->v, 0, compact, (uint32_t)len);
}

static void loaded_free(struct loaded *l)
{
	ct_values_free(l->v);
	for (size_t i = 0; i < l->t.go_objects.n; i++)
		map_free(&l->t.go_objects.v[i].rtypes);
	CT_VEC_FREE(l->t.go_objects);
	ct_site_fetch_free(&l->f);
}

/* Plans SIG's capture (arguments, or RESULTS) by convention CC, runs it
 * over PR and decodes it: TEXT and JSON as replay shows them. */
static bool decode(struct ct_typetab *tt, struct sigb *b, enum ct_callconv cc, bool results,
		   const struct sim_proc *pr, struct ct_buf *text, struct ct_buf *json)
{
	struct loaded l;
	bool ok = load(&l, tt, b, cc, results, pr);
	if (ok) {
		ct_values_text(l.v, text);
		ct_values_json(l.v, json);
		buf_put(text, "", 1);
		buf_put(json, "", 1);
	}
	loaded_free(&l);
	return ok;
}

#define CHECK_VALUES(tt, b, cc, results, pr, want_text, want_json)                         \
	do {                                                                                \
		struct ct_buf text_ = {0}, json_ = {0};                                     \
		bool ok_ = decode((tt), (b), (cc), (results), (pr), &text_, &json_);        \
		if (!ok_)                                                                   \
			unit_fail(__FILE__, __LINE__, "nothing decoded");                   \
		else if (strcmp((char *)text_.p, (want_text)))                              \
			unit_fail(__FILE__, __LINE__, "text %s, want %s", (char *)text_.p, (want_text)); \
		else if (strcmp((char *)json_.p, (want_json)))                              \
			unit_fail(__FILE__, __LINE__, "json %s, want %s", (char *)json_.p, (want_json)); \
		buf_free(&text_);                                                           \
		buf_free(&json_);                                                           \
		if (unit_failed_now())                                                      \
			return;                                                             \
	} while (0)

/* ---- Rust ---- */

struct rtypes {
	struct ct_typetab tt;
	uint32_t u8, i16, u32, i32, u64, u128, bool_, char_, unit, str, string, vec, slice, rvec,
		optu32, optref, shape, tup, result, fmtres;
};

/* A VARIANT's discriminant: an unsigned TAG at byte OFF. */
static void tag_at(struct ct_typetab *tt, uint32_t id, uint32_t tag, uint32_t off)
{
	tt->v[id].elem = tag;
	tt->v[id].len = off;
}

static void rust_types(struct rtypes *r)
{
	memset(r, 0, sizeof(*r));
	struct ct_typetab *tt = &r->tt;
	r->u8 = add_type(tt, CT_K_UINT, "u8", 1);
	r->i16 = add_type(tt, CT_K_INT, "i16", 2);
	r->u32 = add_type(tt, CT_K_UINT, "u32", 4);
	r->i32 = add_type(tt, CT_K_INT, "i32", 4);
	r->u64 = add_type(tt, CT_K_UINT, "u64", 8);
	r->u128 = add_type(tt, CT_K_UINT, "u128", 16);
	r->bool_ = add_type(tt, CT_K_BOOL, "bool", 1);
	r->char_ = add_type(tt, CT_K_CHAR, "char", 4);
	r->unit = add_type(tt, CT_K_UINT, "()", 0);
	uint32_t pu8 = add_elem(tt, CT_K_PTR, "*const u8", 8, r->u8);
	uint32_t pi32 = add_elem(tt, CT_K_PTR, "*const i32", 8, r->i32);
	/* &str {data_ptr, length}; String = Vec<u8> {buf: {ptr, cap}, len} */
	r->str = add_struct(tt, CT_K_SEQ, "&str", 16, 2, pu8, 0, r->u64, 8);
	name_fields(tt, r->str, "ptr", "len");
	tt->v[r->str].elem = r->u8, tt->v[r->str].is_text = true;
	r->string = add_struct(tt, CT_K_SEQ, "String", 24, 3, pu8, 0, r->u64, 8, r->u64, 16);
	name_fields(tt, r->string, "ptr", "cap", "len");
	tt->v[r->string].elem = r->u8, tt->v[r->string].is_text = true;
	r->vec = add_struct(tt, CT_K_SEQ, "Vec<i32>", 24, 3, pi32, 0, r->u64, 8, r->u64, 16);
	name_fields(tt, r->vec, "ptr", "cap", "len");
	tt->v[r->vec].elem = r->i32;
	r->rvec = add_elem(tt, CT_K_REF, "&Vec<i32>", 8, r->vec);
	r->slice = add_struct(tt, CT_K_SEQ, "&[i32]", 16, 2, pi32, 0, r->u64, 8);
	name_fields(tt, r->slice, "ptr", "len");
	tt->v[r->slice].elem = r->i32;
	/* Option<u32>: u32 tag at 0; None {}, Some {__0: u32 at 4} */
	uint32_t none = add_struct(tt, CT_K_STRUCT, "None", 8, 0);
	uint32_t some = add_struct(tt, CT_K_STRUCT, "Some", 8, 1, r->u32, 4);
	name_fields(tt, some, "__0");
	r->optu32 = add_struct(tt, CT_K_VARIANT, "Option<u32>", 8, 2, none, 0, some, 0);
	name_fields(tt, r->optu32, "None", "Some");
	tag_at(tt, r->optu32, r->u32, 0);
	tt->v[r->optu32].fields[1].value = 1;
	/* Option<&u32>: the reference is the discriminant (0: None) */
	uint32_t ru32 = add_elem(tt, CT_K_REF, "&u32", 8, r->u32);
	uint32_t none8 = add_struct(tt, CT_K_STRUCT, "None", 8, 0);
	uint32_t some8 = add_struct(tt, CT_K_STRUCT, "Some", 8, 1, ru32, 0);
	name_fields(tt, some8, "__0");
	r->optref = add_struct(tt, CT_K_VARIANT, "Option<&u32>", 8, 2, none8, 0, some8, 0);
	name_fields(tt, r->optref, "None", "Some");
	tag_at(tt, r->optref, r->u64, 0);
	tt->v[r->optref].fields[1].flags = CT_FIELD_DEFAULT;
	/* enum Shape { Circle(u32), Rect { w: u32, h: u32 }, Empty }: u32 tag at 0 */
	uint32_t circle = add_struct(tt, CT_K_STRUCT, "Circle", 12, 1, r->u32, 4);
	name_fields(tt, circle, "__0");
	uint32_t rect = add_struct(tt, CT_K_STRUCT, "Rect", 12, 2, r->u32, 4, r->u32, 8);
	name_fields(tt, rect, "w", "h");
	uint32_t empty = add_struct(tt, CT_K_STRUCT, "Empty", 12, 0);
	r->shape = add_struct(tt, CT_K_VARIANT, "rsapp::app::Shape", 12, 3, circle, 0, rect, 0, empty, 0);
	name_fields(tt, r->shape, "Circle", "Rect", "Empty");
	tag_at(tt, r->shape, r->u32, 0);
	tt->v[r->shape].fields[1].value = 1, tt->v[r->shape].fields[2].value = 2;
	r->tup = add_struct(tt, CT_K_STRUCT, "(u32, u64)", 16, 2, r->u32, 0, r->u64, 8);
	name_fields(tt, r->tup, "__0", "__1");
	/* Result<u32, &str>: tag u64 at 0 (Ok 0, Err 1), payload at 8 */
	uint32_t ok = add_struct(tt, CT_K_STRUCT, "Ok", 24, 1, r->u32, 8);
	name_fields(tt, ok, "__0");
	uint32_t err = add_struct(tt, CT_K_STRUCT, "Err", 24, 1, r->str, 8);
	name_fields(tt, err, "__0");
	r->result = add_struct(tt, CT_K_VARIANT, "Result<u32, &str>", 24, 2, ok, 0, err, 0);
	name_fields(tt, r->result, "Ok", "Err");
	tag_at(tt, r->result, r->u64, 0);
	tt->v[r->result].fields[1].value = 1;
	/* Result<(), core::fmt::Error>: one byte, the tag */
	uint32_t fmterr = add_struct(tt, CT_K_STRUCT, "core::fmt::Error", 0, 0);
	uint32_t okunit = add_struct(tt, CT_K_STRUCT, "Ok", 1, 1, r->unit, 1);
	name_fields(tt, okunit, "__0");
	uint32_t errunit = add_struct(tt, CT_K_STRUCT, "Err", 1, 1, fmterr, 1);
	name_fields(tt, errunit, "__0");
	r->fmtres = add_struct(tt, CT_K_VARIANT, "Result<(), core::fmt::Error>", 1, 2, okunit, 0, errunit, 0);
	name_fields(tt, r->fmtres, "Ok", "Err");
	tag_at(tt, r->fmtres, r->u8, 0);
	tt->v[r->fmtres].fields[1].value = 1;
}

static void rust_free(struct rtypes *r)
{
	free_types(&r->tt);
}

/* fn leaf(s: &str, n: u32); fn many(.., e: bool, f: char); fn pair((u32, u64)) */
TEST(values_rust_scalars_strings_tuples)
{
	struct rtypes r;
	rust_types(&r);
	struct sigb b;
	struct sim_proc pr = {0};
	sim_map(&pr, 0x10000, "abcdef", 6);
	sig_init(&b);
	arg_named(&b, "s", r.str), arg_named(&b, "n", r.u32);
	pr.regs[CT_RDI] = 0x10000, pr.regs[CT_RSI] = 3, pr.regs[CT_RDX] = 0xffffffff00000002ull;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "s=\"abc\", n=2",
		     "[{\"name\":\"s\",\"type\":\"&str\",\"value\":\"abc\"},{\"name\":\"n\",\"type\":\"u32\",\"value\":2}]");
	/* the bytes are not there: said, not made up */
	pr.regs[CT_RDI] = 0x20000;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "s=<string not captured>, n=2",
		     "[{\"name\":\"s\",\"type\":\"&str\",\"value\":null,\"unavailable\":\"string not captured\"},"
		     "{\"name\":\"n\",\"type\":\"u32\",\"value\":2}]");
	sig_init(&b);
	arg_named(&b, "b", r.i16), arg_named(&b, "e", r.bool_), arg_named(&b, "f", r.char_), arg_named(&b, "g", r.char_);
	arg_named(&b, "p", r.tup);
	pr.regs[CT_RDI] = 0xfffe, pr.regs[CT_RSI] = 1, pr.regs[CT_RDX] = 'z', pr.regs[CT_RCX] = 0x1f600;
	pr.regs[CT_R8] = 3, pr.regs[CT_R9] = 4;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "b=-2, e=true, f='z', g='\xf0\x9f\x98\x80', p=(3, 4)",
		     "[{\"name\":\"b\",\"type\":\"i16\",\"value\":-2},{\"name\":\"e\",\"type\":\"bool\",\"value\":true},"
		     "{\"name\":\"f\",\"type\":\"char\",\"value\":\"z\"},{\"name\":\"g\",\"type\":\"char\",\"value\":\"\xf0\x9f\x98\x80\"},"
		     "{\"name\":\"p\",\"type\":\"(u32, u64)\",\"value\":[3,4]}]");
	rust_free(&r);
}

/* fn total(v: &Vec<i32>); fn sum_slice(v: &[i32]); fn make_string() -> String */
TEST(values_rust_sequences)
{
	struct rtypes r;
	rust_types(&r);
	struct sigb b;
	struct sim_proc pr = {0};
	static const int32_t items[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	uint64_t vec[3] = {0x30000, 10, 10}; /* ptr, cap, len */
	sim_map(&pr, 0x30000, items, sizeof(items));
	sim_map(&pr, 0x40000, vec, sizeof(vec));
	sig_init(&b);
	arg_named(&b, "v", r.rvec), arg_named(&b, "w", r.slice);
	pr.regs[CT_RDI] = 0x40000, pr.regs[CT_RSI] = 0x30000 + 12, pr.regs[CT_RDX] = 3;
	/* 8 items captured (--max-items) of 10 */
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "v=[1 2 3 4 5 6 7 8 ...](len=10 cap=10), w=[4 5 6](len=3)",
		     "[{\"name\":\"v\",\"type\":\"&Vec<i32>\",\"value\":{\"len\":10,\"cap\":10,\"items\":[1,2,3,4,5,6,7,8]}},"
		     "{\"name\":\"w\",\"type\":\"&[i32]\",\"value\":{\"len\":3,\"items\":[4,5,6]}}]");
	/* an empty slice reads nothing */
	pr.regs[CT_RSI] = 1, pr.regs[CT_RDX] = 0;
	vec[2] = 0;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "v=[](len=0 cap=10), w=[](len=0)",
		     "[{\"name\":\"v\",\"type\":\"&Vec<i32>\",\"value\":{\"len\":0,\"cap\":10,\"items\":[]}},"
		     "{\"name\":\"w\",\"type\":\"&[i32]\",\"value\":{\"len\":0,\"items\":[]}}]");
	/* a String result: RAX holds the address of the caller's String */
	uint64_t str[3] = {0x10000, 8, 6};
	sim_map(&pr, 0x50000, str, sizeof(str));
	sim_map(&pr, 0x10000, "ababab", 6);
	sig_init(&b);
	arg_named(&b, "n", r.u64), res_named(&b, "", r.string);
	pr.regs[CT_RAX] = 0x50000;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, true, &pr, "\"ababab\"",
		     "[{\"name\":\"\",\"type\":\"String\",\"value\":\"ababab\"}]");
	rust_free(&r);
}

/* Rust enums by variant as {:?} shows them, in JSON as serde writes them. */
TEST(values_rust_enums)
{
	struct rtypes r;
	rust_types(&r);
	struct sigb b;
	struct sim_proc pr = {0};
	uint32_t eleven = 11;
	sim_map(&pr, 0x60000, &eleven, 4);
	sig_init(&b);
	arg_named(&b, "o", r.optu32), arg_named(&b, "q", r.optu32), arg_named(&b, "m", r.optref);
	pr.regs[CT_RDI] = 1, pr.regs[CT_RSI] = 5, pr.regs[CT_RDX] = 0, pr.regs[CT_RCX] = 77, pr.regs[CT_R8] = 0x60000;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "o=Some(5), q=None, m=Some(11)",
		     "[{\"name\":\"o\",\"type\":\"Option<u32>\",\"value\":{\"Some\":5}},"
		     "{\"name\":\"q\",\"type\":\"Option<u32>\",\"value\":\"None\"},"
		     "{\"name\":\"m\",\"type\":\"Option<&u32>\",\"value\":{\"Some\":11}}]");
	pr.regs[CT_R8] = 0;
	pr.regs[CT_RDI] = 9; /* no variant has it: not guessed */
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "o=<unavailable: unknown variant>, q=None, m=None",
		     "[{\"name\":\"o\",\"type\":\"Option<u32>\",\"value\":null,\"unavailable\":\"unknown variant\"},"
		     "{\"name\":\"q\",\"type\":\"Option<u32>\",\"value\":\"None\"},"
		     "{\"name\":\"m\",\"type\":\"Option<&u32>\",\"value\":\"None\"}]");
	/* by hidden reference (over 16 bytes, or not two scalars) */
	uint32_t rect[3] = {1, 2, 3}, circle[3] = {0, 2, 0};
	uint64_t res_err[3] = {1, 0x10000, 3};
	sim_map(&pr, 0x70000, rect, sizeof(rect));
	sim_map(&pr, 0x70100, circle, sizeof(circle));
	sim_map(&pr, 0x70200, res_err, sizeof(res_err));
	sim_map(&pr, 0x10000, "bad", 3);
	sig_init(&b);
	arg_named(&b, "s", r.shape), arg_named(&b, "c", r.shape), arg_named(&b, "r", r.result);
	pr.regs[CT_RDI] = 0x70000, pr.regs[CT_RSI] = 0x70100, pr.regs[CT_RDX] = 0x70200;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "s=Rect{w:2 h:3}, c=Circle(2), r=Err(\"bad\")",
		     "[{\"name\":\"s\",\"type\":\"rsapp::app::Shape\",\"value\":{\"Rect\":{\"w\":2,\"h\":3}}},"
		     "{\"name\":\"c\",\"type\":\"rsapp::app::Shape\",\"value\":{\"Circle\":2}},"
		     "{\"name\":\"r\",\"type\":\"Result<u32, &str>\",\"value\":{\"Err\":\"bad\"}}]");
	/* results: Option<u32> in RAX:RDX; Result<(), fmt::Error> in AL, Ok(()) */
	sig_init(&b);
	res_named(&b, "", r.optu32);
	pr.regs[CT_RAX] = 1, pr.regs[CT_RDX] = 3;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, true, &pr, "Some(3)", "[{\"name\":\"\",\"type\":\"Option<u32>\",\"value\":{\"Some\":3}}]");
	sig_init(&b);
	res_named(&b, "", r.fmtres);
	pr.regs[CT_RAX] = 0xff00;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, true, &pr, "Ok(())",
		     "[{\"name\":\"\",\"type\":\"Result<(), core::fmt::Error>\",\"value\":{\"Ok\":null}}]");
	rust_free(&r);
}

/* i128 arguments have no place Rust's rules give (then neither has what
 * follows); an i128 result is RAX:RDX, all 39 digits. */
TEST(values_rust_wide)
{
	struct rtypes r;
	rust_types(&r);
	struct sigb b;
	struct sim_proc pr = {0};
	sig_init(&b);
	arg_named(&b, "x", r.u128), arg_named(&b, "y", r.u32), res_named(&b, "", r.u128);
	pr.regs[CT_RAX] = 0xffffffffffffffffull, pr.regs[CT_RDX] = 0xffffffffffffffffull;
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, false, &pr, "x=<unavailable: location unknown>, y=<unavailable: location unknown>",
		     "[{\"name\":\"x\",\"type\":\"u128\",\"value\":null,\"unavailable\":\"location unknown\"},"
		     "{\"name\":\"y\",\"type\":\"u32\",\"value\":null,\"unavailable\":\"location unknown\"}]");
	CHECK_VALUES(&r.tt, &b, CT_CC_RUST, true, &pr, "340282366920938463463374607431768211455",
		     "[{\"name\":\"\",\"type\":\"u128\",\"value\":340282366920938463463374607431768211455}]");
	rust_free(&r);
}

/* ---- C++ (SysV) ---- */

/* std::string {_M_p, _M_string_length, {_M_local_buf[16] | _M_allocated_capacity}}
 * (not trivially copyable: by hidden reference); std::vector<int> {begin,
 * end, end of storage}; int&; enum class Color. */
TEST(values_cxx_strings_vectors_references)
{
	struct ct_typetab tt = {0};
	uint32_t ch = add_type(&tt, CT_K_INT, "char", 1), int_ = add_type(&tt, CT_K_INT, "int", 4);
	uint32_t u64 = add_type(&tt, CT_K_UINT, "unsigned long", 8);
	uint32_t pch = add_elem(&tt, CT_K_PTR, "char *", 8, ch), pint = add_elem(&tt, CT_K_PTR, "int *", 8, int_);
	uint32_t str = add_struct(&tt, CT_K_SEQ, "std::__cxx11::basic_string<char>", 32, 2, pch, 0, u64, 8);
	name_fields(&tt, str, "ptr", "len");
	tt.v[str].elem = ch, tt.v[str].is_text = true, tt.v[str].by_ref = true;
	uint32_t rstr = add_elem(&tt, CT_K_REF, "const std::__cxx11::basic_string<char> &", 8, str);
	uint32_t vec = add_struct(&tt, CT_K_SEQ, "std::vector<int>", 24, 3, pint, 0, pint, 8, pint, 16);
	name_fields(&tt, vec, "ptr", "end", "cap_end");
	tt.v[vec].elem = int_, tt.v[vec].by_ref = true;
	uint32_t rvec = add_elem(&tt, CT_K_REF, "const std::vector<int> &", 8, vec);
	uint32_t rint = add_elem(&tt, CT_K_REF, "int &", 8, int_);
	uint32_t color = add_struct(&tt, CT_K_ENUM, "app::Color", 4, 2, int_, 0, int_, 0);
	name_fields(&tt, color, "Red", "Green");
	tt.v[color].fields[1].value = 2;

	struct sim_proc pr = {0};
	/* a short string lives in the object itself (SSO) */
	uint64_t sso[4] = {0x80010, 2, 0, 0};
	memcpy(&sso[2], "hi", 3);
	uint64_t heap[4] = {0x90000, 8, 8, 0};
	static const int32_t items[] = {10, 20, 30, 40};
	uint64_t v[3] = {0x91000, 0x91000 + 16, 0x91000 + 16};
	int32_t twentyone = 21;
	sim_map(&pr, 0x80000, sso, sizeof(sso));
	sim_map(&pr, 0x90000, "by value", 8);
	sim_map(&pr, 0x90100, heap, sizeof(heap));
	sim_map(&pr, 0x91000, items, sizeof(items));
	sim_map(&pr, 0x92000, v, sizeof(v));
	sim_map(&pr, 0x93000, &twentyone, 4);
	struct sigb b;
	sig_init(&b);
	arg_named(&b, "s", rstr), arg_named(&b, "t", str), arg_named(&b, "v", rvec), arg_named(&b, "r", rint);
	arg_named(&b, "c", color);
	pr.regs[CT_RDI] = 0x80000, pr.regs[CT_RSI] = 0x90100, pr.regs[CT_RDX] = 0x92000, pr.regs[CT_RCX] = 0x93000;
	pr.regs[CT_R8] = 2;
	CHECK_VALUES(&tt, &b, CT_CC_SYSV, false, &pr, "s=\"hi\", t=\"by value\", v=[10 20 30 40](len=4 cap=4), r=21, c=Green",
		     "[{\"name\":\"s\",\"type\":\"const std::__cxx11::basic_string<char> &\",\"value\":\"hi\"},"
		     "{\"name\":\"t\",\"type\":\"std::__cxx11::basic_string<char>\",\"value\":\"by value\"},"
		     "{\"name\":\"v\",\"type\":\"const std::vector<int> &\",\"value\":{\"len\":4,\"cap\":4,\"items\":[10,20,30,40]}},"
		     "{\"name\":\"r\",\"type\":\"int &\",\"value\":21},{\"name\":\"c\",\"type\":\"app::Color\",\"value\":\"Green\"}]");
	/* a reference whose target was not captured shows the address; an
	 * enumerator no name has, the number */
	pr.regs[CT_RCX] = 0x94000, pr.regs[CT_R8] = 5;
	sig_init(&b);
	arg_named(&b, "r", rint), arg_named(&b, "c", color);
	pr.regs[CT_RDI] = 0x94000, pr.regs[CT_RSI] = 5;
	CHECK_VALUES(&tt, &b, CT_CC_SYSV, false, &pr, "r=0x94000, c=5",
		     "[{\"name\":\"r\",\"type\":\"int &\",\"value\":\"0x94000\"},{\"name\":\"c\",\"type\":\"app::Color\",\"value\":5}]");
	/* a std::string result: RAX has the address of the caller's object */
	sig_init(&b);
	res_named(&b, "", str);
	pr.regs[CT_RAX] = 0x90100;
	CHECK_VALUES(&tt, &b, CT_CC_SYSV, true, &pr, "\"by value\"",
		     "[{\"name\":\"\",\"type\":\"std::__cxx11::basic_string<char>\",\"value\":\"by value\"}]");
	free_types(&tt);
}

/* Arrays of characters in a struct passed by value (8 bytes: RDI): text as
 * a string, as C reads it (up to the first NUL); anything else, numbers. */
TEST(values_char_arrays_as_text)
{
	struct ct_typetab tt = {0};
	uint32_t ch = add_type(&tt, CT_K_INT, "char", 1), uch = add_type(&tt, CT_K_UINT, "unsigned char", 1);
	uint32_t u8 = add_type(&tt, CT_K_UINT, "uint8", 1), i8 = add_type(&tt, CT_K_INT, "short_int", 1);
	uint32_t tag = add_array(&tt, "char[8]", ch, 8), utag = add_array(&tt, "unsigned char[8]", uch, 8);
	uint32_t gtag = add_array(&tt, "[8]uint8", u8, 8), other = add_array(&tt, "short_int[8]", i8, 8);
	uint32_t s = add_struct(&tt, CT_K_STRUCT, "struct t", 8, 1, tag, 0), us = add_struct(&tt, CT_K_STRUCT, "struct u", 8, 1, utag, 0);
	uint32_t gs = add_struct(&tt, CT_K_STRUCT, "struct g", 8, 1, gtag, 0), os = add_struct(&tt, CT_K_STRUCT, "struct o", 8, 1, other, 0);
	name_fields(&tt, s, "tag"), name_fields(&tt, us, "tag"), name_fields(&tt, gs, "tag"), name_fields(&tt, os, "tag");
	struct sim_proc pr = {0};
	struct sigb b;
	static const struct {
		const char *bytes, *text;
	} cases[] = {
		{"big\0\x7f\x01\0\0", "x={tag:\"big\"}"},            /* what follows the NUL is not read */
		{"\0\0\0\0\0\0\0\0", "x={tag:\"\"}"},                /* an empty C string */
		{"tab\there", "x={tag:\"tab\\there\"}"},                 /* no NUL: all of it, escaped */
		{"\xc3\xa9t\xc3\xa9\0\0\0", "x={tag:\"\xc3\xa9t\xc3\xa9\"}"}, /* UTF-8 */
		{"\x01\x02\x03\0\0\0\0\0", "x={tag:[1 2 3 0 0 0 0 0]}"},   /* not text */
		{"ab\xff" "cd\0\0\0", "x={tag:[97 98 -1 99 100 0 0 0]}"},     /* not UTF-8 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(&pr.regs[CT_RDI], cases[i].bytes, 8);
		sig_init(&b);
		arg_named(&b, "x", s);
		struct ct_buf text = {0}, json = {0};
		CHECK(decode(&tt, &b, CT_CC_SYSV, false, &pr, &text, &json));
		if (strcmp((char *)text.p, cases[i].text))
			unit_fail(__FILE__, __LINE__, "case %zu: %s, want %s", i, (char *)text.p, cases[i].text);
		buf_free(&text), buf_free(&json);
	}
	/* unsigned char and Go's uint8 too; an all-NUL one of those is no
	 * string, nor is any other 1-byte integer's array */
	memcpy(&pr.regs[CT_RDI], "id\0\0\0\0\0\0", 8);
	sig_init(&b);
	arg_named(&b, "u", us), arg_named(&b, "g", gs), arg_named(&b, "o", os);
	memcpy(&pr.regs[CT_RSI], "go\0\0\0\0\0\0", 8);
	memcpy(&pr.regs[CT_RDX], "no\0\0\0\0\0\0", 8);
	CHECK_VALUES(&tt, &b, CT_CC_SYSV, false, &pr, "u={tag:\"id\"}, g={tag:\"go\"}, o={tag:[110 111 0 0 0 0 0 0]}",
		     "[{\"name\":\"u\",\"type\":\"struct u\",\"value\":{\"tag\":\"id\"}},"
		     "{\"name\":\"g\",\"type\":\"struct g\",\"value\":{\"tag\":\"go\"}},"
		     "{\"name\":\"o\",\"type\":\"struct o\",\"value\":{\"tag\":[110,111,0,0,0,0,0,0]}}]");
	memset(&pr.regs[CT_RDI], 0, 8);
	sig_init(&b);
	arg_named(&b, "u", us);
	CHECK_VALUES(&tt, &b, CT_CC_SYSV, false, &pr, "u={tag:[0 0 0 0 0 0 0 0]}",
		     "[{\"name\":\"u\",\"type\":\"struct u\",\"value\":{\"tag\":[0,0,0,0,0,0,0,0]}}]");
	free_types(&tt);
}

/* ---- the value tree (Go, register ABI) ---- */

static const struct ct_vnode *kid_at(const struct ct_values *v, const struct ct_vnode *n, int i)
{
	const struct ct_vnode *k = ct_vnode_first(v, n);
	while (k && i-- > 0)
		k = ct_vnode_next(v, k);
	return k;
}

struct gotypes {
	struct ct_typetab tt;
	uint32_t int_, string, slice, point, map, eface, pint;
};

static void go_types(struct gotypes *g)
{
	memset(g, 0, sizeof(*g));
	struct ct_typetab *tt = &g->tt;
	g->int_ = add_type(tt, CT_K_INT, "int", 8);
	g->string = add_type(tt, CT_K_STRING, "string", 16);
	g->slice = add_elem(tt, CT_K_SLICE, "[]int", 24, g->int_);
	g->point = add_struct(tt, CT_K_STRUCT, "main.Point", 16, 2, g->int_, 0, g->int_, 8);
	name_fields(tt, g->point, "X", "Y");
	g->map = add_type(tt, CT_K_MAP, "map[string]int", 8);
	g->eface = add_type(tt, CT_K_EFACE, "interface {}", 16);
	g->pint = add_elem(tt, CT_K_PTR, "*int", 8, g->int_);
}

/* func f(s string, xs []int, p Point): strings, lists and structs decode to
 * their nodes, every item a value of its own. */
TEST(values_tree_go_strings_lists_structs)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg_named(&b, "s", g.string), arg_named(&b, "xs", g.slice), arg_named(&b, "p", g.point);
	static const int64_t items[] = {1, -2, 3};
	struct sim_proc pr = {0};
	sim_map(&pr, 0x10000, "gopher", 6);
	sim_map(&pr, 0x20000, items, sizeof(items));
	pr.regs[CT_RAX] = 0x10000, pr.regs[CT_RBX] = 6;
	pr.regs[CT_RCX] = 0x20000, pr.regs[CT_RDI] = 3, pr.regs[CT_RSI] = 4;
	pr.regs[CT_R8] = 10, pr.regs[CT_R9] = (uint64_t)-20;
	struct loaded l;
	CHECK(load(&l, &g.tt, &b, CT_CC_GO_REG, false, &pr));
	CHECK_EQ_U(ct_values_count(l.v), 3);
	const struct ct_vnode *n = ct_values_decode(l.v, 0);
	CHECK_EQ_I(n->kind, CT_V_STRING);
	CHECK(n->n == 6 && !memcmp(n->s, "gopher", 6) && !(n->flags & CT_VF_CUT));
	n = ct_values_decode(l.v, 1);
	CHECK_EQ_I(n->kind, CT_V_LIST);
	CHECK(n->len == 3 && n->cap == 4 && (n->flags & CT_VF_CAP) && n->n == 3);
	for (int i = 0; i < 3; i++) {
		const struct ct_vnode *k = kid_at(l.v, n, i);
		CHECK(k && k->kind == CT_V_INT && k->i == items[i] && (k->flags & CT_VF_CHECKED));
	}
	CHECK(kid_at(l.v, n, 3) == NULL);
	n = ct_values_decode(l.v, 2);
	CHECK_EQ_I(n->kind, CT_V_STRUCT);
	CHECK(!strcmp(kid_at(l.v, n, 0)->field, "X") && kid_at(l.v, n, 0)->i == 10);
	CHECK(!strcmp(kid_at(l.v, n, 1)->field, "Y") && kid_at(l.v, n, 1)->i == -20);
	loaded_free(&l);
	free_types(&g.tt);
}

/* func g(m map[string]int, e any, q *int): a map's count from its header,
 * an interface's dynamic type and value, nil. */
TEST(values_tree_go_maps_interfaces_nil)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg_named(&b, "m", g.map), arg_named(&b, "e", g.eface), arg_named(&b, "q", g.pint);
	uint64_t hmap[2] = {7, 0};
	int64_t boxed[2] = {42, 0}; /* 16 bytes behind the data word are captured */
	struct sim_proc pr = {0};
	sim_map(&pr, 0x30000, hmap, sizeof(hmap));
	sim_map(&pr, 0x50000, boxed, sizeof(boxed));
	pr.regs[CT_RAX] = 0x30000, pr.regs[CT_RBX] = 0x40000, pr.regs[CT_RCX] = 0x50000, pr.regs[CT_RDI] = 0;
	struct loaded l;
	CHECK(load(&l, &g.tt, &b, CT_CC_GO_REG, false, &pr));
	/* the runtime type at 0x40000 is int (the session names it) */
	struct ct_go_object obj = {.first_site = 0, .nsites = 1};
	map_put(&obj.rtypes, 0x40000, (void *)(uintptr_t)(g.int_ + 1));
	CT_VEC_PUSH(l.t.go_objects, obj);
	const struct ct_vnode *n = ct_values_decode(l.v, 0);
	CHECK_EQ_I(n->kind, CT_V_MAP);
	CHECK(n->u == 0x30000 && (n->flags & CT_VF_LEN) && n->len == 7);
	n = ct_values_decode(l.v, 1);
	CHECK_EQ_I(n->kind, CT_V_DYNAMIC);
	CHECK(n->s && !strcmp(n->s, "int"));
	CHECK(ct_vnode_first(l.v, n) && ct_vnode_first(l.v, n)->kind == CT_V_INT && ct_vnode_first(l.v, n)->i == 42);
	n = ct_values_decode(l.v, 2);
	CHECK(n->kind == CT_V_NIL && (n->flags & CT_VF_GO));
	struct ct_buf text = {0}, json = {0};
	ct_values_text(l.v, &text);
	ct_values_json(l.v, &json);
	buf_put(&text, "", 1), buf_put(&json, "", 1);
	CHECK_STR((char *)text.p, "m=map(0x30000 len=7), e=int(42), q=nil");
	CHECK_STR((char *)json.p, "[{\"name\":\"m\",\"type\":\"map[string]int\",\"value\":{\"ptr\":\"0x30000\",\"len\":7}},"
				  "{\"name\":\"e\",\"type\":\"interface {}\",\"value\":{\"type\":\"int\",\"value\":42}},"
				  "{\"name\":\"q\",\"type\":\"*int\",\"value\":null}]");
	buf_free(&text), buf_free(&json);
	loaded_free(&l);
	free_types(&g.tt);
}

/* What could not be read is a marker with its reason, in the tree, the text
 * and the JSON: a hit that copied nothing, memory not captured, a cut
 * string. */
TEST(values_tree_unreadable_keeps_its_reason)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg_named(&b, "s", g.string), arg_named(&b, "n", g.int_);
	struct loaded l;
	CHECK(load(&l, &g.tt, &b, CT_CC_GO_REG, false, NULL)); /* no payload */
	const struct ct_vnode *n = ct_values_decode(l.v, 0);
	CHECK(n->kind == CT_V_MARKER && !strcmp(n->s, "unavailable: not captured"));
	struct ct_buf text = {0}, json = {0};
	ct_values_text(l.v, &text);
	ct_values_json(l.v, &json);
	buf_put(&text, "", 1), buf_put(&json, "", 1);
	CHECK_STR((char *)text.p, "s=<unavailable: not captured>, n=<unavailable: not captured>");
	CHECK_STR((char *)json.p,
		  "[{\"name\":\"s\",\"type\":\"string\",\"value\":null,\"unavailable\":\"not captured\"},"
		  "{\"name\":\"n\",\"type\":\"int\",\"value\":null,\"unavailable\":\"not captured\"}]");
	buf_free(&text), buf_free(&json);
	loaded_free(&l);

	/* 100 bytes of which 64 were captured (--max-string), and a string
	 * whose bytes are not there */
	static char big[100];
	memset(big, 'a', sizeof(big));
	struct sim_proc pr = {0};
	sim_map(&pr, 0x10000, big, sizeof(big));
	pr.regs[CT_RAX] = 0x10000, pr.regs[CT_RBX] = 100, pr.regs[CT_RCX] = 5;
	CHECK(load(&l, &g.tt, &b, CT_CC_GO_REG, false, &pr));
	n = ct_values_decode(l.v, 0);
	CHECK(n->kind == CT_V_STRING && n->n == 64 && (n->flags & CT_VF_CUT));
	json.n = 0;
	ct_values_json(l.v, &json);
	buf_put(&json, "", 1);
	CHECK(strstr((char *)json.p, "\"truncated\":true") != NULL);
	loaded_free(&l);
	pr.regs[CT_RAX] = 0x90000;
	CHECK(load(&l, &g.tt, &b, CT_CC_GO_REG, false, &pr));
	n = ct_values_decode(l.v, 0);
	CHECK(n->kind == CT_V_MARKER && !strcmp(n->s, "string not captured"));
	loaded_free(&l);
	buf_free(&json);
	free_types(&g.tt);
}

/* A type table may describe more than any output shows (a struct of 100000
 * fields): the tree stops at its node limit with a marker, and the output
 * says the value was cut.  (Fields that are no value of their own, like
 * these undescribed bit-fields, were all printed before the tree: past the
 * 64 KiB a value's text may take.) */
TEST(values_tree_is_bounded)
{
	struct ct_typetab tt = {0};
	uint32_t int_ = add_type(&tt, CT_K_INT, "int", 8);
	uint32_t blob = add_type(&tt, CT_K_STRUCT, "blob", 32); /* no bits of it can be one */
	uint32_t wide = add_type(&tt, CT_K_STRUCT, "wide", 8);
	enum { NF = 100000 };
	tt.v[wide].fields = xcalloc(NF, sizeof(struct ct_field));
	tt.v[wide].nfields = NF;
	for (uint32_t i = 1; i < NF; i++) /* bit-fields no value can be read from */
		tt.v[wide].fields[i] = (struct ct_field){.name = (char *)"f", .type = blob, .flags = CT_FIELD_BITS, .bit_size = 1};
	tt.v[wide].fields[0] = (struct ct_field){.name = (char *)"f", .type = int_};
	struct sigb b;
	sig_init(&b);
	arg_named(&b, "w", wide);
	struct sim_proc pr = {0};
	pr.regs[CT_RDI] = 3;
	struct loaded l;
	CHECK(load(&l, &tt, &b, CT_CC_SYSV, false, &pr));
	const struct ct_vnode *n = ct_values_decode(l.v, 0), *last = NULL;
	CHECK_EQ_I(n->kind, CT_V_STRUCT);
	size_t kids = 0;
	for (const struct ct_vnode *k = ct_vnode_first(l.v, n); k; k = ct_vnode_next(l.v, k))
		kids++, last = k;
	CHECK(kids < NF && kids > 1000);
	CHECK(last && last->kind == CT_V_MARKER && (last->flags & CT_VF_LIMIT));
	struct ct_buf json = {0};
	ct_values_json(l.v, &json);
	buf_put(&json, "", 1);
	CHECK(json.n < 1000000);
	CHECK(strstr((char *)json.p, "\"...\":null}") != NULL); /* the limit marker, last */
	static const char head[] = "[{\"name\":\"w\",\"type\":\"wide\",\"value\":{\"f\":3,\"f\":null,";
	CHECK(!strncmp((char *)json.p, head, sizeof(head) - 1));
	CHECK(strstr((char *)json.p, "\"truncated\":true") != NULL);
	buf_free(&json);
	loaded_free(&l);
	free_types(&tt);
}
