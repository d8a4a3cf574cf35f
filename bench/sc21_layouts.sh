#!/bin/sh
# bench/sc21_layouts.sh — runs.csv with the Narayanan et al. 2021 Table 1 rows (meg21_t1_*) given the
# micro-batch and interleaving depth of the authors' own launch script for that table:
# NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (README: "scripts that were used to produce the
# results" of arXiv 2104.04473; container nvcr.io/nvidia/pytorch:20.12-py3, examples/sc21/SRUN.sh).
# MBS and --num-layers-per-virtual-pipeline-stage per model (v = layers / pp / that value; no flag: 1F1B):
#   1.7B 16 -, 3.6B 16 -, 7.5B 16 -, 18B 8 -, 39B 4 - (v 1), 76B 2 5 (v 3), 145B 2 5 (v 2),
#   310B 1 3 (v 2), 530B 1 1 (v 3), 1T 1 - (v 1).
# runs.csv leaves these cells empty; validate fills them from the same script (src/validate/validate.c
# source_layouts, each with its line), so on the current code the copy this writes validates to the
# same figures as runs.csv itself: a cross-check of that table. docs/stacks.md ("The launch scripts
# of the 2021 paper") gives what it moved. Usage: bench/sc21_layouts.sh [runs.csv] > runs_sc21.csv
in=${1:-../shared/validation/runs.csv}
awk -F, -v OFS=, '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; print; next }
$1 ~ /^meg21_t1_/ {
    n = substr($1, 10) + 0
    split("16 16 16 8 4 2 2 1 1 1", mb, " ")
    split("1 1 1 1 1 3 2 2 3 1", v, " ")
    $(col["micro_batch"]) = mb[n]
    $(col["vpp"]) = v[n]
}
{ print }' "$in"
