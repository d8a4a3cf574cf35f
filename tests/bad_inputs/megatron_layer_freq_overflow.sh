torchrun pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 --num-experts 4 --moe-layer-freq "[1,1]*9223372036854775807"
