/* calltrace dump: other output formats (to be written). */
#include <stdio.h>

#include "cmds/cmds.h"

int cmd_dump(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "calltrace: dump is not written yet\n");
	return 1;
}
