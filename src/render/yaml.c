/* YAML output (to be written). */
#include "render/render.h"
#include "util/util.h"

int ct_render_yaml(struct ct_trace *t, const struct ct_render_opts *o)
{
	(void)t;
	(void)o;
	return ct_fail("YAML output is not written yet");
}
