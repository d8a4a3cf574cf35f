/* src/report/report_states.c — the model's states (optimizer, fine-tuning) and offload (GPU
 * bytes saved, host RAM per node, PCIe/NVMe traffic and its exposed time) as predict writes
 * them: the "states" and "offload" JSON objects and a few text lines. */
#include <math.h>

#include "report/report_states.h"

#define GiB 1073741824.0

static json_t *num(double x) { return json_real(isfinite(x) ? x : 0.0); }

static const char *targets_text(const mp_plan *p, char *buf, size_t cap)
{
    static const char *const names[] = {"q", "k", "v", "o", "gate", "up", "down"};
    const unsigned t = p->lora_targets ? p->lora_targets : (MP_LORA_Q | MP_LORA_V);
    if (t == MP_LORA_ALL)
        return "all";
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < 7 && n + 6 < cap; i++)
        if (t & (1u << i))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "+" : "", names[i]);
    return buf;
}

void mp_report_states_json(json_t *o, const mp_plan *p, const mp_estimate *e)
{
    const mp_states *s = &e->states;
    char tbuf[48];
    json_t *st = json_object();
    json_object_set_new(st, "optimizer", json_string(mp_optimizer_name((mp_optimizer)p->optimizer)));
    json_object_set_new(st, "opt_dtype", json_string(p->opt_dtype == 1 ? "bf16" : "fp32"));
    json_object_set_new(st, "master_weights", json_boolean(s->master_bytes_per_param > 0));
    json_object_set_new(st, "finetune", json_string(mp_finetune_name((mp_finetune)p->finetune)));
    if (p->finetune != MP_FT_FULL) {
        json_object_set_new(st, "lora_rank", json_integer(p->lora_rank > 0 ? p->lora_rank : 8));
        json_object_set_new(st, "lora_targets", json_string(targets_text(p, tbuf, sizeof tbuf)));
    }
    json_object_set_new(st, "trainable_params", num(s->trainable_params));
    json_object_set_new(st, "frozen_params", num(s->frozen_params));
    json_object_set_new(st, "state_bytes_per_param", num(s->state_bytes_per_param));
    json_object_set_new(st, "master_bytes_per_param", num(s->master_bytes_per_param));
    json_object_set_new(st, "step_transient_bytes", num(s->step_transient_bytes));
    json_object_set_new(st, "gpu_optimizer_s", num(s->gpu_optimizer_s));
    json_object_set_new(st, "muon_s", num(s->muon_s));
    json_object_set_new(o, "states", st);
    json_t *of = json_object();
    json_object_set_new(of, "mode", json_string(mp_offload_name((mp_offload)p->offload)));
    json_object_set_new(of, "device", json_string(p->offload_device == 1 ? "nvme" : "cpu"));
    json_object_set_new(of, "gpu_bytes_saved", num(s->gpu_bytes_saved));
    json_object_set_new(of, "host_bytes_per_gpu", num(s->host_bytes_per_gpu));
    json_object_set_new(of, "host_bytes_per_node", num(s->host_bytes_per_node));
    json_object_set_new(of, "nvme_bytes_per_gpu", num(s->nvme_bytes_per_gpu));
    json_object_set_new(of, "pcie_bytes_per_step", num(s->pcie_bytes_per_step));
    json_object_set_new(of, "nvme_bytes_per_step", num(s->nvme_bytes_per_step));
    json_object_set_new(of, "pcie_Bps", num(s->pcie_Bps));
    json_object_set_new(of, "nvme_Bps", num(s->nvme_Bps));
    json_object_set_new(of, "host_mem_Bps", num(s->host_mem_Bps));
    json_object_set_new(of, "pcie_s", num(s->pcie_s));
    json_object_set_new(of, "nvme_s", num(s->nvme_s));
    json_object_set_new(of, "cpu_optimizer_s", num(s->cpu_optimizer_s));
    json_object_set_new(of, "exposed_s", num(s->offload_exposed_s));
    json_object_set_new(o, "offload", of);
}

void mp_report_states_text(FILE *f, const mp_plan *p, const mp_estimate *e)
{
    const mp_states *s = &e->states;
    const int fp32 = p->precision == MP_DT_FP32 || p->precision == MP_DT_TF32;
    if (p->optimizer == MP_OPT_ADAMW && p->opt_dtype == 0 && !p->no_master && !fp32 &&
        p->finetune == MP_FT_FULL && p->offload == MP_OFF_NONE)
        return;
    char tbuf[48];
    fprintf(f, "\nmodel states (most loaded GPU)\n  optimizer %s, states %.3g bytes per trained parameter",
            mp_optimizer_name((mp_optimizer)p->optimizer), s->state_bytes_per_param);
    if (s->master_bytes_per_param > 0)
        fprintf(f, " + fp32 master %.0f", s->master_bytes_per_param);
    fprintf(f, "; step %.3g s on the GPU", s->gpu_optimizer_s);
    if (s->muon_s > 0)
        fprintf(f, " (Newton-Schulz and its all-gather %.3g s)", s->muon_s);
    fprintf(f, "\n");
    if (s->step_transient_bytes > 0)
        fprintf(f, "  optimizer-step working buffers %.2f GiB (Muon, the largest matrix whole)\n",
                s->step_transient_bytes / GiB);
    if (p->finetune != MP_FT_FULL)
        fprintf(f, "  %s: rank %lld on %s, %.4g M trained parameters, %.4g M frozen (%s base)\n",
                mp_finetune_name((mp_finetune)p->finetune), (long long)(p->lora_rank > 0 ? p->lora_rank : 8),
                targets_text(p, tbuf, sizeof tbuf), s->trainable_params / 1e6, s->frozen_params / 1e6,
                p->finetune == MP_FT_QLORA ? "4-bit NF4" : "16-bit");
    if (p->offload == MP_OFF_NONE)
        return;
    fprintf(f, "offload %s to %s\n", mp_offload_name((mp_offload)p->offload),
            p->offload_device == 1 ? "NVMe" : "host RAM");
    fprintf(f, "  GPU memory saved %.2f GiB; host RAM %.2f GiB per GPU, %.1f GiB per node",
            s->gpu_bytes_saved / GiB, s->host_bytes_per_gpu / GiB, s->host_bytes_per_node / GiB);
    if (s->nvme_bytes_per_gpu > 0)
        fprintf(f, "; NVMe %.2f GiB per GPU", s->nvme_bytes_per_gpu / GiB);
    fprintf(f, "\n  PCIe %.2f GiB per step per GPU at %.1f GB/s: %.3g s", s->pcie_bytes_per_step / GiB,
            s->pcie_Bps / 1e9, s->pcie_s);
    if (s->nvme_bytes_per_step > 0)
        fprintf(f, "; NVMe %.2f GiB at %.2f GB/s: %.3g s", s->nvme_bytes_per_step / GiB,
                s->nvme_Bps / 1e9, s->nvme_s);
    fprintf(f, "\n  host optimizer step %.3g s (at %.1f GB/s of host memory per GPU); exposed in the "
               "step %.3g s\n", s->cpu_optimizer_s, s->host_mem_Bps / 1e9, s->offload_exposed_s);
}
