/* What the commands share about their command lines. */
#include "cmds/cmds.h"
#include "util/util.h"

#include <getopt.h>
#include <string.h>

/* How many of OPTS' long names begin with NAME (its first LEN bytes), if
 * more than one (getopt_long takes a unique prefix). */
static size_t ambiguous(const char *name, size_t len, const struct option *opts)
{
	size_t n = 0;
	for (; opts && opts->name; opts++)
		n += !strncmp(opts->name, name, len);
	return n > 1 ? n : 0;
}

int ct_bad_option(const char *cmd, int c, char *const *argv, const struct option *opts)
{
	/* the element getopt_long stopped at (a short option may be one of a
	 * cluster: optopt names it) */
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	bool is_long = !strncmp(arg, "--", 2);
	const char *eq = is_long ? strchr(arg, '=') : NULL;
	if (c == ':')
		ct_print_errorf("%s: option '%s' needs a value (see calltrace %s --help)", cmd, arg, cmd);
	else if (is_long && eq && optopt)
		ct_print_errorf("%s: option '%.*s' takes no value (see calltrace %s --help)", cmd, (int)(eq - arg), arg,
				cmd);
	else if (!is_long && optopt > 0 && optopt < 0x100)
		ct_print_errorf("%s: unknown option '-%c' (see calltrace %s --help)", cmd, optopt, cmd);
	else if (is_long && ambiguous(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2), opts))
		ct_print_errorf("%s: option '%.*s' is ambiguous: %zu options start so (see calltrace %s --help)", cmd,
				eq ? (int)(eq - arg) : (int)strlen(arg), arg,
				ambiguous(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2), opts), cmd);
	else
		ct_print_errorf("%s: unknown option '%s' (see calltrace %s --help)", cmd, arg, cmd);
	return 2;
}

bool ct_empty_glob(int opt, const char *arg)
{
	if (*arg)
		return false;
	/* (it matched nothing, and said "no function named  in PROGRAM") */
	ct_print_errorf("-%c needs a function name or a glob (-%c '%s'), not ''", opt, opt,
			opt == 'N' ? "runtime.*" : "main.*");
	return true;
}
