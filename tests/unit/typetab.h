/* Hand-built type tables and signatures for the unit tests of the ABI
 * (test_abi.c) and of value decoding (test_values.c). */
#ifndef CT_UNIT_TYPETAB_H
#define CT_UNIT_TYPETAB_H

#include "target/types.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static inline uint32_t add_type(struct ct_typetab *tt, enum ct_kind kind, const char *name, uint32_t size)
{
	if (tt->n == 0) {
		tt->v = xcalloc(1, sizeof(*tt->v));
		tt->v[0].kind = CT_K_UNKNOWN;
		tt->v[0].name = (char *)"?";
		tt->n = 1;
	}
	tt->v = xrealloc(tt->v, (tt->n + 1) * sizeof(*tt->v));
	struct ct_type *t = &tt->v[tt->n];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->name = (char *)name;
	t->size = size;
	return (uint32_t)tt->n++;
}

static inline uint32_t add_elem(struct ct_typetab *tt, enum ct_kind kind, const char *name, uint32_t size,
				uint32_t elem)
{
	uint32_t id = add_type(tt, kind, name, size);
	tt->v[id].elem = elem;
	return id;
}

static inline uint32_t add_array(struct ct_typetab *tt, const char *name, uint32_t elem, uint32_t len)
{
	uint32_t id = add_elem(tt, CT_K_ARRAY, name, tt->v[elem].size * len, elem);
	tt->v[id].len = len;
	return id;
}

/* add_struct(tt, kind, name, size, nfields, type0, offset0, type1, offset1, ...);
 * the fields are named "f" (name_fields names them). */
static inline uint32_t add_struct(struct ct_typetab *tt, enum ct_kind kind, const char *name, uint32_t size,
				  uint32_t nfields, ...)
{
	uint32_t id = add_type(tt, kind, name, size);
	struct ct_field *f = nfields ? xcalloc(nfields, sizeof(*f)) : NULL;
	va_list ap;
	va_start(ap, nfields);
	for (uint32_t i = 0; i < nfields; i++) {
		f[i].name = (char *)"f";
		f[i].type = va_arg(ap, uint32_t);
		f[i].offset = va_arg(ap, uint32_t);
	}
	va_end(ap);
	tt->v[id].fields = f;
	tt->v[id].nfields = nfields;
	return id;
}

/* name_fields(tt, id, "a", "b", ...): one name per field. */
static inline void name_fields(struct ct_typetab *tt, uint32_t id, ...)
{
	va_list ap;
	va_start(ap, id);
	for (uint32_t i = 0; i < tt->v[id].nfields; i++)
		tt->v[id].fields[i].name = va_arg(ap, char *);
	va_end(ap);
}

static inline void free_types(struct ct_typetab *tt)
{
	for (size_t i = 0; i < tt->n; i++)
		free(tt->v[i].fields);
	free(tt->v);
	tt->v = NULL;
	tt->n = 0;
}

/* ---- signatures ---- */

#define MAXP 24
struct sigb {
	struct ct_param p[MAXP];
	struct ct_sig sig;
};

static inline void sig_init(struct sigb *b)
{
	memset(b, 0, sizeof(*b));
	b->sig.params = b->p;
}

static inline void arg_named(struct sigb *b, const char *name, uint32_t type)
{
	if (b->sig.n < MAXP)
		b->p[b->sig.n++] = (struct ct_param){.name = (char *)name, .type = type};
}

static inline void arg(struct sigb *b, uint32_t type)
{
	arg_named(b, "a", type);
}

static inline void res_named(struct sigb *b, const char *name, uint32_t type)
{
	if (b->sig.n < MAXP)
		b->p[b->sig.n++] = (struct ct_param){.name = (char *)name, .type = type, .is_result = true};
}

static inline void res(struct sigb *b, uint32_t type)
{
	res_named(b, "~r", type);
}

#endif
