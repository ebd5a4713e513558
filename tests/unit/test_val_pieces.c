/* Tests for format/payload.c's map from a value's bytes to the payload
 * (ct_val_piece_of/_slot/_bytes), which the planner, the session and the
 * value decoder share. */
#include "format/payload.h"
#include "target/types.h"
#include "unit.h"

/* A 24-byte value: word 0 in a register (payload word at 0), bytes 8..23
 * copied from the stack (memory slot at 8: header, then 16 bytes), and a
 * constant nothing reads. */
static struct ct_val_piece pieces[] = {
	{.kind = CT_PIECE_REG, .reg = CT_RAX, .size = 8, .value_off = 0, .slot = 0},
	{.kind = CT_PIECE_STACK, .size = 16, .value_off = 8, .slot = 8},
	{.kind = CT_PIECE_CONST, .size = 8, .value_off = 24, .literal = 7},
};
static const struct ct_val_desc desc = {.name = "v", .npieces = 3, .pieces = pieces};

TEST(val_piece_of_holds_the_range_whole)
{
	CHECK(ct_val_piece_of(&desc, 0, 8) == &pieces[0]);
	CHECK(ct_val_piece_of(&desc, 8, 8) == &pieces[1]);
	CHECK(ct_val_piece_of(&desc, 16, 8) == &pieces[1]);
	CHECK(ct_val_piece_of(&desc, 4, 8) == NULL);  /* across two pieces */
	CHECK(ct_val_piece_of(&desc, 20, 8) == NULL); /* across the stack piece and the constant */
	CHECK(ct_val_piece_of(&desc, 32, 8) == NULL);
}

TEST(val_piece_slot_register_only_from_its_start)
{
	CHECK_EQ_I(ct_val_piece_slot(&pieces[0], 0), 0);
	CHECK_EQ_I(ct_val_piece_slot(&pieces[0], 4), -1);
	CHECK_EQ_I(ct_val_piece_slot(&pieces[1], 8), 8 + CT_MEM_HDR);
	CHECK_EQ_I(ct_val_piece_slot(&pieces[1], 16), 8 + CT_MEM_HDR + 8);
	CHECK_EQ_I(ct_val_piece_slot(&pieces[2], 24), -1); /* a constant is not in the payload */
}

TEST(val_piece_bytes_only_what_was_read)
{
	uint8_t payload[8 + CT_MEM_HDR + 16] = {0};
	uint16_t got = 16;
	memcpy(payload + 8, &got, 2);
	CHECK(ct_val_piece_bytes(&pieces[0], payload, sizeof(payload), 0, 8) == payload);
	CHECK(ct_val_piece_bytes(&pieces[0], payload, sizeof(payload), 0, 16) == NULL); /* wider than a register */
	CHECK(ct_val_piece_bytes(&pieces[1], payload, sizeof(payload), 16, 8) == payload + 8 + CT_MEM_HDR + 8);
	CHECK(ct_val_piece_bytes(&pieces[1], payload, sizeof(payload) - 1, 16, 8) == NULL); /* cut short */
	got = 0; /* the read failed */
	memcpy(payload + 8, &got, 2);
	CHECK(ct_val_piece_bytes(&pieces[1], payload, sizeof(payload), 8, 16) == NULL);
	CHECK(ct_val_piece_bytes(&pieces[2], payload, sizeof(payload), 24, 8) == NULL);
}
