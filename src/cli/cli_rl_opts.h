/* src/cli/cli_rl_opts.h — the job options of `meshplan rl` and `meshplan rl-search`, written once
 * (an X-macro, as src/plan/plan_keys.h): both commands' option tables expand CLI_RL_JOB_OPTS, and
 * cli_rl_job (cmd_rl.c) reads them for both. One help text per option; where rl-search treats an
 * option differently (--placement is ignored, the rollout tp is searched) the text says so.
 *
 * X(ctor, name, value, help): ctor is CLI_REQ or CLI_OPT (src/cli/cli.h). */
#ifndef MESHPLAN_CLI_RL_OPTS_H
#define MESHPLAN_CLI_RL_OPTS_H

#include "cli.h"

#define CLI_RL_JOB_OPTS(X)                                                                               \
    X(CLI_REQ, "--model", "M", "the actor model: " CLI_MODEL_HELP)                                       \
    X(CLI_OPT, "--cluster", "C", "a catalog node (dgx-h100), a shipped cluster or a cluster file")       \
    X(CLI_OPT, "--gpu", "G", "the GPU, a catalog key (its usual node), instead of --cluster")            \
    X(CLI_REQ, "--gpus", "N", "GPUs of the job (both pools)")                                            \
    X(CLI_OPT, "--gpus-per-node", "K", "GPUs per node (default: the GPU's usual node)")                  \
    X(CLI_OPT, "--scale-out", "LINK", "scale-out link key, e.g. ib-ndr-400 (default: the node's NICs)")  \
    X(CLI_OPT, "--catalog", "FILE", "a catalog file whose entries add to or replace the built-in ones")  \
    X(CLI_OPT, "--algorithm", "A", "ppo, grpo (default), dapo, rloo or reinforce++")                     \
    X(CLI_OPT, "--prompts", "P", "prompts per step (default 512)")                                       \
    X(CLI_OPT, "--responses", "R", "responses per prompt (default 8)")                                   \
    X(CLI_OPT, "--prompt-len", "T", "mean prompt tokens (default 1024)")                                 \
    X(CLI_OPT, "--response-len", "SPEC",                                                                 \
      "\"mean=2000,max=8192,dist=lognormal[,sigma=1]\" (dist fixed, lognormal, uniform)")                \
    X(CLI_OPT, "--placement", "P",                                                                       \
      "colocated (default), disaggregated:rollout=48,train=16, async_one_step[:...], "                  \
      "fully_async[:...,staleness=0.5]; rl-search tries every placement and ignores it")                 \
    X(CLI_OPT, "--rollout-plan", "PLAN",                                                                 \
      "the rollout engine's inference plan keys, \"tp=2,engine=vllm\" (meshplan infer --help); "        \
      "rl-search searches its tp")                                                                       \
    X(CLI_OPT, "--train-plan", "PLAN", "the trainer's plan keys, \"zero=3,mb=2\" (default zero=3,recompute=full)") \
    X(CLI_OPT, "--mini-batches", "K", "optimizer steps per RL step (default 1, or the train plan's gb)") \
    X(CLI_OPT, "--epochs", "E", "PPO epochs over the batch (default 1)")                                 \
    X(CLI_OPT, "--train-tokens-per-gpu", "T",                                                            \
      "dynamic batching: pack micro-batches to T tokens per GPU (verl ppo_max_token_len_per_gpu; "      \
      "default 0: the train plan's mb)")                                                                 \
    X(CLI_OPT, "--partial-rollout", "0|1", "pause unfinished responses at the sync (default on for fully_async)") \
    X(CLI_OPT, "--overprovision", "X", "generate (1+X) x the responses, keep the first to finish (default 0)") \
    X(CLI_OPT, "--max-num-seqs", "S", "sequences in flight per engine (default: the engine's cap and KV pool)") \
    X(CLI_OPT, "--sync", "S", "weight sync: bucketed (default), per_tensor or cpu")                      \
    X(CLI_OPT, "--offload", "0|1", "colocated: swap the engine and the trainer's state to host memory (default 1)") \
    X(CLI_OPT, "--price-gpu-hour", "USD", "rental price per GPU-hour (default 2.0)")

/* The rows of a cli_option table: CLI_OPTS_RL_JOB, (then the command's own options). */
#define CLI_RL_OPT_ROW(ctor, name, value, help) ctor(name, value, help),
#define CLI_OPTS_RL_JOB CLI_RL_JOB_OPTS(CLI_RL_OPT_ROW)

#endif
