/* main.c - runs the registered unit tests; see unit.h. */
#include <string.h>

#include "unit.h"

static struct unit_test *tests, **tail = &tests;
static bool failed_current;

void unit_register(struct unit_test *t)
{
	*tail = t;
	tail = &t->next;
}

void unit_fail(const char *file, int line, const char *what)
{
	printf("  %s:%d: check failed: %s\n", file, line, what);
	failed_current = true;
}

int main(int argc, char **argv)
{
	unsigned int pass = 0, fail = 0;
	struct unit_test *t;

	for (t = tests; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		failed_current = false;
		t->fn();
		printf("%s unit/%s\n", failed_current ? "FAIL" : "PASS", t->name);
		if (failed_current)
			fail++;
		else
			pass++;
		fflush(stdout);
	}
	printf("unit: %u passed, %u failed\n", pass, fail);
	return fail ? 1 : 0;
}
