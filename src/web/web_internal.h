/* src/web/web_internal.h — what the router (web.c) and the API handlers (api.c, api_infer.c)
 * share. */
#ifndef MESHPLAN_WEB_INTERNAL_H
#define MESHPLAN_WEB_INTERNAL_H

#include "meshplan/web.h"

/** A JSON error answer {"error": message, "field": field (when not NULL)}. */
void web_error(mp_web_response *out, int status, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/** A refusal of the request layer (src/api/api_internal.h) for command as an error answer: 400
 *  for bad input and malformed JSON ("malformed JSON at line L, column C: ..."),
 *  (a value out of range included), not_found_status for an unknown catalog key, 500 for out of
 *  memory, i/o and internal errors; "field" is the field the first
 *  diagnostic line names (mp_api_error_json). */
void web_refusal(mp_web_response *out, const char *command, mp_status st, const mp_diag *d,
                 int not_found_status);
/** A 200 answer taking ownership of the malloc'd JSON text s (NULL: 500 out of memory). */
void web_json(mp_web_response *out, char *s);

void web_api_catalog(const mp_catalog *cat, mp_web_response *out);
void web_api_predict(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out);
void web_api_trace(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out);
void web_api_search(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out);
/* POST /api/infer (src/web/api_infer.c): the request -> JSON layer's "infer". */
void web_api_infer(const char *body, size_t len, mp_web_response *out);

#endif
