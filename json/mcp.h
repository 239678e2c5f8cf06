/* MCP (the Model Context Protocol) over streamable HTTP, stateless: a
 * JSON-RPC 2.0 request body → a checked message, the answers of
 * initialize, server/discover, ping and tools/list, a tools/call as the
 * equivalent chat-completions body, and a run as a tool result. Pure:
 * the handler (handler/mcp.c) reads the headers, runs, and sends. */
#ifndef CODELLM_MCP_H
#define CODELLM_MCP_H

#include <stddef.h>

#include "json/jstr.h"
#include "json/registry.h"
#include "json/response.h"

/* The revisions served, oldest first; the last is the stateless one,
 * the one before it the newest with an initialize handshake. */
#define MCP_V_STATELESS "2026-07-28"
#define MCP_V_HANDSHAKE "2025-11-25"
extern const char *const mcp_versions[];

/* JSON-RPC and MCP error codes */
#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603
#define MCP_SERVER_ERROR -32000
#define MCP_HEADER_MISMATCH -32020
#define MCP_UNSUPPORTED_VERSION -32022

/* The MCP headers of the HTTP request (value and length; NULL when
 * absent). */
struct mcp_headers {
	const char *version;	/* MCP-Protocol-Version */
	size_t version_len;
	const char *method;	/* Mcp-Method (2026-07-28) */
	size_t method_len;
	const char *name;	/* Mcp-Name (2026-07-28) */
	size_t name_len;
};

struct cJSON;

struct mcp_msg {
	struct cJSON *root;	/* the parsed body, owned */
	char *id;		/* the request's id as JSON text; "null" when unknown */
	const char *method;	/* NULL until the envelope was read */
	const struct cJSON *params;	/* NULL when absent */
	int notification;	/* no id: answered 202, no body */
	char version[32];	/* the revision the request declared, "" when none */
	int sse;		/* answer as one server-sent event (the handler's) */
};

struct mcp_error {
	int http_status;	/* 200 for an error of a well-formed request */
	int code;
	char message[512];
	const char *requested;	/* -32022: the version asked (in the message's
				 * owner), for the error's data */
};

/* Reads body[0..len) and checks it against the headers. 0, or -1 with
 * *e filled (and m->id set when the envelope had one). */
int mcp_parse(const char *body, size_t len, const struct mcp_headers *h,
	      struct mcp_msg *m, struct mcp_error *e);
void mcp_free(struct mcp_msg *m);

/* {"jsonrpc":"2.0","id":…,"error":{…}} */
void mcp_error_body(struct jbuf *b, const char *id, const struct mcp_error *e);
/* A refusal of the server's own (busy, sandbox unavailable) as a
 * JSON-RPC error: -32000 with data {"status","code"}. */
void mcp_server_error(struct jbuf *b, const char *id, const char *message, int status,
		      const char *code);

/* The answer of a method needing no run: 0 and b filled (the whole
 * envelope), or -1 with *e (unknown method, bad params). */
int mcp_answer_method(struct jbuf *b, const struct mcp_msg *m, const struct registry *reg,
		      const char *server_version, struct mcp_error *e);

/* tools/call → the chat-completions body that runs it (malloc'd JSON
 * text, *body): 0. 1: the call is refused as a tool error (*why, as
 * the isError result's text). -1: *e (unknown tool, bad params). */
int mcp_tool_request(const struct mcp_msg *m, const struct registry *reg, char **body,
		     char *why, size_t whylen, struct mcp_error *e);

/* A tools/call's result envelope: the run's stdout as text, an image
 * part per image artifact and an embedded resource per other file,
 * isError, and the codellm object as structuredContent. */
void mcp_tool_result(struct jbuf *b, const struct mcp_msg *m, const struct resp_run *rr);
/* The same for a call refused before anything ran: isError, the
 * message as text, structuredContent {"error":{"code","message"}}. */
void mcp_tool_refused(struct jbuf *b, const struct mcp_msg *m, const char *code,
		      const char *message);

#endif
