/* meshplan/format.h — readable numbers for text output: one helper, so that every command writes
 * "1.08 M$", "3.2 MWh", "1.2 k tok/s" or "71.3 GiB" the same way. JSON and CSV keep exact values;
 * these are for people (text tables, plot ticks, the web page's labels come from the same rule).
 *
 * Prefixes: SI (k = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18; m = 1e-3, u = 1e-6,
 * n = 1e-9 below one) after BIPM, "The International System of Units", 9th ed. (2019) Table 7;
 * binary (Ki = 2^10 ... Ei = 2^60) after IEC 80000-13:2008 Sec. 4. */
#ifndef MESHPLAN_FORMAT_H
#define MESHPLAN_FORMAT_H

#include <stddef.h>

/** Write v with an SI prefix and the unit into buf (cap bytes, always NUL-terminated when
 *  cap > 0): "1.08 M$", "1.2 k tok/s", "512 GB/s", "3.2 MWh": the prefix joins a unit symbol
 *  (B, b, W, Wh, J, s, $, Hz, g, gCO2, FLOP, FLOP/s, B/s, b/s, bit/s) and stands apart before a
 *  word ("1.2 k tok/s", "3 M tokens"). sig: significant digits, 1..9 (others are taken as 3);
 *  trailing zeros are dropped ("2 k", not "2.00 k"). unit may be NULL or "" (then "1.2 k").
 *  |v| in [1, 1000) gets no prefix; below 1 (and not 0) the prefixes m, u, n are used, unless
 *  the unit is "" or NULL (plain ratios stay "0.507"). Not finite: "nan", "inf" or "-inf"
 *  followed by the unit. Returns the length that the full text needs (snprintf's contract). */
int mp_format_si(double v, const char *unit, int sig, char *buf, size_t cap);

/** The same with binary prefixes for byte counts: "71.3 GiB", "512 MiB", "8 B". sig as above;
 *  unit is usually "B" (NULL means "B"). Returns as mp_format_si. */
int mp_format_binary(double v, const char *unit, int sig, char *buf, size_t cap);

/** The MFU convention, named beside every MFU a text output prints (docs/model.md "FLOPs"):
 *  model FLOPs are 3 x the forward pass with attention counted non-causally, Megatron-LM's
 *  (Narayanan et al. 2021 eq. 3), over the dense peak at the plan's precision (PaLM, Chowdhery
 *  et al. 2022 App. B); HFU adds the recompute FLOPs. */
#define MP_MFU_CONVENTION                                                                      \
    "MFU = model FLOPs (3 x forward, attention non-causal: Megatron, Narayanan et al. 2021 "   \
    "eq. 3) / dense peak at the plan's precision (PaLM App. B); HFU adds recompute"

/** Its short form, beside "MFU" in a figure's subtitle or a table header. */
#define MP_MFU_CONVENTION_SHORT "Megatron model FLOPs / dense peak"

#endif
