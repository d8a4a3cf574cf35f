/* src/calibrate/cal_internal.h — what the log parsers share (parse.c runs the pass; parse_nccl.c,
 * parse_train.c and parse_csv.c read one kind of line each). Internal, not part of the API. */
#ifndef MESHPLAN_CAL_INTERNAL_H
#define MESHPLAN_CAL_INTERNAL_H

#include <stddef.h>

#include "meshplan/calibrate.h"

#define LINE_CAP 4096 /* longer lines are cut (no record of any kind is that long) */
#define MAX_TOK 40    /* tokens or CSV fields read from one line */

/** Make room for one more element of size bytes in *arr (count *n, capacity *cap): 0, -1 past
 *  MP_CAL_MAX_ROWS, -2 out of memory. */
int cal_grow(void **arr, size_t *n, size_t size, size_t *cap);
/** A plain number >= 0 (commas as thousands separators when commas is set): 1 and *out, or 0 when
 *  s carries anything else (a unit suffix, a sign). */
int cal_plain_number(const char *s, int commas, double *out);
/** A count read as a double (a step number, a batch, a GEMM dimension, a GPU count): 1 and *out
 *  when v is an integer-valued finite number in [0, 2^53] (the doubles that hold integers
 *  exactly), else 0 — converting a larger double to int64_t is undefined behaviour (C11 6.3.1.4),
 *  and no log states a count that large. */
int cal_count(double v, int64_t *out);
/** 1 when s is all digits (and not empty). */
int cal_is_int_token(const char *s);
/** Split line in place at blanks into at most cap tokens; returns the count. */
int cal_tokenize(char *line, char **tok, int cap);
/** The number after key (and any ':' or blanks) on line, commas allowed; -1 when absent. */
double cal_after(const char *line, const char *key);

/* nccl-tests (parse_nccl.c) */
typedef struct {
    mp_log *l;
    const char *origin;
    mp_diag *diag;
    size_t tcap, rcap;
    mp_nccl_table *cur;   /* the table being read, NULL outside one */
    int has_redop, has_root; /* header has the redop / root columns (nccl-tests >= 2.x print both) */
    double time_scale;    /* header's time unit in seconds */
    int units_line;       /* line of the units row, 0 if none */
    mp_coll_op op;
    int have_op;
    int64_t ranks;        /* "# Rank N" lines seen */
    char hosts[64][64];
    int nhosts;
    char gpu_name[96];
} cal_nccl_state;
/** One line (ln, 1-based) of an nccl-tests log: the test name, a rank line, a table header or
 *  units row, a row, or the end of a table. line is tokenised in place. */
mp_status cal_nccl_line(cal_nccl_state *s, int ln, char *line);
/** End the open table (a header with no rows is a truncated table). */
mp_status cal_nccl_close(cal_nccl_state *s, int line);

/* Megatron-LM and torchtitan (parse_train.c) */
typedef struct {
    char unit[16]; /* the first step line's unit, "" before */
    size_t scap;
} cal_step_state;
/** One line of a Megatron-LM log (an iteration line into l->steps, an arguments line into
 *  l->args) and of a torchtitan log (a step line); other lines are ignored. */
mp_status cal_megatron_line(mp_log *l, cal_step_state *ss, int ln, const char *line, mp_diag *d);
mp_status cal_titan_line(mp_log *l, cal_step_state *ss, int ln, const char *line, mp_diag *d);
/** One "  name ...... value" line of a printed arguments block into a; 1 if it was one. */
int cal_megatron_args_line(mp_megatron_args *a, int ln, const char *line);

/* collectives.csv and gemm.csv (parse_csv.c) */
typedef struct {
    char hdr_buf[LINE_CAP];
    char *hdr[MAX_TOK];
    int nhdr;
    size_t cap, rcap[256];
} cal_csv_state;
/** One CSV line: line 1 is the header, the others rows of l->kind's file (split in place). */
mp_status cal_csv_line(mp_log *l, cal_csv_state *cs, int ln, char *line, mp_diag *d);

#endif
