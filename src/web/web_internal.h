/* src/web/web_internal.h — what the router (web.c) and the API handlers (api.c) share. */
#ifndef MESHPLAN_WEB_INTERNAL_H
#define MESHPLAN_WEB_INTERNAL_H

#include "meshplan/web.h"

/** A JSON error answer {"error": message, "field": field (when not NULL)}. */
void web_error(mp_web_response *out, int status, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/** A 200 answer taking ownership of the malloc'd JSON text s (NULL: 500 out of memory). */
void web_json(mp_web_response *out, char *s);

void web_api_catalog(const mp_catalog *cat, mp_web_response *out);
void web_api_predict(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out);
void web_api_trace(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out);
void web_api_search(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out);

#endif
