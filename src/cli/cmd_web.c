/* src/cli/cmd_web.c — `meshplan web [--port 8080] [--host 127.0.0.1] [--catalog FILE]`: serve
 * the local page and its JSON API (meshplan/web.h, docs/web.md) with libmicrohttpd until
 * SIGINT or SIGTERM.
 *
 * The socket side only: bodies are gathered up to MP_WEB_MAX_BODY_BYTES (a longer one, by its
 * Content-Length or as it arrives, is answered 413 without reading the rest into memory), then
 * mp_web_handle answers. Loopback by default; another --host is taken with a warning. Port 0
 * takes a free port; the URL printed on stdout names the one bound. On loopback a request whose
 * Host header names another machine gets 403 (DNS rebinding). Requests are answered one
 * at a time (one polling thread): a long search makes the next request wait. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "cli.h"

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

typedef struct {
    char *buf;
    size_t len, cap;
    int too_big;
} upload;

static mhd_result send_answer(struct MHD_Connection *conn, const mp_web_response *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->content_type ? r->content_type : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    mhd_result ret = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static mhd_result answer_413(struct MHD_Connection *conn, size_t len)
{
    char msg[160];
    snprintf(msg, sizeof msg, "{\"error\":\"request body of %zu bytes or more: expected at most %d\"}",
             len, MP_WEB_MAX_BODY_BYTES);
    mp_web_response r = {413, "application/json", msg, strlen(msg)};
    return send_answer(conn, &r);
}

/* On loopback, a Host header that names this machine (127.0.0.1, localhost, [::1], with any
 * port): a page elsewhere that rebinds its own name to 127.0.0.1 (DNS rebinding) sends its own
 * name and is refused. */
static int host_ok(struct MHD_Connection *conn, int loopback)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    if (!loopback)
        return 1;
    if (!h)
        return 0;
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(h, names[i], n) && (h[n] == '\0' || h[n] == ':'))
            return 1;
    }
    return 0;
}

typedef struct {
    const mp_catalog *cat;
    int loopback;
} server;

static mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *data,
                             size_t *data_size, void **con_cls)
{
    (void)version;
    const server *srv = cls;
    const mp_catalog *cat = srv->cat;
    upload *u = *con_cls;
    if (!u) { /* first call: headers only */
        if (!host_ok(conn, srv->loopback)) {
            static char msg[] = "{\"error\":\"Host header: expected 127.0.0.1, localhost or [::1] "
                                "(this server listens on loopback)\"}";
            mp_web_response r = {403, "application/json", msg, sizeof msg - 1};
            return send_answer(conn, &r);
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > MP_WEB_MAX_BODY_BYTES)
            return answer_413(conn, (size_t)strtoull(cl, NULL, 10));
        if (!(u = calloc(1, sizeof *u)))
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*data_size) { /* a piece of the body */
        if (!u->too_big && u->len + *data_size > MP_WEB_MAX_BODY_BYTES) {
            u->too_big = 1;
            free(u->buf);
            u->buf = NULL;
        }
        if (!u->too_big) {
            if (u->len + *data_size + 1 > u->cap) {
                size_t cap = u->len + *data_size + 1;
                char *b = realloc(u->buf, cap);
                if (!b)
                    return MHD_NO;
                u->buf = b;
                u->cap = cap;
            }
            memcpy(u->buf + u->len, data, *data_size);
            u->len += *data_size;
            u->buf[u->len] = '\0';
        } else {
            u->len += *data_size;
        }
        *data_size = 0;
        return MHD_YES;
    }
    if (u->too_big)
        return answer_413(conn, u->len);
    mp_web_response r;
    if (mp_web_handle(cat, method, url, u->buf, u->len, &r) != MP_OK) {
        mp_web_response_free(&r);
        return MHD_NO;
    }
    mhd_result ret = send_answer(conn, &r);
    mp_web_response_free(&r);
    return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    upload *u = *con_cls;
    if (u) {
        free(u->buf);
        free(u);
        *con_cls = NULL;
    }
}

static const cli_option web_opts[] = {
    CLI_OPT("--port", "P", "TCP port, [0, 65535]; 0 takes a free one (default 8080)"),
    CLI_OPT("--host", "ADDR", "IPv4 address to listen on (default 127.0.0.1, loopback)"),
    CLI_OPT_CATALOG,
    CLI_END,
};

const cli_command cli_cmd_web = {
    "web", "serve a local page and JSON API (POST /api/predict, /api/search; docs/web.md) until "
    "SIGINT or SIGTERM",
    NULL, 0, web_opts,
    "The page, its script and Chart.js are in the binary; no file is read. Bodies over 64 KiB get\n"
    "413, malformed or wrong requests 400 with a JSON message naming the field.\n",
    cmd_web,
};

int cmd_web(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_web, argc, argv, &a);
    if (rc)
        return rc;
    long long port = 8080;
    if (cli_opt(&a, "--port") && (rc = cli_parse_count("port", cli_opt(&a, "--port"), 0, 65535, &port)))
        return rc;
    const char *host = cli_opt(&a, "--host") ? cli_opt(&a, "--host") : "127.0.0.1";
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return cli_fail("host = \"%s\": expected an IPv4 address such as 127.0.0.1", host);
    server srv = {NULL, (ntohl(addr.sin_addr.s_addr) >> 24) == 127};
    if (!srv.loopback)
        fprintf(stderr, "meshplan: web: listening on %s, not loopback: anyone who reaches this "
                        "machine can use the page and the API\n", host);
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    srv.cat = cat;
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    /* Block them before the server's thread starts (it inherits the mask), then wait for one. */
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, on_request,
        &srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "meshplan: web: cannot listen on %s:%lld (in use, or not an address of this "
                        "machine)\n", host, port);
        mp_catalog_destroy(cat);
        return EXIT_INPUT;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("meshplan web: serving http://%s:%u/ (SIGINT or SIGTERM stops it)\n", host,
           info ? (unsigned)info->port : (unsigned)port);
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    mp_catalog_destroy(cat);
    fprintf(stderr, "meshplan web: stopped (signal %d)\n", sig);
    return 0;
}
