/* test_json.c - the control socket's JSON reader and writer (json.c):
 * requests of every accepted shape, malformed and truncated input (each
 * prefix of a valid request fails cleanly), bounds, escapes, the clients'
 * lenient reader; the writer's commas, escaping and overflow. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "unit.h"

static char err[160];

/* parse() - json_parse() of a copy of s (it decodes in place). */
static bool parse(const char *s, struct json_obj *o, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (n >= len)
		return false;
	memcpy(buf, s, n + 1);
	return json_parse(buf, n, o, err, sizeof(err));
}

TEST(json_request_shapes)
{
	static struct json_obj o;
	char buf[512];
	const struct json_field *f;

	CHECK(parse(" { \"op\" : \"add\", \"tcp\": [\"8080:80\", \"[::]/9\"],"
		    " \"id\": -42, \"x\": true, \"y\": null, \"z\": false }\n",
		    &o, buf, sizeof(buf)));
	CHECK_EQ(o.n, 6);
	f = json_get(&o, "op");
	CHECK(f && f->type == JSON_STR && !strcmp(f->s, "add"));
	f = json_get(&o, "tcp");
	CHECK(f && f->type == JSON_ARR && f->count == 2);
	CHECK(!strcmp(o.items[f->first], "8080:80"));
	CHECK(!strcmp(o.items[f->first + 1], "[::]/9"));
	f = json_get(&o, "id");
	CHECK(f && f->type == JSON_INT && f->n == -42);
	CHECK(json_get(&o, "x")->n == 1 && json_get(&o, "z")->n == 0);
	CHECK(json_get(&o, "y")->type == JSON_NULL);
	CHECK(!json_get(&o, "nope"));
	CHECK(parse("{}", &o, buf, sizeof(buf)) && o.n == 0);
	CHECK(parse("{\"a\":[]}", &o, buf, sizeof(buf)));
	CHECK(json_get(&o, "a")->count == 0);
}

TEST(json_escapes)
{
	static struct json_obj o;
	char buf[256];

	CHECK(parse("{\"s\":\"a\\\"b\\\\c\\/d\\n\\t\\u0041\\u00e9\\u20ac"
		    "\\ud83d\\ude00\"}", &o, buf, sizeof(buf)));
	CHECK(!strcmp(json_get(&o, "s")->s,
		      "a\"b\\c/d\n\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	CHECK(!parse("{\"s\":\"\\u0000\"}", &o, buf, sizeof(buf)));
	CHECK(!parse("{\"s\":\"\\ud83d\"}", &o, buf, sizeof(buf)));
	CHECK(!parse("{\"s\":\"\\ude00\"}", &o, buf, sizeof(buf)));
	CHECK(!parse("{\"s\":\"\\x\"}", &o, buf, sizeof(buf)));
	CHECK(!parse("{\"s\":\"\\u12g4\"}", &o, buf, sizeof(buf)));
	CHECK(!parse("{\"s\":\"a\tb\"}", &o, buf, sizeof(buf)));
}

TEST(json_malformed)
{
	static const char *const bad[] = {
		"", " ", "[]", "\"x\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
		"{\"a\":1 \"b\":2}", "{a:1}", "{\"a\":1}x", "{\"a\":1}{}",
		"{\"a\":{\"b\":1}}", "{\"a\":[1]}", "{\"a\":[\"x\",]}",
		"{\"a\":[\"x\" \"y\"]}", "{\"a\":01}", "{\"a\":1.5}",
		"{\"a\":1e3}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":nul}",
		"{\"a\":99999999999999999999}", "{\"a\":1,\"a\":2}",
		"{\"a\":\"x}", "{\"a\":[\"x\"}",
	};
	static struct json_obj o;
	char buf[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse(bad[i], &o, buf, sizeof(buf))) {
			unit_fail(__FILE__, __LINE__, bad[i]);
			return;
		}
		CHECK(err[0]);
	}
}

TEST(json_truncated)
{
	static const char req[] = "{\"op\":\"add\",\"tcp\":[\"1\",\"2-3\"],"
				  "\"id\":12,\"s\":\"\\u00e9\\\"\"}";
	static struct json_obj o;
	char buf[sizeof(req)];
	size_t n;

	for (n = 0; n < sizeof(req) - 1; n++) {
		memcpy(buf, req, n);
		buf[n] = '\0';
		CHECK(!json_parse(buf, n, &o, err, sizeof(err)));
	}
	memcpy(buf, req, sizeof(req));
	CHECK(json_parse(buf, sizeof(req) - 1, &o, err, sizeof(err)));
}

TEST(json_bounds)
{
	static struct json_obj o;
	static char buf[16384];
	size_t len = 0;
	unsigned int i;

	len += (size_t)sprintf(buf + len, "{");
	for (i = 0; i <= JSON_FIELDS_MAX; i++)
		len += (size_t)sprintf(buf + len, "%s\"k%u\":1", i ? "," : "", i);
	sprintf(buf + len, "}");
	CHECK(!json_parse(buf, strlen(buf), &o, err, sizeof(err)));
	CHECK(!strcmp(err, "too many members"));
	len = (size_t)sprintf(buf, "{\"a\":[");
	for (i = 0; i <= JSON_ITEMS_MAX; i++)
		len += (size_t)sprintf(buf + len, "%s\"x\"", i ? "," : "");
	sprintf(buf + len, "]}");
	CHECK(!json_parse(buf, strlen(buf), &o, err, sizeof(err)));
	/* nesting is refused, however deep */
	memset(buf, '[', 4000);
	memcpy(buf, "{\"a\":", 5);
	CHECK(!json_parse(buf, 4000, &o, err, sizeof(err)));
}

TEST(json_reply_shapes)
{
	static struct json_obj o;
	char buf[256] = "{\"ok\":true,\"flows\":[{\"a\":\"}\",\"b\":[1,{}]},"
			"{\"c\":2}],\"d\":{\"e\":[\"]\"]},\"f\":1.5}";
	const struct json_field *f;
	const char *p, *e;
	size_t len;
	int n = 0;

	CHECK(json_parse_any(buf, strlen(buf), &o, err, sizeof(err)));
	f = json_get(&o, "flows");
	CHECK(f && f->type == JSON_RAW);
	p = f->s;
	while (json_array_next(&p, f->s + f->n, &e, &len)) {
		CHECK(e[0] == '{' && e[len - 1] == '}');
		n++;
	}
	CHECK_EQ(n, 2);
	CHECK(json_get(&o, "d")->type == JSON_RAW);
	CHECK(json_get(&o, "f")->type == JSON_RAW);
	CHECK(json_get(&o, "ok")->n == 1);
}

TEST(json_writer)
{
	char buf[128], small[12];
	struct jw w;

	jw_init(&w, buf, sizeof(buf));
	jw_open(&w, '{');
	jw_kbool(&w, "ok", true);
	jw_kstr(&w, "e", "a\"\\\n\x01");
	jw_key(&w, "l");
	jw_open(&w, '[');
	jw_str(&w, "x");
	jw_u64(&w, 18446744073709551615ull);
	jw_i64(&w, -3);
	jw_open(&w, '{');
	jw_close(&w, '}');
	jw_close(&w, ']');
	jw_ku64(&w, "n", 0);
	jw_close(&w, '}');
	CHECK(!w.over);
	CHECK(!strcmp(buf, "{\"ok\":true,\"e\":\"a\\\"\\\\\\u000a\\u0001\","
		      "\"l\":[\"x\",18446744073709551615,-3,{}],\"n\":0}"));
	jw_init(&w, small, sizeof(small));
	jw_open(&w, '[');
	jw_str(&w, "abcdefghijklmnop");
	CHECK(w.over);
	CHECK(strlen(small) < sizeof(small));
}
