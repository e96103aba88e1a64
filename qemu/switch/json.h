/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A tiny JSON reader and writer for the control socket.  The reader builds a
 * tree of malloc'd nodes (depth and size bounded by the caller's line limit
 * and JSON_MAX_DEPTH); it rejects anything that is not strict RFC 8259 JSON.
 * The writer appends to a growable buffer and tracks commas itself.
 */
#ifndef CNUAS_JSON_H
#define CNUAS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JSON_MAX_DEPTH 32

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype t;
	struct jval *next;	/* next sibling in an array or object */
	struct jval *child;	/* first element / member */
	char *key;		/* member name when inside an object */
	char *s;		/* J_STR: NUL-terminated, may contain NULs (see slen) */
	size_t slen;
	double n;
	bool b;
};

/*
 * Parse exactly one value spanning @s[0..len) (whitespace allowed around).
 * NULL on error with *err set to a static message.
 */
struct jval *json_parse(const char *s, size_t len, const char **err);
void json_free(struct jval *v);
/* Member @key of object @o, or NULL. */
const struct jval *json_get(const struct jval *o, const char *key);
/* @v is an integer number within [min, max]. */
bool json_int(const struct jval *v, int64_t min, int64_t max, int64_t *out);

/*
 * Binary data carried in a JSON string (inject's "hex" and "base64").
 * json_unhex() decodes pairs of hex digits (@n even) into @n / 2 bytes;
 * json_unbase64() decodes padded standard base64 (@n a multiple of 4) into
 * at most @n / 4 * 3 bytes.  Each returns the number of bytes written to
 * @out, or -1 with *bad the offset of the first invalid character (for hex,
 * of the pair holding it).
 */
ssize_t json_unhex(const char *s, size_t n, uint8_t *out, size_t *bad);
ssize_t json_unbase64(const char *s, size_t n, uint8_t *out, size_t *bad);

struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
	int depth;
	bool after_key;
	bool first[JSON_MAX_DEPTH + 1];
};

void jb_init(struct jbuf *b);
void jb_free(struct jbuf *b);
void jb_obj(struct jbuf *b);		/* { */
void jb_arr(struct jbuf *b);		/* [ */
void jb_end_obj(struct jbuf *b);	/* } */
void jb_end_arr(struct jbuf *b);	/* ] */
void jb_key(struct jbuf *b, const char *k);
void jb_str(struct jbuf *b, const char *s);
void jb_strn(struct jbuf *b, const char *s, size_t n);
void jb_u64(struct jbuf *b, uint64_t v);
void jb_i64(struct jbuf *b, int64_t v);
void jb_bool(struct jbuf *b, bool v);
void jb_null(struct jbuf *b);
/* Copy an already-parsed value back out (to echo request ids). */
void jb_value(struct jbuf *b, const struct jval *v);
void jb_raw(struct jbuf *b, const char *s, size_t n);

#endif
