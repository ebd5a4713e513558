/* Measuring what probe hits cost on this machine (calibrate.c), at the
 * start of a recording; the result goes into the record file's META
 * "calib" and drives the reconstruction's overhead correction. */
#ifndef CT_CALIBRATE_H
#define CT_CALIBRATE_H

#include "probes/probes.h"
#include "format/calib.h"

/* Probes a few functions of calltrace itself with sites FIRST_SITE ..
 * FIRST_SITE + 7 (the fetch map must hold them), calls them, detaches
 * everything of P.  Call before any other attach.  -1 with ct_fail(). */
int ct_calibrate(struct ct_probes *p, uint32_t first_site, struct ct_costs *out);
#define CT_CALIB_SITES 8

#endif
