#include "reconstruct/exitindex.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW (1u << 18) /* calls buffered in memory at most: 8 MiB */

struct ct_exitindex {
	FILE *f;
	FILE *rets; /* result payloads, appended in exit order */
	uint64_t rets_size;
	uint8_t retbuf[65536];
	/* Reading back: results are asked for in entry order, which is close to
	 * exit order, so a window of the file serves most without a syscall. */
	uint8_t *win_rets;
	uint64_t win_off;
	size_t win_len;
	struct ct_exit_info *win; /* calls [base, base + cap) */
	size_t cap;               /* grows up to WINDOW: small traces stay small */
	uint64_t base;
	uint64_t ncalls;
	/* reading */
	uint64_t next;
	struct ct_exit_info cur;
};

static void spill_window(struct ct_exitindex *x, uint64_t upto)
{
	/* Write [base, upto) out and slide the window. */
	uint64_t n = upto - x->base;
	if (n > x->cap)
		n = x->cap;
	fseeko(x->f, (off_t)(x->base * sizeof(struct ct_exit_info)), SEEK_SET);
	if (n)
		fwrite(x->win, sizeof(struct ct_exit_info), n, x->f);
	memmove(x->win, x->win + n, (x->cap - n) * sizeof(*x->win));
	memset(x->win + x->cap - n, 0, n * sizeof(*x->win));
	x->base += n;
}

/* Makes room for call SEQ: the window grows, then slides. */
static void make_room(struct ct_exitindex *x, uint64_t seq)
{
	while (seq >= x->base + WINDOW)
		spill_window(x, x->base + WINDOW / 2);
	if (seq < x->base + x->cap)
		return;
	size_t cap = x->cap ? x->cap : 1024;
	while (seq >= x->base + cap)
		cap *= 2;
	x->win = xrealloc(x->win, cap * sizeof(*x->win));
	memset(x->win + x->cap, 0, (cap - x->cap) * sizeof(*x->win));
	x->cap = cap;
}

static void on_call_exit(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	struct ct_exit_info e = {c->ts_exit, c->exit_tid, c->status, c->leaf, 0, 0, c->exit_site, 0, c->raw_exit};
	if (c->ret && c->ret_len && c->ret_len <= sizeof(x->retbuf)) {
		e.ret_len = (uint16_t)c->ret_len;
		e.ret_off = x->rets_size;
		fwrite(c->ret, 1, c->ret_len, x->rets);
		x->rets_size += c->ret_len;
	}
	if (c->seq + 1 > x->ncalls)
		x->ncalls = c->seq + 1;
	make_room(x, c->seq);
	if (c->seq >= x->base) {
		x->win[c->seq - x->base] = e;
		return;
	}
	/* A call that outlived the window (main.main, a server loop). */
	fseeko(x->f, (off_t)(c->seq * sizeof(e)), SEEK_SET);
	fwrite(&e, sizeof(e), 1, x->f);
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	make_room(x, c->seq);
}

struct ct_exitindex *ct_exitindex_build(struct ct_trace *t)
{
	struct ct_exitindex *x = xcalloc(1, sizeof(*x));
	x->f = tmpfile();
	x->rets = tmpfile();
	if (!x->f || !x->rets) {
		if (x->f)
			fclose(x->f);
		if (x->rets)
			fclose(x->rets);
		free(x);
		ct_fail("cannot create a temporary file (set TMPDIR to a writable directory)");
		return NULL;
	}
	struct ct_recon_ops ops = {on_call_enter, on_call_exit, NULL, NULL};
	ct_recon_run(t, &ops, x);
	while (x->base < x->ncalls)
		spill_window(x, x->ncalls);
	free(x->win);
	x->win = NULL;
	fflush(x->f);
	fflush(x->rets);
	rewind(x->f);
	return x;
}

const struct ct_exit_info *ct_exitindex_get(struct ct_exitindex *x, uint64_t seq, const uint8_t **ret)
{
	if (seq + 1 < x->next) {
		/* an earlier call, reported after later ones of other threads
		 * (reconstruct.c waits for a call's SPILL hit): read it where it is */
		if (fseeko(x->f, (off_t)(seq * sizeof(x->cur)), SEEK_SET) == 0)
			x->next = seq;
	}
	while (x->next <= seq) {
		if (fread(&x->cur, sizeof(x->cur), 1, x->f) != 1)
			memset(&x->cur, 0, sizeof(x->cur));
		x->next++;
	}
	if (ret) {
		*ret = NULL;
		uint64_t off = x->cur.ret_off, len = x->cur.ret_len;
		if (len && !(off >= x->win_off && off + len <= x->win_off + x->win_len)) {
			enum { RET_WINDOW = 1 << 18 };
			if (!x->win_rets)
				x->win_rets = xmalloc(RET_WINDOW);
			ssize_t n = pread(fileno(x->rets), x->win_rets, RET_WINDOW, (off_t)off);
			x->win_off = off;
			x->win_len = n > 0 ? (size_t)n : 0;
		}
		if (len && off >= x->win_off && off + len <= x->win_off + x->win_len)
			*ret = x->win_rets + (off - x->win_off);
	}
	return &x->cur;
}

void ct_exitindex_free(struct ct_exitindex *x)
{
	if (!x)
		return;
	if (x->f)
		fclose(x->f);
	if (x->rets)
		fclose(x->rets);
	free(x->win_rets);
	free(x->win);
	free(x);
}
