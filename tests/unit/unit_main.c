#include "unit.h"
#include "target/target.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

static struct unit_test *head, **tail = &head;
static int failed_now, skipped_now;
static char why[2048];

void unit_register(struct unit_test *t)
{
	*tail = t;
	tail = &t->next;
}

void unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(why, sizeof(why), "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(why + n, sizeof(why) - n, fmt, ap);
	va_end(ap);
	failed_now = 1;
}

void unit_skip(const char *reason)
{
	snprintf(why, sizeof(why), "%s", reason);
	skipped_now = 1;
}

int unit_failed_now(void)
{
	return failed_now;
}

const char *ct_fixture_dir(void)
{
	const char *d = getenv("CT_FIXTURES");
	return d && *d ? d : "build/fixtures";
}

char *ct_fixture(const char *name)
{
	char *p = malloc(strlen(ct_fixture_dir()) + strlen(name) + 2);
	sprintf(p, "%s/%s", ct_fixture_dir(), name);
	if (access(p, R_OK) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	for (struct unit_test *t = head; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		failed_now = skipped_now = 0;
		why[0] = 0;
		t->fn();
		if (failed_now) {
			printf("FAIL unit/%s: %s\n", t->name, why);
			failed++;
		} else if (skipped_now) {
			/* A skip is a failure: every test must be able to run here. */
			printf("FAIL unit/%s: cannot run: %s\n", t->name, why);
			failed++;
		} else {
			printf("ok unit/%s\n", t->name);
			passed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

int unit_open_target(const char *name, struct ct_target *t)
{
	char *path = ct_fixture(name);
	if (!path) {
		unit_fail(__FILE__, __LINE__, "fixture %s/%s not built (run sh tests/fixtures/build.sh)",
			  ct_fixture_dir(), name);
		return 0;
	}
	int rc = ct_target_open(t, path);
	if (rc)
		unit_fail(__FILE__, __LINE__, "%s", ct_error());
	free(path);
	return rc == 0;
}
