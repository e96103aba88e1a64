// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tiny JSON reader/writer; see json.h.
 *
 * The reader is recursive descent over a length-bounded buffer (a request
 * line need not be NUL-terminated), one function per grammar rule of RFC
 * 8259; every error is a static string naming what was expected, which the
 * control socket returns to the client as is.  Nesting is bounded by
 * JSON_MAX_DEPTH so a hostile line cannot exhaust the stack.
 *
 * The writer keeps, per open container, whether a value was written yet, so
 * callers emit keys and values in order and never write a comma themselves.
 * An allocation failure latches b->oom; the caller checks it once at the
 * end instead of after every call.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/*
 * Parser state for one json_parse() call.  @s and @end point into the caller's
 * line buffer, which the parser only reads and never keeps: every string in the
 * tree is a copy, so the tree outlives the line (ctl_handle() frees both).
 */
struct jparser {
	const char *s, *end;	/* next character, end of input */
	const char *err;	/* first error, a static string */
	int depth;		/* open containers */
};

/*
 * RFC 8259 section 2: insignificant whitespace is exactly space, tab, LF and
 * CR.  isspace() would also take \v and \f and depends on the locale.
 */
static void skip_ws(struct jparser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

/*
 * A zeroed node of type @t, or NULL with p->err set.  Zeroed so that next,
 * child, key and s are NULL and json_free() can run on a half-built node.
 */
static struct jval *jnew(struct jparser *p, enum jtype t)
{
	struct jval *v = calloc(1, sizeof(*v));

	if (!v)
		p->err = "out of memory";
	else
		v->t = t;
	return v;
}

/*
 * Free @v, its children and every sibling after it.  Siblings are walked in a
 * loop and only children recurse, so the recursion depth is bounded by
 * JSON_MAX_DEPTH, not by the length of an array (a 1 MiB line can hold half a
 * million elements).
 */
void json_free(struct jval *v)
{
	while (v) {
		struct jval *next = v->next;

		json_free(v->child);
		free(v->key);
		free(v->s);
		free(v);
		v = next;
	}
}

/* One hex digit's value, or -1: serves \u escapes and json_unhex(). */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The caller (frame_arg() in control_ops.c) has checked that @n is even and
 * sized @out for @n / 2 bytes.  The loop condition never reads past s[n - 1]
 * even for an odd @n, whose last digit would be ignored.  *bad is the offset of
 * the pair holding the bad digit, as json.h promises.
 */
ssize_t json_unhex(const char *s, size_t n, uint8_t *out, size_t *bad)
{
	size_t o = 0;

	for (size_t i = 0; i + 1 < n; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0) {
			*bad = i;
			return -1;
		}
		out[o++] = (uint8_t)(hi << 4 | lo);
	}
	return (ssize_t)o;
}

/* The value of a standard (RFC 4648 section 4) base64 character, or -1. */
static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Only padded standard base64 (RFC 4648 section 4) is accepted: no line breaks
 * or other whitespace (section 3.3 lets a decoder refuse them) and no URL-safe
 * alphabet, so an encoding mistake is reported instead of decoded into a
 * different frame.  Non-zero bits left over in the last character before the
 * padding (section 3.5) are accepted and dropped.  The caller has checked that
 * @n is a multiple of 4 and sized @out for @n / 4 * 3 bytes.
 */
ssize_t json_unbase64(const char *s, size_t n, uint8_t *out, size_t *bad)
{
	size_t o = 0;

	for (size_t i = 0; i + 3 < n; i += 4) {
		int v[4];
		int pad = 0;

		for (int k = 0; k < 4; k++) {
			char c = s[i + k];
			bool last = i + 4 == n;

			/*
			 * '=' pads only the last quantum, only its third and
			 * fourth characters, and a third '=' needs a fourth.
			 */
			if (c == '=' && last && k >= 2 && (k == 3 || s[i + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			v[k] = b64val(c);
			/* nothing but padding may follow padding */
			if (v[k] < 0 || pad) {
				*bad = i + (size_t)k;
				return -1;
			}
		}
		/* 4 characters of 6 bits are 3 bytes, less one per '=' */
		out[o++] = (uint8_t)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[o++] = (uint8_t)((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			out[o++] = (uint8_t)((v[2] & 3) << 6 | v[3]);
	}
	return (ssize_t)o;
}

/*
 * The 4 hex digits of a \u escape.
 *
 * Called with p->s just past "\u".  On success p->s moves past the four digits;
 * on failure it stays and p->err says why.
 */
static bool read_u16(struct jparser *p, unsigned int *out)
{
	unsigned int v = 0;

	/*
	 * Bounded by the end of the input, not by the closing quote: a '"' is
	 * not a hex digit, so a short escape like "\u12" fails on the quote
	 * instead of reading past it.
	 */
	if (p->end - p->s < 4) {
		p->err = "truncated \\u escape";
		return false;
	}
	for (int i = 0; i < 4; i++) {
		int h = hexval(p->s[i]);

		if (h < 0) {
			p->err = "bad \\u escape";
			return false;
		}
		v = v << 4 | (unsigned int)h;
	}
	p->s += 4;
	*out = v;
	return true;
}

/*
 * Encode code point @cp as UTF-8 at @o; returns the bytes written (1..4).
 *
 * The caller passes a scalar value: at most U+10FFFF and never a surrogate
 * (parse_string() combines or refuses those).  Each form is no longer than the
 * escape it came from (\uXXXX, 6 bytes, gives at most 3; a 12-byte surrogate
 * pair gives 4), which is what lets parse_string() allocate by input length.
 */
static size_t put_utf8(char *o, unsigned int cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Decoded output never exceeds the escaped input, so one allocation of the
 * raw length suffices.
 *
 * Called with p->s at the opening quote.  Returns a malloc'd, NUL-terminated
 * copy that the caller owns, with its length in *len_out: \u0000 may put NUL
 * bytes inside it, which is why struct jval keeps slen.  NULL with p->err set
 * on any error.  Bytes of 0x80 and above are copied as they are, without a
 * UTF-8 check; jb_quoted() makes them safe when they are echoed.
 */
static char *parse_string(struct jparser *p, size_t *len_out)
{
	const char *start;
	char *out, *o;

	p->s++;		/* opening quote */
	start = p->s;
	/*
	 * First pass: find the closing quote, stepping over the character after
	 * each backslash so that \" does not end the string.  A backslash at
	 * the very end of the input does not step, so the scan runs off the end
	 * and reports "unterminated string".
	 */
	while (p->s < p->end && *p->s != '"') {
		if (*p->s == '\\' && p->s + 1 < p->end)
			p->s++;
		p->s++;
	}
	if (p->s >= p->end) {
		p->err = "unterminated string";
		return NULL;
	}
	out = malloc((size_t)(p->s - start) + 1);
	if (!out) {
		p->err = "out of memory";
		return NULL;
	}
	p->s = start;
	o = out;
	/*
	 * Second pass: decode.  No check against p->end is needed here: the
	 * first pass proved an unescaped quote ends the string, and every
	 * escape consumes only characters before it (or fails on it).
	 */
	while (*p->s != '"') {
		unsigned char c = (unsigned char)*p->s++;

		/*
		 * RFC 8259 section 7: control characters must be escaped inside
		 * a string.
		 */
		if (c < 0x20) {
			p->err = "control character in string";
			goto fail;
		}
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		c = (unsigned char)*p->s++;
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned int cp, lo;

			if (!read_u16(p, &cp))
				goto fail;
			/*
			 * A code point above U+FFFF comes as a surrogate pair;
			 * a lone surrogate has no UTF-8 form and is refused.
			 *
			 * High surrogate: a low one (U+DC00..U+DFFF) must
			 * follow as the next escape.
			 */
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u') {
					p->err = "unpaired surrogate";
					goto fail;
				}
				p->s += 2;
				if (!read_u16(p, &lo))
					goto fail;
				if (lo < 0xdc00 || lo >= 0xe000) {
					p->err = "unpaired surrogate";
					goto fail;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				p->err = "unpaired surrogate";
				goto fail;
			}
			o += put_utf8(o, cp);
			break;
		}
		default:
			p->err = "bad escape";
			goto fail;
		}
	}
	p->s++;		/* closing quote */
	*o = 0;
	*len_out = (size_t)(o - out);
	return out;
fail:
	free(out);
	return NULL;
}

static struct jval *parse_value(struct jparser *p);

/*
 * Check the RFC 8259 number grammar by hand (strtod alone would accept hex,
 * "inf", leading '+' or zeros), then convert the checked text with strtod.
 *
 * Returns a J_NUM node or NULL with p->err set.  The text is copied to @tmp
 * because strtod() needs a NUL-terminated string and the request line is not
 * one.  64 characters hold any number a request carries (ports, LIDs and
 * seconds are at most ten digits); a longer one is refused rather than
 * truncated.  strtod() reads '.' as the decimal point because the daemon never
 * calls setlocale() and so runs in the "C" locale.
 */
static struct jval *parse_number(struct jparser *p)
{
	const char *q = p->s;
	char tmp[64];
	struct jval *v;
	size_t n;

	if (q < p->end && *q == '-')
		q++;
	if (q >= p->end || *q < '0' || *q > '9')
		goto bad;
	if (*q == '0')
		q++;
	else
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	if (q < p->end && *q == '.') {
		q++;
		if (q >= p->end || *q < '0' || *q > '9')
			goto bad;
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < p->end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < p->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= p->end || *q < '0' || *q > '9')
			goto bad;
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	}
	n = (size_t)(q - p->s);
	if (n >= sizeof(tmp)) {
		p->err = "number too long";
		return NULL;
	}
	memcpy(tmp, p->s, n);
	tmp[n] = 0;
	v = jnew(p, J_NUM);
	if (!v)
		return NULL;
	v->n = strtod(tmp, NULL);
	p->s = q;
	return v;
bad:
	p->err = "bad number";
	return NULL;
}

/*
 * Consume @word if the input continues with it.  What follows is not checked
 * here: "truex" fails later, as trailing characters or a missing ','.
 */
static bool literal(struct jparser *p, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n))
		return false;
	p->s += n;
	return true;
}

/*
 * An object or array: members are kept in order, duplicate keys and all.
 *
 * Called with p->s at '{' or '['.  Members are linked in as they are parsed, so
 * on any error json_free() of the container also frees what was parsed so far;
 * a member name is owned by its node once attached and freed by hand on the
 * error paths before that.  RFC 8259 section 4 says names SHOULD be unique and
 * leaves duplicates to the implementation: json_get() returns the first.
 */
static struct jval *parse_container(struct jparser *p, bool object)
{
	struct jval *v = jnew(p, object ? J_OBJ : J_ARR), **tail;
	char close = object ? '}' : ']';

	if (!v)
		return NULL;
	if (++p->depth > JSON_MAX_DEPTH) {
		p->err = "nesting too deep";
		goto fail;
	}
	/*
	 * Appending through a tail pointer keeps the members in request order,
	 * which jb_value() relies on to echo an id exactly as it came.
	 */
	tail = &v->child;
	p->s++;
	skip_ws(p);
	if (p->s < p->end && *p->s == close) {
		p->s++;
		p->depth--;
		return v;
	}
	for (;;) {
		char *key = NULL;
		size_t klen;
		struct jval *item;

		skip_ws(p);
		if (object) {
			if (p->s >= p->end || *p->s != '"') {
				p->err = "expected member name";
				goto fail;
			}
			key = parse_string(p, &klen);
			if (!key)
				goto fail;
			skip_ws(p);
			if (p->s >= p->end || *p->s != ':') {
				free(key);
				p->err = "expected ':'";
				goto fail;
			}
			p->s++;
		}
		item = parse_value(p);
		if (!item) {
			free(key);
			goto fail;
		}
		item->key = key;
		*tail = item;
		tail = &item->next;
		skip_ws(p);
		if (p->s < p->end && *p->s == ',') {
			p->s++;
			continue;
		}
		if (p->s < p->end && *p->s == close) {
			p->s++;
			break;
		}
		p->err = object ? "expected ',' or '}'" : "expected ',' or ']'";
		goto fail;
	}
	p->depth--;
	return v;
fail:
	json_free(v);
	return NULL;
}

/*
 * Dispatch on the first character of a value; returns its tree or NULL with
 * p->err set.
 */
static struct jval *parse_value(struct jparser *p)
{
	struct jval *v;

	skip_ws(p);
	if (p->s >= p->end) {
		p->err = "unexpected end of input";
		return NULL;
	}
	switch (*p->s) {
	case '{':
		return parse_container(p, true);
	case '[':
		return parse_container(p, false);
	case '"':
		v = jnew(p, J_STR);
		if (!v)
			return NULL;
		v->s = parse_string(p, &v->slen);
		if (!v->s) {
			free(v);
			return NULL;
		}
		return v;
	case 't':
	case 'f':
		/*
		 * After "true" the last four characters consumed are t, r, u,
		 * e; after "false" they are a, l, s, e.
		 */
		if (literal(p, "true") || literal(p, "false")) {
			v = jnew(p, J_BOOL);
			if (v)
				v->b = p->s[-1] == 'e' && p->s[-4] == 't';
			return v;
		}
		break;
	case 'n':
		if (literal(p, "null"))
			return jnew(p, J_NULL);
		break;
	default:
		if (*p->s == '-' || (*p->s >= '0' && *p->s <= '9'))
			return parse_number(p);
	}
	p->err = "unexpected character";
	return NULL;
}

/*
 * One request line is exactly one value: "{} {}" is refused as trailing
 * characters rather than half handled.  The tree belongs to the caller, who
 * frees it with json_free().
 */
struct jval *json_parse(const char *s, size_t len, const char **err)
{
	struct jparser p = { .s = s, .end = s + len };
	struct jval *v = parse_value(&p);

	if (v) {
		skip_ws(&p);
		if (p.s != p.end) {
			json_free(v);
			v = NULL;
			p.err = "trailing characters after the value";
		}
	}
	*err = v ? NULL : p.err;
	return v;
}

/* Linear search: requests have a handful of members.  The first match wins. */
const struct jval *json_get(const struct jval *o, const char *key)
{
	if (!o || o->t != J_OBJ)
		return NULL;
	for (const struct jval *m = o->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

/*
 * JSON has only doubles: an integer is a finite number with no fraction.
 *
 * The callers' bounds are far below 2^53, so converting them to double is exact
 * and the comparison cannot round.
 */
bool json_int(const struct jval *v, int64_t min, int64_t max, int64_t *out)
{
	if (!v || v->t != J_NUM || !isfinite(v->n) || v->n != floor(v->n) ||
	    v->n < (double)min || v->n > (double)max)
		return false;
	*out = (int64_t)v->n;
	return true;
}

/* Writer */

/* first[0] is the top level: its one value takes no comma. */
void jb_init(struct jbuf *b)
{
	memset(b, 0, sizeof(*b));
	b->first[0] = true;
}

/*
 * Release the text.  Nesting state and the oom latch are not reset: a buffer is
 * jb_init()ed again before it is reused.
 */
void jb_free(struct jbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Append bytes as they are; the buffer doubles and stays NUL-terminated. */
void jb_raw(struct jbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		/*
		 * Most replies are one short line; doubling from 256 keeps
		 * appends amortised O(1) for the long ones (ports and table on
		 * a big fabric).
		 */
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			/*
			 * Latched: every later append is ignored and the caller
			 * replaces the reply.
			 */
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

/*
 * A comma before every value except the first in its container and the one
 * right after a key.
 */
static void jb_sep(struct jbuf *b)
{
	if (b->after_key)
		b->after_key = false;
	else if (!b->first[b->depth])
		jb_raw(b, ",", 1);
	b->first[b->depth] = false;
}

/*
 * Open a container with @c.  The depth stops at JSON_MAX_DEPTH; a deeper
 * nesting would share the deepest level's comma state rather than overflow
 * first[].  It does not happen: the only deep value written is an echoed id,
 * a member of a parsed request object, so the reply object plus the id is no
 * deeper than the request was, at most JSON_MAX_DEPTH.
 */
static void jb_open(struct jbuf *b, char c)
{
	jb_sep(b);
	jb_raw(b, &c, 1);
	if (b->depth < JSON_MAX_DEPTH)
		b->depth++;
	b->first[b->depth] = true;
}

/* Close with @c.  No separator: the bracket follows the last value directly. */
static void jb_close(struct jbuf *b, char c)
{
	jb_raw(b, &c, 1);
	if (b->depth > 0)
		b->depth--;
}

void jb_obj(struct jbuf *b) { jb_open(b, '{'); }
void jb_arr(struct jbuf *b) { jb_open(b, '['); }
void jb_end_obj(struct jbuf *b) { jb_close(b, '}'); }
void jb_end_arr(struct jbuf *b) { jb_close(b, ']'); }

/*
 * Length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if invalid.
 *
 * The byte ranges are those of the Unicode Standard's table of well-formed
 * UTF-8 byte sequences (chapter 3, Table 3-7): C0, C1 and F5..FF never start a
 * sequence, and the second byte is narrowed after E0, ED, F0 and F4.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;	/* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;	/* above U+10FFFF */
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * Quote @s as a JSON string; bytes that are not valid UTF-8 become \u00XX,
 * so a reply is valid JSON whatever a request contained.
 */
static void jb_quoted(struct jbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;

	jb_raw(b, "\"", 1);
	/*
	 * DEL is legal raw JSON, but escaping it keeps reply lines printable in
	 * a log or a terminal.  A valid multi-byte sequence passes through
	 * unescaped.  An invalid byte becomes \u00XX, which reads back as
	 * U+00XX rather than the byte: enough to show what was sent, and the
	 * reply stays valid UTF-8 for the client's decoder.
	 */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = u[i];
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		size_t len;

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			jb_raw(b, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			jb_raw(b, esc, 6);
		} else if (c < 0x80) {
			jb_raw(b, &s[i], 1);
		} else if ((len = utf8_len(&u[i], n - i))) {
			jb_raw(b, &s[i], len);
			i += len - 1;
		} else {
			jb_raw(b, esc, 6);
		}
	}
	jb_raw(b, "\"", 1);
}

/*
 * @k is a C string: the code's own names, or a parsed member name being echoed,
 * which is cut at its first NUL if it held \u0000.
 */
void jb_key(struct jbuf *b, const char *k)
{
	jb_sep(b);
	jb_quoted(b, k, strlen(k));
	jb_raw(b, ":", 1);
	b->after_key = true;
}

void jb_strn(struct jbuf *b, const char *s, size_t n)
{
	jb_sep(b);
	jb_quoted(b, s, n);
}

void jb_str(struct jbuf *b, const char *s)
{
	jb_strn(b, s, strlen(s));
}

/* 24 bytes hold any 64-bit integer in decimal, sign and NUL included. */
void jb_u64(struct jbuf *b, uint64_t v)
{
	char t[24];

	jb_sep(b);
	jb_raw(b, t, (size_t)snprintf(t, sizeof(t), "%" PRIu64, v));
}

void jb_i64(struct jbuf *b, int64_t v)
{
	char t[24];

	jb_sep(b);
	jb_raw(b, t, (size_t)snprintf(t, sizeof(t), "%" PRId64, v));
}

void jb_bool(struct jbuf *b, bool v)
{
	jb_sep(b);
	jb_raw(b, v ? "true" : "false", v ? 4 : 5);
}

void jb_null(struct jbuf *b)
{
	jb_sep(b);
	jb_raw(b, "null", 4);
}

/*
 * Echo a parsed number: integers exactly representable in a double print
 * without a fraction, others with 17 significant digits so they read back
 * to the same double.  NaN and infinities cannot be parsed, but would
 * print as null.
 */
static void jb_num(struct jbuf *b, double n)
{
	char t[32];

	jb_sep(b);
	if (!isfinite(n))
		jb_raw(b, "null", 4);
	else if (n == floor(n) && fabs(n) < 9007199254740992.0)
		jb_raw(b, t, (size_t)snprintf(t, sizeof(t), "%.0f", n));
	else
		jb_raw(b, t, (size_t)snprintf(t, sizeof(t), "%.17g", n));
}

/* Write a parsed value back out: requests' ids are echoed whatever their type. */
void jb_value(struct jbuf *b, const struct jval *v)
{
	if (!v) {
		jb_null(b);
		return;
	}
	/*
	 * Recursion follows the parsed tree, so it is at most JSON_MAX_DEPTH
	 * deep.
	 */
	switch (v->t) {
	case J_NULL: jb_null(b); break;
	case J_BOOL: jb_bool(b, v->b); break;
	case J_NUM: jb_num(b, v->n); break;
	case J_STR: jb_strn(b, v->s, v->slen); break;
	case J_ARR:
	case J_OBJ:
		if (v->t == J_OBJ)
			jb_obj(b);
		else
			jb_arr(b);
		for (const struct jval *c = v->child; c; c = c->next) {
			if (v->t == J_OBJ)
				jb_key(b, c->key);
			jb_value(b, c);
		}
		if (v->t == J_OBJ)
			jb_end_obj(b);
		else
			jb_end_arr(b);
		break;
	}
}
