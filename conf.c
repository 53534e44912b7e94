/* conf.c - placeholder command line: defaults and "-- CMD" only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "log.h"

void conf_parse(struct conf *c, enum mode mode, int argc, char **argv)
{
	static const uint8_t mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
	int i;

	c->mode = mode;
	c->prog = argv[0];
	c->mtu = 65520;
	c->fd = -1;
	c->ip4.enabled = c->ip6.enabled = true;
	memcpy(c->our_mac, mac, 6);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			c->cmd = argv + i + 1;
			break;
		}
		if (!strcmp(argv[i], "-f")) {
			c->foreground = true;
			continue;
		}
		fprintf(stderr, "%s: unknown option '%s'\n", c->prog, argv[i]);
		exit(1);
	}
}
