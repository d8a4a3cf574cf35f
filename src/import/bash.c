/* src/import/bash.c — read a launch script the way bash would for the constructs published
 * Megatron-LM scripts use, without executing anything, and hand the training command's flags to
 * the Megatron reader as (key, value, line) entries.
 *
 * Understood (bash(1) semantics): line continuations (backslash-newline), comments, single and
 * double quotes, variables set in the script (NAME=value, export/declare/local/readonly NAME=),
 * $NAME, ${NAME}, ${NAME:-def}, ${NAME-def}, ${NAME:=def}, ${NAME:+alt}, ${#NAME}, $((...))
 * integer arithmetic (+ - * / % ** and parentheses), arrays NAME=( ... ), NAME+=( ... ),
 * ${NAME[@]}, ${NAME[*]}, ${NAME[i]}, and tests: `[[ ... ]]`, `[ ... ]`, `test` with -z, -n,
 * =, ==, !=, -eq, -ne, -lt, -le, -gt, -ge and !, in `if/elif/else/fi` and `A && B`, `A || B`.
 * The script's environment is empty (as if run with no variables set), so ${X:-default} gives the
 * default; positional parameters ($1) are empty. Not understood, and left as text: command
 * substitution $(...) and backticks, globbing, functions, case (its body is skipped), loops (their
 * body is read once). A test that cannot be decided (-f FILE, a command) counts as false.
 * The command: the statement that runs a *.py script (pretrain_gpt.py; after torchrun, python,
 * python -m, deepspeed, srun, mpirun) with the most --flags; its launcher's flags become entries
 * "launcher:--nproc_per_node"; the script's flags "--num-layers" (value: the words up to the next
 * flag, joined by a space; "" for a bare flag); the final variables "var:NAME". A file with no
 * such command whose words are flags is read as an argument list.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

#define B_VARS_MAX 512
#define B_WORD_CAP 4096
#define B_WORDS_MAX 8192
#define B_IF_DEPTH 32

typedef struct {
    char *s;
    int line;
} bword;

typedef struct {
    bword *w;
    int n, cap;
} bwords;

typedef struct {
    char name[64];
    bwords val; /* a scalar has one word */
    int line;
} bvar;

typedef enum { T_WORD, T_SEP, T_AND, T_OR, T_PIPE, T_LPAREN, T_RPAREN, T_REDIR } btok_kind;

typedef struct {
    btok_kind kind;
    char *s;
    int line;
    int adjacent; /* T_LPAREN right after a word ("X=(") */
} btok;

typedef struct {
    btok *t;
    int n, cap;
    bvar var[B_VARS_MAX];
    int nvar;
    bwords best;      /* the training command's words */
    int best_flags;
    int nomem;
} bstate;

static int words_add(bwords *l, const char *s, size_t len, int line)
{
    if (l->n >= B_WORDS_MAX)
        return -1;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        bword *w = realloc(l->w, (size_t)cap * sizeof *w);
        if (!w)
            return -1;
        l->w = w;
        l->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c)
        return -1;
    memcpy(c, s, len);
    c[len] = '\0';
    l->w[l->n].s = c;
    l->w[l->n++].line = line;
    return 0;
}

static void words_free(bwords *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->w[i].s);
    free(l->w);
    memset(l, 0, sizeof *l);
}

/* ---- tokens ---- */

static int tok_add(bstate *b, btok_kind k, const char *s, size_t len, int line, int adjacent)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 256;
        btok *t = realloc(b->t, (size_t)cap * sizeof *t);
        if (!t)
            return -1;
        b->t = t;
        b->cap = cap;
    }
    char *c = NULL;
    if (s) {
        c = malloc(len + 1);
        if (!c)
            return -1;
        memcpy(c, s, len);
        c[len] = '\0';
    }
    b->t[b->n++] = (btok){k, c, line, adjacent};
    return 0;
}

/* Index just past the construct opened at text[i] ('(' after '$', '{' after '$', a quote or a
 * backtick), counting lines; nesting of () and {} is followed. */
static size_t skip_group(const char *t, size_t n, size_t i, int *line)
{
    char open = t[i], close = open == '(' ? ')' : open == '{' ? '}' : open;
    int depth = 0;
    for (; i < n; i++) {
        char ch = t[i];
        if (ch == '\n')
            (*line)++;
        if (ch == '\\' && open != '\'' && i + 1 < n) {
            if (t[i + 1] == '\n')
                (*line)++;
            i++;
            continue;
        }
        if (open == '"' || open == '\'' || open == '`') {
            if (ch == close && depth++ > 0)
                return i + 1;
            continue;
        }
        if (ch == open)
            depth++;
        else if (ch == close && --depth == 0)
            return i + 1;
        else if ((ch == '"' || ch == '\'') && depth > 0)
            i = skip_group(t, n, i, line) - 1;
    }
    return n;
}

static int tokenize(bstate *b, const char *t, size_t n)
{
    int line = 1;
    size_t i = 0;
    while (i < n) {
        char ch = t[i];
        if (ch == ' ' || ch == '\t' || ch == '\r') { i++; continue; }
        if (ch == '\\' && i + 1 < n && t[i + 1] == '\n') { i += 2; line++; continue; }
        if (ch == '#') { while (i < n && t[i] != '\n') i++; continue; }
        if (ch == '\n') { if (tok_add(b, T_SEP, NULL, 0, line, 0)) return -1; line++; i++; continue; }
        if (ch == ';') { if (tok_add(b, T_SEP, NULL, 0, line, 0)) return -1; i += (i + 1 < n && t[i + 1] == ';') ? 2 : 1; continue; }
        if (ch == '&' && i + 1 < n && t[i + 1] == '&') { if (tok_add(b, T_AND, NULL, 0, line, 0)) return -1; i += 2; continue; }
        if (ch == '|' && i + 1 < n && t[i + 1] == '|') { if (tok_add(b, T_OR, NULL, 0, line, 0)) return -1; i += 2; continue; }
        if (ch == '|') { if (tok_add(b, T_PIPE, NULL, 0, line, 0)) return -1; i++; continue; }
        if (ch == '&') { if (tok_add(b, T_SEP, NULL, 0, line, 0)) return -1; i++; continue; }
        if (ch == '(' || ch == ')') {
            int adj = ch == '(' && i > 0 && t[i - 1] == '=';
            if (tok_add(b, ch == '(' ? T_LPAREN : T_RPAREN, NULL, 0, line, adj)) return -1;
            i++;
            continue;
        }
        if (ch == '<' || ch == '>') {
            size_t s = i;
            while (i < n && (t[i] == '<' || t[i] == '>' || t[i] == '&'))
                i++;
            if (tok_add(b, T_REDIR, t + s, i - s, line, 0)) return -1;
            continue;
        }
        /* a word */
        size_t s = i;
        int wline = line;
        while (i < n) {
            ch = t[i];
            if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == ';' || ch == '&' ||
                ch == '|' || ch == '(' || ch == ')' || ch == '<' || ch == '>')
                break;
            if (ch == '\\' && i + 1 < n) { if (t[i + 1] == '\n') line++; i += 2; continue; }
            if (ch == '\'' || ch == '"' || ch == '`') { i = skip_group(t, n, i, &line); continue; }
            if (ch == '$' && i + 1 < n && (t[i + 1] == '(' || t[i + 1] == '{')) {
                i = skip_group(t, n, i + 1, &line);
                continue;
            }
            i++;
        }
        /* "2>&1": a file descriptor number before a redirection is part of it */
        int fd = 1;
        for (size_t k = s; k < i; k++)
            fd &= isdigit((unsigned char)t[k]) != 0;
        if (fd && i < n && (t[i] == '>' || t[i] == '<'))
            continue;
        if (tok_add(b, T_WORD, t + s, i - s, wline, 0)) return -1;
    }
    return tok_add(b, T_SEP, NULL, 0, line, 0);
}

/* ---- variables ---- */

static bvar *var_get(bstate *b, const char *name, size_t len)
{
    for (int i = 0; i < b->nvar; i++)
        if (strlen(b->var[i].name) == len && !strncmp(b->var[i].name, name, len))
            return &b->var[i];
    return NULL;
}

static bvar *var_new(bstate *b, const char *name, size_t len, int line)
{
    bvar *v = var_get(b, name, len);
    if (!v) {
        if (b->nvar >= B_VARS_MAX || len >= sizeof v->name)
            return NULL;
        v = &b->var[b->nvar++];
        memset(v, 0, sizeof *v);
        memcpy(v->name, name, len);
    }
    v->line = line;
    return v;
}

static void var_set_scalar(bstate *b, const char *name, size_t len, const char *val, int line,
                           int append)
{
    bvar *v = var_new(b, name, len, line);
    if (!v)
        return;
    if (append && v->val.n > 0) { /* X+=s appends to element 0, as bash does for arrays too */
        char buf[B_WORD_CAP];
        imp_fmt(buf, sizeof buf, "%s%s", v->val.w[0].s, val);
        size_t n = strlen(buf);
        char *c = malloc(n + 1);
        if (!c) {
            b->nomem = 1;
            return;
        }
        memcpy(c, buf, n + 1);
        free(v->val.w[0].s);
        v->val.w[0].s = c;
        v->val.w[0].line = line;
        return;
    }
    words_free(&v->val);
    if (words_add(&v->val, val, strlen(val), line)) b->nomem = 1;
}

/* ---- expansion ---- */

typedef struct {
    char buf[B_WORD_CAP];
    size_t len;
    int have;        /* a word exists even if empty ("") */
    int after_array; /* "${A[@]}" just ended: its closing quote makes no empty word */
} bcur;

static void cur_put(bcur *c, const char *s, size_t n)
{
    if (c->len + n >= sizeof c->buf)
        n = sizeof c->buf - 1 - c->len;
    memcpy(c->buf + c->len, s, n);
    c->len += n;
    c->buf[c->len] = '\0';
    c->have = 1;
    c->after_array = 0;
}

static void cur_emit(bstate *b, bcur *c, bwords *out, int line)
{
    if (c->have && words_add(out, c->buf, c->len, line))
        b->nomem = 1;
    c->len = 0;
    c->buf[0] = '\0';
    c->have = 0;
}

static void expand_string(bstate *b, const char *s, size_t n, int line, char *out, size_t cap);

/* Integer arithmetic of $((...)): a small recursive-descent evaluator. */
typedef struct {
    const char *p, *end;
    bstate *b;
    int ok;
} barith;

static long long ar_expr(barith *a);

/* bash arithmetic wraps around in 64 bits; unsigned operations keep that defined in C */
static long long wrap_mul(long long x, long long y)
{
    return (long long)((unsigned long long)x * (unsigned long long)y);
}

static long long wrap_add(long long x, long long y)
{
    return (long long)((unsigned long long)x + (unsigned long long)y);
}

static void ar_ws(barith *a)
{
    while (a->p < a->end && isspace((unsigned char)*a->p))
        a->p++;
}

static long long ar_atom(barith *a)
{
    ar_ws(a);
    if (a->p >= a->end) { a->ok = 0; return 0; }
    if (*a->p == '(') {
        a->p++;
        long long v = ar_expr(a);
        ar_ws(a);
        if (a->p < a->end && *a->p == ')') a->p++; else a->ok = 0;
        return v;
    }
    if (*a->p == '-') { a->p++; return wrap_mul(-1, ar_atom(a)); }
    if (*a->p == '+') { a->p++; return ar_atom(a); }
    if (isdigit((unsigned char)*a->p)) {
        char *e;
        long long v = strtoll(a->p, &e, 10);
        a->p = e;
        return v;
    }
    if (*a->p == '$') a->p++;
    if (*a->p == '{') a->p++;
    const char *s = a->p;
    while (a->p < a->end && (isalnum((unsigned char)*a->p) || *a->p == '_'))
        a->p++;
    if (a->p == s) { a->ok = 0; return 0; }
    bvar *v = var_get(a->b, s, (size_t)(a->p - s));
    if (a->p < a->end && *a->p == '}') a->p++;
    if (!v || v->val.n == 0) return 0; /* bash: an unset name is 0 */
    char *e;
    long long x = strtoll(v->val.w[0].s, &e, 10);
    if (*e) a->ok = 0;
    return x;
}

static long long ar_pow(barith *a)
{
    long long v = ar_atom(a);
    ar_ws(a);
    if (a->p + 1 < a->end && a->p[0] == '*' && a->p[1] == '*') {
        a->p += 2;
        long long e = ar_pow(a), r = 1;
        for (long long i = 0; i < e && i < 64; i++) r = wrap_mul(r, v);
        return r;
    }
    return v;
}

static long long ar_term(barith *a)
{
    long long v = ar_pow(a);
    for (;;) {
        ar_ws(a);
        if (a->p >= a->end || !strchr("*/%", *a->p) || (a->p + 1 < a->end && a->p[1] == '*'))
            return v;
        char op = *a->p++;
        long long r = ar_pow(a);
        if (op == '*') v = wrap_mul(v, r);
        else if (r == 0 || (r == -1 && v == LLONG_MIN)) { a->ok = 0; return 0; }
        else v = op == '/' ? v / r : v % r;
    }
}

static long long ar_expr(barith *a)
{
    long long v = ar_term(a);
    for (;;) {
        ar_ws(a);
        if (a->p >= a->end || (*a->p != '+' && *a->p != '-'))
            return v;
        char op = *a->p++;
        long long r = ar_term(a);
        v = op == '+' ? wrap_add(v, r) : wrap_add(v, wrap_mul(-1, r));
    }
}

/* ${...} (body without the braces) or $NAME into c / out. */
static void expand_param(bstate *b, const char *s, size_t n, int line, int quoted, bcur *c,
                         bwords *out)
{
    int count = n > 0 && s[0] == '#';
    if (count) { s++; n--; }
    size_t k = 0;
    while (k < n && (isalnum((unsigned char)s[k]) || s[k] == '_'))
        k++;
    bvar *v = var_get(b, s, k);
    const char *rest = s + k;
    size_t rn = n - k;
    if (rn >= 3 && rest[0] == '[') { /* ${A[@]}, ${A[*]}, ${A[i]} */
        const char *close = memchr(rest, ']', rn);
        size_t ilen = close ? (size_t)(close - rest - 1) : 0;
        if (count) {
            char num[24];
            imp_fmt(num, sizeof num, "%d", v ? v->val.n : 0);
            cur_put(c, num, strlen(num));
            return;
        }
        if (ilen == 1 && (rest[1] == '@' || rest[1] == '*')) {
            /* each element a word ("${A[@]}"); unquoted, each is split on blanks as well */
            for (int i = 0; v && i < v->val.n; i++) {
                cur_emit(b, c, out, line);
                const char *p = v->val.w[i].s;
                if (quoted) {
                    cur_put(c, p, strlen(p));
                    c->have = 1;
                } else {
                    for (; *p; p++) {
                        if (isspace((unsigned char)*p)) {
                            cur_emit(b, c, out, v->val.w[i].line);
                            continue;
                        }
                        cur_put(c, p, 1);
                    }
                }
                cur_emit(b, c, out, v->val.w[i].line);
            }
            c->after_array = 1;
            return;
        }
        long idx = strtol(rest + 1, NULL, 10);
        if (v && idx >= 0 && idx < v->val.n)
            cur_put(c, v->val.w[idx].s, strlen(v->val.w[idx].s));
        return;
    }
    const char *val = v && v->val.n ? v->val.w[0].s : NULL;
    if (count) {
        char num[24];
        imp_fmt(num, sizeof num, "%zu", val ? strlen(val) : 0);
        cur_put(c, num, strlen(num));
        return;
    }
    char def[B_WORD_CAP] = "";
    if (rn >= 1 && (rest[0] == ':' || rest[0] == '-' || rest[0] == '=' || rest[0] == '+')) {
        int colon = rest[0] == ':';
        char op = colon && rn > 1 ? rest[1] : rest[0];
        const char *word = rest + (colon ? 2 : 1);
        size_t wn = rn - (size_t)(colon ? 2 : 1);
        int unset = !val || (colon && !val[0]);
        if (op == '-' || op == '=') {
            if (unset) {
                expand_string(b, word, wn, line, def, sizeof def);
                if (op == '=')
                    var_set_scalar(b, s, k, def, line, 0);
                val = def;
            }
        } else if (op == '+') {
            if (!unset) {
                expand_string(b, word, wn, line, def, sizeof def);
                val = def;
            } else {
                val = NULL;
            }
        }
    }
    if (!val)
        return;
    if (quoted) {
        cur_put(c, val, strlen(val));
        c->have = 1;
        return;
    }
    /* unquoted: split on blanks */
    const char *p = val;
    while (*p) {
        if (isspace((unsigned char)*p)) {
            cur_emit(b, c, out, line);
            while (isspace((unsigned char)*p)) p++;
            continue;
        }
        cur_put(c, p, 1);
        p++;
    }
}

/* Expand word s[0..n) into words appended to out (split = 1: unquoted expansions split). */
static void expand(bstate *b, const char *s, size_t n, int line, bwords *out, bcur *c)
{
    int dq = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\'' && !dq) {
            const char *e = memchr(s + i + 1, '\'', n - i - 1);
            size_t len = e ? (size_t)(e - s - i - 1) : n - i - 1;
            cur_put(c, s + i + 1, len);
            i += len + 1;
            continue;
        }
        if (ch == '`') { /* command substitution: not run, kept as one piece of text */
            const char *e = memchr(s + i + 1, '`', n - i - 1);
            size_t len = e ? (size_t)(e - s - i + 1) : n - i;
            cur_put(c, s + i, len);
            i += len - 1;
            continue;
        }
        if (ch == '"') {
            dq = !dq;
            if (!c->after_array)
                c->have = 1;
            c->after_array = 0;
            continue;
        }
        if (ch == '\\' && i + 1 < n) {
            char nx = s[i + 1];
            if (!dq || strchr("\"\\$`", nx)) { cur_put(c, s + i + 1, 1); i++; continue; }
            cur_put(c, s + i, 1);
            continue;
        }
        if (ch == '$' && i + 1 < n) {
            char nx = s[i + 1];
            if (nx == '(' && i + 2 < n && s[i + 2] == '(') { /* $((...)) */
                int l2 = 0;
                size_t e = skip_group(s, n, i + 1, &l2);
                char inner[B_WORD_CAP];
                size_t len = e - i > 5 ? e - i - 5 : 0;
                if (len >= sizeof inner) len = sizeof inner - 1;
                memcpy(inner, s + i + 3, len);
                inner[len] = '\0';
                barith a = {inner, inner + len, b, 1};
                long long v = ar_expr(&a);
                ar_ws(&a);
                if (a.ok && a.p == a.end) {
                    char num[32];
                    imp_fmt(num, sizeof num, "%lld", v);
                    cur_put(c, num, strlen(num));
                } else {
                    cur_put(c, s + i, e - i);
                }
                i = e - 1;
                continue;
            }
            if (nx == '(') { /* $(...): not executed, kept as text */
                int l2 = 0;
                size_t e = skip_group(s, n, i + 1, &l2);
                cur_put(c, s + i, e - i);
                i = e - 1;
                continue;
            }
            if (nx == '{') {
                int l2 = 0;
                size_t e = skip_group(s, n, i + 1, &l2);
                expand_param(b, s + i + 2, e - i - 3, line, dq, c, out);
                i = e - 1;
                continue;
            }
            if (isalpha((unsigned char)nx) || nx == '_') {
                size_t k = i + 1;
                while (k < n && (isalnum((unsigned char)s[k]) || s[k] == '_'))
                    k++;
                expand_param(b, s + i + 1, k - i - 1, line, dq, c, out);
                i = k - 1;
                continue;
            }
            if (isdigit((unsigned char)nx) || strchr("@*#?$!", nx)) { /* unset in our reading */
                i++;
                c->have |= dq;
                continue;
            }
        }
        cur_put(c, s + i, 1);
    }
}

/* Expand to one string (no splitting), as in an assignment or a ${X:-default} word. */
static void expand_string(bstate *b, const char *s, size_t n, int line, char *out, size_t cap)
{
    bwords w = {0};
    bcur c = {{0}, 0, 0, 0};
    /* quote it so nothing splits */
    char q[B_WORD_CAP];
    size_t k = 0;
    q[k++] = '"';
    for (size_t i = 0; i < n && k + 2 < sizeof q; i++)
        q[k++] = s[i];
    q[k++] = '"';
    int has_dq = memchr(s, '"', n) != NULL;
    expand(b, has_dq ? s : q, has_dq ? n : k, line, &w, &c);
    cur_emit(b, &c, &w, line);
    out[0] = '\0';
    for (int i = 0; i < w.n; i++) {
        size_t len = strlen(out);
        imp_fmt(out + len, cap - len, "%s%s", i ? " " : "", w.w[i].s);
    }
    words_free(&w);
}

/* ---- statements ---- */

/* NAME= or NAME+= prefix length of a word (0 if it is not an assignment); *append set. */
static size_t assign_name(const char *w, int *append)
{
    size_t k = 0;
    if (!(isalpha((unsigned char)w[0]) || w[0] == '_'))
        return 0;
    while (isalnum((unsigned char)w[k]) || w[k] == '_')
        k++;
    *append = w[k] == '+' && w[k + 1] == '=';
    if (*append)
        return k;
    return w[k] == '=' ? k : 0;
}

static int eval_test(bstate *b, btok *t, int n)
{
    bwords w = {0};
    for (int i = 0; i < n; i++) {
        if (t[i].kind != T_WORD) continue;
        if (!strcmp(t[i].s, "[[") || !strcmp(t[i].s, "[") || !strcmp(t[i].s, "test") ||
            !strcmp(t[i].s, "]]") || !strcmp(t[i].s, "]"))
            continue;
        char v[B_WORD_CAP];
        expand_string(b, t[i].s, strlen(t[i].s), t[i].line, v, sizeof v);
        if (words_add(&w, v, strlen(v), t[i].line)) b->nomem = 1;
    }
    int neg = 0, k = 0, r = 0;
    if (w.n > 0 && !strcmp(w.w[0].s, "!")) { neg = 1; k = 1; }
    int m = w.n - k;
    bword *a = m > 0 ? w.w + k : NULL;
    if (m <= 0)
        r = -1;
    else if (m == 1)
        r = a[0].s[0] != '\0';
    else if (m == 2 && !strcmp(a[0].s, "-z"))
        r = a[1].s[0] == '\0';
    else if (m == 2 && !strcmp(a[0].s, "-n"))
        r = a[1].s[0] != '\0';
    else if (m == 3 && (!strcmp(a[1].s, "=") || !strcmp(a[1].s, "==")))
        r = !strcmp(a[0].s, a[2].s);
    else if (m == 3 && !strcmp(a[1].s, "!="))
        r = strcmp(a[0].s, a[2].s) != 0;
    else if (m == 3 && a[1].s[0] == '-') {
        long long x = strtoll(a[0].s, NULL, 10), y = strtoll(a[2].s, NULL, 10);
        const char *op = a[1].s + 1;
        r = !strcmp(op, "eq") ? x == y : !strcmp(op, "ne") ? x != y : !strcmp(op, "lt") ? x < y
          : !strcmp(op, "le") ? x <= y : !strcmp(op, "gt") ? x > y : !strcmp(op, "ge") ? x >= y : 0;
    } else
        r = -1; /* -f FILE and the like cannot be decided without running */
    words_free(&w);
    return r < 0 ? -1 : neg ? !r : r;
}

/* A list of tests joined by && and || (equal precedence, left to right, as bash has them):
 * 1 true, 0 false; anything undecidable (or a command) makes it false. */
static int eval_cond(bstate *b, btok *t, int n)
{
    int s = 0, acc = 1, op = T_AND;
    for (int i = 0; i <= n; i++) {
        if (i < n && t[i].kind != T_AND && t[i].kind != T_OR)
            continue;
        int r = i > s && t[s].kind == T_WORD && (!strcmp(t[s].s, "[[") || !strcmp(t[s].s, "[") ||
                                                 !strcmp(t[s].s, "test"))
                    ? eval_test(b, t + s, i - s) : -1;
        if (r < 0)
            return 0;
        acc = op == T_AND ? (acc && r) : (acc || r);
        if (i < n)
            op = t[i].kind;
        s = i + 1;
    }
    return acc;
}

static int is_test(const btok *t)
{
    return t->kind == T_WORD && (!strcmp(t->s, "[[") || !strcmp(t->s, "[") || !strcmp(t->s, "test"));
}

/* Count of --flags after a *.py word, or -1 if the words run no Python script. */
static int script_flags(const bwords *w)
{
    int at = -1, flags = 0;
    for (int i = 0; i < w->n; i++) {
        size_t len = strlen(w->w[i].s);
        if (at < 0 && len > 3 && !strcmp(w->w[i].s + len - 3, ".py"))
            at = i;
        else if (at >= 0 && !strncmp(w->w[i].s, "--", 2))
            flags++;
    }
    return at < 0 ? -1 : flags;
}

/* One simple command of tokens t[0..n): assignments or a command. */
static void run_simple(bstate *b, btok *t, int n)
{
    int i = 0;
    while (i < n && t[i].kind == T_WORD &&
           (!strcmp(t[i].s, "export") || !strcmp(t[i].s, "declare") || !strcmp(t[i].s, "local") ||
            !strcmp(t[i].s, "readonly") || !strcmp(t[i].s, "typeset"))) {
        i++;
        while (i < n && t[i].kind == T_WORD && t[i].s[0] == '-')
            i++;
    }
    int assigned = 0;
    while (i < n && t[i].kind == T_WORD) {
        int append = 0;
        size_t k = assign_name(t[i].s, &append);
        if (!k)
            break;
        const char *val = t[i].s + k + (append ? 2 : 1);
        if (!val[0] && i + 1 < n && t[i + 1].kind == T_LPAREN && t[i + 1].adjacent) {
            bvar *v = var_new(b, t[i].s, k, t[i].line);
            if (v && !append)
                words_free(&v->val);
            int j = i + 2;
            for (; j < n && t[j].kind != T_RPAREN; j++) {
                if (t[j].kind != T_WORD || !v) continue;
                bcur c = {{0}, 0, 0, 0};
                bwords tmp = {0};
                expand(b, t[j].s, strlen(t[j].s), t[j].line, &tmp, &c);
                cur_emit(b, &c, &tmp, t[j].line);
                for (int q = 0; q < tmp.n; q++)
                    if (words_add(&v->val, tmp.w[q].s, strlen(tmp.w[q].s), tmp.w[q].line))
                        b->nomem = 1;
                words_free(&tmp);
            }
            i = j + 1;
        } else {
            char out[B_WORD_CAP];
            expand_string(b, val, strlen(val), t[i].line, out, sizeof out);
            var_set_scalar(b, t[i].s, k, out, t[i].line, append);
            i++;
        }
        assigned = 1;
    }
    (void)assigned;
    if (i >= n)
        return;
    bwords w = {0};
    for (; i < n; i++) {
        if (t[i].kind == T_REDIR) { i++; continue; } /* and its target */
        if (t[i].kind != T_WORD) continue;
        bcur c = {{0}, 0, 0, 0};
        expand(b, t[i].s, strlen(t[i].s), t[i].line, &w, &c);
        cur_emit(b, &c, &w, t[i].line);
    }
    int f = script_flags(&w);
    if (f >= 0 && f >= b->best_flags) {
        words_free(&b->best);
        b->best = w;
        b->best_flags = f;
        return;
    }
    words_free(&w);
}

typedef struct {
    int active[B_IF_DEPTH];
    int taken[B_IF_DEPTH];
    int depth;
    int case_depth;
} bctl;

static int ctl_active(const bctl *k)
{
    if (k->case_depth > 0)
        return 0;
    for (int i = 0; i < k->depth; i++)
        if (!k->active[i])
            return 0;
    return 1;
}

/* A statement t[0..n) (up to a separator): control words, tests, && / || lists, commands. */
static void run_statement(bstate *b, bctl *k, btok *t, int n)
{
    while (n > 0) {
        if (t[0].kind != T_WORD) { t++; n--; continue; }
        const char *w = t[0].s;
        if (!strcmp(w, "then") || !strcmp(w, "do") || !strcmp(w, "{") || !strcmp(w, "}")) { t++; n--; continue; }
        if (!strcmp(w, "fi")) { if (k->depth > 0) k->depth--; t++; n--; continue; }
        if (!strcmp(w, "else")) {
            if (k->depth > 0) { k->active[k->depth - 1] = !k->taken[k->depth - 1]; k->taken[k->depth - 1] = 1; }
            t++; n--;
            continue;
        }
        if (!strcmp(w, "esac")) { if (k->case_depth > 0) k->case_depth--; return; }
        if (!strcmp(w, "case")) { k->case_depth++; return; }
        if (!strcmp(w, "done") || !strcmp(w, "for") || !strcmp(w, "while") || !strcmp(w, "until"))
            return; /* a loop's header; its body is read once */
        break;
    }
    if (n <= 0)
        return;
    if (t[0].kind == T_WORD && (!strcmp(t[0].s, "if") || !strcmp(t[0].s, "elif"))) {
        int elif = t[0].s[0] == 'e';
        int cond = ctl_active(k) || elif ? eval_cond(b, t + 1, n - 1) : 0;
        if (elif) {
            if (k->depth > 0) {
                int d = k->depth - 1;
                k->active[d] = !k->taken[d] && cond;
                k->taken[d] |= cond;
            }
        } else if (k->depth < B_IF_DEPTH) {
            k->active[k->depth] = cond;
            k->taken[k->depth] = cond;
            k->depth++;
        }
        return;
    }
    if (!ctl_active(k))
        return;
    /* A && B || C ... : tests decide; a command counts as having succeeded. */
    int s = 0, run = 1;
    for (int i = 0; i <= n; i++) {
        if (i < n && t[i].kind != T_AND && t[i].kind != T_OR && t[i].kind != T_PIPE)
            continue;
        int ok = 1;
        if (run && i > s) {
            if (is_test(&t[s]))
                ok = eval_test(b, t + s, i - s) == 1;
            else
                run_simple(b, t + s, i - s);
        }
        if (i < n)
            run = t[i].kind == T_AND ? (run ? ok : 0) : t[i].kind == T_OR ? (run ? !ok : 1) : 1;
        s = i + 1;
    }
}

static mp_status emit_entries(imp_ctx *c, bstate *b)
{
    mp_status st = MP_OK;
    const bwords *w = &b->best;
    int at = -1;
    for (int i = 0; i < w->n && at < 0; i++) {
        size_t len = strlen(w->w[i].s);
        if (len > 3 && !strcmp(w->w[i].s + len - 3, ".py"))
            at = i;
    }
    for (int i = 0; i < w->n && st == MP_OK; i++) {
        const char *s = w->w[i].s;
        if (s[0] != '-' || !s[1] || (s[1] != '-' && !isalpha((unsigned char)s[1])))
            continue;
        char key[IMP_KEY_CAP], val[IMP_VAL_CAP] = "";
        const char *eq = strchr(s, '=');
        size_t klen = eq ? (size_t)(eq - s) : strlen(s);
        imp_fmt(key, sizeof key, "%s%.*s", i < at ? "launcher:" : "", (int)klen, s);
        if (eq)
            mp_strlcpy(val, eq + 1, sizeof val);
        else
            for (int j = i + 1; j < w->n && w->w[j].s[0] != '-' && (at < 0 || j != at); j++) {
                if (!w->w[j].s[0])
                    continue; /* an empty word ("") is no value */
                size_t len = strlen(val);
                imp_fmt(val + len, sizeof val - len, "%s%s", len ? " " : "", w->w[j].s);
                if (i < at) break; /* launcher options take one value */
            }
        st = imp_kvs_add(c->kv, key, val, w->w[i].line, 0);
    }
    if (at >= 0 && st == MP_OK) {
        st = imp_kvs_add(c->kv, "script:", w->w[at].s, w->w[at].line, 0);
        if (st == MP_OK)
            c->kv->v[c->kv->n - 1].used = 1;
    }
    for (int i = 0; i < b->nvar && st == MP_OK; i++) {
        char key[IMP_KEY_CAP];
        imp_fmt(key, sizeof key, "var:%s", b->var[i].name);
        st = imp_kvs_add(c->kv, key, b->var[i].val.n ? b->var[i].val.w[0].s : "", b->var[i].line, 0);
        if (st == MP_OK)
            c->kv->v[c->kv->n - 1].used = 1; /* variables are not flags: never "unknown" */
    }
    return st;
}

/* Megatron-LM's printed arguments (its log's "------ arguments ------" block):
 * "  tensor_model_parallel_size ...... 8". Returns the entries made, 0 when text is not one. */
static int args_dump(imp_ctx *c, const char *text, size_t len, mp_status *st)
{
    int n = 0, lines = 0;
    const char *p = text, *end = text + len;
    while (p < end && *st == MP_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char l[IMP_VAL_CAP + IMP_KEY_CAP];
        snprintf(l, sizeof l, "%.*s", (int)(ln < sizeof l - 1 ? ln : sizeof l - 1), p);
        lines++;
        char key[IMP_KEY_CAP] = "--", val[IMP_VAL_CAP];
        const char *q = l;
        while (*q == ' ' || *q == '\t') q++;
        size_t k = 0;
        while ((isalnum((unsigned char)q[k]) || q[k] == '_') && k + 3 < sizeof key) {
            key[2 + k] = q[k] == '_' ? '-' : q[k];
            k++;
        }
        key[2 + k] = '\0';
        const char *dots = q + k;
        if (k > 0 && dots[0] == ' ' && !strncmp(dots + 1, "...", 3)) {
            dots++;
            while (*dots == '.') dots++;
            while (*dots == ' ') dots++;
            snprintf(val, sizeof val, "%s", dots);
            size_t vl = strlen(val);
            while (vl > 0 && (val[vl - 1] == ' ' || val[vl - 1] == '\r')) val[--vl] = '\0';
            n++;
            if (!strcmp(val, "None") || !strcmp(val, "False"))
                ; /* unset, or a flag not given */
            else if (!strcmp(key, "--world-size"))
                *st = imp_kvs_add(c->kv, "var:WORLD_SIZE", val, lines, 0);
            else
                *st = imp_kvs_add(c->kv, key, !strcmp(val, "True") ? "" : val, lines, 0);
        }
        p = nl ? nl + 1 : end;
    }
    return n >= 3 ? n : 0;
}

mp_status imp_bash_args(imp_ctx *c, const char *text, size_t len)
{
    mp_status dst = MP_OK;
    if (!memmem(text, len, "--", 2) && args_dump(c, text, len, &dst))
        return dst; /* Megatron-LM's printed arguments, not a script */
    if (dst != MP_OK)
        return dst;
    c->kv->n = 0; /* a few dotted lines that were not a dump: read as a script */
    bstate *b = calloc(1, sizeof *b);
    if (!b)
        return MP_ERR_NOMEM;
    b->best_flags = -1;
    mp_status st = MP_OK;
    if (tokenize(b, text, len)) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    bctl k = {{0}, {0}, 0, 0};
    int s = 0, paren = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->t[i].kind == T_LPAREN && b->t[i].adjacent) paren++;
        else if (b->t[i].kind == T_RPAREN && paren > 0) paren--;
        if (b->t[i].kind != T_SEP || paren > 0)
            continue;
        /* separators inside an array assignment were newlines: drop them */
        run_statement(b, &k, b->t + s, i - s);
        s = i + 1;
    }
    if (b->nomem) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if (b->best_flags < 0) {
        /* no python command: an argument list ("--num-layers 32 ..."), read as one command */
        bwords all = {0};
        for (int i = 0; i < b->n; i++)
            if (b->t[i].kind == T_WORD) {
                bcur cc = {{0}, 0, 0, 0};
                expand(b, b->t[i].s, strlen(b->t[i].s), b->t[i].line, &all, &cc);
                cur_emit(b, &cc, &all, b->t[i].line);
            }
        words_free(&b->best);
        b->best = all;
    }
    st = emit_entries(c, b);
done:
    for (int i = 0; i < b->n; i++)
        free(b->t[i].s);
    free(b->t);
    for (int i = 0; i < b->nvar; i++)
        words_free(&b->var[i].val);
    words_free(&b->best);
    free(b);
    return st;
}
