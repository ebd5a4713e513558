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
