/* What the wasm recorder (recorder/recorder.c, running inside node next to
 * the traced module) sends to calltrace through a pipe: a stream of
 * `struct ct_wire_event` records, each followed by its payload (the captured
 * values, 8 bytes each) padded to 8 bytes, written in batches.  Shared by the
 * recorder (built for wasm32) and calltrace, which turns them back into
 * `struct ct_event`s (run.c, ct_wasm_wire_decode).
 *
 * A record is a third of a `struct ct_event` (probes/event.h), 16 bytes: the
 * bytes through the pipe are copied twice (into the pipe, out of it) and
 * decoded once.  What every event of one run shares is said once -- the pid
 * and the goroutine id in a CT_WIRE_THREAD record whenever the goroutine
 * changes; the time is the difference from the previous record's, and what
 * does not fit is said by a record before: CT_WIRE_TIME (the first record's
 * time, a gap of 2.1 s or more, and an entry sent late by --min-duration,
 * older than that) and CT_WIRE_KEY (a key of 2^32 or more).  The last record
 * has site CT_WIRE_STATS and carries the recorder's counters as its payload. */
#ifndef CT_WASM_WIRE_H
#define CT_WASM_WIRE_H

#include "probes/event.h"

struct ct_wire_event {
	__u32 site; /* as ct_event's, or CT_WIRE_* */
	__u16 len;  /* payload bytes that follow */
	__u16 flags;
	__s32 dts; /* this event's time less the previous record's */
	__u32 key; /* the low half; the high half is 0 unless a CT_WIRE_KEY said */
};

#define CT_WIRE_STATS 0xfffffff0u
/* The events that follow are goroutine PAYLOAD's (a __u64; 0: not a
 * goroutine) of process KEY. */
#define CT_WIRE_THREAD 0xfffffff1u
/* The time is PAYLOAD (a __u64, ns): the next record's dts counts from it. */
#define CT_WIRE_TIME 0xfffffff2u
/* The next record's key is PAYLOAD (a __u64). */
#define CT_WIRE_KEY 0xfffffff3u

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
