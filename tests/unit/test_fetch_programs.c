/* The fetch map holds each distinct argument program once and a site only
 * its index (probes.c ct_fetch_program_index): identical programs share an
 * index whatever their pads hold, any difference in a field the BPF side
 * reads gives another, and a full table refuses new ones. */
#include "unit.h"

#include "probes/probes.h"

#include <stdlib.h>

/* A results program as a RET's: COUNT registers into the payload, then
 * the bytes the first points to. */
static struct ct_fetch *results(unsigned count, uint16_t pad)
{
	struct ct_fetch *f = calloc(1, sizeof(*f));
	for (unsigned i = 0; i < count; i++)
		f->ops[i] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = (uint8_t)i, .dst = (uint16_t)(8 * i)};
	f->ops[count] = (struct ct_fetch_op){.code = CT_OP_DEREF, .dst = (uint16_t)(8 * count), .size = 64};
	f->nops = (uint16_t)(count + 1);
	f->size = (uint16_t)(8 * count + CT_MEM_HDR + 64);
	f->pad = pad;
	f->pad2 = pad;
	return f;
}

TEST(fetch_programs_are_shared_by_identical_sites)
{
	struct ct_fetch_programs t = {0};
	bool added;
	struct ct_fetch *a = results(2, 0), *a2 = results(2, 0x5a5a), *b = results(3, 0);
	uint32_t ia = ct_fetch_program_index(&t, a, UINT32_MAX, &added);
	CHECK(added);
	CHECK_EQ_U(ia, 1); /* 0 is none */
	CHECK_EQ_U(ct_fetch_program_index(&t, a2, UINT32_MAX, &added), ia);
	CHECK(!added);
	uint32_t ib = ct_fetch_program_index(&t, b, UINT32_MAX, &added);
	CHECK(added);
	CHECK(ib != ia);
	/* one field the BPF side reads, changed: another program */
	struct ct_fetch *c = results(2, 0);
	c->ops[2].size = 32;
	CHECK(ct_fetch_program_index(&t, c, UINT32_MAX, &added) != ia);
	CHECK(added);
	struct ct_fetch *d = results(2, 0);
	d->guard_hi = 16;
	CHECK(ct_fetch_program_index(&t, d, UINT32_MAX, &added) != ia);
	CHECK_EQ_U(t.n, 5);
	/* full: the known ones are still found, a new one is refused */
	struct ct_fetch *e = results(4, 0);
	CHECK_EQ_U(ct_fetch_program_index(&t, e, 5, &added), UINT32_MAX);
	CHECK(!added);
	CHECK_EQ_U(ct_fetch_program_index(&t, b, 5, &added), ib);
	CHECK_EQ_U(t.n, 5);
	ct_fetch_programs_free(&t);
	CHECK_EQ_U(t.n, 0);
	free(a), free(a2), free(b), free(c), free(d), free(e);
}
