/* calltrace live: record and show the tree as it happens (to be written). */
#include <stdio.h>

#include "cmds/cmds.h"

int cmd_live(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "calltrace: live is not written yet\n");
	return 1;
}
