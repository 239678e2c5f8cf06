/* The one check every JSON text the handler reads passes before cJSON
 * sees it: a chat request, a debug route's body, the last block's output
 * in agent mode. cJSON 1.7.15 is lenient in ways that lose data silently
 * (a \u with non-hex digits becomes U+0000 and ends the string there, as
 * \u0000 does; raw control bytes pass; invalid UTF-8 passes) and fails
 * on some texts it should take (a lone surrogate) with no way to tell a
 * syntax error from running out of memory. So the text is validated here
 * as RFC 8259 JSON, strictly, with the limits below: what passes is what
 * cJSON reads whole and unchanged, and a later cJSON failure can only be
 * memory. */
#ifndef CODELLM_PRECHECK_H
#define CODELLM_PRECHECK_H

#include <stddef.h>

/* Deepest nesting of arrays and objects (cJSON's own limit, 1000, is
 * compiled into the library). */
#define PRECHECK_MAX_DEPTH 64
/* Most values (each string, number, literal, array and object, members
 * of objects included) in one text. cJSON spends about 80 bytes on each
 * (a node and its allocation) and as much again on a member's key: two
 * bytes of "0," made 40 of memory, so 8 MiB of them cost 330 MiB. A
 * chat request at REQ_MAX_MESSAGES messages of ten values and
 * REQ_MAX_TOOLS tools of a hundred has some 54,000; this is more than
 * twice that, and keeps a tree at about 20 MiB however long the text. */
#define PRECHECK_MAX_VALUES 131072

enum precheck_problem {
	PRECHECK_OK,
	PRECHECK_NUL,		/* a NUL byte anywhere */
	PRECHECK_UTF8,		/* invalid UTF-8 anywhere */
	PRECHECK_CONTROL,	/* a raw byte below 0x20 inside a string */
	PRECHECK_ESCAPE,	/* \ then a byte that starts no escape, or the end */
	PRECHECK_HEX,		/* \u without four hex digits */
	PRECHECK_U0000,		/* \u0000: cJSON would end the string there */
	PRECHECK_SURROGATE,	/* \uD800-\uDFFF that is not a high-low pair */
	PRECHECK_DEPTH,		/* nested deeper than PRECHECK_MAX_DEPTH */
	PRECHECK_VALUES,	/* more than PRECHECK_MAX_VALUES values */
	PRECHECK_SYNTAX,	/* anything else RFC 8259 does not allow */
	PRECHECK_TRAILING,	/* more than whitespace after the value */
	PRECHECK_DUPLICATE,	/* precheck_json_unique: a key twice in an object */
	PRECHECK_MEMORY,	/* precheck_json_unique: out of memory (a 503) */
};

struct precheck {
	enum precheck_problem problem;
	size_t offset;		/* the byte the problem starts at */
	/* the problem as a predicate with its place, to follow a subject:
	 * "holds \\u without four hex digits in a string (byte 61: \\uZZZZ)" */
	char message[160];
};

/* 0 when s[0..n) is one JSON value as RFC 8259 has it (a leading UTF-8
 * byte order mark allowed where cJSON skips it: before two bytes or
 * more), valid UTF-8, no NUL raw or escaped, nesting and values within
 * the limits. Otherwise -1 with *ret telling the first problem: NUL and UTF-8 are looked for in the whole text
 * first, the rest in text order. */
int precheck_json(const char *s, size_t n, struct precheck *ret);

/* precheck_json, and then no object may hold the same key twice, at any
 * depth: keys compare as what they say, escapes decoded ("a" and
 * "\u0061" are the same key). What a client sends is read this way:
 * RFC 8259 leaves a repeated key's meaning to the reader (cJSON takes
 * the first, most readers the last), so a body that repeats one would
 * say different things to different readers. The duplicate told is the
 * first in text order, and only when the text has no other problem;
 * its offset is the repeat's opening quote. Once the walk is done the
 * keys, hashed as they pass, are sorted by object and hash, and only
 * keys that hash alike are compared: O(k log k) for k keys, never
 * quadratic, whatever they collide on. -1 with PRECHECK_MEMORY when
 * the keys' table (32 bytes a key) could not be had. */
int precheck_json_unique(const char *s, size_t n, struct precheck *ret);

/* In a text that passed precheck_json whose value is an object: the
 * value of its member named key (compared unescaped; with duplicates,
 * the first, as cJSON has it), as the span [*start, *start + *len) of
 * s, a value's very token text. 0, or -1 when there is no such member. */
int precheck_member(const char *s, size_t n, const char *key, size_t *start, size_t *len);

#endif
