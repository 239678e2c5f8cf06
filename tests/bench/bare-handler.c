/* bare-handler: make bench's baselines (issue 14). The least a
 * per-connection chat-completions executor can do, started exactly like
 * codellm-handler (systemd-socket-activate --accept, one process per
 * connection): read the request (Content-Length), take the code of the
 * last fenced block of the last message, fork+exec /bin/bash -c CODE (or
 * python3 -c CODE for a python block), read its stdout through a pipe,
 * answer a fixed-shape chat.completion with Content-Length, exit.
 * No sandbox, no limits, no journal: what codellm costs is measured
 * against this. Other options are accepted and ignored. Two more
 * baselines come from this source:
 *
 *   --constant TEXT  reads and parses the request the same way, runs
 *                    nothing and answers TEXT: what the client, socket
 *                    activation and a process start alone cost.
 *   -DMIN_SANDBOX    (sandbox-handler, linked with min-sandbox.c) starts
 *                    the program in a minimal hand-written sandbox
 *                    (namespaces, a minimal root, Landlock, seccomp)
 *                    instead of a plain fork: what any such sandbox
 *                    costs, as against what codellm's costs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#ifdef MIN_SANDBOX
#include "min-sandbox.h"
#endif
#include "sandbox/phase.h"

static int conn_in = 0, conn_out = 1;

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void answer(int status, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			 "Connection: close\r\nContent-Length: %zu\r\n\r\n", status,
			 status == 200 ? "OK" : "Bad Request", len);

	write_all(conn_out, head, (size_t)n);
	write_all(conn_out, body, len);
}

/* The request's body (Content-Length only), NUL-terminated. */
static char *read_request(size_t *body_len)
{
	size_t cap = 65536, used = 0, need = 0, head = 0;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t r;

		if (head && used >= head + need)
			break;
		if (used == cap) {
			char *nb = realloc(buf, 2 * cap + 1);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(conn_in, buf + used, cap - used);
		if (r <= 0)
			break;
		used += (size_t)r;
		buf[used] = '\0';
		if (!head) {
			char *end = strstr(buf, "\r\n\r\n"), *cl;

			if (!end)
				continue;
			head = (size_t)(end - buf) + 4;
			for (cl = buf; (cl = strchr(cl, '\n')); cl++)
				if (!strncasecmp(cl + 1, "content-length:", 15))
					need = strtoul(cl + 16, NULL, 10);
		}
	}
	if (!buf || !head || used < head + need) {
		free(buf);
		return NULL;
	}
	memmove(buf, buf + head, need);
	buf[need] = '\0';
	*body_len = need;
	return buf;
}

/* The last fenced block of text: its code (in place) and whether its
 * info string says python. */
static char *last_block(char *text, int *python)
{
	char *code = NULL, *p = text;

	for (;;) {
		char *open = strstr(p, "```"), *nl, *close;

		if (!open || !(nl = strchr(open, '\n')) || !(close = strstr(nl + 1, "```")))
			break;
		*python = !strncmp(open + 3, "python", 6) || !strncmp(open + 3, "py\n", 3);
		*close = '\0';
		code = nl + 1;
		p = close + 3;
	}
	return code;
}

/* The block's stdout: code run with bash -c (python3 -c for python),
 * forked and exec'd, or under MIN_SANDBOX started in min-sandbox. */
static char *run(char *code, int python, size_t *out_len)
{
	int fds[2];
	pid_t pid;
	size_t cap = 65536, used = 0;
	char *out = malloc(cap + 1);
	ssize_t r;

	if (!out || pipe2(fds, O_CLOEXEC) < 0)
		return NULL;
	sbx_phase_mark(SBX_PH_CLONE);
#ifdef MIN_SANDBOX
	{
		static char bash[] = "bash", python3[] = "python3", dash_c[] = "-c";
		char *argv[] = { python ? python3 : bash, dash_c, code, NULL };

		pid = msb_spawn(python ? "/usr/bin/python3" : "/bin/bash", argv, fds[1]);
	}
#else
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		sbx_phase_mark(SBX_PH_EXEC);
		if (python)
			execl("/usr/bin/python3", "python3", "-c", code, (char *)NULL);
		else
			execl("/bin/bash", "bash", "-c", code, (char *)NULL);
		_exit(127);
	}
#endif
	close(fds[1]);
	while ((r = read(fds[0], out + used, cap - used)) > 0 || (r < 0 && errno == EINTR)) {
		if (r > 0) {
			sbx_phase_mark(SBX_PH_OUTPUT);
			used += (size_t)r;
		}
		if (used == cap) {
			char *nb = realloc(out, cap * 2 + 1);

			if (!nb)
				break;
			out = nb;
			cap *= 2;
		}
	}
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	sbx_phase_mark(SBX_PH_ENDED);
	*out_len = used;
	return out;
}

/* TEXT of a --constant TEXT option (or --constant=TEXT), or NULL. */
static const char *constant_text(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--constant") && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], "--constant=", 11))
			return argv[i] + 11;
	}
	return NULL;
}

/* The chat.completion answering content, sent. */
static void reply(const char *content)
{
	cJSON *resp = cJSON_CreateObject();
	cJSON *choices, *choice = cJSON_CreateObject(), *msg = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(resp, "id", "chatcmpl-bare");
	cJSON_AddStringToObject(resp, "object", "chat.completion");
	cJSON_AddNumberToObject(resp, "created", 0);
	cJSON_AddStringToObject(resp, "model", "codellm");
	choices = cJSON_AddArrayToObject(resp, "choices");
	cJSON_AddNumberToObject(choice, "index", 0);
	cJSON_AddStringToObject(msg, "role", "assistant");
	cJSON_AddStringToObject(msg, "content", content);
	cJSON_AddItemToObject(choice, "message", msg);
	cJSON_AddStringToObject(choice, "finish_reason", "stop");
	cJSON_AddItemToArray(choices, choice);
	text = cJSON_PrintUnformatted(resp);
	if (text)
		answer(200, text, strlen(text));
}

int main(int argc, char **argv)
{
	size_t len = 0, out_len = 0;
	char *body, *code, *out;
	cJSON *req, *msgs, *last, *content;
	const char *constant = constant_text(argc, argv);
	int python = 0;

	sbx_phase_open();
	if (getenv("LISTEN_FDS"))
		conn_in = conn_out = 3;
	body = read_request(&len);
	sbx_phase_mark(SBX_PH_REQUEST);
	req = body ? cJSON_ParseWithLength(body, len) : NULL;
	msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	content = cJSON_GetObjectItemCaseSensitive(last, "content");
	code = cJSON_IsString(content) ? last_block(content->valuestring, &python) : NULL;
	if (!code) {
		static const char bad[] = "{\"error\":{\"message\":\"no code block\","
					  "\"type\":\"invalid_request_error\"}}";

		answer(400, bad, sizeof bad - 1);
		return 0;
	}
	if (constant) {
		reply(constant);
		return 0;
	}
	out = run(code, python, &out_len);
	if (out)
		out[out_len] = '\0';
	reply(out ? out : "");
	sbx_phase_mark(SBX_PH_ANSWERED);
	sbx_phase_mark(SBX_PH_EXIT);
	sbx_phase_dump();
	return 0;
}
