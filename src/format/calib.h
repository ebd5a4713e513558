/* The META "calib" value: what a probe hit costs on the recording machine. */
#ifndef CT_FORMAT_CALIB_H
#define CT_FORMAT_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What probe hits cost here: measured by record at start-up
 * (record/calibrate.c), kept in META "calib", taken out of every duration
 * by the reconstruction (reconstruct.c, the corrected clock per stack). */
struct ct_costs {
	bool ok;
	uint64_t hit_ns[2]; /* one whole hit: [0] emulated instruction, [1] single-stepped */
	uint64_t mixed_ns;  /* an emulated entry's end + a single-stepped exit's start */
	uint64_t args_ns;   /* more for a hit that captures arguments (after its clock read) */
	unsigned calls;     /* calibration: calls per measurement, and its time */
	double ms;
};
/* "emulated=5100 stepped=19800 emulated+stepped=12300 args=800 calls=100 ms=9.5" */
void ct_costs_format(const struct ct_costs *c, char *buf, size_t n);
bool ct_costs_parse(const char *s, struct ct_costs *out);

#endif
