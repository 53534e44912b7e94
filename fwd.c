/* fwd.c - placeholder until the port-forwarding parser lands. */
#include <stdio.h>
#include "fwd.h"

bool fwd_spec_parse(struct fwd_spec *f, const char *arg, bool allow_auto,
		    char *err, size_t errlen)
{
	(void)f;
	(void)allow_auto;
	snprintf(err, errlen, "port forwarding not implemented yet: '%s'", arg);
	return false;
}
