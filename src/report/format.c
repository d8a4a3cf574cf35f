/* src/report/format.c — readable numbers (meshplan/format.h): an SI or binary prefix chosen so that
 * the mantissa lies in [1, 1000) (binary: [1, 1024)), printed with a few significant digits. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "meshplan/format.h"

/* Mantissa printed with sig significant digits, trailing zeros (and a bare point) dropped. */
static int put(double mant, const char *prefix, const char *unit, int sig, char *buf, size_t cap)
{
    char num[64];
    if (sig < 1 || sig > 9)
        sig = 3;
    /* %.*g switches to exponent notation only for exponents >= sig, which a mantissa below 1024
     * with sig >= 4 never reaches; with sig < 4 a value like 512 at sig 2 would print "5.1e+02",
     * so round to sig digits first and print the integer part in full. */
    double a = fabs(mant);
    int digits = a > 0 ? (int)floor(log10(a)) + 1 : 1; /* digits before the point */
    int decimals = sig - digits;
    if (decimals < 0) {
        double scale = pow(10.0, -decimals);
        mant = round(mant / scale) * scale;
        decimals = 0;
    }
    snprintf(num, sizeof num, "%.*f", decimals, mant);
    if (strchr(num, '.')) {
        char *e = num + strlen(num) - 1;
        while (*e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    }
    if (!strcmp(num, "-0"))
        snprintf(num, sizeof num, "0");
    const char *u = unit ? unit : "";
    if (!*prefix && !*u)
        return snprintf(buf, cap, "%s", num);
    /* A prefix joins a unit symbol ("MWh", "GB/s", "M$"); before a word it stands apart
     * ("1.2 k tok/s"), since "ktok/s" reads as a new unit. */
    static const char *const symbols[] = {"B", "b", "W", "Wh", "J", "s", "$", "Hz", "g", "gCO2",
                                          "FLOP", "FLOP/s", "B/s", "b/s", "bit/s", NULL};
    int joined = !*prefix || !*u;
    for (int i = 0; !joined && symbols[i]; i++)
        joined = !strcmp(u, symbols[i]);
    return snprintf(buf, cap, "%s %s%s%s", num, prefix, joined ? "" : " ", u);
}

static int non_finite(double v, const char *unit, char *buf, size_t cap)
{
    const char *u = unit ? unit : "";
    return snprintf(buf, cap, "%s%s%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", *u ? " " : "", u);
}

int mp_format_si(double v, const char *unit, int sig, char *buf, size_t cap)
{
    if (!isfinite(v))
        return non_finite(v, unit, buf, cap);
    static const char *const up[] = {"", "k", "M", "G", "T", "P", "E"};
    static const char *const down[] = {"", "m", "u", "n"};
    double a = fabs(v);
    int i = 0;
    if (a >= 1.0) {
        /* 999.6 at 3 digits rounds to 1000: step up before printing. */
        double lim = 1000.0 - 0.5 * pow(10.0, 3 - (sig < 1 || sig > 9 ? 3 : sig));
        while (a >= lim && i < 6) {
            a /= 1000.0;
            v /= 1000.0;
            i++;
        }
        return put(v, up[i], unit, sig, buf, cap);
    }
    if (a == 0.0 || !unit || !*unit)
        return put(v, "", unit, sig, buf, cap);
    while (a < 1.0 && i < 3) {
        a *= 1000.0;
        v *= 1000.0;
        i++;
    }
    return put(v, down[i], unit, sig, buf, cap);
}

int mp_format_binary(double v, const char *unit, int sig, char *buf, size_t cap)
{
    if (!unit)
        unit = "B";
    if (!isfinite(v))
        return non_finite(v, unit, buf, cap);
    static const char *const up[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    double a = fabs(v);
    int i = 0;
    while (a >= 1024.0 && i < 6) {
        a /= 1024.0;
        v /= 1024.0;
        i++;
    }
    return put(v, up[i], unit, sig, buf, cap);
}
