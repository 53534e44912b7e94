/* json.h - a small bounded JSON reader and writer for the control socket.
 *
 * The reader takes one request: a flat object whose values are strings,
 * integers, booleans, null or arrays of strings (json.c says why no more).
 * Strings are decoded in place in the caller's buffer. The writer appends
 * to a caller's fixed buffer and notes overflow instead of growing.
 */
#ifndef FERRY_JSON_H
#define FERRY_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_FIELDS_MAX	32	/* members of an object */
#define JSON_ITEMS_MAX	256	/* strings in all its arrays together */

/* JSON_RAW: (json_parse_any() only) a value of another shape, left as
 * its text: s at its start, n its length. */
enum json_type { JSON_NULL, JSON_BOOL, JSON_INT, JSON_STR, JSON_ARR,
		 JSON_RAW };

struct json_field {
	const char *key;
	enum json_type type;
	const char *s;			/* JSON_STR: decoded, NUL-terminated */
	long long n;			/* JSON_INT; JSON_BOOL: 0 or 1 */
	unsigned int first, count;	/* JSON_ARR: obj->items[first..] */
};

struct json_obj {
	struct json_field f[JSON_FIELDS_MAX];
	unsigned int n;
	const char *items[JSON_ITEMS_MAX];
	unsigned int nitems;
};

/* json_parse() - parse the object in buf[0..len) (buf[len] must be
 * writable: strings are decoded in place and NUL-terminated). Only
 * white space may follow the object. Returns true, or false with a short
 * reason in err. */
bool json_parse(char *buf, size_t len, struct json_obj *o, char *err,
		size_t errlen);

/* json_parse_any() - the same for replies (the clients, ctl_cmd.c):
 * values of other shapes (objects, arrays of objects, fractions) are
 * kept as JSON_RAW text, members past JSON_FIELDS_MAX are skipped. */
bool json_parse_any(char *buf, size_t len, struct json_obj *o, char *err,
		    size_t errlen);

/* json_array_next() - the next element of the raw array text at *p
 * (end: its end): *elem and *len span it; false at the array's end or
 * on malformed text. Start with *p at the '['. */
bool json_array_next(const char **p, const char *end, const char **elem,
		     size_t *len);

/* json_get() - the member named key, NULL if absent. */
const struct json_field *json_get(const struct json_obj *o, const char *key);

/* A writer: appends to buf[cap]; once something did not fit, over is set
 * and the length stays at the last whole value. */
struct jw {
	char *buf;
	size_t len, cap;
	bool over;
	unsigned int depth;
	uint32_t first;			/* bit d: no member at depth d yet */
};

void jw_init(struct jw *w, char *buf, size_t cap);
/* jw_open()/jw_close() - '{' or '[' (c), and its closing character. */
void jw_open(struct jw *w, char c);
void jw_close(struct jw *w, char c);
/* jw_key() - "key": inside an object, before its value. */
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s);
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
void jw_bool(struct jw *w, bool v);
/* jw_raw() - text appended as it is (a newline after a reply). */
void jw_raw(struct jw *w, const char *s);

/* Key-value shorthands for objects. */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_ku64(struct jw *w, const char *key, uint64_t v);
void jw_kbool(struct jw *w, const char *key, bool v);

#endif /* FERRY_JSON_H */
