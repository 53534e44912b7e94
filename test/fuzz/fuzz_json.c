/* fuzz_json.c - libFuzzer target: the control socket's request reader
 * (json_parse(), the strict one ctl.c runs on every line) and the
 * clients' lenient one (json_parse_any(), with json_array_next() over
 * every raw array). On success every string member must be terminated
 * inside the buffer and every raw span lie in it; on failure the reason
 * must say something.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* check() - what a successful parse promises about o inside buf[len]. */
static void check(const struct json_obj *o, const char *buf, size_t len)
{
	unsigned int i;

	for (i = 0; i < o->n; i++) {
		const struct json_field *f = &o->f[i];
		const char *p, *e;
		size_t n;

		if (f->key < buf || f->key > buf + len)
			abort();
		if (f->type == JSON_STR &&
		    (f->s < buf || f->s + strlen(f->s) > buf + len))
			abort();
		if (f->type == JSON_ARR && f->first + f->count > o->nitems)
			abort();
		if (f->type != JSON_RAW)
			continue;
		if (f->s < buf || f->s + f->n > buf + len)
			abort();
		for (p = f->s; f->s[0] == '[' &&
		     json_array_next(&p, f->s + f->n, &e, &n);)
			if (e < f->s || e + n > f->s + f->n)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct json_obj o;
	static char buf[70000];
	char err[160];

	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	err[0] = '\0';
	if (json_parse(buf, size, &o, err, sizeof(err)))
		check(&o, buf, size);
	else if (!err[0])
		abort();
	memcpy(buf, data, size);
	buf[size] = '\0';
	err[0] = '\0';
	if (json_parse_any(buf, size, &o, err, sizeof(err)))
		check(&o, buf, size);
	else if (!err[0])
		abort();
	return 0;
}
