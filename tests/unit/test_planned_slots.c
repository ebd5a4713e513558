/* The CHECK's planned call sites as the BPF program reads them without a
 * helper call (probes.c ct_planned_slot_put, event.h struct ct_planned_slot):
 * each key within CT_PLANNED_PROBES slots of its own, the rest refused (they
 * go to the hash map). */
#include "unit.h"

#include "probes/probes.h"

#include <stdlib.h>

/* Where the probe program finds KEY (its loop, as calltrace.bpf.c's
 * planned_call): the slot, or NULL at an empty one or past the probes. */
static const struct ct_planned_slot *find(const struct ct_planned_slot *v, uint32_t bits, uint64_t key)
{
	uint32_t at = ct_planned_slot_of(key, bits), mask = (1u << bits) - 1;
	for (uint32_t n = 0; n < CT_PLANNED_PROBES; n++) {
		const struct ct_planned_slot *s = &v[(at + n) & mask];
		if (s->key == key + 1)
			return s;
		if (!s->key)
			return NULL;
	}
	return NULL;
}

TEST(planned_slots_hold_every_key_near_its_own)
{
	enum { BITS = 11 };
	struct ct_planned_slot *v = calloc(1u << BITS, sizeof(*v));
	/* half full with keys as plans make them: a few CHECK sites, many
	 * return-address distances each, also negative ones */
	size_t put = 0, refused = 0;
	for (uint32_t site = 0; site < 16; site++)
		for (int32_t d = -32 * 7; d < 32 * 7; d += 7) {
			struct ct_planned_call c = {.site = site + 100, .key_delta = d, .fetch = site};
			if (ct_planned_slot_put(v, BITS, CT_PLANNED_KEY(site, d), &c))
				put++;
			else
				refused++;
		}
	CHECK_EQ_U(put + refused, 16 * 64);
	CHECK(refused < put / 50);
	for (uint32_t site = 0; site < 16; site++)
		for (int32_t d = -32 * 7; d < 32 * 7; d += 7) {
			const struct ct_planned_slot *s = find(v, BITS, CT_PLANNED_KEY(site, d));
			if (!s)
				continue; /* refused: in the hash map */
			CHECK_EQ_U(s->val.site, site + 100);
			CHECK_EQ_I(s->val.key_delta, d);
		}
	/* not planned: not found (the map's key 0 is no empty slot's) */
	CHECK(find(v, BITS, CT_PLANNED_KEY(3, 1)) == NULL);
	CHECK(find(v, BITS, CT_PLANNED_KEY(0, 2)) == NULL);
	/* a key again: its value replaced in place */
	struct ct_planned_call c2 = {.site = 7, .key_delta = 8};
	CHECK(ct_planned_slot_put(v, BITS, CT_PLANNED_KEY(2, 7), &c2) || !find(v, BITS, CT_PLANNED_KEY(2, 7)));
	const struct ct_planned_slot *s = find(v, BITS, CT_PLANNED_KEY(2, 7));
	CHECK(!s || (s->val.site == 7 && s->val.key_delta == 8));
	free(v);
}

TEST(planned_slots_refuse_past_the_probes)
{
	/* one slot per key fewer than probes: all fit; more than the table
	 * holds: refused, never an endless search */
	enum { BITS = 3 };
	struct ct_planned_slot v[1u << BITS] = {0};
	struct ct_planned_call c = {.site = 1};
	size_t put = 0;
	bool in[20];
	for (uint64_t k = 0; k < 20; k++)
		put += in[k] = ct_planned_slot_put(v, BITS, k, &c);
	CHECK_EQ_U(put, 1u << BITS);
	for (uint64_t k = 0; k < 20; k++)
		CHECK_EQ_I(find(v, BITS, k) != NULL, in[k]);
	/* a table of one slot (bits 0) */
	struct ct_planned_slot one[1] = {0};
	CHECK(ct_planned_slot_put(one, 0, 42, &c));
	CHECK(find(one, 0, 42) != NULL);
	CHECK(!ct_planned_slot_put(one, 0, 43, &c));
}
