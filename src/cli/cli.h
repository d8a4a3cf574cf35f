/* src/cli/cli.h — what the command's files share: option parsing, file reading, catalog and model
 * loading, and the exit-code convention. Internal to the CLI. */
#ifndef MESHPLAN_CLI_H
#define MESHPLAN_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "meshplan/meshplan.h"

#define EXIT_INPUT 2
#define EXIT_INTERNAL 1
#define MAX_FILE_BYTES (64L * 1024 * 1024)
#define CLI_MAX_OPTS 32
#define CLI_MAX_POSITIONAL 8

/** Parsed command line: "--name value" options (or "--flag" for names in the flag list),
 *  in order, plus positional arguments. A repeated option keeps every value (see cli_opt_all). */
typedef struct {
    const char *name[CLI_MAX_OPTS];
    const char *value[CLI_MAX_OPTS]; /* NULL for flags */
    int nopts;
    const char *positional[CLI_MAX_POSITIONAL];
    int npositional;
} cli_args;

/* ---- commands as tables (cli_table.c) ----------------------------------------------------------
 * Every command is one cli_command, defined in its own cmd_NAME.c beside its code, with a table of
 * the options it takes. That table is the only list of them: the parser (cli_parse_cmd: unknown
 * options and their nearest match, --opt value and --opt=value, flags, required options), the
 * command's --help, the global `meshplan help` (name and summary) and the message for a missing
 * required option all read it.
 *
 * To add an option: one entry in the command's table (CLI_REQ, CLI_OPT or CLI_FLAG below), then
 * read it in the command with cli_opt / cli_flag. To add a command: a new cmd_NAME.c defining
 *   const cli_command cli_cmd_NAME = {"name", "one-line summary", NULL, 0, name_opts, NULL, cmd_NAME};
 * and one X(NAME) line in CLI_COMMAND_LIST in main.c. docs/cli.md says the same with an example. */

/** One option of a command. */
typedef struct {
    const char *name;     /* with its dashes: "--model" (or "-o") */
    int takes_value;      /* 1: "--name VALUE" or "--name=VALUE"; 0: a flag, "--name" */
    int required;         /* 1: the parser refuses to run the command without it */
    const char *value;    /* the value's placeholder in the usage ("M", "N|A:B"); NULL for a flag */
    const char *help;     /* one line: what it is, its unit and default */
    int repeatable;       /* 1: may be given more than once (cli_opt_all); 0: twice is refused */
} cli_option;

#define CLI_REQ(name, value, help) {name, 1, 1, value, help, 0}
#define CLI_OPT(name, value, help) {name, 1, 0, value, help, 0}
#define CLI_FLAG(name, help) {name, 0, 0, NULL, help, 0}
#define CLI_OPT_REPEAT(name, value, help) {name, 1, 0, value, help, 1}
#define CLI_END {NULL, 0, 0, NULL, NULL, 0}

/* Options that mean the same in every command that takes them. */
#define CLI_OPT_CATALOG \
    CLI_OPT("--catalog", "FILE", "a catalog file whose entries add to or replace the built-in ones")
#define CLI_OPT_JSON CLI_FLAG("--json", "print one JSON object instead of the text report")
#define CLI_OPT_CSV CLI_FLAG("--csv", "print CSV instead of the text report")
#define CLI_OPT_GPUS_PER_NODE \
    CLI_OPT("--gpus-per-node", "K", "GPUs per node (default: the GPU's usual node)")
#define CLI_OPT_SCALE_OUT \
    CLI_OPT("--scale-out", "LINK", "scale-out link key, e.g. ib-ndr-400 (default: the node's NICs)")
/* --cluster for the commands that take one cluster (search, scale, trace): cli_one_cluster. */
#define CLI_OPT_CLUSTER_ONE                                                                        \
    CLI_OPT("--cluster", "NODE|PRESET|FILE",                                                      \
            "the wiring instead of --gpu's usual node: a catalog node, a shipped cluster or a "   \
            "cluster description (docs/cluster.md); --gpu, if given, replaces its GPU; one "      \
            "cluster, not islands")
#define CLI_MODEL_HELP "a catalog key, a Hugging Face config.json or a model JSON file"
/* The job options of search and scale, read by cli_search_opts (cli_search.c). */
#define CLI_OPTS_SEARCH_JOB                                                                       \
    CLI_OPT("--gb", "B", "required unless --fix or --config gives gb: global batch, sequences"),                            \
    CLI_OPT("--seq", "S", "sequence length, tokens (default: the model's)"),                      \
    CLI_OPT("--precision", "P", "bf16 (default), fp16 or fp8"),                                   \
    CLI_OPT("--fix", "PLAN", "plan keys held fixed, \"tp=8,zero=1,...\" (plan keys below)"),     \
    CLI_OPT("--objective", "O", "throughput (default), time-to-train, cost or energy"),           \
    CLI_OPT("--tokens", "T", "token budget, for --objective time-to-train (e.g. 15e12)"),         \
    CLI_OPT("--price-gpu-hour", "USD", "USD per GPU-hour, for --objective cost"),                 \
    CLI_OPT("--threads", "T", "threads evaluating plans (default: every core)"),                  \
    CLI_OPT("--orders", "default|all", "rank orders tried: Megatron-Core's (default) or all")

/** One command: its name, what `meshplan help` says of it, its positional arguments and options. */
typedef struct {
    const char *name;              /* "run" */
    const char *summary;           /* one line for `meshplan help` */
    const char *args;              /* positional arguments for the usage line ("FILE.csv"); NULL: none */
    int max_args;                  /* positional arguments accepted (more is an error) */
    const cli_option *options;     /* ends with CLI_END */
    const char *notes;             /* printed after the options by --help; NULL: none */
    int (*run)(int argc, char **argv); /* argv: what follows the command name */
} cli_command;

/** Parse argv (what follows the command name) against c's table: "--name VALUE", "--name=VALUE",
 *  flags, positional arguments (at most c->max_args), then the required options. An unknown
 *  option is refused with the nearest ones by edit distance. Returns 0, or EXIT_INPUT after
 *  printing the problem. */
int cli_parse_cmd(const cli_command *c, int argc, char **argv, cli_args *a);
/** `meshplan COMMAND --help`: c's usage, summary, options and notes. */
void cli_print_command_help(FILE *f, const cli_command *c);
/** `meshplan help`: every command with its summary, then the plan keys, clusters, exit codes. */
void cli_print_usage(FILE *f, const cli_command *const *cmds, int n);
/** Every command (main.c's list), in the order `meshplan help` lists them; *n their count. */
const cli_command *const *cli_commands(int *n);
/** The nearest of n names to s (optimal string alignment distance, dashes ignored at the front):
 *  writes up to cap of the closest (ties kept, in list order) that are near enough to be a
 *  plausible typo, and returns how many. */
int cli_nearest(const char *s, const char *const *names, int n, const char **out, int cap);

/** Parse argv against NULL-terminated lists of option names (with their "--") and of flags:
 *  the form before the tables, kept for commands not yet moved to one (prefer cli_parse_cmd).
 *  Accepts --opt=value and suggests the nearest name too. Returns 0 or EXIT_INPUT after printing
 *  the problem. */
int cli_parse(int argc, char **argv, const char *const *options, const char *const *flags,
              cli_args *a);
/** Last value of an option, or NULL. */
const char *cli_opt(const cli_args *a, const char *name);
/** 1 if a flag was given. */
int cli_flag(const cli_args *a, const char *name);
/** Every value of a repeated option, in order; returns the count (<= cap). */
int cli_opt_all(const cli_args *a, const char *name, const char **out, int cap);
/** The output file of a command whose -o has the alias --output, into *path (NULL when neither
 *  is given). Both given is refused, naming the two values (cmd names the command). 0 or
 *  EXIT_INPUT after printing. */
int cli_output_path(const cli_args *a, const char *cmd, const char **path);
/** A file the command will write later, checked now so that a long run does not end in "cannot
 *  write" (and prints nothing first): refused when it is a directory or cannot be created (it is
 *  opened for appending, so an existing file is kept, and removed again when it was not there).
 *  cmd and opt name the command and the option in the message. 0 or EXIT_INPUT after printing. */
int cli_check_output(const char *cmd, const char *opt, const char *path);

/** Print "meshplan: <fmt with a>" to stderr and return EXIT_INPUT. */
int cli_fail(const char *fmt, const char *a);
/** Exit code for a status: 0, EXIT_INPUT or EXIT_INTERNAL. */
int cli_exit_for(mp_status st);
/** Print the accumulated diagnostics to stderr. */
void cli_print_diag(const mp_diag *d);
/** Parse an integer option in [min, max]; 0 or EXIT_INPUT after printing the problem. */
int cli_parse_count(const char *name, const char *s, long long min, long long max, long long *out);
/** Parse and resolve plan_text for model m on ngpus GPUs, then estimate it on cl into a malloc'd
 *  estimate *e (the caller frees it, also on error). Returns 0 or an exit code; the reasons go to
 *  d, which the caller prints. */
int cli_plan_estimate(const mp_model *m, const mp_cluster *cl, const char *plan_text,
                      int64_t ngpus, mp_plan *p, mp_estimate **e, mp_diag *d);
/** The job of run and trace: load the model (cli_load_model), wire ngpus GPUs of type gpu from
 *  the catalog (gpus_per_node 0: the GPU's usual node; scale_out NULL: that node's NICs), then
 *  cli_plan_estimate. Returns 0 or an exit code; *e as cli_plan_estimate; reasons go to d. */
int cli_job_estimate(const mp_catalog *cat, const char *model, const char *gpu, long long ngpus,
                     long long gpus_per_node, const char *scale_out, const char *plan_text,
                     mp_model *m, mp_cluster *cl, mp_plan *p, mp_estimate **e, mp_diag *d);
struct json_t; /* jansson's */
/** Print o (jansson json_dumps flags) and a newline on stdout, then release o (NULL: nothing
 *  to print, as when building it ran out of memory). Returns 0, or EXIT_INTERNAL after saying
 *  on stderr that the JSON could not be written. */
int cli_print_json(struct json_t *o, size_t flags);
/** One CSV field on stdout, quoted when it holds a comma, quote or newline (RFC 4180). */
void cli_csv_field(const char *s);
/** --csv of a one-record answer (run, trace): o flattened into "key,value" rows with dotted
 *  keys, exact values (cli_csv.c); releases o. 0, or EXIT_INTERNAL when o is NULL. */
int cli_print_csv_flat(struct json_t *o);
/** --csv of a list: arr, an array of flat objects with the same keys (catalog's), as a header of
 *  the first object's keys and one row per object (cli_csv.c); does not release arr. 0, or
 *  EXIT_INTERNAL when arr is not such an array. */
int cli_print_csv_table(struct json_t *arr);
/** Parse a finite real value in [min, max]; 0 or EXIT_INPUT after printing the problem. */
int cli_parse_real(const char *name, const char *s, double min, double max, double *out);
/** The same for an optional option (named with its "--"); leaves *out alone when it is absent. */
int cli_opt_real(const cli_args *a, const char *opt, double min, double max, double *out);
/** Read a whole regular file of at most MAX_FILE_BYTES into a malloc'd NUL-terminated buffer. */
mp_status cli_read_file(const char *path, char **buf, size_t *len, mp_diag *d);
/** Built-in catalog plus the --catalog file if given; 0 or an exit code after printing. */
int cli_load_catalog(const cli_args *a, mp_catalog **cat);
/** --model: a catalog key, a Hugging Face config.json or a model JSON; 0 or an exit code. */
int cli_load_model(const mp_catalog *cat, const char *spec, mp_model *m);

/** --cluster: a catalog node key, a shipped preset or a description file (cli_cluster.c);
 *  ngpus <= 0 takes the file's count; gpu_override (may be NULL) replaces the GPU. 0 or an exit
 *  code after printing. */
int cli_load_cluster(const mp_catalog *cat, const char *spec, long long ngpus,
                     const char *gpu_override, mp_cluster *out);
/** A byte count with an optional K, M, G, T suffix (powers of 1024); 0 or EXIT_INPUT. */
int cli_parse_bytes(const char *name, const char *s, double *out);
/* --- search and scale (cli_search.c) --- */
/** --gpus N or A:B (A, 2A, 4A, ... <= B) into counts (at most cap); 0 or EXIT_INPUT. */
int cli_parse_gpu_range(const char *s, long long *counts, int cap, int *n);
/** The cluster of a one-cluster command `cmd` with ngpus GPUs (<= 0: --cluster's own count):
 *  --cluster (cli_load_cluster; an islands description is refused, as are --gpus-per-node and
 *  --scale-out beside it) or --gpu with --gpus-per-node and --scale-out; calibrated. 0 or an
 *  exit code after printing. */
int cli_one_cluster(const cli_args *a, const mp_catalog *cat, const char *cmd, long long ngpus,
                    mp_cluster *out);
/** One cluster per count from --cluster, or --gpu, --gpus-per-node, --scale-out (a count of 0
 *  takes --cluster's); 0 or an exit code. */
int cli_search_clusters(const cli_args *a, const mp_catalog *cat, const long long *counts, int n,
                        mp_cluster *clusters, const char *cmd);
/** Search options from --gb --seq --precision --fix --objective --tokens --price-gpu-hour --top
 *  --threads --no-prune --orders; 0 or EXIT_INPUT after printing the problem. */
int cli_search_opts(const cli_args *a, const mp_model *m, mp_search_opts *o);
/** A progress bar on stderr, drawn only when stderr is a terminal and after the first second. */
typedef struct {
    int enabled, drawn;
    double t0, last;
    const char *label;
} cli_progress;
void cli_progress_init(cli_progress *p, const char *label);
void cli_progress_cb(void *ctx, double frac, uint64_t done); /* an mp_progress_fn */
void cli_progress_done(cli_progress *p);

/** The plan keys with their values, defaults and meaning, from the library's tables, for help
 *  (cli_plan_keys.c). */
void cli_print_plan_keys(FILE *f);
/** The plan keys as a command's help lists them: given with `option` (--plan, --fix), and the
 *  islands keys when the command takes an islands description (islands 1). */
void cli_print_plan_keys_for(FILE *f, const char *option, int islands);
/** The RL job of rl and rl-search (cmd_rl.c): model, cluster (--cluster or --gpu, --gpus) and
 *  the config from the options over mp_rl_config_init. 0 or an exit code after printing. */
int cli_rl_job(const cli_args *a, mp_model *m, mp_cluster *cl, mp_rl_config *k);
/** rl and rl-search help: the rollout (inference) and training plan keys (cmd_rl.c). */
void cli_print_rl_keys(FILE *f);
/** The inference plan keys (`meshplan infer --plan`), from the library's table (cmd_infer.c). */
void cli_print_infer_keys(FILE *f);
/* serve's and serve-search's --plan keys: infer's and the scheduler's (cli_serve.c). */
void cli_print_serve_keys(FILE *f);

/* Islands joined by WAN links (cli_islands.c). */
/** 1 if --cluster names a shipped preset or file holding an islands description. */
int cli_cluster_is_islands(const char *spec);
/** Load an islands description (island_gpus > 0: every island's, or only `only`'s, GPU count);
 *  0 or an exit code after printing. */
int cli_load_islands(const mp_catalog *cat, const char *spec, long long island_gpus,
                     const char *only, mp_islands **out);
/** predict across islands: from the description spec, or (spec NULL) the cluster cl split at
 *  its wan tier. quality: the user's tokens-to-quality factor (0 = the published default). */
int cli_predict_islands(const mp_catalog *cat, const mp_model *m, const char *spec,
                        const mp_cluster *cl, const char *plan_text, int json, double quality);
/** The text report and the JSON object (caller json_decref's it) of an islands prediction. */
void cli_islands_text(FILE *f, const mp_model *m, const mp_islands *isl, const mp_islands_plan *ip,
                      const mp_islands_estimate *e);
struct json_t;
struct json_t *cli_islands_json(const mp_model *m, const mp_islands *isl, const mp_islands_plan *ip,
                                const mp_islands_estimate *e);

/* --calibration FILE (cli_calibration.c): cli_load_catalog loads it for the command; every cluster
 * and every estimator option set a command builds passes through cli_cal_cluster / cli_cal_opts,
 * which apply it and say on stderr when it holds nothing for this GPU or link. */
int cli_cal_load(const cli_args *a);
void cli_cal_cluster(mp_cluster *c);
/** mp_estimate_opts_init(o), then the calibration's estimator constants for gpu_key; returns o. */
const mp_estimate_opts *cli_cal_opts(const char *gpu_key, mp_estimate_opts *o);
/** A training log's plan: --plan, then the keys its Megatron arguments block and the --config
 *  file (a printed arguments block) state that --plan does not; "" when none gives any. Returns 0
 *  or an exit code after printing why --config cannot be read. */
int cli_cal_training_plan(const cli_args *a, const mp_log *l, char *out, size_t cap);
#define CLI_OPT_CALIBRATION \
    CLI_OPT("--calibration", "FILE", "constants fitted by meshplan calibrate (docs/calibrate.md)")

/** trace's simulator options (cmd_trace.c), shared with plot timeline; 0 or EXIT_INPUT. */
int cli_trace_sim_opts(const cli_args *args, long long ngpus, mp_sim_opts *so);

/* --- scale (cmd_scale.c), shared with plot scale --- */
/** One GPU count of the scaling study. */
typedef struct {
    long long gpus;
    int ok;                   /* a plan fits */
    long long gb;             /* batch searched (weak: scaled); 0: no weak point at this count */
    mp_search_entry best;
    double eff;               /* efficiency vs the reference; 0 when not defined */
} cli_scale_point;
/** The study: the best plan per count, strong and weak (docs/search.md "Scaling"). */
typedef struct {
    mp_catalog *cat;
    mp_model m;
    mp_search_opts o;
    mp_cluster *clusters;     /* n */
    cli_scale_point *strong, *weak; /* n each */
    long long counts[MP_SEARCH_MAX_CLUSTERS];
    int n;
    long long gb, nmax;       /* --gb; the largest count */
    double wall;              /* seconds of search */
} cli_scale_run;
/** Run the study from scale's options (--model --gpu --gpus A:B --gb and the search options);
 *  0 or an exit code after printing. Free *r with cli_scale_free, also on error. */
int cli_scale_compute(const cli_args *a, cli_scale_run *r);
void cli_scale_free(cli_scale_run *r);

/* --- collective (cmd_collective.c), shared with plot collective --- */
#define CLI_COLL_MAX_SIZES 64
/** A collective job from the options of `collective`. */
typedef struct {
    mp_coll_op op;
    unsigned mask;                    /* algorithms (MP_ALGO_BIT) from --algo */
    const char *type;                 /* --type's name */
    double tsize;                     /* its bytes per element */
    double sizes[CLI_COLL_MAX_SIZES]; /* message sizes, bytes */
    int nsizes;
    mp_cluster cluster;
    mp_group g;                       /* --ranks, --stride (default: every GPU) */
} cli_coll_job;
/** Fill job from collective's options (--op --gpu --gpus --gpus-per-node --scale-out --cluster
 *  --catalog --sizes --algo --type --ranks --stride); 0 or an exit code after printing. */
int cli_collective_job(const cli_args *args, cli_coll_job *job);

/** The whole command: argv[0] is the program name, argv[1] the command. Returns the exit code.
 *  main() only calls this, so the fuzz harness can run the command in-process. */
int cli_main(int argc, char **argv);

/* Launch configs (cli_config.c): what `import` and --config share. */
typedef struct {
    mp_import *imp;       /* malloc'd; cli_config_free releases it */
    mp_model model;
    int have_model;
    char model_where[1024]; /* where the model came from, or why there is none */
    char gpu[MP_KEY_CAP];
    int gpu_assumed;      /* no GPU type in the file or on the command line */
    int64_t gpus, gpus_per_node;
    mp_plan plan;         /* resolved */
    char plan_string[1024];
} cli_config;
/** Read a launch config, resolve its model, GPU and plan. 0 or an exit code after printing. */
int cli_config_load(const mp_catalog *cat, const char *path, const mp_import_opts *opts,
                    cli_config *cfg);
void cli_config_free(cli_config *cfg);
/** --config FILE (predict, run, trace, search): before the command's table parses argv, add the
 *  options the command line left out from the file: --model (the file's model, found again by
 *  cli_load_model under the file's name), --gpu, --gpus, and with CLI_CONFIG_PLAN --plan (the
 *  file's resolved plan), with CLI_CONFIG_JOB --gb, --seq, --precision (the plan is searched).
 *  argc and argv are replaced (static storage) when --config is given. 0 or an exit code. */
enum { CLI_CONFIG_PLAN = 1, CLI_CONFIG_JOB = 2 };
int cli_config_argv(int *argc, char ***argv, int what);
/** search --emit FORMAT: the best plan of r written in that launch format on stdout. 0 or an
 *  exit code (a format that cannot hold a key of the plan names it). */
int cli_search_emit(const cli_args *a, const mp_model *m, const mp_cluster *clusters,
                    const mp_search_result *r);
/** The model read from a config file named spec by the last cli_config_load, or NULL. */
const mp_model *cli_config_model(const char *spec);

int cmd_import(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_islands_scale(int argc, char **argv);
int cmd_collective(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_catalog(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_scale(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_web(int argc, char **argv);

/** The adapter options of lora and serve (--adapters, --adapter-rank, --adapter-targets,
 *  --adapter-popularity, --adapter-cache; cmd_lora.c) into o (initialised here). 0 or EXIT_INPUT. */
/* --- serve and serve-search (cli_serve.c) --- */
#include "meshplan/serve.h"
/** The job and serving options of serve / serve-search, with the buffers they point into. */
typedef struct {
    mp_model model;
    mp_cluster cluster;
    mp_serve_opts o;
    int64_t *in, *out;
    double *arrival;
    mp_serve_request *trace;
    size_t n;
} cli_serve_job;
/** Read --model, --cluster/--gpu, --gpus, --plan, --rate, --arrivals, --lengths, --requests,
 *  --seed, --warmup, --slo, --price-gpu-hour into j. 0, or an exit code after printing. */
int cli_serve_job_load(const cli_args *a, cli_serve_job *j);
void cli_serve_job_free(cli_serve_job *j);
/** The common options' table rows (cmd_serve.c, cmd_serve_search.c). */
#define CLI_OPTS_SERVE_JOB                                                                          \
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),                                         \
    CLI_OPT("--cluster", "NODE|PRESET|FILE", "the cluster (a node key such as dgx-h100 with --gpus)"), \
    CLI_OPT("--gpu", "G", "the GPU, a catalog key (instead of --cluster)"),                          \
    CLI_OPT("--gpus", "N", "GPUs (default: the plan's tp x pp x dp)"),                              \
    CLI_OPT_GPUS_PER_NODE, CLI_OPT_SCALE_OUT, CLI_OPT_CATALOG,                                       \
    CLI_OPT("--plan", "PLAN", "infer's plan keys + max_seqs, chunk, preempt, attn_dp, imbalance, prefill_first"),   \
    CLI_OPT("--rate", "R", "mean request rate, e.g. 12/s or 720/min (Poisson and gamma arrivals)"), \
    CLI_OPT("--arrivals", "KIND", "poisson (default), gamma:CV (bursty), batch (all at t=0), trace:FILE.csv"), \
    CLI_OPT("--lengths", "L", "fixed:IN:OUT (default fixed:1024:256), sharegpt, or FILE.csv (input_len,output_len)"), \
    CLI_OPT("--requests", "N", "requests simulated (default 2000; a trace: its rows)"),             \
    CLI_OPT("--seed", "S", "random seed (default 1)"),                                               \
    CLI_OPT("--warmup", "F", "share of the first requests left out of the figures (default 0.1)"),  \
    CLI_OPT("--slo", "SLO", "\"ttft_p99=1s,tpot_p99=40ms\": goodput counts requests within both"), \
    CLI_OPT("--price-gpu-hour", "USD", "rental price per GPU-hour (default: the cost module's $2.50)")

/** The adapter options of lora and serve (--adapters, --adapter-rank, --adapter-targets,
 *  --adapter-popularity, --adapter-cache; cmd_lora.c) into o (initialised here). 0 or EXIT_INPUT. */
int cli_lora_opts(const cli_args *a, mp_lora_opts *o);
/** serve --adapters (cmd_lora.c): the adapter cache's KV share taken from j's plan and the
 *  per-step adapter model hooked into j's options; *x NULL without --adapters. 0 or an exit code
 *  after printing. */
typedef struct cli_lora_serve cli_lora_serve;
int cli_lora_serve_setup(const cli_args *a, cli_serve_job *j, cli_lora_serve **x);
/** The adapter figures of a run: text lines, or (json non-NULL) an "adapters" object added to
 *  *json (replaced). 0 or EXIT_INTERNAL. */
int cli_lora_serve_report(const cli_lora_serve *x, const mp_serve_result *r, char **json);
void cli_lora_serve_free(cli_lora_serve *x);
#define CLI_OPTS_LORA                                                                              \
    CLI_OPT("--adapters", "N", "LoRA adapters of the base model (docs/workflow.md)"),              \
    CLI_OPT("--adapter-rank", "R", "their rank (default 16)"),                                     \
    CLI_OPT("--adapter-targets", "attn|all", "q, k, v, o (default) or every linear layer"),        \
    CLI_OPT("--adapter-popularity", "zipf:S", "share of the i-th adapter ~ i^-S (default zipf:1.1), or uniform"), \
    CLI_OPT("--adapter-cache", "K", "resident adapters per replica (default: the smallest with <= 1% misses)")
#endif
