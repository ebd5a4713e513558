/* Measuring what probe hits cost on this machine (calibrate.c): at the
 * start of a recording (META "calib", for live and as the fallback) and
 * again at its end on the CPUs the program's hits ran on (STATS "calib",
 * what replay uses); it drives the reconstruction's overhead correction. */
#ifndef CT_CALIBRATE_H
#define CT_CALIBRATE_H

#include "probes/probes.h"
#include "format/calib.h"

struct ct_calib;

/* Probes a few functions of calltrace itself with sites FIRST_SITE ..
 * FIRST_SITE + CT_CALIB_SITES - 1 (the fetch map must hold them), hits
 * that read a g as the program's do (GSRC CT_G_R14: a fake one laid out as
 * GCFG says), and measures once where this thread runs: emulated and
 * single-stepped hits, and the other classes in CLASSES (1 << enum
 * ct_hit_class each: those the program's probes have).  The probes stay
 * until P detaches.  NULL with ct_fail(). */
struct ct_calib *ct_calib_start(struct ct_probes *p, uint32_t first_site, const struct ct_bin_config *gcfg,
				uint8_t gsrc, unsigned classes, struct ct_costs *out);
/* Measures again on the CPUs that had at least a share of the probe hits
 * since ct_calib_start (the program's), and averages by their hits; with
 * IN (the program's tiny calls, insitu.h) saying how often its hits were
 * slow, a hit costs the measured median plus that share.  Events of other
 * sites still in the ring buffer go to CB.  -1 with ct_fail() (OUT
 * unchanged). */
struct ct_insitu;
int ct_calib_again(struct ct_calib *c, ct_event_cb cb, void *ctx, struct ct_insitu *in, struct ct_costs *out);
void ct_calib_free(struct ct_calib *c);
#define CT_CALIB_SITES 16
/* ... and the planned_calls entries it adds (its CHECK's two call sites) */
#define CT_CALIB_PLANNED 2

#endif
