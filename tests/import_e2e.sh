#!/usr/bin/env bash
# tests/import_e2e.sh — end-to-end checks of `meshplan import`, `--config` and `search --emit`
# on the published configs of tests/data/import: exit codes, the JSON keys (model, plan with
# every key, plan_string, cluster, assumed, prediction), a model meshplan cannot resolve, bad
# input (exit 2 naming the file, the line and what was expected), and emit -> import.
#
#   import_e2e.sh <path-to-meshplan> <repo-root>
#
# Prints "ok - ..." or "FAIL - ..." per check, then "N passed, M failed"; exits 1 on a failure.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 <path-to-meshplan> <repo-root>" >&2
    exit 2
fi
MP=$1
D=$2/tests/data/import
TMP=$(mktemp -d "${TMPDIR:-/tmp}/meshplan-import.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
export HF_HOME=$TMP/hf # an empty Hugging Face cache: nothing resolves from outside the repo
PASSED=0
FAILED=0

# check NAME WANT_RC NEEDLE ARGS...: run meshplan ARGS; the exit code must be WANT_RC and
# stdout+stderr must contain NEEDLE ("" for none).
check() {
    local name=$1 want=$2 needle=$3
    shift 3
    "$MP" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq "$want" ] && { [ -z "$needle" ] || grep -qF -- "$needle" "$TMP/out" "$TMP/err"; }; then
        PASSED=$((PASSED + 1))
        echo "ok - $name"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL - $name (exit $rc, wanted $want; looked for: $needle)"
        head -c 1500 "$TMP/out" "$TMP/err"
    fi
}

# json_check NAME PYTHON-EXPR ARGS...: the JSON on stdout must make EXPR true (d is the object).
json_check() {
    local name=$1 expr=$2
    shift 2
    if "$MP" "$@" >"$TMP/out" 2>"$TMP/err" &&
        python3 -c "import json,sys; d=json.load(open('$TMP/out')); sys.exit(0 if ($expr) else 1)"; then
        PASSED=$((PASSED + 1))
        echo "ok - $name"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL - $name ($expr)"
        head -c 1500 "$TMP/out" "$TMP/err"
    fi
}

# a checkpoint directory, and a Hugging Face cache holding one model
mkdir -p "$TMP/ckpt" "$HF_HOME/hub/models--microsoft--Phi-3-mini-4k-instruct/snapshots/0a1b2c"
cp "$D/hf_gemma-2-9b_finetune_config.json" "$TMP/ckpt/config.json"
cp "$D/hf_phi-3-mini-4k-instruct_config.json" \
    "$HF_HOME/hub/models--microsoft--Phi-3-mini-4k-instruct/snapshots/0a1b2c/config.json"
printf 'base_model: microsoft/Phi-3-mini-4k-instruct\nadapter: lora\nlora_r: 16\nmicro_batch_size: 2\nsequence_len: 2048\n' >"$TMP/phi3.yaml"

check "import a Megatron script: text names the file and line" 0 "megatron_mixtral_8x7b.sh:85:--expert-model-parallel-size" \
    import "$D/megatron_mixtral_8x7b.sh" --gpus 32
json_check "import --json: every plan key with its resolved value, defaults written out" \
    "all(k in d['plan'] for k in ('tp','pp','cp','ep','dp','zero','mb','gb','seq','recompute','precision')) and d['plan']['cp']==1 and d['plan']['ep']==8 and d['model']['params']>46e9 and 'step_s' in d['prediction']" \
    import "$D/megatron_mixtral_8x7b.sh" --gpus 32 --json
json_check "import --json: plan_string pastes into --plan" \
    "d['plan_string'].startswith('tp=8,pp=16,') and d['cluster']['gpus']==128" \
    import "$D/megatron_gpt3_175b.sh" --gpus 128 --json --no-predict
json_check "GPU type stated nowhere: the default, under assumed" \
    "d['cluster']['gpu']=='h100-sxm5-80gb' and any(a['key']=='gpu' for a in d['assumed'])" \
    import "$D/megatron_llama3_8b_h100_fp8.sh" --json
json_check "torchtitan preset comment: 64 A100" \
    "d['cluster']['gpus']==64 and d['cluster']['gpu'].startswith('a100') and d['plan']['zero']==3 and d['plan']['fsdp']==2" \
    import "$D/torchtitan_llama3_8b.toml" --json
json_check "torchtitan overrides as torchtitan takes them" \
    "d['plan']['cp']==2 and d['plan']['recompute']=='full' and d['sources']['cp'].startswith('command line')" \
    import "$D/torchtitan_llama3_8b.toml" --gpus 4 --parallelism.context_parallel_degree 2 --activation_checkpoint.mode=full --json
json_check "a model meshplan cannot resolve: exit 0, model null, no prediction, its id under assumed" \
    "d['model'] is None and 'prediction' not in d and any(a['key']=='model' and 'Qwen3-4B' in a['value'] for a in d['assumed'])" \
    import "$D/lora_llamafactory_qwen3_ds3.yaml" --json
json_check "QLoRA: finetune, lora_rank, lora_targets and FSDP offload in the plan" \
    "d['plan']['finetune']=='qlora' and d['plan']['lora_rank']==8 and d['plan']['lora_targets']=='all' and d['plan']['offload']=='all' and not any(u['key'] in ('finetune','lora_rank','offload_param') for u in d['unsupported'])" \
    import "$D/lora_axolotl_llama3_qlora_fsdp_70b.yaml" --gpus 8 --json --no-predict
json_check "DeepSpeed JSON with --model and --gpus" \
    "d['plan']['zero']==2 and d['plan']['offload']=='optimizer' and d['prediction']['offload']['host_bytes_per_gpu'] > 0" \
    import "$D/deepspeed_ds_z2_offload_config.json" --model llama3-8b --gpus 8 --json
json_check "DeepSpeed \"auto\" from the Trainer's command line" \
    "d['plan']['mb']==2 and d['plan']['gb']==64 and d['sources']['mb']=='command line: --per_device_train_batch_size'" \
    import "$D/deepspeed_ds_z3_config.json" --model llama3-8b --gpus 8 --per_device_train_batch_size 2 --gradient_accumulation_steps 4 --bf16 --json --no-predict
json_check "NeMo Launcher: num_nodes x devices" \
    "d['cluster']['gpus']==1024 and d['plan']['vpp']==6" import "$D/nemo_launcher_gpt3_175b.yaml" --json --no-predict
json_check "a checkpoint directory holding config.json" \
    "d['model']['key']=='gemma2' and abs(d['model']['params']-9.24e9)<0.05e9" \
    import "$TMP/ckpt" --json --no-predict
json_check "a Hugging Face id from the local cache (HF_HOME)" \
    "d['model'] is not None and d['model']['key']=='phi-3-mini-4k-instruct' and 'Hugging Face cache' in d['model']['source']" \
    import "$TMP/phi3.yaml" --gpus 8 --json --no-predict

check "predict --config" 0 "plan     tp=8" predict --config "$D/torchtitan_llama3_70b.toml"
check "run --config" 0 "" run --config "$D/torchtitan_llama3_70b.toml" --tokens 1e12
check "trace --config" 0 "" trace --config "$D/megatron_llama3_8b_h100_fp8.sh" -o "$TMP/step.json"
check "--config with a model it cannot resolve: exit 2 naming it" 2 "Qwen/Qwen3-4B-Instruct-2507" \
    predict --config "$D/lora_llamafactory_qwen3_ds3.yaml"
check "search --config: the file's model, GPUs, batch and sequence" 0 "job: gb 64 x seq 8192" \
    search --config "$D/torchtitan_llama3_70b.toml" --top 3
"$MP" search --config "$D/torchtitan_llama3_70b.toml" --emit torchtitan >"$TMP/best.toml" 2>/dev/null
check "search --config then --emit torchtitan: the written TOML imports back on 64 A100" 0 "cluster: 64 x a100" \
    import "$TMP/best.toml" --no-predict
check "search --emit torchtitan" 0 "[parallelism]" search --model llama3-8b --gpu h100-sxm5-80gb --gpus 16 --gb 256 --seq 8192 --emit torchtitan
"$MP" search --model llama3-8b --gpu h100-sxm5-80gb --gpus 16 --gb 256 --seq 8192 --emit megatron >"$TMP/emitted.sh" 2>/dev/null
check "the emitted Megatron script imports back" 0 "plan string: tp=" import "$TMP/emitted.sh" --no-predict

# bad input: exit 2 with the file, the line and what was expected
printf 'trainer:\n  devices: 8\n  num_nodes: [1, 2\n' >"$TMP/cut.yaml"
check "truncated YAML" 2 "cut.yaml:4:1: error: flow sequence without a closing bracket (not valid YAML)" import "$TMP/cut.yaml"
printf '[training]\nseq_len = 8192\n[parallelism\n' >"$TMP/cut.toml"
check "truncated TOML" 2 "cut.toml:3: not valid TOML" import "$TMP/cut.toml"
printf '#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --bf16\n' >"$TMP/noflags.sh"
check "a script with no model flags" 2 "noflags.sh:2: no model flags: expected --num-layers" import "$TMP/noflags.sh"
mkdir -p "$TMP/empty_ckpt"
check "a directory with no config.json" 2 "a directory without config.json" import "$TMP/empty_ckpt"
check "a batch that does not divide" 2 "megatron_mixtral_8x7b.sh:85:--expert-model-parallel-size = 8" import "$D/megatron_mixtral_8x7b.sh"
check "GPUs that the degrees do not divide" 2 "does not divide the 8 GPUs" import "$D/megatron_gpt3_175b.sh"
check "an encoder-decoder (T5) refused" 2 "encoder-decoder" import "$D/hf_t5-v1_1-xxl_config.json"
check "Megatron's T5 script refused" 2 "pretrain_t5.py trains an encoder-decoder" import "$D/megatron_t5_220m.sh"
check "import with no file" 2 "expected one FILE" import

# A mistyped torchtitan override is listed as not understood (was swallowed by a "parallelism."
# prefix and priced as tp=1 without a word); a real one still sets its degree.
check "a mistyped --parallelism override is listed" 0 \
    "keys not understood (1): parallelism.tensor_paralel_degree (command line: --parallelism.tensor_paralel_degree)" \
    import "$D/torchtitan_llama3_8b.toml" --parallelism.tensor_paralel_degree 8
check "the real --parallelism override sets tp" 0 "tp=8" \
    import "$D/torchtitan_llama3_8b.toml" --parallelism.tensor_parallel_degree 8

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
