/* A tiny unit-test harness: TEST(name) { ... CHECK(cond); CHECK_EQ_U(a, b); }
 * Tests register themselves; unit_main.c runs them and prints one line per
 * test ("ok NAME" / "FAIL NAME: file:line: what") then "N passed, N failed".
 * Fixture binaries built by the test run are found under ct_fixture_dir(). */
#ifndef CT_UNIT_H
#define CT_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};
void unit_register(struct unit_test *t);
void unit_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void unit_skip(const char *why);
int unit_failed_now(void);
const char *ct_fixture_dir(void);     /* $CT_FIXTURES or build/fixtures */
char *ct_fixture(const char *name);   /* malloc'd path; NULL if not built */
struct ct_target;
/* Opens fixture NAME as a target; on failure records why (the test then
 * returns). */
int unit_open_target(const char *name, struct ct_target *t);

#define TEST(name)                                                             \
	static void test_##name(void);                                         \
	static struct unit_test reg_##name = {#name, test_##name, NULL};       \
	__attribute__((constructor)) static void register_##name(void)         \
	{                                                                      \
		unit_register(&reg_##name);                                    \
	}                                                                      \
	static void test_##name(void)

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			unit_fail(__FILE__, __LINE__, "%s", #c);               \
			return;                                                \
		}                                                              \
	} while (0)
#define CHECK_EQ_U(a, b)                                                       \
	do {                                                                   \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
		if (a_ != b_) {                                                \
			unit_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b, a_, b_); \
			return;                                                \
		}                                                              \
	} while (0)
#define CHECK_EQ_I(a, b)                                                       \
	do {                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);            \
		if (a_ != b_) {                                                \
			unit_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
			return;                                                \
		}                                                              \
	} while (0)
#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		if (!a_ || !b_ || strcmp(a_, b_)) {                            \
			unit_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
				  a_ ? a_ : "(null)", b_ ? b_ : "(null)");     \
			return;                                                \
		}                                                              \
	} while (0)

#endif
