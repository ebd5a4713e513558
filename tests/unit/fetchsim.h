/* The BPF side's fetch program (probes/calltrace.bpf.c run_fetch) run in
 * user space over a made-up process: registers by pt_regs slot and a few
 * mapped regions of memory.  The unit tests of the capture (plan/fetch.c),
 * the payload codec (format/payload.c), value decoding (render/values.c)
 * and the exit walk (plan/sites.c) produce their payloads with it, as the
 * kernel would.  Reads outside the regions fail as an unmapped page does. */
#ifndef CT_UNIT_FETCHSIM_H
#define CT_UNIT_FETCHSIM_H

#include "probes/event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_region {
	uint64_t addr;
	const void *bytes;
	uint32_t len;
};

struct sim_proc {
	uint64_t regs[21]; /* pt_regs slots (enum ct_reg); SP at CT_REG_SP */
	struct sim_region mem[16];
	size_t nmem;
};

/* LEN bytes at BYTES readable at ADDR of PR. */
void sim_map(struct sim_proc *pr, uint64_t addr, const void *bytes, uint32_t len);
/* Runs F over PR into PAYLOAD (at least F->size bytes), as calltrace.bpf.c:
 * -1 where it drops the hit's values (a MEMWORD it cannot read). */
int sim_run_fetch(const struct sim_proc *pr, const struct ct_fetch *f, uint8_t *payload);

#endif
