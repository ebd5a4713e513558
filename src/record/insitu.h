/* What the program's own probe hits cost more than the calibration's
 * (insitu.c): the share of slow hits, measured on the recording itself. */
#ifndef CT_INSITU_H
#define CT_INSITU_H

#include "format/calib.h"
#include "util/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Samples of tiny calls: a traced call with no traced call inside it, the
 * time from its entry event to its exit event on one thread, which is the
 * end of its entry hit, its body and the start of its exit hit.  Per pair
 * of entry and exit sites, with the classes (enum ct_hit_class) of their
 * hits, which the caller sets before ct_insitu_tail (the site's
 * instruction says it: plan.c ct_plan_site_flags). */
struct ct_insitu_calls {
	uint32_t site, exit_site;
	uint8_t entry_class, exit_class;
	uint32_t *ns;
	size_t n, cap;
};
struct ct_insitu {
	struct ct_insitu_calls *f;
	size_t n, cap;
	struct ct_map at; /* entry_site << 32 | exit_site -> its index in f + 1 */
	size_t total; /* samples kept, at most CT_INSITU_MAX */
};
#define CT_INSITU_MAX (1u << 20)

void ct_insitu_add(struct ct_insitu *in, uint32_t entry_site, uint32_t exit_site, uint64_t ns);
void ct_insitu_free(struct ct_insitu *in);

/* The tail of the program's hits, from the entry sites whose median sample
 * is within a fifth of a hit of the calibration's (MED_NS: each class's
 * median whole hit; 0: not measured), i.e. whose body is a few
 * instructions: what their samples cost on average beyond their median,
 * relative to the median whole hit of their classes (the share of slow
 * hits, which the body's constant time does not change; sorts the
 * samples).  False when
 * fewer than CT_INSITU_MIN samples qualify. */
bool ct_insitu_tail(struct ct_insitu *in, const uint64_t med_ns[CT_HIT_CLASSES], double *tail);
#define CT_INSITU_MIN 500

#endif
