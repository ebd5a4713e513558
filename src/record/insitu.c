/* The program's own hits as a calibration (insitu.h).
 *
 * The calibration (calibrate.c) measures hits in calltrace's own process,
 * a few hundred of each class; the traced program's hits cost the same
 * most of the time (the medians agree within ~2 % on the 2-vCPU VM), but
 * a few percent of them take 1.5-10 times as long, and in the program
 * more often than in the calibration loop: in the correction bench the
 * leaf's samples averaged ~15 % over their median where the calibration's
 * hits averaged ~5-10 % over theirs, which left the outer function
 * under-corrected by 5-15 %.  A tiny traced call is a sample of exactly
 * what the calibration measures, with the program's own conditions (its
 * code, its CPU, the ring buffer's reader running meanwhile), thousands of
 * them where the calibration has hundreds. */
#include "record/insitu.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

void ct_insitu_add(struct ct_insitu *in, uint32_t entry_site, uint32_t exit_site, uint64_t ns)
{
	if (in->total >= CT_INSITU_MAX || ns > UINT32_MAX)
		return;
	/* (a map: bench/http's thousands of pairs made a walk over them 5% of
	 * the tracer's time) */
	uint64_t key = (uint64_t)entry_site << 32 | exit_site;
	uintptr_t at = (uintptr_t)map_get(&in->at, key);
	struct ct_insitu_calls *f = at ? &in->f[at - 1] : NULL;
	if (!f) {
		if (in->n == in->cap) {
			in->cap = in->cap ? 2 * in->cap : 8;
			in->f = xrealloc(in->f, in->cap * sizeof(*in->f));
		}
		f = &in->f[in->n++];
		map_put(&in->at, key, (void *)(uintptr_t)in->n);
		memset(f, 0, sizeof(*f));
		f->site = entry_site;
		f->exit_site = exit_site;
	}
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 256;
		f->ns = xrealloc(f->ns, f->cap * sizeof(*f->ns));
	}
	f->ns[f->n++] = (uint32_t)ns;
	in->total++;
}

void ct_insitu_free(struct ct_insitu *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->f[i].ns);
	free(in->f);
	map_free(&in->at);
	memset(in, 0, sizeof(*in));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

bool ct_insitu_tail(struct ct_insitu *in, const uint64_t med_ns[CT_HIT_CLASSES], double *tail)
{
	double excess = 0, base = 0;
	size_t used = 0;
	for (size_t i = 0; i < in->n; i++) {
		struct ct_insitu_calls *f = &in->f[i];
		uint64_t a = med_ns[f->entry_class], b = med_ns[f->exit_class];
		if (!a || !b || f->n < 50)
			continue;
		qsort(f->ns, f->n, sizeof(*f->ns), cmp_u32);
		double med = f->ns[f->n / 2], expect = (a + b) / 2.0;
		/* a body of more than a few instructions (or one that varies)
		 * would pass for slow hits */
		if (med > 1.2 * expect)
			continue;
		/* as the calibration's mean: a sample beyond ten times the
		 * median is the scheduler running someone else */
		double sum = 0;
		size_t k = 0;
		for (size_t j = 0; j < f->n && f->ns[j] <= 10 * med; j++, k++)
			sum += f->ns[j];
		excess += sum - k * med;
		base += k * expect;
		used += k;
	}
	if (used < CT_INSITU_MIN || base <= 0)
		return false;
	*tail = excess > 0 ? excess / base : 0;
	return true;
}
