#include "target/overlay.h"
#include "util/util.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

bool ct_on_overlay(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == OVERLAYFS_SUPER_MAGIC;
}

/* mountinfo's escapes (a backslash and three octal digits: a space, a
 * comma, a colon in a path) undone, in place */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/* The path PATH names as process *VIEW sees it (malloc'd), *VIEW 0 for this
 * process: a mapping's link names its file as the process sees it, and
 * /proc/PID/root/X is X there. */
static char *shown_path(const char *path, pid_t *view)
{
	int pid, at = 0;
	*view = 0;
	if (sscanf(path, "/proc/%d/map_files/%n", &pid, &at) == 1 && at) {
		char link[PATH_MAX];
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0 || link[0] != '/')
			return NULL;
		link[n] = 0;
		*view = pid;
		return xstrdup(link);
	}
	at = 0;
	if (sscanf(path, "/proc/%d/root/%n", &pid, &at) == 1 && at) {
		*view = pid;
		return xasprintf("/%s", path + at);
	}
	return realpath(path, NULL);
}

/* From mount MNT_ID's line of VIEW's mountinfo: its mount point and root
 * (in *POINT, *ROOT) and its layers, upper first (in LAYERS, up to MAX;
 * how many).  All malloc'd. */
static size_t overlay_layers(pid_t view, unsigned long long mnt_id, char **point, char **root, char **layers,
			     size_t max)
{
	char name[64];
	if (view)
		snprintf(name, sizeof(name), "/proc/%d/mountinfo", (int)view);
	else
		snprintf(name, sizeof(name), "/proc/self/mountinfo");
	FILE *f = fopen(name, "re");
	if (!f)
		return 0;
	char *line = NULL;
	size_t cap = 0, n = 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long id;
		char rt[PATH_MAX], mp[PATH_MAX];
		if (sscanf(line, "%llu %*u %*u:%*u %4095s %4095s", &id, rt, mp) != 3 || id != mnt_id)
			continue;
		char *dash = strstr(line, " - overlay ");
		char *opts = dash ? strchr(dash + 11, ' ') : NULL; /* (after the source) */
		if (!opts)
			break;
		opts[strcspn(opts, "\n")] = 0;
		char *upper = NULL, *save = NULL;
		CT_VEC(char *) lower = {0};
		for (char *o = strtok_r(opts + 1, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
			if (!strncmp(o, "upperdir=", 9)) {
				upper = o + 9;
			} else if (!strncmp(o, "lowerdir=", 9) || !strncmp(o, "lowerdir+=", 10)) {
				/* a:b::c -- the layers after "::" hold data
				 * only, found through metacopy redirects, never
				 * by name */
				char *l = o + (o[8] == '+' ? 10 : 9);
				for (char *c; l; l = c) {
					c = strchr(l, ':');
					if (c)
						*c++ = 0;
					if (!*l)
						break;
					CT_VEC_PUSH(lower, l);
				}
			}
		}
		if (upper && n < max)
			layers[n++] = upper;
		for (size_t i = 0; i < lower.n && n < max; i++)
			layers[n++] = lower.v[i];
		CT_VEC_FREE(lower);
		for (size_t i = 0; i < n; i++) {
			layers[i] = xstrdup(layers[i]);
			unescape(layers[i]);
		}
		unescape(rt);
		unescape(mp);
		*point = xstrdup(mp);
		*root = xstrdup(rt);
		break;
	}
	free(line);
	fclose(f);
	return n;
}

/* Does an upper layer's copy hold only the file's metadata (its data in
 * a lower layer)? */
static bool metacopy(const char *path)
{
	return getxattr(path, "trusted.overlay.metacopy", NULL, 0) >= 0;
}

static bool backing(const char *path, struct stat *out, int depth)
{
	struct statx sx;
	struct stat st;
	if (depth > 4 || !ct_on_overlay(path) || stat(path, &st) ||
	    statx(AT_FDCWD, path, AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &sx) || !(sx.stx_mask & STATX_MNT_ID))
		return false;
	pid_t view;
	char *shown = shown_path(path, &view);
	if (!shown)
		return false;
	char *point = NULL, *root = NULL, *layers[64];
	size_t n = overlay_layers(view, sx.stx_mnt_id, &point, &root, layers, 64);
	size_t pn = point ? strlen(point) : 0;
	bool found = false;
	if (n && (!strcmp(point, "/") ? shown[0] == '/' : !strncmp(shown, point, pn) && shown[pn] == '/')) {
		const char *rel = !strcmp(point, "/") ? shown : shown + pn;
		const char *under = strcmp(root, "/") ? root : "";
		for (size_t i = 0; i < n && !found; i++) {
			/* (a layer the mounter named, seen from here or from
			 * the process's root) */
			for (int r = 0; r < (view ? 2 : 1) && !found; r++) {
				char *c = r ? xasprintf("/proc/%d/root%s%s%s", (int)view, layers[i], under, rel)
					    : xasprintf("%s%s%s", layers[i], under, rel);
				struct stat cs;
				if (stat(c, &cs) == 0 && S_ISREG(cs.st_mode) && cs.st_size == st.st_size &&
				    !(i + 1 < n && metacopy(c))) {
					/* (overlays stacked on overlays: the file
					 * under them all) */
					found = true;
					if (!backing(c, out, depth + 1))
						*out = cs;
				}
				free(c);
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(layers[i]);
	free(point);
	free(root);
	free(shown);
	return found;
}

bool ct_overlay_backing(const char *path, struct stat *out)
{
	return backing(path, out, 0);
}
