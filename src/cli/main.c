/* src/cli/main.c — the meshplan command. Uses only the public headers in include/.
 *
 *   meshplan predict  --model M --gpu G --gpus N [--gpus-per-node K] [--scale-out LINK]
 *                     [--cluster NODE|PRESET|FILE] [--catalog FILE] --plan "tp=8,pp=4,..." [--json]
 *   meshplan collective --op OP --gpu G --gpus N ... --sizes A:B [--algo A] [--csv|--json]
 *   meshplan compare  --model M --gpus N --plan "..." --cluster C1 --cluster C2 ... [--json]
 *   meshplan validate FILE.csv [--json] [--catalog FILE]
 *   meshplan catalog  [gpus|links|nodes|models] [--json]
 *   meshplan search   --model M --gpu G --gpus N|A:B --gb B [...] [--json|--csv]
 *   meshplan scale    --model M --gpu G --gpus A:B --gb B [...] [--json|--csv]
 *   meshplan run      --model M --gpu G --gpus N --plan "..." --tokens T [--json] [options]
 *   meshplan trace    --model M --gpu G --gpus N --plan "..." [-o step.json] [--json] ...
 *   meshplan islands-scale --model M --cluster ISLANDS --plan "..." --island-gpus A:B [--json]
 *
 * Exit codes: 0 success, 2 bad usage or bad input (the message names the field, the value and
 * what was expected), 1 internal error.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *usage_text =
    "usage: meshplan <command> [options]\n"
    "\n"
    "commands:\n"
    "  predict   --model M --gpu G --gpus N [--gpus-per-node K] [--scale-out LINK]\n"
    "            [--cluster NODE|PRESET|FILE] [--catalog FILE]\n"
    "            --plan \"tp=8,pp=4,mb=1,gb=512,seq=4096,...\" [--json]\n"
    "            M is a catalog key, a Hugging Face config.json or a model JSON file.\n"
    "  collective --op all_reduce --gpu G --gpus N [--gpus-per-node K] [--scale-out LINK]\n"
    "            [--cluster C] [--sizes 8:8G[:F]] [--algo auto|nccl|ring,tree,...]\n"
    "            [--type float] [--ranks N --stride S] [--csv|--json]   nccl-tests style table\n"
    "  compare   --model M --gpus N --plan \"...\" --cluster C1 --cluster C2 ... [--gpu G]\n"
    "            [--json|--csv]   the same plan on other wiring, one row per cluster\n"
    "  validate  FILE.csv [--json] [--catalog FILE]   predict published runs, report the error\n"
    "  catalog   [gpus|links|nodes|models] [--json] [--catalog FILE]\n"
    "  search    --model M --gpu G --gpus N|A:B --gb B [--seq S] [--precision P] [--fix \"tp=8,...\"]\n"
    "            [--objective throughput|time-to-train|cost|energy] [--tokens T] [--price-gpu-hour USD]\n"
    "            [--top K] [--threads T] [--rank \"plan\"] [--orders default|all] [--no-prune]\n"
    "            [--json|--csv]\n"
    "            every valid plan evaluated; the best, the Pareto frontiers, the rejections and why\n"
    "  scale     --model M --gpu G --gpus A:B --gb B [search options] [--json|--csv]\n"
    "            best plan per GPU count (doubling), strong- and weak-scaling efficiency\n"
    "  run       --model M --gpu G --gpus N --plan \"...\" --tokens T   a whole training run:\n"
    "            energy, power, cost, failures, checkpoints, goodput. Options: [--json]\n"
    "            [--price-gpu-hour 2.5 | --capex-per-gpu USD [--amortization-years 4]\n"
    "            [--price-kwh 0.08]] [--pue 1.2] [--grid-gco2-per-kwh 400] [--power-cap-W W]\n"
    "            [--host-util 0.2] [--checkpoint-GBps 500] [--async-checkpoint]\n"
    "            [--checkpoint-interval-s S] [--restart-s 600] [--repair-h 24]\n"
    "            [--spare-nodes auto|N] [--failures default|FILE] [--failure-scale 1]\n"
    "            [--trials 1000] [--seed 1] [--gpus-per-node K] [--scale-out LINK] [--catalog FILE]\n"
    "  trace     --model M --gpu G --gpus N --plan \"...\" [-o step.json] [--json]\n"
    "            [--contention F] [--tp-overlap] [--p2p-overlap] [--analytical-rules]\n"
    "            [--straggler-rank R] [--straggler-compute X] [--straggler-link X] [--max-events N]\n"
    "            simulate one step event by event; write its Chrome trace (Perfetto) and\n"
    "            print the simulated step next to the analytical one\n"
    "  islands-scale --model M --cluster ISLANDS --plan \"...,sync=...\" --island-gpus A:B\n"
    "            [--island NAME] [--weak] [--quality-factor F] [--json]   grow the islands (doubling)\n"
    "            and show where bigger islands stop paying (docs/islands.md); also reached as\n"
    "            `scale ... --island-gpus A:B`\n"
    "  import    FILE [--model M] [--gpu G] [--gpus N] [--format F] [--json] [--no-predict]\n"
    "            [--section.key value ...]   read a Megatron-LM script, DeepSpeed JSON, torchtitan\n"
    "            TOML, NeMo or axolotl/LLaMA-Factory YAML, config.json: model, cluster, plan (each\n"
    "            field's source or the default assumed), then the prediction (docs/import.md);\n"
    "            predict|run|trace|search --config FILE take the job from such a file, and\n"
    "            search --emit megatron|torchtitan|deepspeed|nemo writes the best plan in it\n"
    "  help      this text\n"
    "\n"
    "plan keys: tp pp vpp dp cp ep sp mb gb seq zero hsdp recompute(none|selective|full)\n"
    "           precision(bf16|fp16|fp8) flash(0|1) schedule(1f1b|interleaved|gpipe|zb)\n"
    "           order(rank order, innermost first; default tp-cp-ep-dp-pp)\n"
    "           doc_len(mean tokens per document when sequences pack documents under a\n"
    "           document mask; default: one causal sequence)\n"
    "           etp cp_algo(ring|allgather) capacity_factor imbalance fp8_comm(0|1)\n"
    "           attn_kernel(fa2|fa3|flex) fsdp(1|2: ZeRO-3 as flat parameters, or as PyTorch\n"
    "           FSDP2, whose gathers are copied out on the compute stream)\n"
    "           across islands (--cluster ISLANDS, docs/islands.md): sync(hsdp|diloco|pp|fl)\n"
    "           inner_steps compress(none|bf16|fp8|int8|topk:F) fragments overlap\n"
    "           exchange(ring|rotate|star) split(speed|gpus|W1:W2:...) buckets\n"
    "           transport(stream|rendezvous) ring(bottleneck|tsp|listed); predict --quality-factor F\n"
    "clusters:  C is a catalog node (dgx-h100, ...), a shipped cluster (docs/cluster.md) or a\n"
    "           cluster description file\n"
    "exit codes: 0 ok, 2 bad usage or input, 1 internal error\n";

int cli_main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_INPUT;
    }
    const char *cmd = argv[1];
    /* One line per command; each lives in its own cmd_*.c. */
    static const struct { const char *name; int (*run)(int, char **); } commands[] = {
        {"predict", cmd_predict},
        {"import", cmd_import},
        {"validate", cmd_validate},
        {"catalog", cmd_catalog},
        {"search", cmd_search},
        {"scale", cmd_scale},
        {"run", cmd_run},
        {"trace", cmd_trace},
        {"collective", cmd_collective},
        {"compare", cmd_compare},
        {"islands-scale", cmd_islands_scale},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) {
            /* `meshplan COMMAND --help`: the usage, which lists every command's options. */
            for (int a = 2; a < argc; a++)
                if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
                    fputs(usage_text, stdout);
                    return 0;
                }
            return commands[i].run(argc - 2, argv + 2);
        }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("meshplan %s\n", MESHPLAN_VERSION);
        return 0;
    }
    fprintf(stderr, "meshplan: unknown command \"%s\"\n%s", cmd, usage_text);
    return EXIT_INPUT;
}

/* The fuzz harness (fuzz/fuzz_cli.c) builds these files with MESHPLAN_CLI_NO_MAIN and calls
 * cli_main itself. */
#ifndef MESHPLAN_CLI_NO_MAIN
int main(int argc, char **argv) { return cli_main(argc, argv); }
#endif
