/* src/estimate/parts.c — the tables of include/meshplan/parts.h, their ties to mp_time and
 * mp_memory, and the accessors the writers read the parts through. */
#include <assert.h>
#include <stddef.h>

#include "meshplan/parts.h"

/* ---- the ties: a field missing from its table, listed twice or out of order, or not a double,
 * fails here. Every row's key must name a field (offsetof), at the offset its index gives, and
 * the struct must be exactly as large as its rows: so the rows and the fields are one-to-one. */

#define TIE_T(key, label, kind, group, tier, desc)                                               \
    static_assert(offsetof(mp_time, key) == (size_t)MP_TIME_##key * sizeof(double),              \
                  "MP_TIME_PARTS: " #key " is out of mp_time's field order");                    \
    static_assert(sizeof(((mp_time *)0)->key) == sizeof(double), "mp_time." #key " is a double");
MP_TIME_PARTS(TIE_T)
#undef TIE_T
static_assert(sizeof(mp_time) == MP_TIME_PART_COUNT * sizeof(double),
              "every field of mp_time is a row of MP_TIME_PARTS (include/meshplan/parts.h)");

#define TIE_M(key, label, kind, desc)                                                            \
    static_assert(offsetof(mp_memory, key) == (size_t)MP_MEM_##key * sizeof(double),             \
                  "MP_MEMORY_PARTS: " #key " is out of mp_memory's field order");                \
    static_assert(sizeof(((mp_memory *)0)->key) == sizeof(double), "mp_memory." #key " is a double");
MP_MEMORY_PARTS(TIE_M)
#undef TIE_M
static_assert(sizeof(mp_memory) == MP_MEMORY_PART_COUNT * sizeof(double),
              "every field of mp_memory is a row of MP_MEMORY_PARTS (include/meshplan/parts.h)");

#define TIE_D(key, label, field, desc)                                                           \
    static_assert(sizeof(((mp_step_parts *)0)->field) == sizeof(double),                         \
                  "mp_step_parts." #field " is a double");
MP_TIME_DETAILS(TIE_D)
#undef TIE_D

/* ---- the tables -------------------------------------------------------------------------- */

#define ROW_T(key, label, kind, group, tier, desc) \
    [MP_TIME_##key] = {#key, label, group, desc, kind, offsetof(mp_time, key), tier},
const mp_time_part_info mp_time_parts[MP_TIME_PART_COUNT] = {MP_TIME_PARTS(ROW_T)};
#undef ROW_T

#define ROW_M(key, label, kind, desc) [MP_MEM_##key] = {#key, label, desc, kind, offsetof(mp_memory, key)},
const mp_memory_part_info mp_memory_parts[MP_MEMORY_PART_COUNT] = {MP_MEMORY_PARTS(ROW_M)};
#undef ROW_M

#define ROW_D(key, label, field, desc) [MP_DETAIL_##key] = {#key, label, desc, offsetof(mp_step_parts, field)},
const mp_time_detail_info mp_time_details[MP_TIME_DETAIL_COUNT] = {MP_TIME_DETAILS(ROW_D)};
#undef ROW_D

/* ---- accessors ------------------------------------------------------------------------- */

static double at(const void *base, size_t offset)
{
    return *(const double *)((const char *)base + offset);
}

double mp_time_part_s(const mp_time *t, mp_time_part k)
{
    return (unsigned)k < MP_TIME_PART_COUNT ? at(t, mp_time_parts[k].offset) : 0.0;
}

double mp_time_kind_s(const mp_time *t, mp_time_kind kind)
{
    double s = 0.0;
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == kind)
            s += at(t, mp_time_parts[k].offset);
    return s;
}

double mp_time_step_sum_s(const mp_time *t)
{
    double s = 0.0;
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind != MP_TIME_KIND_BESIDE)
            s += at(t, mp_time_parts[k].offset);
    return s;
}

int mp_time_part_tier(const mp_estimate *e, mp_time_part k)
{
    if ((unsigned)k >= MP_TIME_PART_COUNT || mp_time_parts[k].tier < 0)
        return -1;
    return *(const int *)((const char *)e + mp_time_parts[k].tier);
}

double mp_memory_part_bytes(const mp_memory *m, mp_memory_part k)
{
    return (unsigned)k < MP_MEMORY_PART_COUNT ? at(m, mp_memory_parts[k].offset) : 0.0;
}

double mp_time_detail_s(const mp_estimate *e, mp_time_detail k)
{
    if ((unsigned)k >= MP_TIME_DETAIL_COUNT)
        return 0.0;
    return (double)e->microbatches * at(&e->parts, mp_time_details[k].offset);
}
