/* hostconf.c - placeholder: host-derived configuration (conf_derive). */
#include "conf.h"

void conf_derive(struct conf *c)
{
	(void)c;
}
