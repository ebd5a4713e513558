/* What a verifier rejection says (probes.c ct_verifier_reason): the line
 * of the kernel's log that gives the reason, the instruction and its
 * source, in the one-line message of a failed load.  The probe program
 * itself cannot be made to fail here; a tiny invalid program loaded into
 * this kernel gives a real log. */
#include "unit.h"

#include "probes/probes.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <unistd.h>

TEST(verifier_reason_is_the_last_line_but_the_statistics)
{
	/* a level-1 log's end, as Linux 6.18 wrote it for calltrace.bpf.c
	 * with a load from a scalar added */
	const char *log = "; __u64 sp = PT_REGS_SP(ctx); @ calltrace.bpf.c:1122\n"
			  "69: (79) r8 = *(u64 *)(r8 +152)       ; R8=scalar()\n"
			  "; if (sp == 12345) return *(volatile int *)(sp + 8); @ calltrace.bpf.c:1123\n"
			  "70: (55) if r8 != 0x3039 goto pc+3    ; R8=12345\n"
			  "71: (b7) r1 = 12353                   ; R1=12353\n"
			  "72: (61) r7 = *(u32 *)(r1 +0)\n"
			  "R1 invalid mem access 'scalar'\n"
			  "processed 68 insns (limit 1000000) max_states_per_insn 0 total_states 4 peak_states 4 mark_read 0\n"
			  "\n";
	char out[512];
	CHECK_STR(ct_verifier_reason(log, out, sizeof(out)),
		  "R1 invalid mem access 'scalar' (at instruction 72: (61) r7 = *(u32 *)(r1 +0), "
		  "of `if (sp == 12345) return *(volatile int *)(sp + 8); @ calltrace.bpf.c:1123`)");
	/* a reason without an instruction before it; statistics only; nothing */
	CHECK_STR(ct_verifier_reason("BPF program is too large. Processed 1000001 insn\n"
				     "verification time 8 usec\nstack depth 48+16\n",
				     out, sizeof(out)),
		  "BPF program is too large. Processed 1000001 insn");
	CHECK_STR(ct_verifier_reason("processed 2 insns (limit 1000000)\n", out, sizeof(out)), "");
	CHECK_STR(ct_verifier_reason("", out, sizeof(out)), "");
	/* cut to the buffer, still a string */
	CHECK_STR(ct_verifier_reason(log, out, 12), "R1 invalid ");
}

TEST(verifier_reason_of_a_real_rejection)
{
	/* r1 = 12353; r0 = *(u32 *)(r1 + 0); exit: a load through a number */
	const struct bpf_insn bad[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 12353},
		{.code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_0, .src_reg = BPF_REG_1},
		{.code = BPF_JMP | BPF_EXIT},
	};
	char *log = calloc(1, 1 << 16), out[512];
	LIBBPF_OPTS(bpf_prog_load_opts, lo, .log_buf = log, .log_size = 1 << 16, .log_level = 1);
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", bad, 3, &lo);
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (fd < 0 && e == EPERM) {
		free(log);
		unit_fail(__FILE__, __LINE__, "not allowed to load BPF programs (run the tests as root)");
		return;
	}
	/* the verifier refuses it (EACCES), and says why */
	CHECK_EQ_I(fd < 0 ? e : 0, EACCES);
	ct_verifier_reason(log, out, sizeof(out));
	free(log);
	CHECK_STR(out, "R1 invalid mem access 'scalar' (at instruction 1: (61) r0 = *(u32 *)(r1 +0))");
}
