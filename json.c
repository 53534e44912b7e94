/* json.c - the control socket's bounded JSON reader and writer.
 *
 * Theory of operation
 *
 * A request (ctl.c) is one line holding one flat object: the members ferry
 * reads are strings, integers, booleans and arrays of strings, so the
 * reader accepts exactly those and null, and refuses nesting deeper than
 * an array of strings. That keeps it a single pass with no recursion and
 * no allocation: at most JSON_FIELDS_MAX members and JSON_ITEMS_MAX
 * array strings, each pointing into the caller's buffer, where escapes
 * are decoded in place (a decoded string is never longer than its
 * escaped form, \uXXXX included: at most 3 UTF-8 bytes for 6 characters,
 * 4 for a 12-character surrogate pair). Any malformed, truncated or
 * over-long input fails with a reason; the caller's buffer is then left
 * partly decoded, which is fine, as the request is answered with an
 * error and dropped.
 *
 * The writer appends to a fixed buffer, tracking the comma per depth.
 * When a value does not fit it sets over and cuts the text back to where
 * that value began, so the caller can tell, and retry or fail, instead
 * of sending half a token.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

struct rd {
	char *p, *end;
	char *err;
	size_t errlen;
	bool any;			/* json_parse_any(): keep other shapes */
};

/* rd_fail() - note why parsing stopped; returns false. */
static bool rd_fail(struct rd *r, const char *why)
{
	snprintf(r->err, r->errlen, "%s", why);
	return false;
}

/* skip_ws() - past JSON white space. */
static void skip_ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' ||
				 *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* hex4() - the value of four hex digits at s, -1 if they are not. */
static long hex4(const char *s)
{
	long v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char ch = s[i];

		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			v |= ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			v |= ch - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* put_utf8() - code point cp as UTF-8 at *out; advances it. */
static void put_utf8(char **out, unsigned long cp)
{
	char *o = *out;

	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	*out = o;
}

/* uescape() - the \uXXXX escape at r->p (after the 'u'), a surrogate
 * pair taking a second escape; decoded to *out. */
static bool uescape(struct rd *r, char **out)
{
	long hi, lo;

	if (r->end - r->p < 4 || (hi = hex4(r->p)) < 0)
		return rd_fail(r, "bad \\u escape");
	r->p += 4;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return rd_fail(r, "lone low surrogate");
	if (hi < 0xd800 || hi > 0xdbff) {
		if (!hi)
			return rd_fail(r, "NUL in a string");
		put_utf8(out, (unsigned long)hi);
		return true;
	}
	if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
	    (lo = hex4(r->p + 2)) < 0xdc00 || lo > 0xdfff)
		return rd_fail(r, "lone high surrogate");
	r->p += 6;
	put_utf8(out, 0x10000 + ((unsigned long)(hi - 0xd800) << 10) +
		      (unsigned long)(lo - 0xdc00));
	return true;
}

/* string() - the string at r->p (its opening quote), decoded in place;
 * *s points at it, NUL-terminated where its closing quote was. */
static bool string(struct rd *r, const char **s)
{
	char *out;

	if (r->p >= r->end || *r->p != '"')
		return rd_fail(r, "expected a string");
	out = ++r->p;
	*s = out;
	while (r->p < r->end && *r->p != '"') {
		unsigned char ch = (unsigned char)*r->p++;

		if (ch < 0x20)
			return rd_fail(r, "control character in a string");
		if (ch != '\\') {
			*out++ = (char)ch;
			continue;
		}
		if (r->p >= r->end)
			break;
		switch (*r->p++) {
		case '"': *out++ = '"'; break;
		case '\\': *out++ = '\\'; break;
		case '/': *out++ = '/'; break;
		case 'b': *out++ = '\b'; break;
		case 'f': *out++ = '\f'; break;
		case 'n': *out++ = '\n'; break;
		case 'r': *out++ = '\r'; break;
		case 't': *out++ = '\t'; break;
		case 'u':
			if (!uescape(r, &out))
				return false;
			break;
		default:
			return rd_fail(r, "bad escape");
		}
	}
	if (r->p >= r->end)
		return rd_fail(r, "unterminated string");
	*out = '\0';		/* out <= r->p: the quote's place or before */
	r->p++;
	return true;
}

/* integer() - an integer (no fraction or exponent) into *n. */
static bool integer(struct rd *r, long long *n)
{
	bool neg = r->p < r->end && *r->p == '-';
	unsigned long long v = 0;
	const char *start;

	if (neg)
		r->p++;
	start = r->p;
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
		if (v > (unsigned long long)INT64_MAX / 10)
			return rd_fail(r, "number out of range");
		v = v * 10 + (unsigned long long)(*r->p++ - '0');
	}
	if (r->p == start || (*start == '0' && r->p - start > 1))
		return rd_fail(r, "bad number");
	if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
		return rd_fail(r, "only integers are accepted");
	if (v > (unsigned long long)INT64_MAX)
		return rd_fail(r, "number out of range");
	*n = neg ? -(long long)v : (long long)v;
	return true;
}

/* word() - the literal w at r->p? */
static bool word(struct rd *r, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
		return false;
	r->p += n;
	return true;
}

/* array_of_str() - is the array at r->p empty or of strings? */
static bool array_of_str(const struct rd *r)
{
	const char *q = r->p + 1;

	while (q < r->end && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r'))
		q++;
	return q < r->end && (*q == '"' || *q == ']');
}

/* array() - an array of strings into o->items. */
static bool array(struct rd *r, struct json_obj *o, struct json_field *f)
{
	r->p++;				/* '[' */
	f->first = o->nitems;
	skip_ws(r);
	if (r->p < r->end && *r->p == ']') {
		r->p++;
		return true;
	}
	for (;;) {
		skip_ws(r);
		if (o->nitems >= JSON_ITEMS_MAX)
			return rd_fail(r, "too many array items");
		if (!string(r, &o->items[o->nitems]))
			return rd_fail(r, "arrays may hold only strings");
		o->nitems++;
		f->count++;
		skip_ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == ']') {
			r->p++;
			return true;
		}
		return rd_fail(r, "expected ',' or ']' in an array");
	}
}

/* is_ws() - JSON white space? */
static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* skip() - past one value of any shape, strings and nesting followed
 * (at most 64 deep), nothing decoded. */
static bool skip(const char **pp, const char *end)
{
	const char *p = *pp;
	unsigned int depth = 0;

	for (;;) {
		if (p >= end)
			return false;
		if (*p == '"') {
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= end)
				return false;
			p++;
		} else if (*p == '{' || *p == '[') {
			if (++depth > 64)
				return false;
			p++;
		} else if (*p == '}' || *p == ']') {
			if (!depth)
				return false;
			depth--;
			p++;
		} else if (depth) {
			p++;
		} else {		/* a scalar: to its end */
			while (p < end && *p != ',' && *p != '}' && *p != ']' &&
			       !is_ws(*p))
				p++;
			break;
		}
		if (!depth)
			break;
	}
	*pp = p;
	return true;
}

/* raw() - json_parse_any(): any other value kept as its text. */
static bool raw(struct rd *r, struct json_field *f)
{
	const char *start = r->p;

	if (!skip((const char **)&r->p, r->end))
		return rd_fail(r, "malformed value");
	f->type = JSON_RAW;
	f->s = start;
	f->n = r->p - start;
	return true;
}

bool json_array_next(const char **p, const char *end, const char **elem,
		     size_t *len)
{
	const char *q = *p;

	if (q >= end)
		return false;
	q++;				/* '[' or ',' */
	while (q < end && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r'))
		q++;
	if (q >= end || *q == ']')
		return false;
	*elem = q;
	if (!skip(&q, end))
		return false;
	*len = (size_t)(q - *elem);
	while (q < end && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r'))
		q++;
	if (q >= end || (*q != ',' && *q != ']'))
		return false;
	*p = q;
	return true;
}

/* value() - one member's value into f. */
static bool value(struct rd *r, struct json_obj *o, struct json_field *f)
{
	if (r->p >= r->end)
		return rd_fail(r, "missing value");
	if (r->any && (*r->p == '{' || (*r->p == '[' && !array_of_str(r)))) 
		return raw(r, f);
	switch (*r->p) {
	case '"':
		f->type = JSON_STR;
		return string(r, &f->s);
	case '[':
		f->type = JSON_ARR;
		return array(r, o, f);
	case '{':
		return rd_fail(r, "nested objects are not accepted");
	default:
		break;
	}
	if (word(r, "true") || word(r, "false")) {
		f->type = JSON_BOOL;
		f->n = r->p[-1] == 'e' && r->p[-2] == 'u';
		return true;
	}
	if (word(r, "null")) {
		f->type = JSON_NULL;
		return true;
	}
	f->type = JSON_INT;
	if (r->any) {			/* a fraction, an exponent: raw */
		char *start = r->p;

		if (integer(r, &f->n))
			return true;
		r->p = start;
		return raw(r, f);
	}
	return integer(r, &f->n);
}

/* parse() - json_parse() and json_parse_any(). */
static bool parse(struct rd *r, struct json_obj *o)
{
	struct json_field spare;

	memset(o, 0, sizeof(*o));
	skip_ws(r);
	if (r->p >= r->end || *r->p != '{')
		return rd_fail(r, "expected an object");
	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		goto tail;
	}
	for (;;) {
		bool keep = o->n < JSON_FIELDS_MAX;
		struct json_field *f = keep ? &o->f[o->n] : &spare;

		skip_ws(r);
		if (!keep && !r->any)
			return rd_fail(r, "too many members");
		memset(f, 0, sizeof(*f));
		if (!string(r, &f->key))
			return rd_fail(r, "expected a member name");
		if (json_get(o, f->key))
			return rd_fail(r, "duplicate member");
		skip_ws(r);
		if (r->p >= r->end || *r->p++ != ':')
			return rd_fail(r, "expected ':'");
		skip_ws(r);
		if (!keep) {
			if (!skip((const char **)&r->p, r->end))
				return rd_fail(r, "malformed value");
		} else if (!value(r, o, f)) {
			return false;
		} else {
			o->n++;
		}
		skip_ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == '}') {
			r->p++;
			break;
		}
		return rd_fail(r, "expected ',' or '}'");
	}
tail:
	skip_ws(r);
	if (r->p != r->end)
		return rd_fail(r, "text after the object");
	return true;
}

bool json_parse(char *buf, size_t len, struct json_obj *o, char *err,
		size_t errlen)
{
	struct rd r = { buf, buf + len, err, errlen, false };

	return parse(&r, o);
}

bool json_parse_any(char *buf, size_t len, struct json_obj *o, char *err,
		    size_t errlen)
{
	struct rd r = { buf, buf + len, err, errlen, true };

	return parse(&r, o);
}

const struct json_field *json_get(const struct json_obj *o, const char *key)
{
	unsigned int i;

	for (i = 0; i < o->n; i++)
		if (!strcmp(o->f[i].key, key))
			return &o->f[i];
	return NULL;
}

/* --- Writer ---------------------------------------------------------- */

void jw_init(struct jw *w, char *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
	w->first = 1;
	if (cap)
		buf[0] = '\0';
}

/* put() - n bytes of s, or mark the writer over and append nothing. */
static bool put(struct jw *w, const char *s, size_t n)
{
	if (w->over || n >= w->cap - w->len) {
		w->over = true;
		return false;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
	return true;
}

/* sep() - the comma before a value or key that is not its parent's
 * first; after a key (depth bit 31 as the flag) nothing. */
static void sep(struct jw *w)
{
	if (w->first & 0x80000000u) {
		w->first &= ~0x80000000u;
		return;
	}
	if (w->first & (1u << w->depth))
		w->first &= ~(1u << w->depth);
	else
		put(w, ",", 1);
}

void jw_open(struct jw *w, char c)
{
	sep(w);
	put(w, &c, 1);
	if (w->depth < 30)
		w->depth++;
	w->first |= 1u << w->depth;
}

void jw_close(struct jw *w, char c)
{
	put(w, &c, 1);
	if (w->depth)
		w->depth--;
}

/* esc() - s as a JSON string body (quotes not included), all or none. */
static void esc(struct jw *w, const char *s)
{
	size_t start = w->len;
	char u[8];

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool ok;

		if (ch == '"' || ch == '\\') {
			char e[2] = { '\\', (char)ch };

			ok = put(w, e, 2);
		} else if (ch < 0x20) {
			snprintf(u, sizeof(u), "\\u%04x", ch);
			ok = put(w, u, 6);
		} else {
			ok = put(w, (const char *)&ch, 1);
		}
		if (!ok) {
			w->len = start;
			w->buf[start] = '\0';
			return;
		}
	}
}

void jw_key(struct jw *w, const char *key)
{
	sep(w);
	put(w, "\"", 1);
	esc(w, key);
	put(w, "\":", 2);
	w->first |= 0x80000000u;
}

void jw_str(struct jw *w, const char *s)
{
	sep(w);
	put(w, "\"", 1);
	esc(w, s);
	put(w, "\"", 1);
}

void jw_u64(struct jw *w, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRIu64, v);

	sep(w);
	put(w, b, (size_t)n);
}

void jw_i64(struct jw *w, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRId64, v);

	sep(w);
	put(w, b, (size_t)n);
}

void jw_bool(struct jw *w, bool v)
{
	sep(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_raw(struct jw *w, const char *s)
{
	put(w, s, strlen(s));
}

void jw_kstr(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_str(w, s);
}

void jw_ku64(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_u64(w, v);
}

void jw_kbool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}
