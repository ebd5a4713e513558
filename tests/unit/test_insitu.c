/* The program's tiny calls as a calibration (record/insitu.c): what share
 * of slow hits they say, which calls qualify, and when there are too few. */
#include "unit.h"

#include "record/insitu.h"

#include <math.h>

static const uint64_t med[CT_HIT_CLASSES] = {[CT_HIT_EMULATED] = 5000, [CT_HIT_STEPPED] = 20000,
					      [CT_HIT_CALL] = 5200, [CT_HIT_RET] = 20400};

static void set_classes(struct ct_insitu *in, uint32_t site, uint8_t a, uint8_t b)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->f[i].site == site) {
			in->f[i].entry_class = a;
			in->f[i].exit_class = b;
		}
}

TEST(insitu_tail_share)
{
	struct ct_insitu in = {0};
	/* 1,000 calls of a leaf: 900 at 5,100 ns (hits a call and an
	 * emulated exit, body 0), 100 with a slow hit (+10,000 ns), and one
	 * the scheduler interrupted (beyond ten times the median: left out) */
	for (int i = 0; i < 900; i++)
		ct_insitu_add(&in, 7, 8, 5100);
	for (int i = 0; i < 100; i++)
		ct_insitu_add(&in, 7, 8, 15100);
	ct_insitu_add(&in, 7, 8, 5000000);
	set_classes(&in, 7, CT_HIT_CALL, CT_HIT_EMULATED);
	double tail = -1;
	CHECK(ct_insitu_tail(&in, med, &tail));
	/* 1,000 ns on average over the median, of a 5,100 ns hit */
	CHECK(fabs(tail - 1000.0 / 5100) < 1e-9);
	ct_insitu_free(&in);
}

TEST(insitu_body_cancels)
{
	/* the same hits around a 600 ns body: the same share */
	struct ct_insitu in = {0};
	for (int i = 0; i < 900; i++)
		ct_insitu_add(&in, 1, 2, 20200 + 600);
	for (int i = 0; i < 100; i++)
		ct_insitu_add(&in, 1, 2, 20200 + 600 + 4040);
	set_classes(&in, 1, CT_HIT_STEPPED, CT_HIT_RET);
	double tail = -1;
	CHECK(ct_insitu_tail(&in, med, &tail));
	CHECK(fabs(tail - 404.0 / 20200) < 1e-9);
	ct_insitu_free(&in);
}

TEST(insitu_only_tiny_calls)
{
	struct ct_insitu in = {0};
	/* a function with a real body (twice a hit): its variation would
	 * pass for slow hits, it is not used ... */
	for (int i = 0; i < 2000; i++)
		ct_insitu_add(&in, 3, 4, i % 2 ? 10000 : 30000);
	set_classes(&in, 3, CT_HIT_EMULATED, CT_HIT_EMULATED);
	double tail = -1;
	/* ... and with it only, too few samples */
	CHECK(!ct_insitu_tail(&in, med, &tail));
	/* a class the calibration did not measure: not used either */
	for (int i = 0; i < 600; i++)
		ct_insitu_add(&in, 5, 6, 5000);
	set_classes(&in, 5, CT_HIT_CHECK, CT_HIT_EMULATED);
	CHECK(!ct_insitu_tail(&in, med, &tail));
	/* a tiny one with enough calls, none slow: no share */
	for (int i = 0; i < 600; i++)
		ct_insitu_add(&in, 9, 10, 5000);
	set_classes(&in, 9, CT_HIT_EMULATED, CT_HIT_EMULATED);
	CHECK(ct_insitu_tail(&in, med, &tail));
	CHECK(tail == 0);
	ct_insitu_free(&in);
}

TEST(insitu_pooled_by_samples)
{
	/* two tiny functions: their excess and their hits add up */
	struct ct_insitu in = {0};
	for (int i = 0; i < 400; i++)
		ct_insitu_add(&in, 1, 2, i < 360 ? 5000 : 10000); /* +500 on average */
	for (int i = 0; i < 400; i++)
		ct_insitu_add(&in, 3, 4, i < 380 ? 20000 : 40000); /* +1000 */
	set_classes(&in, 1, CT_HIT_EMULATED, CT_HIT_EMULATED);
	set_classes(&in, 3, CT_HIT_STEPPED, CT_HIT_STEPPED);
	double tail = -1;
	CHECK(ct_insitu_tail(&in, med, &tail));
	CHECK(fabs(tail - (400.0 * 500 + 400.0 * 1000) / (400.0 * 5000 + 400.0 * 20000)) < 1e-9);
	ct_insitu_free(&in);
}
