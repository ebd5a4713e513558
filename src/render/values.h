/* Turning captured argument/result bytes back into values, as text
 * (`name="ab", n=3`) or JSON ([{"name","type","value"}]).  Values are
 * assembled from their pieces (registers, stack) and what they point to is
 * read from the event's memory snapshots; what was not captured shows as an
 * explicit marker, never as a made-up value. */
#ifndef CT_VALUES_H
#define CT_VALUES_H

#include <stdbool.h>

#include "format/tracefile.h"
#include "util/util.h"

struct ct_values;

struct ct_values *ct_values_new(const struct ct_trace *t);
void ct_values_free(struct ct_values *v);

/* Decodes the payload of SITE.  Returns false when the site captures
 * nothing (then the functions below print nothing).  A site that captures,
 * with no payload (the hit could not copy, or it is of another call),
 * shows its values as unavailable: not captured. */
bool ct_values_load(struct ct_values *v, uint32_t site, const uint8_t *payload, uint32_t len);

/* Text: arguments as "a=1, s=\"x\""; results as "1" or "(1, \"x\")". */
void ct_values_text(struct ct_values *v, struct ct_buf *out);
/* JSON array of {"name","type","value"} objects. */
void ct_values_json(struct ct_values *v, struct ct_buf *out);
/* Whether the loaded site captures results with more than one value. */
size_t ct_values_count(const struct ct_values *v);

/* Value I (< ct_values_count) alone: its name (*RESULT: it is a result) and
 * its text as ct_values_text shows it. */
const char *ct_values_name(const struct ct_values *v, size_t i, bool *result);
void ct_values_text_one(struct ct_values *v, size_t i, struct ct_buf *out);

/* Appends S as a JSON string (escaped; invalid UTF-8 bytes as \u00XX). */
void ct_buf_json_string(struct ct_buf *b, const char *s, size_t n);

#endif
