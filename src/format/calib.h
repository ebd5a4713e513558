/* The META "calib" value: what a probe hit costs on the recording machine. */
#ifndef CT_FORMAT_CALIB_H
#define CT_FORMAT_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/event.h"

/* (the hit classes, enum ct_hit_class, are in probes/event.h: the BPF side
 * prices the hits that send no event by them) */

/* What probe hits cost here: measured by record at start-up
 * (record/calibrate.c), kept in META "calib", taken out of every duration
 * by the reconstruction (reconstruct.c, the corrected clock per stack). */
struct ct_costs {
	bool ok;
	/* one whole hit of each class; 0: not measured (the recording had no
	 * such sites, or an older calltrace): priced as EMULATED (CALL, CHECK)
	 * or STEPPED (RET) */
	uint64_t hit_ns[CT_HIT_CLASSES];
	uint64_t mixed_ns;  /* an emulated entry's end + a single-stepped exit's start */
	uint64_t args_ns;   /* more for a hit that captures arguments (after its clock read) */
	unsigned calls;     /* calibration: calls per measurement, and its time */
	double ms;
	/* the BPF program's part of a hit of each class before its clock
	 * read, as the start-up's timed hits measured it (what a hit's
	 * ct_event.extra_ns is relative to); 0: not known (an older file) */
	uint64_t bpf_pre_ns[CT_HIT_CLASSES];
};
/* room for ct_costs_format's text */
#define CT_COSTS_TEXT_MAX 320
/* "emulated=5100 stepped=19800 emulated+stepped=12300 args=800 calls=100
 * ms=9.5", then " call=NS", " ret=NS", " check=NS" and " notrap=NS" when
 * measured (after the fields an older calltrace reads), then
 * " bpfpre.CLASS=NS" for each class whose bpf_pre_ns is known (an older
 * calltrace skips them). */
void ct_costs_format(const struct ct_costs *c, char *buf, size_t n);
bool ct_costs_parse(const char *s, struct ct_costs *out);
/* What a hit of each class costs by C: the classes C did not measure as
 * the kind of instruction they are. */
void ct_costs_hit_prices(const struct ct_costs *c, uint64_t out[CT_HIT_CLASSES]);
/* The class of a hit whose event names a site of KIND (enum
 * ct_site_kind) with FLAGS (CT_SITEF_*). */
enum ct_hit_class ct_hit_class_of(uint8_t kind, uint16_t flags);

#endif
