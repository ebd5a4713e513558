/* What the wasm recorder (recorder/recorder.c, running inside node next to
 * the traced module) sends to calltrace through a pipe: a stream of
 * `struct ct_wire_event` records, each followed by its payload (the captured
 * values, 8 bytes each) padded to 8 bytes, written in batches.  A record is
 * half a `struct ct_event` (probes/event.h): what every event of one run
 * shares is said once -- the pid in the first record, a CT_WIRE_THREAD one,
 * and the goroutine id in another whenever it changes -- and calltrace fills
 * it in (run.c).  The last record has site CT_WIRE_STATS and carries the
 * recorder's counters as its payload.  Shared by the recorder (built for
 * wasm32) and calltrace. */
#ifndef CT_WASM_WIRE_H
#define CT_WASM_WIRE_H

#include "probes/event.h"

struct ct_wire_event {
	__u32 site; /* as ct_event's, or CT_WIRE_* */
	__u16 len;  /* payload bytes that follow */
	__u16 flags;
	__u64 ts;
	__u64 key;
};

#define CT_WIRE_STATS 0xfffffff0u
/* The events that follow are goroutine KEY's (0: not a goroutine) of
 * process TS (the field carries the pid here, not a time). */
#define CT_WIRE_THREAD 0xfffffff1u

/* Site table entries the runner hands the recorder, one __u32 per site. */
#define CT_WIRE_SITE(func, kind, root) ((__u32)(func) | ((__u32)(kind) << 24) | ((__u32)(root) << 31))
#define CT_WIRE_SITE_FUNC(v) ((v) & 0xffffff)
#define CT_WIRE_SITE_KIND(v) (((v) >> 24) & 7)
#define CT_WIRE_SITE_ROOT(v) ((v) >> 31)

/* The recorder's settings, written into its memory by the runner. */
struct ct_wire_config {
	__u32 pid;
	__u32 limits; /* CT_LIM_* */
	__u32 max_depth;
	__u32 sample_n;
	__u32 sample_g_n;
	__u32 nsites;
	__u64 min_dur_ns;
	__u64 max_events;
};

#endif
