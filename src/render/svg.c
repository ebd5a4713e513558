/* A self-contained interactive flame graph (SVG), from the same aggregation
 * as the folded stacks (ct_flame_build): one frame per distinct stack, the
 * outermost traced calls at the bottom on an "all" frame, children side by
 * side above their parent in name order, each frame as wide as the self time
 * of its stack and of every stack that extends it (so flamegraph.pl would
 * draw the folded output the same way).  What unwound and unfinished calls
 * contribute is explained in folded.c.
 *
 * Each frame is <g class="f"> with a <title> (the tooltip: name, calls, total
 * and self time), a <rect> and a <text> label cut to fit.  An inline script
 * (no network, nothing external) zooms into a clicked frame: its subtree
 * fills the width, its ancestors stay as full-width bars, everything else
 * hides; clicking "all" or "Reset zoom" goes back.  Frames narrower than
 * 0.1 px are left out, which bounds the file for huge traces.  Colours come
 * from a hash of the name, so a function keeps its colour across graphs. */
#include "render/render.h"
#include "util/util.h"

#include <inttypes.h>
#include <string.h>

#define IMAGE_W 1200
#define PAD_X 10
#define TOP 70     /* title, subtitle, controls */
#define BOTTOM 28  /* the details line */
#define FRAME_H 16
#define FONT_PX 12
#define CHAR_W (FONT_PX * 0.59) /* average glyph width, as flamegraph.pl */
#define MIN_FRAME_PX 0.1
#define STR(x) #x
#define XSTR(x) STR(x) /* the layout constants, for the script */

/* Appends S as XML text or attribute content: markup characters escaped,
 * characters XML 1.0 forbids (C0 controls) and bytes that are not UTF-8
 * replaced by '?', so the file always parses.  At most MAX bytes of S. */
static void put_xml(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + strnlen(s, max);
	while (p < end) {
		unsigned c = *p;
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		bool ok = len && p + len <= end;
		for (size_t k = 1; ok && k < len; k++)
			ok = (p[k] & 0xc0) == 0x80;
		if (!ok) {
			fputc('?', f);
			p++;
			continue;
		}
		if (len > 1) {
			fwrite(p, 1, len, f);
			p += len;
			continue;
		}
		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc(c < 0x20 || c == 0x7f ? '?' : (int)c, f);
		}
		p++;
	}
}

static void fmt_time(char *buf, size_t n, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, n, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, n, "%.3f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", ns / 1e9);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h ^ (h >> 29);
}

/* flamegraph.pl's "hot" palette, chosen by name instead of at random. */
static void frame_color(char *buf, size_t n, const char *name, bool root)
{
	if (root) {
		snprintf(buf, n, "rgb(200,200,200)");
		return;
	}
	uint64_t h = name_hash(name);
	unsigned r = 205 + (unsigned)(h % 51), g = (unsigned)((h >> 16) % 231), b = (unsigned)((h >> 40) % 56);
	snprintf(buf, n, "rgb(%u,%u,%u)", r, g, b);
}

/* The label that fits WIDTH_PX: the name, or its start and "..", or nothing. */
static size_t label_len(const char *name, double width_px, bool *cut)
{
	double fit = (width_px - 6) / CHAR_W;
	size_t len = strlen(name);
	*cut = false;
	if (fit < 3)
		return 0;
	if (len <= (size_t)fit)
		return len;
	size_t keep = (size_t)fit - 2;
	while (keep && ((unsigned char)name[keep] & 0xc0) == 0x80)
		keep--; /* not inside a UTF-8 sequence */
	*cut = true;
	return keep;
}

static const char script[] =
	"(function () {\n"
	"  var W = " XSTR(IMAGE_W) ", PAD = " XSTR(PAD_X) ", CHAR = " XSTR(CHAR_W) ";\n"
	"  var details = document.getElementById('details');\n"
	"  var reset = document.getElementById('reset');\n"
	"  var frames = Array.prototype.map.call(document.querySelectorAll('g.f'), function (g) {\n"
	"    return {g: g, x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'),\n"
	"            d: +g.getAttribute('data-d'), name: g.getAttribute('data-n'),\n"
	"            rect: g.querySelector('rect'), text: g.querySelector('text'),\n"
	"            info: g.querySelector('title').textContent.replace(/\\n/g, ' | ')};\n"
	"  });\n"
	"  if (!frames.length) return;\n"
	"  var root = frames[0];\n"
	"  function label(name, px) {\n"
	"    var fit = Math.floor((px - 6) / CHAR);\n"
	"    if (fit < 3) return '';\n"
	"    return name.length <= fit ? name : name.substring(0, fit - 2) + '..';\n"
	"  }\n"
	"  function place(f, x, w) {\n"
	"    f.rect.setAttribute('x', x.toFixed(2));\n"
	"    f.rect.setAttribute('width', w.toFixed(2));\n"
	"    f.text.setAttribute('x', (x + 3).toFixed(2));\n"
	"    f.text.textContent = label(f.name, w);\n"
	"  }\n"
	"  function zoom(z) {\n"
	"    var scale = (W - 2 * PAD) / z.w;\n"
	"    frames.forEach(function (f) {\n"
	"      if (f.d >= z.d && f.x >= z.x && f.x + f.w <= z.x + z.w) {\n"
	"        f.g.style.display = '';\n"
	"        f.g.setAttribute('class', 'f');\n"
	"        place(f, PAD + (f.x - z.x) * scale, f.w * scale);\n"
	"      } else if (f.d < z.d && f.x <= z.x && f.x + f.w >= z.x + z.w) {\n"
	"        f.g.style.display = '';\n"
	"        f.g.setAttribute('class', 'f ancestor');\n"
	"        place(f, PAD, W - 2 * PAD);\n"
	"      } else {\n"
	"        f.g.style.display = 'none';\n"
	"      }\n"
	"    });\n"
	"    reset.style.display = z === root ? 'none' : '';\n"
	"  }\n"
	"  frames.forEach(function (f) {\n"
	"    f.g.addEventListener('click', function () { zoom(f); });\n"
	"    f.g.addEventListener('mouseover', function () { details.textContent = f.info; });\n"
	"    f.g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  reset.addEventListener('click', function () { zoom(root); });\n"
	"  reset.style.display = 'none';\n"
	"})();\n";

struct svg {
	struct ct_trace *t;
	FILE *out;
	const struct ct_flame *fl;
	uint64_t *start; /* per node: x in ns from the left edge */
	bool *visible;   /* per node: drawn (at least MIN_FRAME_PX wide) */
	uint32_t top_depth; /* of the drawn frames */
	double scale;    /* px per ns */
};

static void write_frame(struct svg *s, uint32_t id)
{
	const struct ct_flame_node *n = &s->fl->nodes[id];
	const char *name = id ? ct_flame_name(s->t, n->func) : "all";
	double x = PAD_X + s->start[id] * s->scale, w = n->total_ns * s->scale;
	double y = TOP + (double)(s->top_depth - n->depth) * FRAME_H;
	const struct ct_flame_node *root = &s->fl->nodes[0];
	char total[32], self[32], color[32];
	fmt_time(total, sizeof(total), n->total_ns);
	fmt_time(self, sizeof(self), n->self_ns);
	frame_color(color, sizeof(color), name, id == 0);
	FILE *f = s->out;
	fputs("<g class=\"f\" data-n=\"", f);
	put_xml(f, name, SIZE_MAX);
	fprintf(f, "\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%u\"><title>", s->start[id], n->total_ns,
		n->depth);
	put_xml(f, name, SIZE_MAX);
	fprintf(f, "\n%" PRIu64 " call%s, %s (%.2f%%), self %s</title>", n->calls, n->calls == 1 ? "" : "s", total,
		root->total_ns ? 100.0 * n->total_ns / root->total_ns : 0.0, self);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>", x, y, w,
		FRAME_H - 1, color);
	bool cut;
	size_t len = label_len(name, w, &cut);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_H - 4.5);
	put_xml(f, name, len);
	fputs(cut ? "..</text></g>\n" : "</text></g>\n", f);
}

struct dfs_frame {
	uint32_t node, next_kid;
};

static void write_frames(struct svg *s)
{
	const struct ct_flame *fl = s->fl;
	CT_VEC(struct dfs_frame) st = {0};
	struct dfs_frame top = {0, 0};
	write_frame(s, 0);
	CT_VEC_PUSH(st, top);
	while (st.n) {
		struct dfs_frame *d = &st.v[st.n - 1];
		const struct ct_flame_node *n = &fl->nodes[d->node];
		if (d->next_kid == n->nkids) {
			st.n--;
			continue;
		}
		uint32_t kid = fl->kids[n->first_kid + d->next_kid++];
		if (!s->visible[kid])
			continue;
		write_frame(s, kid);
		struct dfs_frame next = {kid, 0};
		CT_VEC_PUSH(st, next);
	}
	CT_VEC_FREE(st);
}

int ct_render_svg(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct ct_flame fl;
	ct_flame_build(t, o->filter, &fl);
	struct svg s = {t, o->out, &fl, NULL, NULL, 0, 0};
	const struct ct_flame_node *root = &fl.nodes[0];
	s.scale = root->total_ns ? (double)(IMAGE_W - 2 * PAD_X) / root->total_ns : 0;
	/* Children start where their parent starts, one after another. */
	s.start = xcalloc(fl.n, sizeof(*s.start));
	for (size_t p = 0; p < fl.n; p++) {
		uint64_t x = s.start[p];
		for (uint32_t k = 0; k < fl.nodes[p].nkids; k++) {
			uint32_t kid = fl.kids[fl.nodes[p].first_kid + k];
			s.start[kid] = x;
			x += fl.nodes[kid].total_ns;
		}
	}
	/* A frame too narrow to see hides everything above it; the image is
	 * only as tall as what is drawn.  Parents come before children. */
	s.visible = xcalloc(fl.n, sizeof(*s.visible));
	for (size_t i = 0; i < fl.n; i++) {
		s.visible[i] = (i == 0 || s.visible[fl.nodes[i].parent]) && fl.nodes[i].total_ns * s.scale >= MIN_FRAME_PX;
		if (s.visible[i] && fl.nodes[i].depth > s.top_depth)
			s.top_depth = fl.nodes[i].depth;
	}
	int height = TOP + (int)(s.top_depth + 1) * FRAME_H + BOTTOM;
	FILE *f = o->out;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\">\n",
		IMAGE_W, height, IMAGE_W, height);
	fputs("<style>\n"
	      "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: #000; }\n"
	      ".title { font-size: 17px; text-anchor: middle; }\n"
	      ".sub { fill: #555; text-anchor: middle; }\n"
	      ".lost { fill: #b00; text-anchor: middle; }\n"
	      "g.f { cursor: pointer; }\n"
	      "g.f:hover rect { stroke: #000; stroke-width: 0.6; }\n"
	      "g.ancestor rect { opacity: 0.55; }\n"
	      "#reset { cursor: pointer; fill: #0645ad; }\n"
	      "</style>\n",
	      f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f2\"/>\n", IMAGE_W, height);
	char *cmd = ct_command_name(t);
	fprintf(f, "<text class=\"title\" x=\"%d\" y=\"24\">Flame graph: ", IMAGE_W / 2);
	put_xml(f, cmd, 160);
	fputs("</text>\n", f);
	free(cmd);
	char total[32];
	fmt_time(total, sizeof(total), root->total_ns);
	uint64_t calls = 0;
	for (size_t i = 1; i < fl.n; i++)
		calls += fl.nodes[i].calls;
	fprintf(f,
		"<text class=\"sub\" x=\"%d\" y=\"44\">%" PRIu64 " call%s, %s in all; width = time in a stack "
		"and the stacks above it; click a frame to zoom</text>\n",
		IMAGE_W / 2, calls, calls == 1 ? "" : "s", total);
	if (fl.st.lost)
		fprintf(f,
			"<text class=\"lost\" x=\"%d\" y=\"60\">LOST %" PRIu64
			" events while recording: stacks around the loss may be cut short</text>\n",
			IMAGE_W / 2, fl.st.lost);
	fprintf(f, "<text id=\"reset\" x=\"%d\" y=\"24\">Reset zoom</text>\n", PAD_X);
	if (root->total_ns)
		write_frames(&s);
	else
		fprintf(f, "<text class=\"sub\" x=\"%d\" y=\"%d\">no calls to show</text>\n", IMAGE_W / 2,
			TOP + FRAME_H);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_X, height - 10);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", script);
	if (fl.st.lost)
		ct_warn("%" PRIu64 " events were lost while recording; stacks around the loss may be cut short",
			fl.st.lost);
	free(s.start);
	free(s.visible);
	ct_flame_free(&fl);
	return 0;
}
