/* Tests for format/payload.c's map from a value's bytes to the payload
 * (ct_val_piece_of/_slot/_bytes), which the planner, the session and the
 * value decoder share. */
#include "fetchsim.h"
#include "format/payload.h"
#include "plan/fetch.h"
#include "plan/sites.h"
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

/* A Go string result: the pointer in RAX, the length in RBX, one payload
 * word each; the planner finds both words (to read the bytes) and the
 * decoder both fields. */
TEST(val_piece_go_string_two_register_words)
{
	struct ct_val_piece s[] = {
		{.kind = CT_PIECE_REG, .reg = CT_RAX, .size = 8, .value_off = 0, .slot = 16},
		{.kind = CT_PIECE_REG, .reg = CT_RBX, .size = 8, .value_off = 8, .slot = 24},
	};
	const struct ct_val_desc str = {.name = "~r0", .npieces = 2, .pieces = s};
	CHECK(ct_val_piece_of(&str, 0, 8) == &s[0]);
	CHECK(ct_val_piece_of(&str, 8, 8) == &s[1]);
	CHECK(ct_val_piece_of(&str, 4, 8) == NULL);
	CHECK_EQ_I(ct_val_piece_slot(&s[0], 0), 16);
	CHECK_EQ_I(ct_val_piece_slot(&s[1], 8), 24);
	uint8_t payload[32] = {0};
	CHECK(ct_val_piece_bytes(&s[1], payload, sizeof(payload), 8, 8) == payload + 24);
}

/* Narrow results (a Go bool by a byte store, a C int): a register piece of
 * 1 or 4 bytes is the low bytes of its payload word; it holds no pointer
 * word for the planner. */
TEST(val_piece_narrow_register_low_bytes)
{
	struct ct_val_piece n[] = {
		{.kind = CT_PIECE_REG, .reg = CT_RCX, .size = 1, .value_off = 0, .slot = 0},
		{.kind = CT_PIECE_REG, .reg = CT_RDI, .size = 4, .value_off = 0, .slot = 8},
	};
	const struct ct_val_desc b = {.name = "ok", .npieces = 1, .pieces = &n[0]};
	const struct ct_val_desc i = {.name = "n", .npieces = 1, .pieces = &n[1]};
	uint8_t payload[16];
	uint64_t w0 = 0x0101, w1 = 0xffffffff00000007ull; /* high bytes: whatever the register had */
	memcpy(payload, &w0, 8), memcpy(payload + 8, &w1, 8);
	CHECK(ct_val_piece_of(&b, 0, 8) == NULL);
	CHECK(ct_val_piece_of(&b, 0, 1) == &n[0]);
	const uint8_t *got = ct_val_piece_bytes(&n[0], payload, sizeof(payload), 0, 1);
	CHECK(got == payload && *got == 1);
	CHECK(ct_val_piece_of(&i, 0, 8) == NULL);
	got = ct_val_piece_bytes(&n[1], payload, sizeof(payload), 0, 4);
	int32_t v;
	CHECK(got);
	memcpy(&v, got, 4);
	CHECK_EQ_I(v, 7);
}

/* Results read at an emulated exit (plan/fetch.c ct_fetch_relocate): a
 * register minus a stack word (REGDIFF: `s += f(i)`) or a register plus a
 * constant (REG+off) is still one 8-byte word in the register piece's
 * slot, so the map from the value's bytes to the payload reads them as it
 * reads a register: every op writes a slot some piece maps to. */
TEST(val_piece_results_relocated_to_regdiff_and_reg_plus_off)
{
	struct ct_site_fetch raw, f;
	struct ct_exit_walk w;
	memset(&w, 0, sizeof(w));
	w.how = CT_EXIT_EMULATED;
	for (int r = 0; r < 15; r++)
		w.loc[r].reg = CT_LOC_LOST;
	w.loc[CT_RAX].reg = CT_RDX, w.loc[CT_RAX].less_word = true, w.loc[CT_RAX].stack_off = 8;
	w.loc[CT_RAX].width = 8;
	w.loc[CT_RBX].reg = CT_RCX, w.loc[CT_RBX].addend = 5, w.loc[CT_RBX].width = 8;
	ct_fetch_build_raw(CT_CC_GO_REG, 2, &raw);
	CHECK_EQ_I(ct_fetch_relocate(&raw, 0, &w, &f), 0);
	ct_site_fetch_free(&raw);
	CHECK_EQ_U(f.prog.nops, 2);
	CHECK_EQ_U(f.prog.ops[0].code, CT_OP_REGDIFF);
	CHECK_EQ_U(f.prog.ops[0].reg, CT_RDX);
	CHECK_EQ_I(f.prog.ops[0].off, 8);
	CHECK_EQ_U(f.prog.ops[1].code, CT_OP_REG);
	CHECK_EQ_U(f.prog.ops[1].reg, CT_RCX);
	CHECK_EQ_I(f.prog.ops[1].off, 5);
	/* at the exit: the sum 107 in RDX, the old sum 100 at SP+8, RCX 7 */
	struct sim_proc pr = {0};
	uint64_t stack[2] = {0, 100};
	pr.regs[CT_REG_SP] = 0x7000, pr.regs[CT_RDX] = 107, pr.regs[CT_RCX] = 7;
	sim_map(&pr, 0x7000, stack, sizeof(stack));
	uint8_t payload[CT_MAX_PAYLOAD] = {0};
	uint64_t words[2] = {7, 12};
	sim_run_fetch(&pr, &f.prog, payload);
	for (uint32_t i = 0; i < 2; i++) {
		const struct ct_val_desc *d = &f.vals[i];
		const struct ct_val_piece *p = ct_val_piece_of(d, 0, 8);
		CHECK(p && p->kind == CT_PIECE_REG);
		CHECK_EQ_I(ct_val_piece_slot(p, 0), f.prog.ops[i].dst);
		const uint8_t *b = ct_val_piece_bytes(p, payload, sizeof(payload), 0, 8);
		uint64_t v;
		CHECK(b);
		memcpy(&v, b, 8);
		CHECK_EQ_U(v, words[i]);
	}
	ct_site_fetch_free(&f);
}
