/* The one parser of durations and sizes (src/util/util.c). */
#include "unit.h"

#include "util/util.h"

TEST(parse_duration_units)
{
	uint64_t v = 0;
	CHECK_EQ_I(parse_duration("10us", &v), 0);
	CHECK_EQ_U(v, 10000);
	CHECK_EQ_I(parse_duration("1.5ms", &v), 0);
	CHECK_EQ_U(v, 1500000);
	CHECK_EQ_I(parse_duration("500", &v), 0);
	CHECK_EQ_U(v, 500);
	CHECK_EQ_I(parse_duration("2h", &v), 0);
	CHECK_EQ_U(v, 7200000000000ULL);
	CHECK_EQ_I(parse_duration("1.8e10s", &v), 0); /* still fits in 64 bits of ns */
	CHECK_EQ_U(v, 18000000000000000000ULL);
	CHECK(parse_duration("-1s", &v) != 0);
	CHECK(parse_duration("1parsec", &v) != 0);
	CHECK(parse_duration("", &v) != 0);
}

/* Past 2^64 ns (~1.8e10 s) the value used to wrap and select everything. */
TEST(parse_duration_refuses_what_does_not_fit)
{
	uint64_t v = 7;
	CHECK(parse_duration("1.9e10s", &v) != 0);
	CHECK(parse_duration("1e300h", &v) != 0);
	CHECK(parse_duration("18446744073709551616", &v) != 0);
	CHECK(parse_duration("inf", &v) != 0);
	CHECK(parse_duration("nan", &v) != 0);
	CHECK(parse_duration("infs", &v) != 0);
	CHECK_EQ_U(v, 7);
	CHECK(parse_size("1e30G", &v) != 0);
	CHECK_EQ_I(parse_size("1G", &v), 0);
	CHECK_EQ_U(v, 1073741824);
}

/* A failing caller may wrap the line already recorded; the old ct_fail read
 * that line while it overwrote it and printed a garbled, repeated message. */
TEST(fail_wraps_the_recorded_line)
{
	ct_fail("library %s does not exist", "libx.so");
	ct_fail("cannot find library %s: %s; give its path", "libx.so", ct_error());
	CHECK_STR(ct_error(), "cannot find library libx.so: library libx.so does not exist; give its path");
	char long_word[2000];
	memset(long_word, 'w', sizeof(long_word) - 1);
	long_word[sizeof(long_word) - 1] = 0;
	ct_fail("%s", long_word);
	ct_fail("outer: %s", ct_error());
	CHECK(!strncmp(ct_error(), "outer: www", 10));
	CHECK_EQ_U(strlen(ct_error()), 1023); /* cut at the line's size, still one string */
}

/* The record file's integers: LEB128 varints, zigzag for signed ones. */
TEST(varints_round_trip)
{
	static const uint64_t u[] = {0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0xffffffffULL, 1ULL << 63, UINT64_MAX};
	static const int64_t s[] = {0, 1, -1, 63, -64, 64, -65, INT64_MAX, INT64_MIN};
	static const size_t ulen[] = {1, 1, 1, 2, 2, 3, 5, 10, 10};
	struct ct_buf b = {0};
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		size_t before = b.n;
		buf_uvar(&b, u[i]);
		CHECK_EQ_U(b.n - before, ulen[i]);
	}
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		buf_svar(&b, s[i]);
	buf_str(&b, "name");
	buf_u64(&b, 0x1122334455667788ULL);
	struct ct_rd r = {b.p, b.p + b.n, false};
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		CHECK_EQ_U(rd_uvar(&r), u[i]);
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		CHECK_EQ_I(rd_svar(&r), s[i]);
	char *name = rd_str(&r);
	CHECK_STR(name, "name");
	free(name);
	CHECK_EQ_U(rd_u64(&r), 0x1122334455667788ULL);
	CHECK(!r.bad && r.p == r.end);
	buf_free(&b);
}

/* A reader past its end, or a varint longer than 64 bits, reads zeros and
 * says so; it never reads beyond the range. */
TEST(reader_overruns_are_flagged)
{
	const uint8_t cut[] = {0x80, 0x80};      /* a varint that does not end */
	struct ct_rd r = {cut, cut + sizeof(cut), false};
	CHECK_EQ_U(rd_uvar(&r), 0);
	CHECK(r.bad);
	uint8_t longv[11];
	memset(longv, 0xff, sizeof(longv));       /* 11 continuation bytes */
	r = (struct ct_rd){longv, longv + sizeof(longv), false};
	CHECK_EQ_U(rd_uvar(&r), 0);
	CHECK(r.bad);
	const uint8_t str[] = {5, 'a', 'b'};      /* a string longer than what is left */
	r = (struct ct_rd){str, str + sizeof(str), false};
	char *s = rd_str(&r);
	CHECK_STR(s, "");
	free(s);
	CHECK(r.bad);
	r = (struct ct_rd){str, str + 1, false};
	CHECK_EQ_U(rd_u64(&r), 0);
	CHECK(r.bad && rd_bytes(&r, 1) == NULL);
}

/* Decimal text, padded or not, against printf's, around every digit-count
 * step (the writer does two digits a step). */
TEST(decimals_match_printf)
{
	uint64_t v[64 * 2 + 4];
	size_t n = 0;
	for (uint64_t p = 1; p && n < 40; p = p * 10 <= p ? 0 : p * 10) {
		v[n++] = p - 1;
		v[n++] = p;
		v[n++] = p + 7;
	}
	v[n++] = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		for (unsigned w = 0; w <= 22; w += 3) {
			struct ct_buf b = {0};
			buf_put(&b, "x", 1);
			buf_dec_pad(&b, v[i], w);
			char want[48];
			snprintf(want, sizeof(want), "x%*llu", (int)w, (unsigned long long)v[i]);
			buf_put(&b, "", 1);
			CHECK_STR((char *)b.p, want);
			buf_free(&b);
		}
	/* buf_dec (its own path, not a width-0 buf_dec_pad), appended after
	 * text already there and with the buffer's room just enough */
	for (size_t i = 0; i < n; i++) {
		struct ct_buf b = {0};
		char want[64];
		buf_put(&b, "y", 1);
		buf_dec(&b, v[i]);
		buf_put(&b, ",", 1);
		buf_dec(&b, v[n - 1 - i]);
		buf_put(&b, "", 1);
		snprintf(want, sizeof(want), "y%llu,%llu", (unsigned long long)v[i], (unsigned long long)v[n - 1 - i]);
		CHECK_STR((char *)b.p, want);
		buf_free(&b);
	}
}

/* copy_short: every length a short copy takes (its four cases and the
 * 16-byte blocks' boundaries), at every alignment, exactly N bytes
 * written: none before or after */
TEST(short_copies_are_exact)
{
	uint8_t src[96], dst[128];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n + off <= 80; n++) {
			memset(dst, 0xee, sizeof(dst));
			copy_short(dst + 16 + off, src + off, n);
			CHECK(!memcmp(dst + 16 + off, src + off, n));
			for (size_t i = 0; i < sizeof(dst); i++)
				if (i < 16 + off || i >= 16 + off + n)
					CHECK_EQ_U(dst[i], 0xee);
		}
	struct ct_buf b = {0};
	buf_put(&b, "x", 1);
	buf_put_short(&b, "0123456789abcdefghij", 20);
	buf_put_short(&b, "", 0);
	buf_put_short(&b, "yz", 2);
	buf_put(&b, "", 1);
	CHECK_STR((char *)b.p, "x0123456789abcdefghijyz");
	buf_free(&b);
}

/* -F/-N patterns: shell globs where '*' also crosses '/' and '.' (Go's
 * package paths and method names contain both). */
TEST(glob_matches_go_and_c_names)
{
	CHECK(glob_match("main.*", "main.fib"));
	CHECK(glob_match("main.*", "main.(*T).Method"));
	CHECK(glob_match("*fib*", "github.com/x/y.fib2"));
	CHECK(glob_match("net/http.*", "net/http.(*Server).Serve"));
	CHECK(glob_match("f?b", "fib"));
	CHECK(glob_match("fib[0-9]", "fib7"));
	CHECK(!glob_match("main.*", "runtime.main"));
	CHECK(!glob_match("fib", "fib2"));
	CHECK(!glob_match("", "x"));
}

TEST(parse_sizes_and_numbers)
{
	uint64_t v = 0;
	CHECK_EQ_I(parse_size("4096", &v), 0);
	CHECK_EQ_U(v, 4096);
	CHECK_EQ_I(parse_size("4K", &v), 0);
	CHECK_EQ_U(v, 4096);
	CHECK_EQ_I(parse_size("256M", &v), 0);
	CHECK_EQ_U(v, 256ULL << 20);
	CHECK_EQ_I(parse_size("1.5GiB", &v), 0);
	CHECK_EQ_U(v, 3ULL << 29);
	CHECK(parse_size("12Q", &v) != 0);
	CHECK(parse_size("-1K", &v) != 0);
	CHECK(parse_size("", &v) != 0);
	CHECK_EQ_I(parse_u64("0x10", &v), 0);
	CHECK_EQ_U(v, 16);
	CHECK_EQ_I(parse_u64("18446744073709551615", &v), 0);
	CHECK_EQ_U(v, UINT64_MAX);
	CHECK(parse_u64("18446744073709551616", &v) != 0);
	CHECK(parse_u64("-1", &v) != 0);
	CHECK(parse_u64("12abc", &v) != 0);
	CHECK(parse_u64("", &v) != 0);
}

/* The map behind goroutine stacks and type ids: keys of any value (0
 * too), growth, deletion that keeps later keys of a probe chain findable. */
TEST(map_put_get_delete)
{
	struct ct_map m = {0};
	for (uint64_t k = 0; k < 5000; k++)
		map_put(&m, k * 0x9e3779b97f4a7c15ULL, (void *)(uintptr_t)(k + 1));
	CHECK_EQ_U(m.n, 5000);
	for (uint64_t k = 0; k < 5000; k += 2)
		CHECK(map_del(&m, k * 0x9e3779b97f4a7c15ULL));
	CHECK(!map_del(&m, 2 * 0x9e3779b97f4a7c15ULL));
	for (uint64_t k = 0; k < 5000; k++) {
		void *want = k % 2 ? (void *)(uintptr_t)(k + 1) : NULL;
		CHECK(map_get(&m, k * 0x9e3779b97f4a7c15ULL) == want);
	}
	CHECK_EQ_U(m.n, 2500);
	map_free(&m);
}

/* ct_heap_in_huge_pages: the heap's mapping is marked for transparent huge
 * pages (smaps' VmFlags "hg") and a block from it is still good memory. */
TEST(heap_in_huge_pages)
{
	char mode[64] = "";
	FILE *t = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!t || !fgets(mode, sizeof(mode), t) || strstr(mode, "[never]")) {
		if (t)
			fclose(t);
		unit_skip("no transparent huge pages in this kernel");
		return;
	}
	fclose(t);
	ct_heap_in_huge_pages();
	char *block = xcalloc(1, 4u << 20);
	block[(4u << 20) - 1] = 1;
	FILE *f = fopen("/proc/self/smaps", "r");
	CHECK(f != NULL);
	char line[512];
	bool in_heap = false, marked = false;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* a mapping's first line */
			in_heap = strstr(line, "[heap]") != NULL;
		if (in_heap && !strncmp(line, "VmFlags:", 8) && strstr(line, " hg"))
			marked = true;
	}
	if (f)
		fclose(f);
#if defined(__SANITIZE_ADDRESS__)
	marked = true; /* (ASan's allocator keeps its blocks off [heap]: make unit-san) */
#endif
	CHECK(marked);
	free(block);
}
