#!/usr/bin/env python3
"""Records PyTorch caching-allocator snapshots of model runs on the device machine, for memcarve's replay.

Each workload runs in a fresh Python process (an empty caching allocator, nothing reserved before the recording)
with random weights built from configs (nothing is downloaded). The recording starts before the model is moved to
the GPU and stops after everything is freed, without `empty_cache`, like the shipped traces (traces/README.md).
Stack frames are not recorded (`context=None`) and any `frames` key is stripped anyway; so are the `time_us` stamps
(from the forty-seventh session on: no tool here reads them, and they made four fifths of a compressed file,
stablelm_small_sample_generate 707,528 bytes with them, 140,036 without). The snapshot is pickled with builtin types
only (what `memcarve_trace::torch` reads) and compressed with xz (preset 9, extreme: about 0.58 of gzip -9's size,
so that more recordings fit the repository).

    python3 scripts/record_snapshots.py OUTDIR [WORKLOAD ...]      # all workloads when none is named

Workloads: bert_infer, vit_train_amp, two_stream_train, llama_decode, unet_denoise, gpt2_medium_ckpt_train,
t5_beam_generate, gpt2_sample_generate, moe_train, bert_finetune_dynamic, convnext_infer, detection_infer,
dlrm_train, llama_hf_generate, opt_generate, gpt2_beam_generate, mla_generate, qwen_sample_generate,
bart_beam_generate, neox_train_accum, resnet_multiscale_train, mistral_generate, t5_train_dynamic,
efficientnet_train, swin_infer, llama_prefill_lengths, llama_partial_finetune, conv_autoencoder_infer,
serving_continuous_batch, whisper_decode, clip_train, gnn_train, video_train, compiled_train, long_context_train,
offload_train, lstm_train, speculative_decode, gan_train, fft_science, cuda_graph_infer, ppo_train,
ssm_scan_train, tabular_mlp_train, resnet18_infer_small, vae_train, segmentation_train, bert_long_infer,
diffusion_train, distill_train, lora_finetune, caption_generate, detection_train, sparse_embedding_train,
mae_pretrain, wav2vec_train, pointnet_train, ema_train, int8_weight_only_decode, prefetch_stream_infer,
grad_bucket_train, transformer_xl_train, nerf_train, fsdp_gather_train, lm_1b_train, llama_1b_generate,
vit_large_train, lm_2_7b_train, lm_6_7b_train, resnet50_bigbatch_infer, resnet152_bigbatch_train,
deeplab_hires_infer, roberta_mlm_train, paged_kv_serving, conformer_asr_train, unet3d_volume_train,
vit_huge_bigbatch_infer, long_prompt_serving, latent_diffusion_sample, mobilenet_infer, dual_stream_infer,
llama_padded_sample_generate, small_lm_train, cifar_resnet_train, minilm_embed_infer, vit_tiny_train,
vocoder_infer, mixtral_sample_generate, static_cache_generate, knn_retrieval, gru_translate, simclr_train,
gaussian_densify_train, packed_varlen_pretrain, nmt_transformer_train, histogram_boosting, resnet34_infer_mid,
lraspp_segment_infer, distilbert_qa_infer, small_decoder_sample_generate, efficientnet_infer_small,
regnet_train_small, distilgpt2_greedy_generate, t5_small_greedy_translate, gcn_sparse_train, kws_conv1d_train,
bert_mini_embed_infer, small_unet_denoise_infer, squeezenet_infer, densenet_infer, vit_b32_infer,
shufflenet_train_small, opt_small_sample_generate, bart_small_greedy_summarize, tiny_llama_greedy_generate,
raft_flow_infer, sr_pixelshuffle_infer, model_sweep_train, neural_ode_train, keypoint_rcnn_infer,
multi_model_serving, spectrogram_transformer_train, longformer_infer, model_swap_infer, eval_copy_train,
ensemble_infer, adapter_switch_infer, teacher_late_distill, checkpoint_reload_train, bf16_direct_load_infer,
gpt2_half_short_generate, two_llms_serving, vision_lazy_load_infer, bert_large_half_infer, sweep_cnn_train,
clip_zero_shot_infer, t5_fp32_translate, dit_train, tts_autoregressive_infer, sam_prompt_infer,
mobilenet_v2_half_infer, vit_varres_infer, two_tower_retrieval_train, perceiver_train, mnasnet_half_infer,
googlenet_half_infer, shufflenet_half_infer, wide_resnet_half_infer, resnext_half_infer, gpt_neo_small_generate,
bloom_small_sample_generate, bert_base_qa_infer, lstm_lm_sample_small, regnet_half_infer, vgg11_bn_half_infer,
efficientnet_b1_half_infer, mobilenet_v3_train_small, distilroberta_infer, pythia_small_generate, t5_small_train,
squeezenet_half_train_eval, resnet101_half_infer, mobilenet_v3_large_half_infer, convnext_tiny_train_small,
electra_small_train, albert_base_infer, marian_small_generate, gpt2_small_train_bf16,
resnet18_train_then_half_infer, efficientnet_v2s_half_infer, deberta_small_infer, llama_tiny_train_bf16,
mobilenet_v3s_train_eval, blenderbot_small_beam_generate, wavenet_conv1d_train, gpt_bigcode_small_generate,
resnet50_autocast_bf16_infer, phi_small_sample_generate, deit_small_half_infer, sac_replay_train,
mpnet_sorted_embed_infer, m2m100_small_beam_generate, deeplabv3_mobilenet_half_infer, xlmr_finetune_dynamic_bf16,
regnet_train_val_bf16, fno_darcy_train, graph_attention_train, mlp_mixer_train, vqvae_hires_train,
vocab_250k_chunked_train, sr_hires_train, gp_cholesky_fit, voxel_cnn_train, lm_1_6b_varlen_train, vit_huge_train,
t5_large_train, gpt2_tiny_sample_generate, llama_small_beam_generate, bert_tiny_ner_infer, inception_v3_half_infer,
swin_t_train_mid, efficientnet_b3_train_mid, mamba_small_generate, segformer_infer, retinanet_infer,
bert_large_mlm_train_mid, convnext_base_train_mid, gpt2_medium_beam_generate (see WORKLOADS). Prints one line per
snapshot with its figures, computed as traces/README.md defines them, and writes OUTDIR/summary.json (with the
torch, CUDA and library versions and the GPU).
"""

import gc
import lzma
import io
import json
import os
import pickle
import random
import subprocess
import sys
import time

MAX_ENTRIES = 2_000_000  # far above any workload here: the ring buffer never drops an entry
MAX_COMPRESSED_BYTES = 1 << 20
MIB = float(1 << 20)


# ---------------------------------------------------------------- workloads (run in the child process)


def bert_infer(torch):
    """BERT-base (12 layers, 768 wide) inference, fp16, at several batch sizes and sequence lengths."""
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig()).eval()
    shapes = [(1, 32), (1, 128), (8, 128), (32, 128), (8, 512), (64, 256), (128, 64), (16, 384), (4, 512),
              (256, 128), (2, 64), (48, 512)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    with torch.inference_mode():
        for batch, seq in shapes:
            for _ in range(2):
                ids = torch.randint(0, 30522, (batch, seq), device="cuda", generator=gen)
                lengths = torch.randint(seq // 2, seq + 1, (batch, 1), device="cuda", generator=gen)
                mask = (torch.arange(seq, device="cuda")[None, :] < lengths).long()
                out = model(input_ids=ids, attention_mask=mask)
                pooled = out.pooler_output.float().sum().item()
                del ids, lengths, mask, out
    del model
    return {"last_pooled_sum": pooled, "shapes": shapes, "repeats": 2}


def train_classifier(torch, model, shapes, make_optimizer, classes=1000, channels_last=False, per_pixel=False,
                     autocast_dtype=None, label_smoothing=0.0, after_step=None):
    """Records from before `model` (built on the CPU by the caller, passed as its only reference so that it is freed
    here) moves to the GPU, then trains it for `classes` classes with fp16 autocast and a GradScaler (with
    `autocast_dtype` bf16: bf16 autocast and the GradScaler disabled), one step per input shape in `shapes` (batch
    first: images or clips) on random inputs and labels (a label per pixel of batch x channels x height x width
    inputs with `per_pixel`, for segmentation), the cross-entropy with `label_smoothing`; `after_step(model, index,
    gen)`, if given, is called after each step (its index from 0) with the recording's generator, to evaluate for
    instance. Returns the losses."""
    dtype = autocast_dtype or torch.float16
    start_recording(torch)
    model = model.cuda()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    model = model.train()
    opt = make_optimizer(model.parameters())
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for index, shape in enumerate(shapes):
        inputs = torch.randn(*shape, device="cuda", generator=gen)
        if channels_last:
            inputs = inputs.to(memory_format=torch.channels_last)
        label_shape = (shape[0], *shape[2:]) if per_pixel else (shape[0],)
        labels = torch.randint(0, classes, label_shape, device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=dtype):
            loss = torch.nn.functional.cross_entropy(model(inputs), labels, label_smoothing=label_smoothing)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del inputs, labels, loss
        if after_step is not None:
            after_step(model, index, gen)
    del model, opt, scaler
    return losses


def vit_train_amp(torch):
    """torchvision ViT-B/16 training, AdamW, fp16 autocast with GradScaler, 5 steps with growing batch."""
    import torchvision

    batches = [16, 32, 64, 96, 128]
    losses = train_classifier(torch, torchvision.models.vit_b_16(num_classes=1000),
                              [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"losses": losses, "batches": batches}


def two_stream_train(torch):
    """A 6-layer transformer encoder (768 wide) trained with bf16 autocast and AdamW on three streams: batches are
    copied to the GPU and normalised on a copy stream one step ahead (freed through `record_stream`), and every
    third step an evaluation forward runs on an eval stream."""
    nn = torch.nn
    d_in, d_model, classes = 256, 768, 1000

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(d_in, d_model)
            layer = nn.TransformerEncoderLayer(d_model, 12, 4 * d_model, dropout=0.1, batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, classes)

        def forward(self, x):
            return self.head(self.encoder(self.proj(x)))

    torch.manual_seed(0)
    model = Net()
    shapes = [(32, 128), (32, 256), (16, 512), (64, 128), (32, 384), (8, 1024), (32, 256), (48, 320), (24, 448)]
    host = [(torch.randn(b, t, d_in).pin_memory(), torch.randint(0, classes, (b, t)).pin_memory()) for b, t in shapes]
    start_recording(torch)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    main = torch.cuda.current_stream()
    copy_stream = torch.cuda.Stream()
    eval_stream = torch.cuda.Stream()

    def load(i):
        copy_stream.wait_stream(main)
        with torch.cuda.stream(copy_stream):
            feats, labels = host[i]
            x = feats.to("cuda", non_blocking=True)
            y = labels.to("cuda", non_blocking=True)
            x = (x - x.mean(dim=-1, keepdim=True)) / (x.std(dim=-1, keepdim=True) + 1e-5)
        return x, y, copy_stream.record_event()

    losses, evals = [], []
    pending = load(0)
    for step in range(len(shapes)):
        x, y, ready = pending
        main.wait_event(ready)
        x.record_stream(main)
        y.record_stream(main)
        if step + 1 < len(shapes):
            pending = load(step + 1)  # the next batch's copy overlaps this step
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, classes), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 3 == 2:
            eval_stream.wait_stream(main)
            with torch.cuda.stream(eval_stream), torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                model.eval()
                accuracy = (model(x).argmax(-1) == y).float().mean()
                model.train()
            x.record_stream(eval_stream)
            y.record_stream(eval_stream)
            evals.append(accuracy.item())
            del accuracy
        del x, y, logits, loss, ready
    torch.cuda.synchronize()
    del model, opt, pending
    return {"losses": losses, "evals": evals, "shapes": shapes,
            "streams": {"copy": copy_stream.cuda_stream, "eval": eval_stream.cuda_stream}}


def llama_decode(torch):
    """A Llama-style decoder (4 layers, 1024 wide, grouped-query attention with 2 KV heads of 128, 32k vocabulary),
    bf16, greedy decoding with a growing KV cache (the transformers dynamic cache), 5 rounds of different batch,
    prompt and generation lengths."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096)
    model = LlamaForCausalLM(config).eval()
    rounds = [(1, 512, 64), (8, 128, 64), (32, 32, 48), (4, 1024, 40), (16, 256, 40)]  # batch, prompt, new tokens
    start_recording(torch)
    model = model.to("cuda", torch.bfloat16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    tokens = 0
    with torch.inference_mode():
        for batch, prompt, new in rounds:
            ids = torch.randint(0, config.vocab_size, (batch, prompt), device="cuda", generator=gen)
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            next_ids = out.logits[:, -1:].argmax(-1)
            del out, ids
            for _ in range(new - 1):
                out = model(input_ids=next_ids, past_key_values=past, use_cache=True)
                past = out.past_key_values
                next_ids = out.logits[:, -1:].argmax(-1)
                del out
            tokens += int(next_ids.sum().item())
            del past, next_ids
    del model
    return {"rounds": rounds, "last_token_sum": tokens}


def unet_denoise(torch):
    """A diffusion-style UNet in plain torch (4 levels of 64/128/192/256 channels, 2 residual blocks down and 3 up
    per level with skip connections, group norm, a self-attention block at the lowest resolution, time and class
    embeddings), fp16 inference: a DDIM-style sampler with classifier-free guidance (conditional and unconditional
    halves in one batch) runs 20 denoising steps per image batch on 4-channel latents of 64² × 8, 128² × 4 and
    256² × 1, updating the latent each step."""
    import math

    nn, F = torch.nn, torch.nn.functional

    def norm(channels):
        return nn.GroupNorm(32, channels)

    class ResBlock(nn.Module):
        def __init__(self, c_in, c_out, emb):
            super().__init__()
            self.norm1, self.conv1 = norm(c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
            self.emb = nn.Linear(emb, c_out)
            self.norm2, self.conv2 = norm(c_out), nn.Conv2d(c_out, c_out, 3, padding=1)
            self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

        def forward(self, x, emb):
            h = self.conv1(F.silu(self.norm1(x)))
            h = h + self.emb(F.silu(emb))[:, :, None, None]
            h = self.conv2(F.silu(self.norm2(h)))
            return self.skip(x) + h

    class Attention(nn.Module):
        def __init__(self, channels, heads):
            super().__init__()
            self.heads = heads
            self.norm = norm(channels)
            self.qkv = nn.Conv2d(channels, 3 * channels, 1)
            self.proj = nn.Conv2d(channels, channels, 1)

        def forward(self, x):
            b, c, height, width = x.shape
            qkv = self.qkv(self.norm(x)).reshape(b, 3, self.heads, c // self.heads, height * width)
            q, k, v = qkv.transpose(-1, -2).unbind(1)
            out = F.scaled_dot_product_attention(q, k, v)
            return x + self.proj(out.transpose(-1, -2).reshape(b, c, height, width))

    class Upsample(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)

        def forward(self, x):
            return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))

    class UNet(nn.Module):
        def __init__(self, c_in=4, base=64, mults=(1, 2, 3, 4), classes=1000):
            super().__init__()
            emb = 4 * base
            self.base = base
            self.time = nn.Sequential(nn.Linear(base, emb), nn.SiLU(), nn.Linear(emb, emb))
            self.label = nn.Embedding(classes + 1, emb)  # the last label is the unconditional one
            self.inp = nn.Conv2d(c_in, base, 3, padding=1)
            self.down, skips, c = nn.ModuleList(), [base], base
            for level, channels in enumerate(base * m for m in mults):
                for _ in range(2):
                    self.down.append(ResBlock(c, channels, emb))
                    c = channels
                    skips.append(c)
                if level < len(mults) - 1:
                    self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                    skips.append(c)
            self.mid = nn.ModuleList([ResBlock(c, c, emb), Attention(c, 8), ResBlock(c, c, emb)])
            self.up = nn.ModuleList()
            for level in reversed(range(len(mults))):
                for _ in range(3):
                    self.up.append(ResBlock(c + skips.pop(), base * mults[level], emb))
                    c = base * mults[level]
                if level > 0:
                    self.up.append(Upsample(c))
            self.out = nn.Sequential(norm(c), nn.SiLU(), nn.Conv2d(c, c_in, 3, padding=1))

        def forward(self, x, t, y):
            half = self.base // 2
            freqs = torch.exp(torch.arange(half, device=x.device, dtype=torch.float32) * (-math.log(10000.0) / half))
            args = t[:, None].float() * freqs[None]
            emb = self.time(torch.cat([args.cos(), args.sin()], dim=-1).to(x.dtype)) + self.label(y)
            h = self.inp(x)
            skips = [h]
            for block in self.down:
                h = block(h, emb) if isinstance(block, ResBlock) else block(h)
                skips.append(h)
            for block in self.mid:
                h = block(h, emb) if isinstance(block, ResBlock) else block(h)
            for block in self.up:
                h = block(torch.cat([h, skips.pop()], dim=1), emb) if isinstance(block, ResBlock) else block(h)
            return self.out(h)

    torch.manual_seed(0)
    model = UNet().eval()
    images = [(64, 8), (128, 4), (256, 1)]  # latent side, batch
    steps, guidance, classes = 20, 4.0, 1000
    alphas = torch.cumprod(1.0 - torch.linspace(1e-4 ** 0.5, 0.02 ** 0.5, 1000, dtype=torch.float64) ** 2, 0).tolist()
    timesteps = [int(t) for t in torch.linspace(999, 0, steps).round().tolist()]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    sums = []
    with torch.inference_mode():
        for side, batch in images:
            x = torch.randn(batch, 4, side, side, device="cuda", dtype=torch.float16, generator=gen)
            labels = torch.randint(0, classes, (batch,), device="cuda", generator=gen)
            y = torch.cat([labels, torch.full_like(labels, classes)])
            for i, t in enumerate(timesteps):
                a, a_prev = alphas[t], (alphas[timesteps[i + 1]] if i + 1 < steps else 1.0)
                t_in = torch.full((2 * batch,), t, device="cuda", dtype=torch.long)
                eps_cond, eps_uncond = model(torch.cat([x, x]), t_in, y).chunk(2)
                eps = eps_uncond + guidance * (eps_cond - eps_uncond)
                x0 = (x - (1.0 - a) ** 0.5 * eps) / a ** 0.5
                x = a_prev ** 0.5 * x0 + (1.0 - a_prev) ** 0.5 * eps
                del t_in, eps_cond, eps_uncond, eps, x0
            sums.append(x.float().clamp(-1.0, 1.0).sum().item())
            del x, labels, y
    del model
    return {"images": images, "steps": steps, "guidance": guidance, "latent_sums": sums}


def gpt2_medium_ckpt_train(torch):
    """GPT-2 medium-sized (24 layers, 1024 wide, 16 heads, 50k vocabulary, tanh GELU) training with activation
    checkpointing (`gradient_checkpointing_enable`) and gradient accumulation over 4 micro-batches per optimizer
    step, bf16 autocast, gradient clipping, AdamW, 3 optimizer steps; the micro-batches have different sequence
    lengths."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=24, n_embd=1024, n_head=16, n_positions=1024, vocab_size=50257,
                        activation_function="gelu_pytorch_tanh", use_cache=False)
    model = GPT2LMHeadModel(config)
    model.gradient_checkpointing_enable()
    steps = [[(8, 512), (8, 384), (8, 448), (8, 320)],  # (batch, sequence length) of each micro-batch
             [(4, 1024), (4, 768), (4, 896), (4, 1024)],
             [(16, 256), (16, 192), (16, 224), (16, 128)]]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses, norms = [], []
    for micro_batches in steps:
        total = 0.0
        for batch, seq in micro_batches:
            ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda", generator=gen)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss / len(micro_batches)
            loss.backward()
            total += loss.item()
            del ids, loss
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(total)
    del model, opt
    return {"steps": steps, "losses": losses, "grad_norms": norms}


def t5_beam_generate(torch):
    """A T5-small-sized encoder-decoder (`T5ForConditionalGeneration(T5Config(...))`: 6 + 6 layers, 512 wide,
    32k vocabulary), bf16, beam search with 4 beams (the encoder-decoder cache reordered by beam each step) for
    4 rounds of (batch, input length, new tokens), inputs with random padding."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                      num_heads=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    rounds = [(1, 512, 24), (8, 128, 16), (16, 64, 12), (4, 256, 16)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, T5ForConditionalGeneration(config).eval(), rounds,
                                               config.vocab_size, num_beams=4, do_sample=False)
    return {"rounds": rounds, "num_beams": 4, "output_shapes": shapes, "token_sum": token_sum}


def generate_padded_rounds(torch, model, rounds, vocab_size, dtype=None, **generate_args):
    """Records from before `model` (an encoder-decoder built on the CPU by the caller, passed as its only reference
    so that it is freed here) moves to the GPU in bf16 (in `dtype` if given), then runs transformers' `generate`
    once per (batch, input length, new tokens) round on random inputs of ids in [2, vocab_size), padded on the right
    (token 0) from a random length of at least half the input length, exactly `new` tokens each. Returns the output
    shapes and a checksum of the tokens."""
    start_recording(torch)
    model = model.to("cuda", dtype or torch.bfloat16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for batch, length, new in rounds:
            ids = torch.randint(2, vocab_size, (batch, length), device="cuda", generator=gen)
            lengths = torch.randint(length // 2, length + 1, (batch, 1), device="cuda", generator=gen)
            mask = (torch.arange(length, device="cuda")[None, :] < lengths).long()
            ids = ids * mask  # padding is token 0
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                                 **generate_args)
            shapes.append(list(out.shape))
            token_sum += int(out.sum().item())
            del ids, lengths, mask, out
    del model, generate_args
    return shapes, token_sum


def generate_rounds(torch, model, rounds, vocab_size, low=0, seed_each_round=False, assistant=None, **generate_args):
    """Records from before `model` (built on the CPU by the caller, passed as its only reference so that it is freed
    here) moves to the GPU in fp16, then runs transformers' `generate` once per (batch, prompt, new tokens) round on
    random prompts of ids in [low, vocab_size), exactly `new` tokens each; `seed_each_round` seeds the global
    generator (the one sampling draws from) with the round's index first; `assistant`, if given (built like `model`),
    moves to the GPU with it and drafts tokens for it (`assistant_model`: assisted generation). Returns the rounds,
    the output shapes and a checksum of the tokens."""
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    if assistant is not None:
        generate_args["assistant_model"] = assistant.to("cuda", torch.float16)
        del assistant
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for index, (batch, prompt, new) in enumerate(rounds):
            if seed_each_round:
                torch.manual_seed(index)
            ids = torch.randint(low, vocab_size, (batch, prompt), device="cuda", generator=gen)
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, **generate_args)
            shapes.append(list(out.shape))
            token_sum += int(out.sum().item())
            del ids, out
    del model, generate_args
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def gpt2_sample_generate(torch):
    """GPT-2 small (`GPT2LMHeadModel(GPT2Config())`, 12 layers, 768 wide), fp16, `generate` with top-k sampling (the
    transformers dynamic KV cache grows a token at a time), 4 rounds (batch, prompt, new tokens) (1, 64, 48),
    (8, 128, 40), (32, 32, 32), (4, 384, 32)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config()
    rounds = [(1, 64, 48), (8, 128, 40), (32, 32, 32), (4, 384, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPT2LMHeadModel(config).eval(), rounds, config.vocab_size, seed_each_round=True,
                           do_sample=True, top_k=50, pad_token_id=0)


def moe_train(torch):
    """A mixture-of-experts transformer in plain torch (4 layers, 512 wide, 8 heads; each layer's feed-forward is 8
    experts of 2048 hidden with top-2 routing: per-expert gathers of the tokens routed to it and an `index_add_`
    back), bf16 autocast, AdamW, 8 steps of different batch x length, so the experts see different numbers of
    tokens every step."""
    nn, F = torch.nn, torch.nn.functional

    class MoE(nn.Module):
        def __init__(self, d, hidden, experts, k):
            super().__init__()
            self.router = nn.Linear(d, experts)
            self.w1 = nn.ModuleList(nn.Linear(d, hidden) for _ in range(experts))
            self.w2 = nn.ModuleList(nn.Linear(hidden, d) for _ in range(experts))
            self.k = k

        def forward(self, x):
            b, t, d = x.shape
            flat = x.reshape(-1, d)
            gates = F.softmax(self.router(flat).float(), dim=-1)
            weight, expert = gates.topk(self.k, dim=-1)
            weight = (weight / weight.sum(-1, keepdim=True)).to(x.dtype)
            out = torch.zeros_like(flat)
            for e in range(len(self.w1)):
                rows, slot = (expert == e).nonzero(as_tuple=True)
                if rows.numel() == 0:
                    continue
                h = self.w2[e](F.gelu(self.w1[e](flat[rows])))
                out.index_add_(0, rows, (h * weight[rows, slot, None]).to(out.dtype))
            return out.reshape(b, t, d)

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.norm1, self.attn = nn.LayerNorm(d), nn.MultiheadAttention(d, heads, batch_first=True)
            self.norm2, self.moe = nn.LayerNorm(d), MoE(d, 4 * d, 8, 2)

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.moe(self.norm2(x))

    class Net(nn.Module):
        def __init__(self, vocab=32000, d=512, layers=4, heads=8):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, ids):
            x = self.emb(ids)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    torch.manual_seed(0)
    model = Net()
    shapes = [(16, 256), (8, 512), (32, 128), (4, 1024), (24, 256), (12, 384), (16, 512), (48, 96)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, seq in shapes:
        ids = torch.randint(0, 32000, (batch, seq + 1), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, logits, loss
    del model, opt
    return {"shapes": shapes, "losses": losses}


def bert_finetune_dynamic(torch):
    """BERT-base sequence classification fine-tuning (`BertForSequenceClassification(BertConfig(num_labels=2))`),
    fp16 autocast with GradScaler, AdamW, 16 steps with dynamic padding: each batch (16 to 48 sequences) is padded
    to its own length (32 to 512 tokens), so every step has another shape."""
    import random

    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(num_labels=2))
    rng = random.Random(0)
    steps = [(rng.choice([16, 24, 32, 48]), rng.choice([32, 64, 96, 128, 192, 256, 384, 512])) for _ in range(16)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    scaler = torch.amp.GradScaler("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, length in steps:
        ids = torch.randint(1, 30522, (batch, length), device="cuda", generator=gen)
        lengths = torch.randint(length // 4, length + 1, (batch, 1), device="cuda", generator=gen)
        mask = (torch.arange(length, device="cuda")[None, :] < lengths).long()
        labels = torch.randint(0, 2, (batch,), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(input_ids=ids * mask, attention_mask=mask, labels=labels).loss
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, lengths, mask, labels, loss
    del model, opt, scaler
    return {"steps": steps, "losses": losses}


def convnext_infer(torch):
    """torchvision ConvNeXt-Tiny inference, fp16, channels-last, 8 shapes (batch, image side) from 1 x 224 to
    128 x 224 and 64 x 288, each run twice."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.convnext_tiny().eval()
    shapes = [(1, 224), (8, 224), (32, 224), (128, 224), (16, 288), (64, 288), (4, 288), (96, 224)]
    start_recording(torch)
    model = model.to("cuda", torch.float16).to(memory_format=torch.channels_last)
    gen = torch.Generator(device="cuda").manual_seed(0)
    sums = []
    with torch.inference_mode():
        for batch, side in shapes:
            for _ in range(2):
                x = torch.randn(batch, 3, side, side, device="cuda", dtype=torch.float16, generator=gen)
                logits = model(x.contiguous(memory_format=torch.channels_last))
                sums.append(logits.float().sum().item())
                del x, logits
    del model
    return {"shapes": shapes, "repeats": 2, "logit_sums": sums}


def detection_infer(torch):
    """torchvision Faster R-CNN (ResNet-50 FPN, random weights, no pretrained backbone) inference, fp32, 10 batches
    of 1 to 4 images whose sides vary from 480 to 1024 pixels (every batch has other shapes; the proposals and
    detections vary in number)."""
    import torchvision

    torch.manual_seed(0)
    holder = [torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None).eval()]
    return detect_random_sides(torch, holder, seed=0, count=10, low=480, high=1025, most=4)


def detect_random_sides(torch, holder, seed, count, low, high, most):
    """Runs `detect` on the detector in `holder` over `count` batches of 1 to `most` random images whose sides are
    drawn from [`low`, `high`) in steps of 32 by `random.Random(seed)`. Returns the batches and the boxes."""
    import random

    rng = random.Random(seed)
    batches = [[(rng.randrange(low, high, 32), rng.randrange(low, high, 32)) for _ in range(rng.randint(1, most))]
               for _ in range(count)]
    return {"batches": batches, "boxes": detect(torch, holder, batches)}


def detect(torch, holder, batches):
    """Records from before the detector in `holder` (a one-item list, built on the CPU in eval mode by the caller,
    which keeps no other reference to it, and emptied here, so that it is freed here) moves to the GPU, then runs it
    in inference mode on each batch of (height, width) image sizes in `batches` (random images). Returns the number
    of boxes of each image."""
    model = holder.pop()
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    boxes = []
    with torch.inference_mode():
        for sizes in batches:
            images = [torch.rand(3, h, w, device="cuda", generator=gen) for h, w in sizes]
            out = model(images)
            boxes.append([int(o["boxes"].shape[0]) for o in out])
            del images, out
    del model
    return boxes


def dlrm_train(torch):
    """A DLRM-style recommender in plain torch: 8 embedding tables of 500,000 x 64 (sum-pooled `EmbeddingBag`s,
    dense gradients), a bottom MLP 13-512-256-64 and a top MLP over the pairwise interactions 100-512-256-1,
    Adam, 12 steps with batches of 1,024 to 8,192 and 1 to 40 lookups per table and sample."""
    import random

    torch.manual_seed(0)
    tables, rows, dim = 8, 500_000, 64

    class Dlrm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = torch.nn.ModuleList(
                [torch.nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables)])
            self.bottom = torch.nn.Sequential(torch.nn.Linear(13, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256),
                                              torch.nn.ReLU(), torch.nn.Linear(256, dim), torch.nn.ReLU())
            pairs = (tables + 1) * tables // 2
            self.top = torch.nn.Sequential(torch.nn.Linear(pairs + dim, 512), torch.nn.ReLU(),
                                           torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))

        def forward(self, dense, lookups):
            x = self.bottom(dense)
            features = [x] + [bag(ids, offsets) for bag, (ids, offsets) in zip(self.embeddings, lookups)]
            stacked = torch.stack(features, dim=1)
            products = torch.bmm(stacked, stacked.transpose(1, 2))
            i, j = torch.triu_indices(tables + 1, tables + 1, offset=1, device=dense.device)
            return self.top(torch.cat([x, products[:, i, j]], dim=1)).squeeze(1)

    model = Dlrm()
    rng = random.Random(0)
    steps = [(rng.choice([1024, 2048, 4096, 8192]), rng.randint(1, 40)) for _ in range(12)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, per_sample in steps:
        dense = torch.randn(batch, 13, device="cuda", generator=gen)
        lookups = []
        for _ in range(tables):
            counts = torch.randint(1, per_sample + 1, (batch,), device="cuda", generator=gen)
            offsets = torch.cat([torch.zeros(1, dtype=torch.long, device="cuda"), counts.cumsum(0)[:-1]])
            ids = torch.randint(0, rows, (int(counts.sum().item()),), device="cuda", generator=gen)
            lookups.append((ids, offsets))
        labels = torch.rand(batch, device="cuda", generator=gen).round()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(dense, lookups), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del dense, lookups, labels, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def llama_hf_generate(torch):
    """A Llama-style model through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 8 layers, 1024 wide, 16
    heads with 4 KV heads, 32k vocabulary), fp16, greedy `generate` (the dynamic KV cache grows a token at a time),
    4 rounds (batch, prompt, new tokens) (4, 64, 48), (16, 200, 40), (2, 700, 32), (8, 32, 48)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)
    rounds = [(4, 64, 48), (16, 200, 40), (2, 700, 32), (8, 32, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, LlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def opt_generate(torch):
    """An OPT-125m-sized decoder through transformers (`OPTForCausalLM(OPTConfig(...))`: 12 layers, 768 wide, 12
    heads, 50k vocabulary), fp16, greedy `generate` (the dynamic KV cache grows a token at a time, each layer's K and
    V several 2 MiB pages at these shapes), 4 rounds (batch, prompt, new tokens) (16, 256, 40), (8, 512, 32),
    (32, 128, 40), (4, 1024, 24)."""
    from transformers import OPTConfig, OPTForCausalLM

    torch.manual_seed(0)
    config = OPTConfig(hidden_size=768, ffn_dim=3072, num_hidden_layers=12, num_attention_heads=12,
                       vocab_size=50272, max_position_embeddings=2048, word_embed_proj_dim=768)
    rounds = [(16, 256, 40), (8, 512, 32), (32, 128, 40), (4, 1024, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, OPTForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=1)


def gpt2_beam_generate(torch):
    """GPT-2 small (`GPT2LMHeadModel(GPT2Config())`), fp16, `generate` with 4 beams (every step the cache is reordered
    by beam, then grows by a token), 3 rounds (batch, prompt, new tokens) (4, 256, 24), (8, 96, 24), (2, 512, 16)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config()
    rounds = [(4, 256, 24), (8, 96, 24), (2, 512, 16)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPT2LMHeadModel(config).eval(), rounds, config.vocab_size, do_sample=False,
                           num_beams=4, pad_token_id=0, early_stopping=False)


def mla_generate(torch):
    """A DeepSeek-V3-style decoder through transformers (`DeepseekV3ForCausalLM(DeepseekV3Config(...))`: 6 dense
    layers, 1024 wide, 16 heads with multi-head latent attention, keys of 128 + 64 rotary dimensions and values of
    128, so each layer's K and V caches differ in size and grow by different steps; 32k vocabulary), fp16, greedy
    `generate`, 4 rounds (batch, prompt, new tokens) (16, 256, 32), (8, 512, 32), (32, 96, 32), (4, 1024, 24)."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    torch.manual_seed(0)
    config = DeepseekV3Config(vocab_size=32000, hidden_size=1024, intermediate_size=2816, moe_intermediate_size=512,
                              num_hidden_layers=6, first_k_dense_replace=6, num_attention_heads=16,
                              num_key_value_heads=16, n_shared_experts=1, n_routed_experts=8, num_experts_per_tok=2,
                              n_group=1, topk_group=1, kv_lora_rank=256, q_lora_rank=512, qk_rope_head_dim=64,
                              qk_nope_head_dim=128, v_head_dim=128, max_position_embeddings=4096)
    rounds = [(16, 256, 32), (8, 512, 32), (32, 96, 32), (4, 1024, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, DeepseekV3ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def qwen_sample_generate(torch):
    """A Qwen2-0.5B-sized decoder through transformers (`Qwen2ForCausalLM(Qwen2Config(...))`: 8 layers, 896 wide, 14
    heads with 2 KV heads, 152k vocabulary, tied embeddings), fp16, `generate` with nucleus sampling (top-p 0.9,
    temperature 0.8: the large vocabulary makes each step's logits and sampling tensors several pages at batch 32),
    4 rounds (batch, prompt, new tokens) (1, 128, 48), (16, 96, 32), (32, 48, 32), (4, 512, 24)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=8,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True)
    rounds = [(1, 128, 48), (16, 96, 32), (32, 48, 32), (4, 512, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, Qwen2ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.9, top_k=0, temperature=0.8,
                           pad_token_id=0)


def bart_beam_generate(torch):
    """A BART-base-sized encoder-decoder through transformers (`BartForConditionalGeneration(BartConfig(...))`: 6 + 6
    layers, 768 wide, 12 heads, 50k vocabulary), fp16, `generate` with 4 beams over encoder inputs of several
    lengths (the decoder's self-attention cache grows and is reordered every step; the cross-attention cache is
    fixed per round), 3 rounds (batch, source tokens, new tokens) (4, 256, 32), (8, 128, 32), (2, 512, 24)."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    config = BartConfig(vocab_size=50265, d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                        decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072,
                        max_position_embeddings=1024)
    rounds = [(4, 256, 32), (8, 128, 32), (2, 512, 24)]  # batch, source tokens, new tokens
    return generate_rounds(torch, BartForConditionalGeneration(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, num_beams=4, early_stopping=False, pad_token_id=1,
                           decoder_start_token_id=2)


def neox_train_accum(torch):
    """A GPT-NeoX-style decoder through transformers (`GPTNeoXForCausalLM(GPTNeoXConfig(...))`: 6 layers, 1024 wide,
    16 heads, parallel attention and MLP, 50k vocabulary) trained with bf16 autocast and AdamW, 4 optimizer steps of
    4 accumulated micro-batches each; the micro-batches (batch, tokens) cycle through (8, 512), (16, 256), (4, 1024),
    (8, 384), so gradients live across micro-batches of different shapes."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    config = GPTNeoXConfig(vocab_size=50304, hidden_size=1024, num_hidden_layers=6, num_attention_heads=16,
                           intermediate_size=4096, max_position_embeddings=2048, use_parallel_residual=True)
    model = GPTNeoXForCausalLM(config)
    shapes = [(8, 512), (16, 256), (4, 1024), (8, 384)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for step in range(4):
        for batch, tokens in shapes:
            ids = torch.randint(0, config.vocab_size, (batch, tokens), device="cuda", generator=gen)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss / len(shapes)
            loss.backward()
            losses.append(loss.item())
            del ids, loss
        opt.step()
        opt.zero_grad(set_to_none=True)
    del model, opt
    return {"steps": 4, "micro_batches": shapes, "losses": losses}


def resnet_multiscale_train(torch):
    """torchvision ResNet-34 training with SGD (momentum 0.9), fp16 autocast with GradScaler, channels-last, 12 steps
    of multi-scale training: each step draws its (batch, image side) from (64, 160), (32, 224), (16, 320),
    (48, 192), (24, 288), so activation sizes change every step."""
    import random

    import torchvision

    torch.manual_seed(0)
    rng = random.Random(0)
    steps = [rng.choice([(64, 160), (32, 224), (16, 320), (48, 192), (24, 288)]) for _ in range(12)]
    losses = train_classifier(torch, torchvision.models.resnet34(num_classes=1000),
                              [(batch, 3, side, side) for batch, side in steps],
                              lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9), channels_last=True)
    return {"steps": steps, "losses": losses}


def mistral_generate(torch):
    """A Mistral-style decoder through transformers (`MistralForCausalLM(MistralConfig(...))`: 8 layers, 1024 wide, 16
    heads with 4 KV heads, sliding-window attention of 256 tokens, 32k vocabulary), fp16, greedy `generate`, 4 rounds
    (batch, prompt, new tokens) (8, 384, 40), (24, 64, 40), (2, 900, 32), (12, 200, 48): prompts longer than the
    window."""
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    config = MistralConfig(vocab_size=32000, hidden_size=1024, intermediate_size=3584, num_hidden_layers=8,
                           num_attention_heads=16, num_key_value_heads=4, sliding_window=256,
                           max_position_embeddings=4096)
    rounds = [(8, 384, 40), (24, 64, 40), (2, 900, 32), (12, 200, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, MistralForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def train_bf16(torch, model, steps, inputs, make_optimizer, forward_context=None):
    """Records from before `model` (built on the CPU by the caller, passed as its only reference so that it is freed
    here) moves to the GPU, then trains it with bf16 autocast, one optimizer step per item of `steps`: `inputs(gen,
    step)` gives the model's keyword arguments (labels included) from the recording's generator, `make_optimizer`
    the optimizer over the parameters that take gradients; `forward_context()`, if given, is entered around each
    forward pass. Returns the losses."""
    import contextlib

    start_recording(torch)
    model = model.cuda().train()
    opt = make_optimizer([p for p in model.parameters() if p.requires_grad])
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for step in steps:
        args = inputs(gen, step)
        with torch.autocast("cuda", dtype=torch.bfloat16), (forward_context or contextlib.nullcontext)():
            loss = model(**args).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del args, loss
    del model, opt
    return losses


def train_causal_lm_bf16(torch, build, steps, vocab_size, low=0):
    """Trains the causal language model `build()` makes on the CPU (built here, so that `train_bf16` holds its only
    reference and frees it where it did before this helper) through `train_bf16` with AdamW (learning rate 3e-4,
    weight decay 0.1), one step per (batch, tokens) in `steps`, on random ids in [low, vocab_size) that are also
    the labels. Returns the steps and the losses."""

    def next_tokens(gen, step):
        tokens = torch.randint(low, vocab_size, step, device="cuda", generator=gen)
        return {"input_ids": tokens, "labels": tokens}

    losses = train_bf16(torch, build(), steps, next_tokens,
                        lambda params: torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1))
    return {"steps": steps, "losses": losses}

def t5_train_dynamic(torch):
    """A T5-base-sized encoder-decoder (`T5ForConditionalGeneration(T5Config(...))`: 12 + 12 layers, 768 wide)
    trained with teacher forcing, bf16 autocast, AdamW, 10 steps whose (batch, source tokens, target tokens) are
    drawn from (32, 128, 32), (16, 256, 64), (8, 512, 128), (24, 192, 48), (12, 384, 96)."""
    import random

    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_heads=12,
                      decoder_start_token_id=0, pad_token_id=0)
    rng = random.Random(0)
    steps = [rng.choice([(32, 128, 32), (16, 256, 64), (8, 512, 128), (24, 192, 48), (12, 384, 96)])
             for _ in range(10)]

    def inputs(gen, step):
        batch, source, target = step
        ids = torch.randint(2, config.vocab_size, (batch, source), device="cuda", generator=gen)
        labels = torch.randint(2, config.vocab_size, (batch, target), device="cuda", generator=gen)
        return {"input_ids": ids, "labels": labels}

    losses = train_bf16(torch, T5ForConditionalGeneration(config), steps, inputs,
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def efficientnet_train(torch):
    """torchvision EfficientNet-B0 training (depthwise convolutions, squeeze-and-excitation: many small tensors),
    AdamW, fp16 autocast with GradScaler, 10 steps with batches of 32 to 128 images of 224 pixels."""
    import torchvision

    torch.manual_seed(0)
    batches = [32, 64, 96, 128, 48, 128, 64, 32, 96, 128]
    losses = train_classifier(torch, torchvision.models.efficientnet_b0(num_classes=1000),
                              [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-3))
    return {"batches": batches, "losses": losses}


def infer_images(torch, model, shapes, move, score, image_dtype=None, forward_context=None, forward_args=None):
    """Records from before `model` (built on the CPU by the caller, passed as its only reference so that it is freed
    here) moves to the GPU through `move`, then runs it in inference mode twice over every (batch, image side) in
    `shapes` on random fp16 images (`image_dtype` if given), with the keyword arguments `forward_args` if given;
    `score` turns each output into a number; `forward_context()`, if given, is entered around each forward pass.
    Returns their sum."""
    import contextlib

    start_recording(torch)
    model = move(model)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for _ in range(2):
            for batch, side in shapes:
                images = torch.randn(batch, 3, side, side, device="cuda", generator=gen,
                                     dtype=image_dtype or torch.float16)
                with (forward_context or contextlib.nullcontext)():
                    out = model(images, **(forward_args or {}))
                checksum += score(out)
                del out, images
    del model
    return checksum


def classify_images_half(torch, build, shapes):
    """Runs the image classifier `build()` makes on the CPU (built here, so that `infer_images` holds its only
    reference and frees it) in fp16 through [`infer_images`] over `shapes`, each output scored by the sum of its
    predicted classes. Returns the shapes and that checksum."""
    checksum = infer_images(torch, build(), shapes, lambda model: model.to("cuda", torch.float16),
                            lambda out: int(out.argmax(-1).sum().item()))
    return {"shapes": shapes, "checksum": checksum}


def train_steps(torch, model, make_optimizer, steps, make_batch):
    """Records from before `model` (built on the CPU by the caller, passed as its only reference so that it is freed
    here) moves to the GPU, then trains it, with the optimizer `make_optimizer(parameters)`, one step per entry of
    `steps`: `make_batch(step, generator)` gives the inputs and the class labels, and the loss is their cross
    entropy. Returns the losses."""
    F = torch.nn.functional
    start_recording(torch)
    model = model.cuda().train()
    opt = make_optimizer(model.parameters())
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for step in steps:
        x, labels = make_batch(step, gen)
        loss = F.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del x, labels, loss
    del model, opt
    return losses


def noise_rows(torch, width):
    """A `make_batch` for [`train_steps`]: a step is a number of rows of `width` random features, labelled among
    1,000 classes."""
    def make_batch(rows, gen):
        x = torch.randn(rows, width, device="cuda", generator=gen)
        return x, torch.randint(0, 1000, (rows,), device="cuda", generator=gen)
    return make_batch


def noise_images(torch, side, classes):
    """A `make_batch` for [`train_steps`]: a step is a number of random images of `side` pixels (3 channels),
    labelled among `classes` classes."""
    def make_batch(batch, gen):
        images = torch.randn(batch, 3, side, side, device="cuda", generator=gen)
        return images, torch.randint(0, classes, (batch,), device="cuda", generator=gen)
    return make_batch


def train_click_model(torch, table, head, pool, make_optimizer, counts, ids_each):
    """Records from before `table` and `head` (an embedding table and the model on top, built on the CPU by the
    caller and passed as their only references, so that they are freed here) move to the GPU, table first; then trains
    them, with the optimizer `make_optimizer(parameters)`, one step per entry of `counts`: that many samples of
    `ids_each` random rows each, `pool` turning the table's output into one vector a sample, random click targets,
    binary cross entropy. Returns the losses."""
    F = torch.nn.functional
    start_recording(torch)
    table, head = table.cuda(), head.cuda()
    opt = make_optimizer(list(table.parameters()) + list(head.parameters()))
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for count in counts:
        ids = torch.randint(0, table.num_embeddings, (count, ids_each), device="cuda", generator=gen)
        target = torch.rand(count, 1, device="cuda", generator=gen)
        loss = F.binary_cross_entropy_with_logits(head(pool(table(ids))), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, target, loss
    del table, head, opt
    return losses


def infer_volumes(torch, model, shapes, score):
    """Records from before `model` (built on the CPU by the caller, passed as its only reference so that it is freed
    here) moves to the GPU in fp16, then runs it in inference mode twice over every (batch, side) in `shapes` on
    random fp16 volumes of one channel; `score` turns each output into a number. Returns their sum."""
    start_recording(torch)
    model = model.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for _ in range(2):
            for batch, side in shapes:
                volume = torch.randn(batch, 1, side, side, side, device="cuda", generator=gen, dtype=torch.float16)
                out = model(volume)
                checksum += score(out)
                del volume, out
    del model
    return checksum


def image_score(out):
    """A classifier's output as a number: the summed top softmax probabilities."""
    return float(out.float().softmax(1).max(1).values.sum().item())


def swin_infer(torch):
    """torchvision Swin-T inference (shifted-window attention), fp16, 8 (batch, image side) shapes from (1, 224) to
    (64, 224) and (16, 384), each twice."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(1, 224), (8, 224), (32, 224), (64, 224), (4, 384), (16, 384), (48, 224), (2, 320)]
    checksum = infer_images(torch, torchvision.models.swin_t(num_classes=1000), shapes,
                            lambda model: model.cuda().half().eval(),
                            lambda out: float(out.float().sum().item()))
    return {"shapes": shapes, "checksum": checksum}


def llama_prefill_lengths(torch):
    """A Llama-style model through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 8 layers, 1024 wide, 16 heads
    with 4 KV heads, 32k vocabulary), fp16, forward passes only (no cache kept), as a server prefills prompts:
    (batch, tokens) (1, 4096), (4, 1024), (2, 3000), (8, 512), (1, 2048), (16, 256), (3, 1500), each twice."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)
    model = LlamaForCausalLM(config).eval()
    shapes = [(1, 4096), (4, 1024), (2, 3000), (8, 512), (1, 2048), (16, 256), (3, 1500)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for _ in range(2):
            for batch, tokens in shapes:
                ids = torch.randint(3, config.vocab_size, (batch, tokens), device="cuda", generator=gen)
                logits = model(input_ids=ids, use_cache=False).logits
                checksum += float(logits[:, -1].float().sum().item())
                del ids, logits
    del model
    return {"shapes": shapes, "checksum": checksum}


def llama_partial_finetune(torch):
    """A Llama-style model through transformers (6 layers, 1024 wide, 16 heads with 4 KV heads, 32k vocabulary)
    fine-tuned with its embeddings and first four layers frozen (no gradients or optimizer state for them), bf16
    autocast, AdamW, 8 steps of (batch, tokens) drawn from (8, 512), (4, 1024), (16, 256), (2, 2048)."""
    import random

    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=6, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)

    def frozen_model():
        model = LlamaForCausalLM(config)
        for module in [model.model.embed_tokens, *model.model.layers[:4]]:
            module.requires_grad_(False)
        return model

    def inputs(gen, step):
        ids = torch.randint(3, config.vocab_size, step, device="cuda", generator=gen)
        return {"input_ids": ids, "labels": ids}

    rng = random.Random(0)
    steps = [rng.choice([(8, 512), (4, 1024), (16, 256), (2, 2048)]) for _ in range(8)]
    losses = train_bf16(torch, frozen_model(), steps, inputs, lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def conv_autoencoder_infer(torch):
    """A convolutional encoder-decoder in plain torch (4 levels of 64 / 128 / 256 / 512 channels down with strided
    convolutions and up with nearest upsampling, group norm and SiLU, a VAE decoder's shape), fp16 inference on
    images of 256 to 1024 pixels at batches 1 to 8: large activations, a few at a time."""
    torch.manual_seed(0)
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(32, cout), nn.SiLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(32, cout), nn.SiLU())

    widths = [64, 128, 256, 512]
    down, up = [], []
    cin = 3
    for width in widths:
        down += [block(cin, width), nn.Conv2d(width, width, 3, stride=2, padding=1)]
        cin = width
    for width in reversed(widths):
        up += [nn.Upsample(scale_factor=2, mode="nearest"), block(cin, width)]
        cin = width
    shapes = [(1, 1024), (4, 512), (8, 256), (2, 768), (1, 896), (6, 384)]
    checksum = infer_images(torch, nn.Sequential(*down, *up, nn.Conv2d(cin, 3, 3, padding=1)).eval(), shapes,
                            lambda model: model.to("cuda", torch.float16),
                            lambda out: float(out.float().mean().item()))
    return {"shapes": shapes, "checksum": checksum}


def serving_decoder(torch, keys_values, width, heads, layers, vocab):
    """A Llama-style decoder in plain torch for the serving workloads (`layers` layers `width` wide, `heads` heads,
    RMSNorm, a SiLU-gated MLP of 2,816, a `vocab`-token vocabulary), built on the CPU. Its forward takes the token
    ids of every running sequence, one after another, and (state, token count) per sequence; in each layer a
    sequence's keys and values to attend over come from `keys_values(layer index, state, new keys, new values)`,
    given its new ones as (count, heads, head size) and returning (heads, length, head size) each. Returns each
    sequence's next token (greedy)."""
    nn, F = torch.nn, torch.nn.functional
    head_dim = width // heads

    class Layer(nn.Module):
        def __init__(self, index):
            super().__init__()
            self.index = index
            self.norm1, self.norm2 = nn.RMSNorm(width), nn.RMSNorm(width)
            self.qkv, self.out = nn.Linear(width, 3 * width, bias=False), nn.Linear(width, width, bias=False)
            self.up, self.down = nn.Linear(width, 2 * 2816, bias=False), nn.Linear(2816, width, bias=False)

        def forward(self, x, sequences):
            # x: (tokens of every sequence, width)
            q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
            outs, start = [], 0
            for state, count in sequences:
                end = start + count
                kk, vv = keys_values(self.index, state, k[start:end].view(count, heads, head_dim),
                                     v[start:end].view(count, heads, head_dim))
                qq = q[start:end].view(count, heads, head_dim).transpose(0, 1)
                attn = F.scaled_dot_product_attention(qq.unsqueeze(0), kk.unsqueeze(0), vv.unsqueeze(0),
                                                      is_causal=count > 1)
                outs.append(attn.squeeze(0).transpose(0, 1).reshape(count, width))
                start = end
            x = x + self.out(torch.cat(outs))
            gate, up = self.up(self.norm2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(gate) * up)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.head = nn.Embedding(vocab, width), nn.Linear(width, vocab, bias=False)
            self.layers, self.norm = nn.ModuleList(Layer(index) for index in range(layers)), nn.RMSNorm(width)

        def forward(self, ids, sequences):
            x = self.embed(ids)
            for layer in self.layers:
                x = layer(x, sequences)
            ends = torch.tensor([count for _, count in sequences], device=ids.device).cumsum(0) - 1
            return self.head(self.norm(x[ends])).argmax(-1)

    return Model()


def serve(torch, model, requests, at_once, vocab, new_state, step_state, finished):
    """Serves `requests` (prompt tokens, new tokens) on `model` (a `serving_decoder`, on the GPU) by continuous
    batching: up to `at_once` run at once, a request joining as another ends, its random prompt prefilled in the
    step it joins, then a token a step (greedy). A sequence's state starts as `new_state()`; before each step
    `step_state(state, count)` turns it into what the model's `keys_values` gets for `count` new tokens, and when
    the sequence ends `finished(state)` sees it. Returns the steps taken and the sum of the last tokens."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    waiting, running, steps, token_sum = list(requests), [], 0, 0
    with torch.inference_mode():
        while waiting or running:
            joining = []
            while waiting and len(running) + len(joining) < at_once:
                prompt, new = waiting.pop(0)
                ids = torch.randint(0, vocab, (prompt,), device="cuda", generator=gen)
                joining.append({"state": new_state(), "ids": ids, "left": new})
            for seq in running:
                seq["ids"] = seq["next"]
            batch = running + joining
            sequences = [(step_state(seq["state"], seq["ids"].numel()), seq["ids"].numel()) for seq in batch]
            ids = torch.cat([seq["ids"] for seq in batch])
            nexts = model(ids, sequences)
            del ids, sequences
            running = []
            for index, seq in enumerate(batch):
                seq["next"], seq["ids"] = nexts[index:index + 1], None
                seq["left"] -= 1
                if seq["left"] > 0:
                    running.append(seq)
                else:
                    token_sum += int(seq["next"].item())
                    finished(seq["state"])
            del batch, nexts
            steps += 1
    return steps, token_sum


def serving_continuous_batch(torch):
    """A Llama-style decoder in plain torch (6 layers, 1024 wide, 8 heads of 128, 32k vocabulary), bf16, serving 16
    requests by continuous batching: up to 6 run at once, each with its own KV cache per layer (grown by a token
    a step with `torch.cat`), prompts of 32 to 768 tokens prefilled as a request joins, 16 to 128 new tokens each, so
    caches of many lengths grow side by side and end at different times."""
    import random

    torch.manual_seed(0)
    layers, vocab = 6, 32000

    def keys_values(layer, caches, k, v):
        # caches: per layer [keys, values] of (heads, length, head size)
        cache = caches[layer]
        kk, vv = k.transpose(0, 1), v.transpose(0, 1)
        if cache[0] is not None:
            kk, vv = torch.cat([cache[0], kk], dim=1), torch.cat([cache[1], vv], dim=1)
        cache[0], cache[1] = kk, vv
        return kk, vv

    rng = random.Random(0)
    requests = [(rng.randint(32, 768), rng.randint(16, 128)) for _ in range(16)]  # prompt, new tokens
    model = serving_decoder(torch, keys_values, 1024, 8, layers, vocab).eval()
    start_recording(torch)
    model = model.to("cuda", torch.bfloat16)
    steps, token_sum = serve(torch, model, requests, 6, vocab, lambda: [[None, None] for _ in range(layers)],
                             lambda caches, count: caches, lambda caches: None)
    del model
    return {"requests": requests, "steps": steps, "token_sum": token_sum}


def whisper_decode(torch):
    """A Whisper-base-sized speech encoder-decoder through transformers (`WhisperForConditionalGeneration(
    WhisperConfig(...))`: 6 + 6 layers, 512 wide, 51,865-token vocabulary), fp16, greedy decoding by hand with the
    encoder-decoder cache (self-attention caches growing, cross-attention caches fixed) on random 30 s log-mel inputs,
    4 rounds (batch, new tokens) (1, 96), (4, 64), (8, 48), (2, 128)."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(vocab_size=51865, d_model=512, encoder_layers=6, decoder_layers=6,
                           encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                           decoder_ffn_dim=2048, num_mel_bins=80, max_target_positions=448)
    model = WhisperForConditionalGeneration(config).eval()
    rounds = [(1, 96), (4, 64), (8, 48), (2, 128)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    token_sum = 0
    with torch.inference_mode():
        for batch, new in rounds:
            features = torch.randn(batch, 80, 3000, device="cuda", generator=gen, dtype=torch.float16)
            encoded = model.model.encoder(features).last_hidden_state
            ids = torch.full((batch, 1), config.decoder_start_token_id, device="cuda", dtype=torch.long)
            past = None
            for _ in range(new):
                out = model(encoder_outputs=(encoded,), decoder_input_ids=ids, past_key_values=past, use_cache=True)
                past, ids = out.past_key_values, out.logits[:, -1:].argmax(-1)
                del out
            token_sum += int(ids.sum().item())
            del features, encoded, ids, past
    del model
    return {"rounds": rounds, "token_sum": token_sum}


def clip_train(torch):
    """A CLIP-sized dual encoder through transformers (`CLIPModel(CLIPConfig(...))`: a ViT-B/32 image tower and a
    12-layer 512-wide text tower) trained with the contrastive loss (a batch x batch similarity matrix), bf16
    autocast, AdamW, 8 steps with batches of 64 to 256 image-caption pairs."""
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    config = CLIPConfig(text_config={"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12,
                                     "num_attention_heads": 8, "max_position_embeddings": 77},
                        vision_config={"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                                       "num_attention_heads": 12, "image_size": 224, "patch_size": 32},
                        projection_dim=512)
    batches = [64, 128, 256, 96, 192, 256, 128, 64]

    def inputs(gen, batch):
        return {"input_ids": torch.randint(0, config.text_config.vocab_size, (batch, 77), device="cuda",
                                           generator=gen),
                "pixel_values": torch.randn(batch, 3, 224, 224, device="cuda", generator=gen),
                "return_loss": True}

    losses = train_bf16(torch, CLIPModel(config), batches, inputs, lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"batches": batches, "losses": losses}


def gnn_train(torch):
    """A 3-layer graph convolutional network in plain torch (256 wide, mean aggregation by `index_add_` over edge
    lists), fp32, AdamW, 8 steps on random graphs of 40,000 to 200,000 nodes and 8 to 16 edges per node: tensor sizes
    follow the node and edge counts, different every step."""
    import random

    torch.manual_seed(0)
    nn = torch.nn
    width, features, classes = 256, 128, 40

    class Gcn(nn.Module):
        def __init__(self):
            super().__init__()
            self.lins = nn.ModuleList([nn.Linear(features, width), nn.Linear(width, width), nn.Linear(width, classes)])

        def forward(self, x, src, dst, degree):
            for index, lin in enumerate(self.lins):
                x = lin(x)
                x = torch.zeros_like(x).index_add_(0, dst, x[src]) / degree
                if index < len(self.lins) - 1:
                    x = torch.relu(x)
            return x

    rng = random.Random(0)
    graphs = [(rng.randint(40_000, 200_000), rng.randint(8, 16)) for _ in range(8)]  # nodes, edges per node
    model = Gcn()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for nodes, per_node in graphs:
        edges = nodes * per_node
        src = torch.randint(0, nodes, (edges,), device="cuda", generator=gen)
        dst = torch.randint(0, nodes, (edges,), device="cuda", generator=gen)
        degree = torch.zeros(nodes, 1, device="cuda").index_add_(0, dst, torch.ones(edges, 1, device="cuda"))
        degree = degree.clamp_(min=1)
        x = torch.randn(nodes, features, device="cuda", generator=gen)
        labels = torch.randint(0, classes, (nodes,), device="cuda", generator=gen)
        loss = torch.nn.functional.cross_entropy(model(x, src, dst, degree), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del src, dst, degree, x, labels, loss
    del model, opt
    return {"graphs": graphs, "losses": losses}


def video_train(torch):
    """torchvision R(2+1)D-18 video classification training (3-D convolutions on 16-frame clips of 112 pixels),
    SGD with momentum, fp16 autocast with GradScaler, 8 steps with batches of 4 to 16 clips."""
    import torchvision

    torch.manual_seed(0)
    batches = [4, 8, 16, 12, 8, 16, 4, 12]
    losses = train_classifier(torch, torchvision.models.video.r2plus1d_18(num_classes=400),
                              [(batch, 3, 16, 112, 112) for batch in batches],
                              lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9), classes=400)
    return {"batches": batches, "losses": losses}


def compiled_train(torch):
    """A 6-layer transformer encoder (`nn.TransformerEncoder`, 768 wide, 12 heads) compiled with `torch.compile`
    (inductor: fused kernels, its own buffer reuse) and trained with bf16 autocast and AdamW, 8 steps at two shapes
    (batch 16 x 256 tokens, then 8 x 512): each shape compiles once."""
    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.Embedding(32000, 768), nn.TransformerEncoder(layer, 6), nn.Linear(768, 32000))
    shapes = [(16, 256)] * 4 + [(8, 512)] * 4
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step = torch.compile(model)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, tokens in shapes:
        ids = torch.randint(0, 32000, (batch, tokens), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(step(ids).flatten(0, 1), ids.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, loss
    del model, opt, step
    torch._dynamo.reset()  # compiled code holds the parameters until its caches go
    return {"shapes": shapes, "losses": losses}


def language_model(torch, width, layers, vocab, make_block):
    """A language model in plain torch around `layers` blocks from `make_block()` (each maps batch x tokens x width
    to the same): token embeddings, the blocks, a final LayerNorm and an output projection; `model(input_ids=...)`
    returns an object whose `loss` is the next-token cross entropy."""
    import types

    nn, F = torch.nn, torch.nn.functional

    class Lm(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.head = nn.Embedding(vocab, width), nn.Linear(width, vocab, bias=False)
            self.blocks, self.norm = nn.ModuleList(make_block() for _ in range(layers)), nn.LayerNorm(width)

        def forward(self, input_ids):
            x = self.embed(input_ids[:, :-1])
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.norm(x))
            return types.SimpleNamespace(loss=F.cross_entropy(logits.flatten(0, 1).float(), input_ids[:, 1:].flatten()))

    return Lm()


def decoder_lm(torch, width, layers, heads, vocab):
    """A pre-norm causal language model in plain torch (`scaled_dot_product_attention` with `is_causal`, GELU MLP of
    4 x width), through `language_model`."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            batch, tokens, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(batch, tokens, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(attn.transpose(1, 2).reshape(batch, tokens, width))
            return x + self.mlp(self.norm2(x))

    return language_model(torch, width, layers, vocab, Block)


def token_inputs(torch, vocab):
    """`train_bf16`'s inputs for steps of (batch, tokens): random ids from the recording's generator."""
    return lambda gen, step: {"input_ids": torch.randint(0, vocab, (step[0], step[1] + 1), device="cuda",
                                                         generator=gen)}


def train_decoder_lm(torch, width, layers, heads, steps, make_optimizer, forward_context=None):
    """Trains `decoder_lm(torch, width, layers, heads, 32000)` through `train_bf16` on `token_inputs` for `steps`,
    the generator seeded first; returns the steps and the losses."""
    torch.manual_seed(0)
    losses = train_bf16(torch, decoder_lm(torch, width, layers, heads, 32000), steps, token_inputs(torch, 32000),
                        make_optimizer, forward_context=forward_context)
    return {"steps": steps, "losses": losses}


def long_context_train(torch):
    """A 4-layer causal language model in plain torch (1024 wide, 16 heads, flash attention through
    `scaled_dot_product_attention`, 32k vocabulary) trained at long context, bf16 autocast, AdamW, 6 steps of (batch,
    tokens) (1, 16384), (2, 8192), (4, 4096), (1, 12288), (2, 6144), (1, 16384): activations of hundreds of MiB each."""
    return train_decoder_lm(torch, 1024, 4, 16, [(1, 16384), (2, 8192), (4, 4096), (1, 12288), (2, 6144), (1, 16384)],
                            lambda params: torch.optim.AdamW(params, lr=1e-4))


def offload_train(torch):
    """An 8-layer causal language model in plain torch (1024 wide, 16 heads, 32k vocabulary) trained with the
    activations saved for backward kept in pinned host memory (`torch.autograd.graph.save_on_cpu`): each is copied out
    in the forward pass and back in the backward pass, so device tensors come and go in another rhythm; bf16 autocast,
    AdamW, 6 steps of (batch, tokens) from (16, 512) to (2, 4096)."""
    return train_decoder_lm(torch, 1024, 8, 16, [(8, 1024), (4, 2048), (16, 512), (8, 1024), (2, 4096), (8, 1024)],
                            lambda params: torch.optim.AdamW(params, lr=1e-4),
                            forward_context=lambda: torch.autograd.graph.save_on_cpu(pin_memory=True))


def lstm_train(torch):
    """A 3-layer LSTM language model in plain torch (512-wide embeddings, 1024 hidden, 32k vocabulary; the LSTM in
    fp32 through cuDNN, with its workspace and reserve buffers, the rest under bf16 autocast), AdamW, 8 steps of
    (batch, tokens) from (128, 64) to (16, 512)."""
    import types

    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional

    class Lstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.head = nn.Embedding(32000, 512), nn.Linear(1024, 32000)
            self.lstm = nn.LSTM(512, 1024, num_layers=3, batch_first=True)

        def forward(self, input_ids):
            with torch.autocast("cuda", enabled=False):
                hidden, _ = self.lstm(self.embed(input_ids[:, :-1]).float())
            logits = self.head(hidden)
            return types.SimpleNamespace(loss=F.cross_entropy(logits.flatten(0, 1).float(), input_ids[:, 1:].flatten()))

    steps = [(128, 64), (64, 128), (32, 256), (16, 512), (64, 128), (128, 64), (32, 256), (48, 192)]
    losses = train_bf16(torch, Lstm(), steps, token_inputs(torch, 32000),
                        lambda params: torch.optim.AdamW(params, lr=1e-3))
    return {"steps": steps, "losses": losses}


def speculative_decode(torch):
    """Assisted generation (speculative decoding) through transformers: a GPT-2-medium-sized target
    (`GPT2LMHeadModel(GPT2Config(n_layer=24, n_embd=1024, n_head=16))`) verifies the tokens a 2-layer GPT-2 draft
    proposes (`assistant_model`), fp16, greedy; both keep dynamic KV caches that are cut back to the accepted tokens
    after each verification. Batch 1 (what assisted generation supports), 3 rounds (batch, prompt, new tokens)
    (1, 64, 20), (1, 384, 12), (1, 160, 16)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    rounds = [(1, 64, 20), (1, 384, 12), (1, 160, 16)]
    return generate_rounds(torch, GPT2LMHeadModel(GPT2Config(n_layer=24, n_embd=1024, n_head=16)).eval(), rounds,
                           50257, assistant=GPT2LMHeadModel(GPT2Config(n_layer=2)).eval(), do_sample=False,
                           pad_token_id=0)


def gan_train(torch):
    """A DCGAN-style generator and discriminator in plain torch at 128 x 128 (the generator up from a 128-wide latent
    through 1024 / 512 / 256 / 128 / 64 channels with transposed convolutions and batch norm, the discriminator down
    the same widths with leaky ReLUs), fp32, each with its own Adam: per iteration a discriminator step on real and
    detached fake images, then a generator step through the discriminator; 8 iterations at batches 64, 32, 96, 64,
    48, 64, 128, 32."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    widths = [1024, 512, 256, 128, 64]
    up = [nn.ConvTranspose2d(128, widths[0], 4, 1, 0, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU()]
    for a, b in zip(widths, widths[1:]):
        up += [nn.ConvTranspose2d(a, b, 4, 2, 1, bias=False), nn.BatchNorm2d(b), nn.ReLU()]
    generator = nn.Sequential(*up, nn.ConvTranspose2d(widths[-1], 3, 4, 2, 1), nn.Tanh())
    down = [nn.Conv2d(3, widths[-1], 4, 2, 1), nn.LeakyReLU(0.2)]
    for a, b in zip(widths[::-1], widths[::-1][1:]):
        down += [nn.Conv2d(a, b, 4, 2, 1, bias=False), nn.BatchNorm2d(b), nn.LeakyReLU(0.2)]
    discriminator = nn.Sequential(*down, nn.Conv2d(widths[0], 1, 4, 1, 0), nn.Flatten())

    start_recording(torch)
    generator, discriminator = generator.cuda().train(), discriminator.cuda().train()
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    gen = torch.Generator(device="cuda").manual_seed(0)
    batches, losses = [64, 32, 96, 64, 48, 64, 128, 32], []
    for batch in batches:
        real = torch.rand(batch, 3, 128, 128, device="cuda", generator=gen) * 2 - 1
        fake = generator(torch.randn(batch, 128, 1, 1, device="cuda", generator=gen))
        ones, zeros = torch.ones(batch, 1, device="cuda"), torch.zeros(batch, 1, device="cuda")
        loss_d = (F.binary_cross_entropy_with_logits(discriminator(real), ones)
                  + F.binary_cross_entropy_with_logits(discriminator(fake.detach()), zeros))
        loss_d.backward()
        opt_d.step()
        opt_d.zero_grad(set_to_none=True)
        loss_g = F.binary_cross_entropy_with_logits(discriminator(fake), ones)
        loss_g.backward()
        opt_g.step()
        opt_g.zero_grad(set_to_none=True)
        discriminator.zero_grad(set_to_none=True)
        losses.append([loss_d.item(), loss_g.item()])
        del real, fake, ones, zeros, loss_d, loss_g
    del generator, discriminator, opt_g, opt_d
    return {"batches": batches, "losses": losses}


def fft_science(torch):
    """Scientific computing without a model: 3-D convolutions of random fields by FFT (`rfftn`, a product with the
    kernel's spectrum, `irfftn`: cuFFT plans and their work areas) on grids from 48^3 to 192^3 in batches, each
    followed by a batched symmetric eigendecomposition (`linalg.eigh`, cuSOLVER's work areas) of the fields'
    covariance-like Gram matrices; fp32 and complex64, 8 (batch, grid side) cases."""
    torch.manual_seed(0)
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    cases, checks = [(8, 64), (2, 128), (4, 96), (1, 192), (16, 48), (2, 160), (6, 80), (1, 176)], []
    with torch.no_grad():
        for batch, side in cases:
            field = torch.randn(batch, side, side, side, device="cuda", generator=gen)
            kernel = torch.randn(side, side, side, device="cuda", generator=gen).div_(side ** 1.5)
            spectrum = torch.fft.rfftn(field, dim=(-3, -2, -1)) * torch.fft.rfftn(kernel)
            smoothed = torch.fft.irfftn(spectrum, s=(side, side, side), dim=(-3, -2, -1))
            rows = smoothed.reshape(batch * side, side * side)[:, : 4 * side]
            gram = rows.reshape(batch, side, 4 * side) @ rows.reshape(batch, side, 4 * side).transpose(1, 2)
            values, vectors = torch.linalg.eigh(gram)
            checks.append(float(values[:, -1].mean().item()))
            del field, kernel, spectrum, smoothed, rows, gram, values, vectors
    return {"cases": cases, "checks": checks}


def cuda_graph_infer(torch):
    """A 6-layer transformer encoder (`nn.TransformerEncoder`, 768 wide, 12 heads), fp16 inference captured in CUDA
    graphs, as serving stacks do: for each of 3 batch shapes (8, 128), (32, 128), (4, 512) tokens, 3 warm-up passes
    on a side stream, a capture (`torch.cuda.graph`, each graph in its own private memory pool), 20 replays on new
    inputs copied into the static input; then 4 eager passes of other shapes while the graphs (and their pools) are
    alive, and all of it freed."""
    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True)
    model = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).eval()
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    graphs, checks = [], []
    with torch.inference_mode():
        for batch, tokens in [(8, 128), (32, 128), (4, 512)]:
            static_in = torch.randn(batch, tokens, 768, device="cuda", dtype=torch.float16, generator=gen)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(static_in)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = model(static_in)
            for _ in range(20):
                static_in.copy_(torch.randn(batch, tokens, 768, device="cuda", dtype=torch.float16, generator=gen))
                graph.replay()
            checks.append(float(static_out.float().abs().mean().item()))
            graphs.append((graph, static_in, static_out))
        for batch, tokens in [(16, 256), (2, 1024), (64, 64), (8, 384)]:
            out = model(torch.randn(batch, tokens, 768, device="cuda", dtype=torch.float16, generator=gen))
            checks.append(float(out.float().abs().mean().item()))
            del out
    torch.cuda.synchronize()
    del graphs, model
    return {"checks": checks}


def ppo_train(torch):
    """Reinforcement learning with PPO in plain torch on a simulated vectorized environment: a policy and a value
    network (MLPs 64 -> 256 -> 256, 8 discrete actions), 3 iterations of a 256-step rollout over 64 environments
    (observations, actions, log-probabilities, rewards and values written into preallocated buffers step by step),
    generalized advantage estimation backwards over the steps, then 4 epochs of 8 shuffled minibatches with clipped
    objectives and Adam: a small heap of many small tensors."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    steps, envs, obs_dim, actions = 256, 64, 64, 8
    policy = nn.Sequential(nn.Linear(obs_dim, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, actions))
    value = nn.Sequential(nn.Linear(obs_dim, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1))
    start_recording(torch)
    policy, value = policy.cuda(), value.cuda()
    opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=3e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for _ in range(3):
        obs_buf = torch.zeros(steps, envs, obs_dim, device="cuda")
        act_buf = torch.zeros(steps, envs, dtype=torch.long, device="cuda")
        logp_buf, rew_buf, val_buf = (torch.zeros(steps, envs, device="cuda") for _ in range(3))
        obs = torch.randn(envs, obs_dim, device="cuda", generator=gen)
        with torch.no_grad():
            for t in range(steps):
                dist = torch.distributions.Categorical(logits=policy(obs))
                action = dist.sample()
                obs_buf[t], act_buf[t], logp_buf[t] = obs, action, dist.log_prob(action)
                val_buf[t] = value(obs).squeeze(-1)
                rew_buf[t] = torch.rand(envs, device="cuda", generator=gen) - 0.1 * action.float() / actions
                obs = 0.9 * obs + 0.1 * torch.randn(envs, obs_dim, device="cuda", generator=gen)
            adv, last = torch.zeros(steps, envs, device="cuda"), torch.zeros(envs, device="cuda")
            for t in reversed(range(steps)):
                next_value = val_buf[t + 1] if t + 1 < steps else torch.zeros(envs, device="cuda")
                delta = rew_buf[t] + 0.99 * next_value - val_buf[t]
                last = delta + 0.99 * 0.95 * last
                adv[t] = last
            ret = adv + val_buf
        flat = [b.flatten(0, 1) for b in (obs_buf, act_buf, logp_buf, adv, ret)]
        for _ in range(4):
            order = torch.randperm(steps * envs, device="cuda", generator=gen)
            for chunk in order.chunk(8):
                o, a, old_logp, ad, r = (b[chunk] for b in flat)
                ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                dist = torch.distributions.Categorical(logits=policy(o))
                ratio = (dist.log_prob(a) - old_logp).exp()
                loss = (-torch.min(ratio * ad, ratio.clamp(0.8, 1.2) * ad).mean()
                        + 0.5 * F.mse_loss(value(o).squeeze(-1), r) - 0.01 * dist.entropy().mean())
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                losses.append(loss.item())
                del o, a, old_logp, ad, r, dist, ratio, loss
        del obs_buf, act_buf, logp_buf, rew_buf, val_buf, obs, adv, last, ret, flat
    del policy, value, opt
    return {"losses": losses[::8]}


def ssm_scan_train(torch):
    """A Mamba-style selective state-space language model in plain torch (2 layers, 512 wide, state 16, a causal
    depthwise convolution of 4, 32k vocabulary) whose selective scan is a Python loop over the tokens (what runs
    where no fused kernel is installed: per token a few tensors of batch x 1024 x 16), trained with bf16 autocast
    and AdamW for 4 steps of (batch, tokens) (8, 128), (4, 256), (16, 64), (8, 128)."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    width, inner, state = 512, 1024, 16

    class Mixer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.in_proj = nn.LayerNorm(width), nn.Linear(width, 2 * inner)
            self.conv = nn.Conv1d(inner, inner, 4, groups=inner, padding=3)
            self.x_proj, self.dt_proj = nn.Linear(inner, 2 * state + 32), nn.Linear(32, inner)
            self.a_log, self.out_proj = nn.Parameter(torch.randn(inner, state).abs().log()), nn.Linear(inner, width)

        def forward(self, h):
            tokens = h.shape[1]
            x, z = self.in_proj(self.norm(h)).chunk(2, dim=-1)
            x = F.silu(self.conv(x.transpose(1, 2))[..., :tokens].transpose(1, 2))
            b, c, dt = self.x_proj(x).split([state, state, 32], dim=-1)
            dt, a = F.softplus(self.dt_proj(dt)).float(), -self.a_log.exp()
            s, ys = torch.zeros(h.shape[0], inner, state, device=h.device), []
            for t in range(tokens):
                s = s * (dt[:, t, :, None] * a).exp() + (dt[:, t, :, None] * x[:, t, :, None]) * b[:, t, None, :]
                ys.append((s * c[:, t, None, :]).sum(-1))
            y = torch.stack(ys, dim=1).to(h.dtype) * F.silu(z)
            return h + self.out_proj(y)

    steps = [(8, 128), (4, 256), (16, 64), (8, 128)]
    losses = train_bf16(torch, language_model(torch, width, 2, 32000, Mixer), steps, token_inputs(torch, 32000),
                        lambda params: torch.optim.AdamW(params, lr=1e-3))
    return {"steps": steps, "losses": losses}


def tabular_mlp_train(torch):
    """A tabular regression MLP in plain torch (128 features -> 3 hidden layers of 1024 with LayerNorm and GELU ->
    1), fp32, AdamW with gradient clipping, 24 steps with batches of 1,024 to 8,192 rows, and every 4 steps an
    evaluation pass over 16,384 held-out rows without gradients: a small heap where training and evaluation
    alternate."""
    torch.manual_seed(0)
    nn = torch.nn
    layers = []
    for width_in in (128, 1024, 1024):
        layers += [nn.Linear(width_in, 1024), nn.LayerNorm(1024), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(1024, 1))
    start_recording(torch)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    batches = [1024, 4096, 8192, 2048, 6144, 8192, 3072, 1024] * 3
    losses, evals = [], []
    for step, batch in enumerate(batches):
        rows = torch.randn(batch, 128, device="cuda", generator=gen)
        target = rows[:, :8].sum(1, keepdim=True) + 0.1 * torch.randn(batch, 1, device="cuda", generator=gen)
        loss = torch.nn.functional.mse_loss(model(rows), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del rows, target, loss
        if step % 4 == 3:
            with torch.no_grad():
                held = torch.randn(16384, 128, device="cuda", generator=gen)
                evals.append(float(model(held).square().mean().item()))
                del held
    del model, opt
    return {"losses": losses[::4], "evals": evals}


def resnet18_infer_small(torch):
    """torchvision ResNet-18 inference, fp16, channels-last, at small batches (1 to 16 images of 160 to 320
    pixels, 10 shapes, each twice): the smallest inference heap here."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(1, 224), (2, 224), (4, 160), (8, 224), (1, 320), (16, 160), (4, 288), (2, 320), (8, 192), (16, 224)]
    checksum = infer_images(torch, torchvision.models.resnet18(num_classes=1000), shapes,
                            lambda m: m.cuda().half().to(memory_format=torch.channels_last).eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def vae_train(torch):
    """A convolutional variational autoencoder in plain torch (encoder of four stride-2 convolutions 3 -> 256
    channels on 64 x 64 images, a 128-dimensional latent with the reparameterization trick, a decoder of four
    transposed convolutions), bf16 autocast, AdamW, 12 steps with batches of 32 to 256: reconstruction and KL
    terms, a sampled latent every step."""
    torch.manual_seed(0)
    nn = torch.nn

    class Vae(nn.Module):
        def __init__(self):
            super().__init__()
            chans = [3, 32, 64, 128, 256]
            self.enc = nn.Sequential(*[m for a, b in zip(chans, chans[1:])
                                       for m in (nn.Conv2d(a, b, 4, 2, 1), nn.BatchNorm2d(b), nn.SiLU())])
            self.mu, self.logvar = nn.Linear(256 * 16, 128), nn.Linear(256 * 16, 128)
            self.up = nn.Linear(128, 256 * 16)
            rev = chans[::-1]
            dec = []
            for a, b in zip(rev, rev[1:]):
                dec += [nn.ConvTranspose2d(a, b, 4, 2, 1)] + ([nn.BatchNorm2d(b), nn.SiLU()] if b != 3 else [])
            self.dec = nn.Sequential(*dec)

        def forward(self, x):
            h = self.enc(x).flatten(1)
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
            return self.dec(self.up(z).view(-1, 256, 4, 4)), mu, logvar

    model = Vae()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    batches, losses = [32, 64, 128, 256, 96, 256, 48, 192, 128, 256, 64, 160], []
    for batch in batches:
        images = torch.rand(batch, 3, 64, 64, device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            recon, mu, logvar = model(images)
            rec = torch.nn.functional.mse_loss(recon.float(), images)
            kl = -0.5 * (1 + logvar - mu.square() - logvar.exp()).float().mean()
            loss = rec + 1e-3 * kl
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, recon, mu, logvar, rec, kl, loss
    del model, opt
    return {"batches": batches, "losses": losses}


def segmentation_train(torch):
    """A UNet for semantic segmentation in plain torch (4 levels of 32 / 64 / 128 / 256 channels, two convolutions
    with batch norm per level, skip connections, 21 classes), fp16 autocast with GradScaler, AdamW, a per-pixel
    cross-entropy, 10 steps of (batch, side) from (32, 256) to (4, 512): large activations of changing shapes."""
    torch.manual_seed(0)
    nn = torch.nn

    def block(c_in, c_out):
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
                             nn.Conv2d(c_out, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self, widths=(32, 64, 128, 256), classes=21):
            super().__init__()
            self.down = nn.ModuleList()
            c = 3
            for w in widths:
                self.down.append(block(c, w))
                c = w
            self.up = nn.ModuleList()
            self.merge = nn.ModuleList()
            for w in reversed(widths[:-1]):
                self.up.append(nn.ConvTranspose2d(c, w, 2, stride=2))
                self.merge.append(block(2 * w, w))
                c = w
            self.head = nn.Conv2d(c, classes, 1)

        def forward(self, x):
            skips = []
            for i, down in enumerate(self.down):
                x = down(x)
                if i < len(self.down) - 1:
                    skips.append(x)
                    x = torch.nn.functional.max_pool2d(x, 2)
            for up, merge in zip(self.up, self.merge):
                x = merge(torch.cat([up(x), skips.pop()], 1))
            return self.head(x)

    shapes = [(32, 256), (16, 384), (8, 512), (24, 256), (4, 512), (12, 384), (32, 256), (8, 512), (16, 320),
              (4, 512)]
    losses = train_classifier(torch, UNet(), [(batch, 3, side, side) for batch, side in shapes],
                              lambda params: torch.optim.AdamW(params, lr=1e-3), classes=21, per_pixel=True)
    return {"shapes": shapes, "losses": losses}


def bert_long_infer(torch):
    """A BERT-base-sized encoder with 2,048 positions (`BertModel(BertConfig(max_position_embeddings=2048))`), fp16
    inference at long sequences (transformers' default attention): 8 (batch, length) shapes from (1, 2048) to
    (16, 512), each twice."""
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(max_position_embeddings=2048)).eval()
    shapes = [(1, 2048), (4, 1024), (2, 2048), (16, 512), (8, 1024), (1, 1536), (4, 2048), (8, 768)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch, length in shapes:
            for _ in range(2):
                ids = torch.randint(0, 30522, (batch, length), device="cuda", generator=gen)
                out = model(input_ids=ids)
                checksum += float(out.pooler_output.float().sum().item())
                del ids, out
    del model
    return {"shapes": shapes, "checksum": checksum}


def diffusion_train(torch):
    """Denoising-diffusion training in plain torch: a small convolutional UNet (3 levels of 64 / 128 / 256
    channels, group norm, a sinusoidal timestep embedding added at every level) predicts the noise added to 64 x 64
    images at random timesteps of a 1,000-step linear schedule, bf16 autocast, AdamW, 12 steps of batch 32 to 128."""
    import math

    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, c_in, c_out):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(c_in, c_out, 3, padding=1), nn.Conv2d(c_out, c_out, 3, padding=1)
            self.norm1, self.norm2 = nn.GroupNorm(8, c_out), nn.GroupNorm(8, c_out)
            self.emb = nn.Linear(128, c_out)

        def forward(self, x, emb):
            h = F.silu(self.norm1(self.conv1(x))) + self.emb(emb)[:, :, None, None]
            return F.silu(self.norm2(self.conv2(h)))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.d3 = Block(3, 64), Block(64, 128), Block(128, 256)
            self.u2, self.u1 = Block(256 + 128, 128), Block(128 + 64, 64)
            self.out = nn.Conv2d(64, 3, 1)

        def forward(self, x, t):
            half = 64
            freqs = torch.exp(-math.log(10000) * torch.arange(half, device=x.device) / half)
            emb = torch.cat([torch.sin(t[:, None] * freqs), torch.cos(t[:, None] * freqs)], 1)
            h1 = self.d1(x, emb)
            h2 = self.d2(F.avg_pool2d(h1, 2), emb)
            h3 = self.d3(F.avg_pool2d(h2, 2), emb)
            u2 = self.u2(torch.cat([F.interpolate(h3, scale_factor=2), h2], 1), emb)
            u1 = self.u1(torch.cat([F.interpolate(u2, scale_factor=2), h1], 1), emb)
            return self.out(u1)

    model = UNet()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    betas = torch.linspace(1e-4, 0.02, 1000, device="cuda")
    alphas_bar = torch.cumprod(1 - betas, 0)
    batches, losses = [32, 64, 128, 96, 128, 48, 128, 64, 112, 32, 128, 80], []
    for batch in batches:
        x0 = torch.rand(batch, 3, 64, 64, device="cuda", generator=gen) * 2 - 1
        t = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)
        noise = torch.randn(x0.shape, device="cuda", generator=gen)
        a = alphas_bar[t][:, None, None, None]
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(model(xt, t.float()).float(), noise)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del x0, t, noise, a, xt, loss
    del model, opt, betas, alphas_bar
    return {"batches": batches, "losses": losses}


def distill_train(torch):
    """Knowledge distillation: a frozen torchvision ResNet-50 teacher (fp16 inference without gradients) and a
    ResNet-18 student trained on the teacher's softened outputs (KL divergence at temperature 4 plus the label
    loss), bf16 autocast, AdamW, 8 steps of (batch, side) drawn from (32, 224), (64, 160), (96, 192), (48, 256): the
    teacher's activations come and go before the student's forward pass, every step."""
    import random

    import torchvision

    torch.manual_seed(0)
    teacher, student = torchvision.models.resnet50(), torchvision.models.resnet18()
    rng = random.Random(0)
    shapes = [rng.choice([(32, 224), (64, 160), (96, 192), (48, 256)]) for _ in range(8)]
    F = torch.nn.functional
    start_recording(torch)
    teacher = teacher.to("cuda", torch.float16).eval()
    student = student.cuda().train()
    opt = torch.optim.AdamW(student.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, side in shapes:
        images = torch.randn(batch, 3, side, side, device="cuda", generator=gen)
        labels = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)
        with torch.no_grad():
            soft = F.softmax(teacher(images.half()).float() / 4.0, dim=1)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = student(images).float()
        loss = 16.0 * F.kl_div(F.log_softmax(logits / 4.0, dim=1), soft, reduction="batchmean")
        loss = loss + F.cross_entropy(logits, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, labels, soft, logits, loss
    del teacher, student, opt
    return {"shapes": shapes, "losses": losses}


def lora_finetune(torch):
    """LoRA fine-tuning: a Llama-style model through transformers (8 layers, 1024 wide, 16 heads with 4 KV heads,
    32k vocabulary) kept frozen, with rank-16 adapters in plain torch added to every attention projection and MLP
    projection (only the adapters take gradients and optimizer state), bf16 autocast, AdamW, 10 steps of (batch,
    tokens) drawn from (8, 512), (4, 1024), (16, 256), (2, 2048), (12, 384)."""
    import random

    from transformers import LlamaConfig, LlamaForCausalLM

    nn = torch.nn

    class Lora(nn.Module):
        def __init__(self, base, rank=16):
            super().__init__()
            self.base = base.requires_grad_(False)
            self.down = nn.Linear(base.in_features, rank, bias=False)
            self.up = nn.Linear(rank, base.out_features, bias=False)
            nn.init.zeros_(self.up.weight)

        def forward(self, x):
            return self.base(x) + self.up(self.down(x)) * 2.0

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)
    model = LlamaForCausalLM(config).requires_grad_(False)
    for layer in model.model.layers:
        for parent, names in ((layer.self_attn, ("q_proj", "k_proj", "v_proj", "o_proj")),
                              (layer.mlp, ("gate_proj", "up_proj", "down_proj"))):
            for name in names:
                setattr(parent, name, Lora(getattr(parent, name)))

    def inputs(gen, step):
        ids = torch.randint(3, config.vocab_size, step, device="cuda", generator=gen)
        return {"input_ids": ids, "labels": ids}

    rng = random.Random(0)
    steps = [rng.choice([(8, 512), (4, 1024), (16, 256), (2, 2048), (12, 384)]) for _ in range(10)]
    losses = train_bf16(torch, model, steps, inputs, lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def caption_generate(torch):
    """Image captioning: a ViT-B/16-sized encoder and a GPT-2-small-sized decoder with cross-attention through
    transformers (`VisionEncoderDecoderModel` from configs), fp16, `generate` with 3 beams, 4 rounds of (images,
    new tokens) (1, 32), (8, 24), (32, 16), (4, 40) on random 224-pixel images: the encoder's output lives through
    each round while the beams' caches grow and are reordered."""
    from transformers import GPT2Config, ViTConfig, VisionEncoderDecoderConfig, VisionEncoderDecoderModel

    torch.manual_seed(0)
    decoder = GPT2Config(add_cross_attention=True, is_decoder=True)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(ViTConfig(), decoder)
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = 0, 0, None
    model = VisionEncoderDecoderModel(config=config).eval()
    rounds = [(1, 32), (8, 24), (32, 16), (4, 40)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for batch, new in rounds:
            pixels = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen).half()
            out = model.generate(pixel_values=pixels, max_new_tokens=new, min_new_tokens=new, num_beams=3,
                                 decoder_start_token_id=0, pad_token_id=0)
            shapes.append(list(out.shape))
            token_sum += int(out.sum().item())
            del pixels, out
    del model
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def detection_train(torch):
    """torchvision Faster R-CNN (ResNet-50 FPN, random weights) training, SGD with momentum, fp32, 6 steps of 2 to 4
    images with sides of 480 to 800 pixels and 1 to 12 random boxes each (another shape and box count every step:
    the losses' proposals, samplers and targets vary with them)."""
    import random

    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=21)
    rng = random.Random(0)
    batches = [[(rng.randrange(480, 801, 32), rng.randrange(480, 801, 32), rng.randint(1, 12))
                for _ in range(rng.randint(2, 4))] for _ in range(6)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for sizes in batches:
        images, targets = [], []
        for h, w, count in sizes:
            images.append(torch.rand(3, h, w, device="cuda", generator=gen))
            corner = torch.rand(count, 2, device="cuda", generator=gen) * torch.tensor([w * 0.7, h * 0.7], device="cuda")
            extent = 16 + torch.rand(count, 2, device="cuda", generator=gen) * torch.tensor([w * 0.3, h * 0.3], device="cuda")
            targets.append({"boxes": torch.cat([corner, corner + extent], dim=1),
                            "labels": torch.randint(1, 21, (count,), device="cuda", generator=gen)})
        loss = sum(model(images, targets).values())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, targets, loss
    del model, opt
    return {"batches": batches, "losses": losses}


def sparse_embedding_train(torch):
    """A bag-of-words click model in plain torch: an `EmbeddingBag` of 2,000,000 x 128 with sparse gradients
    (`SparseAdam`: each step's gradient a sparse tensor whose size follows the step's distinct ids, coalesced by the
    optimizer) and a dense MLP head 128-512-1 (Adam), 12 steps of 2,048-16,384 bags of 8-64 ids: the gradient and
    optimizer buffers change size with every step's ids."""
    import random

    nn = torch.nn
    torch.manual_seed(0)
    rng = random.Random(0)
    steps = [(rng.choice([2048, 4096, 8192, 16384]), rng.choice([8, 16, 32, 64])) for _ in range(12)]
    embed = nn.EmbeddingBag(2_000_000, 128, mode="mean", sparse=True)
    head = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 1))
    start_recording(torch)
    embed, head = embed.cuda(), head.cuda()
    sparse_opt = torch.optim.SparseAdam(list(embed.parameters()), lr=1e-3)
    dense_opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for bags, per_bag in steps:
        ids = torch.randint(0, 2_000_000, (bags * per_bag,), device="cuda", generator=gen)
        offsets = torch.arange(0, bags * per_bag, per_bag, device="cuda")
        clicks = torch.rand(bags, 1, device="cuda", generator=gen).round()
        loss = nn.functional.binary_cross_entropy_with_logits(head(embed(ids, offsets)), clicks)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        sparse_opt.zero_grad(set_to_none=True)
        dense_opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, offsets, clicks, loss
    del embed, head, sparse_opt, dense_opt
    return {"steps": steps, "losses": losses}


def mae_pretrain(torch):
    """Masked-autoencoder pretraining in plain torch: a ViT-B/16-sized encoder (12 layers, 768 wide, 12 heads) on
    the visible quarter of each image's 196 patches (a random subset per image, gathered), a 4-layer 512-wide
    decoder over all patches with mask tokens scattered back, mean squared error on the masked patches, bf16
    autocast, AdamW, 6 steps of batch 32, 64, 128, 96, 48, 128 on random 224-pixel images."""
    nn = torch.nn
    torch.manual_seed(0)
    patch, dim, ddim = 16, 768, 512
    count = (224 // patch) ** 2

    def encoder(width, heads, depth):
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        return nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)

    class Mae(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3 * patch * patch, dim)
            self.pos = nn.Parameter(torch.randn(1, count, dim) * 0.02)
            self.encoder = encoder(dim, 12, 12)
            self.to_decoder = nn.Linear(dim, ddim)
            self.mask_token = nn.Parameter(torch.zeros(1, 1, ddim))
            self.decoder_pos = nn.Parameter(torch.randn(1, count, ddim) * 0.02)
            self.decoder = encoder(ddim, 16, 4)
            self.head = nn.Linear(ddim, 3 * patch * patch)

        def forward(self, images, gen):
            b = images.shape[0]
            patches = images.unfold(2, patch, patch).unfold(3, patch, patch)
            patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(b, count, 3 * patch * patch)
            visible = torch.rand(b, count, device=images.device, generator=gen).argsort(dim=1)[:, : count // 4]
            x = self.embed(patches) + self.pos
            x = torch.gather(x, 1, visible.unsqueeze(-1).expand(-1, -1, dim))
            x = self.to_decoder(self.encoder(x))
            full = self.mask_token.to(x.dtype).expand(b, count, ddim).clone()
            full = full.scatter(1, visible.unsqueeze(-1).expand(-1, -1, ddim), x)
            pred = self.head(self.decoder(full + self.decoder_pos))
            masked = torch.ones(b, count, device=images.device, dtype=torch.bool)
            masked[torch.arange(b, device=images.device).unsqueeze(1), visible] = False
            return ((pred.float() - patches) ** 2).mean(-1)[masked].mean()

    model = Mae()
    batches = [32, 64, 128, 96, 48, 128]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1.5e-4, weight_decay=0.05)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in batches:
        images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(images, gen)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, loss
    del model, opt
    return {"batches": batches, "losses": losses}


def wav2vec_train(torch):
    """Speech recognition training in plain torch, wav2vec2-style: a 7-layer 1-D convolutional feature extractor
    (512 channels, kernels 10, 3, 3, 3, 3, 2, 2 with strides 5, 2, 2, 2, 2, 2, 2: 320 samples a frame), a 6-layer
    transformer (768 wide, 12 heads) and CTC loss against random 32-letter transcripts, fp16 autocast with
    GradScaler, AdamW, 8 steps of batches of 16 kHz audio 2 to 16 seconds long (batch sizes so that each step holds
    about 64 seconds): another shape every step."""
    import random

    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    rng = random.Random(0)
    steps = []
    for _ in range(8):
        seconds = rng.choice([2, 4, 6, 8, 12, 16])
        steps.append((max(1, 64 // seconds), seconds))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            layers, channels = [], 1
            for kernel, stride in zip((10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2)):
                layers.append(nn.Conv1d(channels, 512, kernel, stride, bias=False))
                if channels == 1:
                    layers.append(nn.GroupNorm(512, 512))
                layers.append(nn.GELU())
                channels = 512
            self.features = nn.Sequential(*layers)
            self.project = nn.Linear(512, 768)
            layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
            self.out = nn.Linear(768, 33)

        def forward(self, audio):
            x = self.features(audio.unsqueeze(1)).transpose(1, 2)
            return self.out(self.encoder(self.project(x)))

    model = Model()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, seconds in steps:
        audio = torch.randn(batch, seconds * 16000, device="cuda", generator=gen)
        targets = torch.randint(1, 33, (batch, 32), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(audio)
        log_probs = logits.float().log_softmax(-1).transpose(0, 1)
        frames = torch.full((batch,), log_probs.shape[0], dtype=torch.long, device="cuda")
        letters = torch.full((batch,), 32, dtype=torch.long, device="cuda")
        loss = F.ctc_loss(log_probs, targets, frames, letters, zero_infinity=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del audio, targets, logits, log_probs, frames, letters, loss
    del model, opt, scaler
    return {"steps": steps, "losses": losses}


def pointnet_train(torch):
    """Point-cloud classification in plain torch, PointNet-style with a neighbourhood step: each point's 16 nearest
    neighbours (`torch.cdist` over its cloud, `topk`), an edge MLP (6 -> 64 -> 128) max-pooled over them, a shared
    per-point MLP to 1024 channels, a global max pool and a classifier (40 classes), fp32, Adam, 8 steps of (clouds,
    points) drawn from (32, 1024), (16, 2048), (8, 4096), (4, 8192), (64, 512): the distance matrices and the
    gathered neighbourhoods change size every step."""
    import random

    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    rng = random.Random(0)
    steps = [rng.choice([(32, 1024), (16, 2048), (8, 4096), (4, 8192), (64, 512)]) for _ in range(8)]
    neighbours = 16

    class PointNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.edge = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU())
            self.point = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 1024))
            self.classify = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 40))

        def forward(self, points):
            b, n, _ = points.shape
            nearest = torch.cdist(points, points).topk(neighbours, dim=-1, largest=False).indices
            base = (torch.arange(b, device=points.device) * n).view(b, 1, 1)
            around = points.reshape(b * n, 3)[(nearest + base).reshape(-1)].view(b, n, neighbours, 3)
            centre = points.unsqueeze(2).expand(-1, -1, neighbours, -1)
            edges = self.edge(torch.cat([centre, around - centre], dim=-1)).amax(dim=2)
            return self.classify(self.point(edges).amax(dim=1))

    model = PointNet()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for clouds, points in steps:
        cloud = torch.randn(clouds, points, 3, device="cuda", generator=gen)
        labels = torch.randint(0, 40, (clouds,), device="cuda", generator=gen)
        loss = F.cross_entropy(model(cloud), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del cloud, labels, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def ema_train(torch):
    """torchvision ResNet-50 training with an exponential moving average of the weights (a second copy of every
    parameter and buffer, updated with `torch._foreach_mul_` and `_foreach_add_` after each step), gradient
    clipping (`clip_grad_norm_` after unscaling), SGD with Nesterov momentum, fp16 autocast with GradScaler,
    channels-last; 9 steps of (batch, side) from (32, 160) to (128, 224), and after every third step an evaluation
    of the averaged weights on a batch of 192 at 224 pixels under `inference_mode`."""
    import copy

    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet50()
    shapes = [(32, 160), (64, 192), (128, 224), (96, 160), (48, 224), (128, 192), (64, 224), (32, 192), (128, 160)]
    start_recording(torch)
    model = model.cuda().to(memory_format=torch.channels_last).train()
    ema = copy.deepcopy(model).eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    scaler = torch.amp.GradScaler("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses, evals = [], []
    for step, (batch, side) in enumerate(shapes, 1):
        images = torch.randn(batch, 3, side, side, device="cuda", generator=gen).to(memory_format=torch.channels_last)
        labels = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            averaged, current = list(ema.parameters()), list(model.parameters())
            torch._foreach_mul_(averaged, 0.999)
            torch._foreach_add_(averaged, current, alpha=0.001)
            for kept, buffer in zip(ema.buffers(), model.buffers()):
                kept.copy_(buffer)
        losses.append(loss.item())
        del images, labels, loss
        if step % 3 == 0:
            with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
                images = torch.randn(192, 3, 224, 224, device="cuda", generator=gen)
                evals.append(ema(images.to(memory_format=torch.channels_last)).float().argmax(1).sum().item())
                del images
    del model, ema, opt, scaler
    return {"shapes": shapes, "losses": losses, "evals": evals}


def int8_weight_only_decode(torch):
    """Weight-only int8 inference of a Llama-style decoder in plain torch (8 layers, 2048 wide, 16 heads of 128,
    5,632 hidden, 32k vocabulary): every linear weight kept as int8 with a per-row fp16 scale and dequantized to
    fp16 just before its matmul (a transient copy of the weight at each use, up to the 125 MiB output head), greedy
    decoding with a preallocated fp16 KV cache per round, 4 rounds (batch, prompt, new tokens) (1, 256, 48),
    (8, 128, 40), (16, 64, 32), (4, 512, 32)."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    width, heads, hidden, vocab, depth = 2048, 16, 5632, 32000, 8
    head_dim = width // heads

    class QLinear(nn.Module):
        def __init__(self, inputs, outputs):
            super().__init__()
            self.register_buffer("weight", torch.randint(-127, 128, (outputs, inputs), dtype=torch.int8))
            self.register_buffer("scale", torch.full((outputs, 1), 0.02 / 127, dtype=torch.float16))

        def forward(self, x):
            return x @ (self.weight.to(torch.float16) * self.scale).t()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.RMSNorm(width), nn.RMSNorm(width)
            self.q, self.k, self.v, self.o = (QLinear(width, width) for _ in range(4))
            self.gate, self.up, self.down = QLinear(width, hidden), QLinear(width, hidden), QLinear(hidden, width)

        def forward(self, x, cache, pos):
            b, t, _ = x.shape
            h = self.norm1(x)
            q, k, v = (proj(h).view(b, t, heads, head_dim).transpose(1, 2) for proj in (self.q, self.k, self.v))
            cache[0][:, :, pos:pos + t] = k
            cache[1][:, :, pos:pos + t] = v
            keys, values = cache[0][:, :, :pos + t], cache[1][:, :, :pos + t]
            att = F.scaled_dot_product_attention(q, keys, values, is_causal=t > 1)
            x = x + self.o(att.transpose(1, 2).reshape(b, t, width))
            h = self.norm2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.norm = nn.RMSNorm(width)
            self.head = QLinear(width, vocab)

        def forward(self, ids, caches, pos):
            x = self.embed(ids)
            for block, cache in zip(self.blocks, caches):
                x = block(x, cache, pos)
            return self.head(self.norm(x[:, -1:]))

    model = Decoder()
    rounds = [(1, 256, 48), (8, 128, 40), (16, 64, 32), (4, 512, 32)]
    start_recording(torch)
    model = model.to("cuda", torch.float16).eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    token_sum = 0
    with torch.inference_mode():
        for batch, prompt, new in rounds:
            length = prompt + new
            caches = [(torch.empty(batch, heads, length, head_dim, device="cuda", dtype=torch.float16),
                       torch.empty(batch, heads, length, head_dim, device="cuda", dtype=torch.float16))
                      for _ in range(depth)]
            ids = torch.randint(0, vocab, (batch, prompt), device="cuda", generator=gen)
            out, pos = [ids], 0
            for _ in range(new):
                logits = model(out[-1], caches, pos)
                pos += out[-1].shape[1]
                out.append(logits.argmax(-1))
                del logits
            tokens = torch.cat(out[1:], dim=1)
            token_sum += int(tokens.sum().item())
            del caches, ids, out, tokens
    del model
    return {"rounds": rounds, "token_sum": token_sum}


def prefetch_stream_infer(torch):
    """torchvision ResNet-50 inference, fp16, channels-last, on three streams: each batch is copied to the GPU and
    normalised on a copy stream one batch ahead, the model runs on the default stream, and the top-5 classes are
    taken on a third stream while the next batch runs (tensors handed between streams with `record_stream`); 12
    batches of 1 to 256 images at 224 pixels."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet50()
    batches = [1, 8, 64, 256, 32, 128, 4, 192, 16, 96, 256, 48]
    host = [torch.randint(0, 256, (b, 3, 224, 224), dtype=torch.uint8).pin_memory() for b in batches]
    start_recording(torch)
    model = model.to("cuda", torch.float16).to(memory_format=torch.channels_last).eval()
    main = torch.cuda.current_stream()
    copy_stream, post_stream = torch.cuda.Stream(), torch.cuda.Stream()
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    torch.cuda.synchronize()  # the copy stream uses them

    def load(i):
        with torch.cuda.stream(copy_stream):
            images = host[i].to("cuda", non_blocking=True)
            images = ((images.float() - mean) / std).half().contiguous(memory_format=torch.channels_last)
        return images, copy_stream.record_event()

    top5, pending = [], load(0)
    with torch.inference_mode():
        for i in range(len(batches)):
            images, ready = pending
            main.wait_event(ready)
            images.record_stream(main)
            if i + 1 < len(batches):
                pending = load(i + 1)
            logits = model(images)
            post_stream.wait_stream(main)
            with torch.cuda.stream(post_stream):
                classes = logits.float().softmax(-1).topk(5, dim=-1).indices
            logits.record_stream(post_stream)
            top5.append(classes)
            del images, ready, logits
        torch.cuda.synchronize()
        checksum = sum(int(c.sum().item()) for c in top5)
    del model, top5, pending
    return {"batches": batches, "top5_sum": checksum,
            "streams": {"copy": copy_stream.cuda_stream, "post": post_stream.cuda_stream}}


def grad_bucket_train(torch):
    """An 8-layer causal language model in plain torch (768 wide, 12 heads, 32k vocabulary), bf16 autocast, AdamW,
    with data-parallel-style gradient buckets: after each backward, on a communication stream, the gradients are
    packed into flat buckets of about 25 MiB (`torch.cat`), averaged in place as an all-reduce would, and copied
    back, while the default stream waits; 8 steps of (batch, tokens) from (4, 1024) to (32, 128)."""
    torch.manual_seed(0)
    vocab = 32000
    model = decoder_lm(torch, 768, 8, 12, vocab)
    steps = [(4, 1024), (16, 256), (32, 128), (8, 512), (2, 2048), (16, 384), (8, 768), (32, 128)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    main, comm = torch.cuda.current_stream(), torch.cuda.Stream()
    params = [p for p in model.parameters() if p.requires_grad]
    buckets, current, size = [], [], 0
    for p in reversed(params):
        current.append(p)
        size += p.numel() * 4
        if size >= 25 << 20:
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, tokens in steps:
        ids = torch.randint(0, vocab, (batch, tokens + 1), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids).loss
        loss.backward()
        comm.wait_stream(main)
        with torch.cuda.stream(comm):
            for bucket in buckets:
                flat = torch.cat([p.grad.reshape(-1) for p in bucket])
                flat.div_(8)
                for chunk, p in zip(flat.split([p.numel() for p in bucket]), bucket):
                    p.grad.copy_(chunk.view_as(p))
                del flat, chunk
        main.wait_stream(comm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, loss
    torch.cuda.synchronize()
    del model, opt, params, buckets, current
    return {"steps": steps, "losses": losses, "streams": {"comm": comm.cuda_stream}}


def transformer_xl_train(torch):
    """A segment-recurrent language model in plain torch, Transformer-XL-style (4 layers, 768 wide, 12 heads, 32k
    vocabulary): sequences of 2,048 tokens are read in segments of 256, each layer attending over its memory of the
    previous 512 positions' hidden states (detached) concatenated with the segment, the memory then cut to the last
    512; truncated backpropagation per segment, bf16 autocast, AdamW, 3 sequences of batch 8, 4 and 16."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    width, heads, vocab, depth, segment, memory = 768, 12, 32000, 4, 256, 512

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.q, self.kv, self.out = nn.Linear(width, width), nn.Linear(width, 2 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x, mem):
            b, t, _ = x.shape
            h = self.norm1(x)
            context = h if mem is None else torch.cat([mem, h], dim=1)
            q = self.q(h).view(b, t, heads, -1).transpose(1, 2)
            k, v = self.kv(context).view(b, context.shape[1], 2, heads, -1).permute(2, 0, 3, 1, 4)
            past = context.shape[1] - t
            mask = torch.ones(t, context.shape[1], dtype=torch.bool, device=x.device).tril(past)
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.out(att.transpose(1, 2).reshape(b, t, width))
            return x + self.mlp(self.norm2(x)), h

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.layers = nn.ModuleList(Layer() for _ in range(depth))
            self.head = nn.Linear(width, vocab)

        def forward(self, ids, mems):
            x, new = self.embed(ids), []
            for layer, mem in zip(self.layers, mems):
                x, h = layer(x, mem)
                kept = h if mem is None else torch.cat([mem, h], dim=1)
                new.append(kept[:, -memory:].detach())
            return self.head(x), new

    model = Model()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in (8, 4, 16):
        ids = torch.randint(0, vocab, (batch, 2048 + 1), device="cuda", generator=gen)
        mems = [None] * depth
        for start in range(0, 2048, segment):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits, mems = model(ids[:, start:start + segment], mems)
                targets = ids[:, start + 1:start + segment + 1].reshape(-1)
                loss = F.cross_entropy(logits.reshape(-1, vocab).float(), targets)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            del logits, targets, loss
        del ids, mems
    del model, opt
    return {"losses": losses}


def nerf_train(torch):
    """Neural radiance field training in plain torch: an 8-layer 256-wide MLP with a skip connection over
    positionally encoded points (10 frequencies) and view directions (4), 64 coarse samples per ray and 64 fine
    ones drawn from the coarse weights by inverse-CDF sampling (`torch.searchsorted`), volume rendering with
    `cumprod`, Adam, 10 steps of 1,024 to 4,096 random rays: every step's sample tensors another size."""
    import random

    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    rng = random.Random(0)
    steps = [rng.choice([1024, 2048, 3072, 4096]) for _ in range(10)]

    def encode(x, frequencies):
        scales = 2.0 ** torch.arange(frequencies, device=x.device)
        angles = (x.unsqueeze(-1) * scales).flatten(-2)
        return torch.cat([x, angles.sin(), angles.cos()], dim=-1)

    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            points, views = 3 + 3 * 2 * 10, 3 + 3 * 2 * 4
            self.first = nn.ModuleList([nn.Linear(points, 256)] + [nn.Linear(256, 256) for _ in range(3)])
            self.second = nn.ModuleList([nn.Linear(256 + points, 256)] + [nn.Linear(256, 256) for _ in range(3)])
            self.sigma = nn.Linear(256, 1)
            self.feature = nn.Linear(256, 256)
            self.color = nn.Sequential(nn.Linear(256 + views, 128), nn.ReLU(), nn.Linear(128, 3))

        def forward(self, x, d):
            p, v = encode(x, 10), encode(d, 4)
            h = p
            for layer in self.first:
                h = F.relu(layer(h))
            h = torch.cat([h, p], dim=-1)
            for layer in self.second:
                h = F.relu(layer(h))
            color = torch.sigmoid(self.color(torch.cat([self.feature(h), v], dim=-1)))
            return F.relu(self.sigma(h)).squeeze(-1), color

    def render(field, origins, dirs, t):
        points = origins.unsqueeze(1) + dirs.unsqueeze(1) * t.unsqueeze(-1)
        sigma, color = field(points, dirs.unsqueeze(1).expand_as(points))
        delta = torch.cat([t[:, 1:] - t[:, :-1], torch.full_like(t[:, :1], 1e3)], dim=-1)
        alpha = 1 - torch.exp(-sigma * delta)
        trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha + 1e-10], dim=-1), dim=-1)[:, :-1]
        weights = alpha * trans
        return (weights.unsqueeze(-1) * color).sum(1), weights

    coarse, fine = Field(), Field()
    start_recording(torch)
    coarse, fine = coarse.cuda(), fine.cuda()
    opt = torch.optim.Adam(list(coarse.parameters()) + list(fine.parameters()), lr=5e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for rays in steps:
        origins = torch.rand(rays, 3, device="cuda", generator=gen) * 2 - 1
        dirs = F.normalize(torch.randn(rays, 3, device="cuda", generator=gen), dim=-1)
        target = torch.rand(rays, 3, device="cuda", generator=gen)
        t = torch.linspace(2.0, 6.0, 64, device="cuda").expand(rays, 64).contiguous()
        t = t + torch.rand(rays, 64, device="cuda", generator=gen) * (4.0 / 64)
        rgb_coarse, weights = render(coarse, origins, dirs, t)
        with torch.no_grad():
            pdf = weights[:, 1:-1] + 1e-5
            cdf = torch.cat([torch.zeros_like(pdf[:, :1]), torch.cumsum(pdf / pdf.sum(-1, keepdim=True), -1)], -1)
            u = torch.rand(rays, 64, device="cuda", generator=gen).contiguous()
            index = torch.searchsorted(cdf.contiguous(), u, right=True).clamp(1, cdf.shape[-1] - 1)
            low, high = torch.gather(cdf, 1, index - 1), torch.gather(cdf, 1, index)
            mids = 0.5 * (t[:, 1:] + t[:, :-1])
            t_low, t_high = torch.gather(mids, 1, index - 1), torch.gather(mids, 1, index)
            t_fine = t_low + (u - low) / (high - low).clamp_min(1e-5) * (t_high - t_low)
            t_all = torch.sort(torch.cat([t, t_fine], dim=-1), dim=-1).values
        rgb_fine, _ = render(fine, origins, dirs, t_all)
        loss = F.mse_loss(rgb_coarse, target) + F.mse_loss(rgb_fine, target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del origins, dirs, target, t, rgb_coarse, weights, pdf, cdf, u, index, low, high, mids, t_low, t_high
        del t_fine, t_all, rgb_fine, loss
    del coarse, fine, opt
    return {"steps": steps, "losses": losses}


def fsdp_gather_train(torch):
    """Fully-sharded-data-parallel-style training of a 12-layer transformer (1024 wide, 16 heads, 4096 hidden) in
    plain torch on one GPU: each layer's parameters are one flat fp32 tensor, cast to a bf16 copy (the "gathered"
    weights) just before the layer runs and freed after it, and gathered again in backward (each layer under
    `torch.utils.checkpoint`), as FSDP gathers and frees shards; an embedding and head of 32k tokens, AdamW over
    the flat tensors, 6 steps of (batch, tokens) from (2, 2048) to (32, 128)."""
    from torch.utils.checkpoint import checkpoint

    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    width, heads, hidden, vocab, depth = 1024, 16, 4096, 32000, 12
    shapes = [("qkv", (3 * width, width)), ("out", (width, width)), ("up", (hidden, width)),
              ("down", (width, hidden)), ("n1", (width,)), ("n2", (width,))]
    sizes = [int(torch.tensor(shape).prod()) for _, shape in shapes]

    def layer(x, flat):
        w = dict(zip([name for name, _ in shapes],
                     (part.view(shape) for part, (_, shape) in zip(flat.to(torch.bfloat16).split(sizes), shapes))))
        b, t, _ = x.shape
        h = F.layer_norm(x, (width,), w["n1"])
        q, k, v = F.linear(h, w["qkv"]).view(b, t, 3, heads, -1).permute(2, 0, 3, 1, 4)
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.linear(attention.transpose(1, 2).reshape(b, t, width), w["out"])
        h = F.layer_norm(x, (width,), w["n2"])
        return x + F.linear(F.gelu(F.linear(h, w["up"])), w["down"])

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.flats = nn.ParameterList(nn.Parameter(torch.randn(sum(sizes)) * 0.02) for _ in range(depth))
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, ids):
            x = self.embed(ids).to(torch.bfloat16)
            for flat in self.flats:
                x = checkpoint(layer, x, flat, use_reentrant=False)
            return self.head(x.float())

    model = Model()
    steps = [(2, 2048), (8, 512), (32, 128), (4, 1024), (16, 256), (8, 512)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, tokens in steps:
        ids = torch.randint(0, vocab, (batch, tokens + 1), device="cuda", generator=gen)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, logits, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def lm_1b_train(torch):
    """A 1.3-billion-parameter causal language model in plain torch (24 layers, 2048 wide, 16 heads, 32k
    vocabulary, through `decoder_lm`), bf16 autocast with fp32 weights, AdamW, 4 steps of (batch, tokens) (8, 2048),
    (4, 4096), (16, 1024), (8, 2048): a heap of tens of GiB, with weights, gradients and optimizer state of 5 GiB
    each and activations of 128-512 MiB."""
    return train_decoder_lm(torch, 2048, 24, 16, [(8, 2048), (4, 4096), (16, 1024), (8, 2048)],
                            lambda params: torch.optim.AdamW(params, lr=1e-4))


def lm_2_7b_train(torch):
    """A 2.7-billion-parameter causal language model in plain torch (32 layers, 2560 wide, 20 heads, 32k
    vocabulary, through `decoder_lm`), bf16 autocast with fp32 weights, AdamW, 3 steps of (batch, tokens) (8, 2048),
    (4, 4096), (8, 2048): a heap of about 90 GiB, with weights and gradients of 10 GiB and optimizer state of 20
    GiB."""
    return train_decoder_lm(torch, 2560, 32, 20, [(8, 2048), (4, 4096), (8, 2048)],
                            lambda params: torch.optim.AdamW(params, lr=1e-4))


def lm_6_7b_train(torch):
    """A 6.5-billion-parameter causal language model in plain torch (32 layers, 4096 wide, 32 heads, 32k
    vocabulary, through `decoder_lm`), bf16 autocast with fp32 weights, plain SGD (AdamW's state would not fit
    beside it), 3 steps of (batch, tokens) (4, 2048), (2, 4096), (4, 2048): a heap of about 80 GiB whose
    activations and weight gradients are tens to hundreds of MiB each."""
    return train_decoder_lm(torch, 4096, 32, 32, [(4, 2048), (2, 4096), (4, 2048)],
                            lambda params: torch.optim.SGD(params, lr=1e-4))


def llama_1b_generate(torch):
    """A TinyLlama-1.1B-sized decoder through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 22 layers, 2048
    wide, 32 heads with 4 KV heads, 5632-wide MLP, 32k vocabulary), fp16, greedy `generate` at large batches, 3
    rounds (batch, prompt, new tokens) (128, 1024, 20), (256, 256, 28), (16, 3072, 16): the dynamic KV cache of
    every layer grows a token at a time in tensors of tens to hundreds of MiB."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                         num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=4096)
    rounds = [(128, 1024, 20), (256, 256, 28), (16, 3072, 16)]  # batch, prompt, new tokens
    return generate_rounds(torch, LlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def train_vit(torch, name, batches):
    """Trains torchvision's ViT `name` (1000 classes) through `train_classifier` with AdamW, one step per batch size
    in `batches` at 224 pixels; returns the losses and the batches."""
    import torchvision

    losses = train_classifier(torch, getattr(torchvision.models, name)(num_classes=1000),
                              [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"losses": losses, "batches": batches}


def vit_large_train(torch):
    """torchvision ViT-L/16 training (24 layers, 1024 wide), AdamW, fp16 autocast with GradScaler, 4 steps of batch
    64, 128, 96, 128 at 224 pixels: activations of tens of GiB in tensors of 50-200 MiB."""
    return train_vit(torch, "vit_l_16", [64, 128, 96, 128])


def resnet50_bigbatch_infer(torch):
    """torchvision ResNet-50 offline inference at large batches (512 to 2,048 images of 224 pixels), fp16,
    channels-last, each batch twice: activations of hundreds of MiB to over a GiB, few allocations."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(512, 224), (1024, 224), (2048, 224), (1536, 224), (768, 224)]
    checksum = infer_images(torch, torchvision.models.resnet50(num_classes=1000), shapes,
                            lambda m: m.cuda().half().to(memory_format=torch.channels_last).eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def resnet152_bigbatch_train(torch):
    """torchvision ResNet-152 training at large batches (256 to 384 images of 224 pixels), SGD with momentum, fp16
    autocast with GradScaler, channels-last, 4 steps: activations of hundreds of MiB each."""
    import torchvision

    batches = [256, 384, 320, 384]
    losses = train_classifier(torch, torchvision.models.resnet152(num_classes=1000),
                              [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9), channels_last=True)
    return {"losses": losses, "batches": batches}


def deeplab_hires_infer(torch):
    """torchvision DeepLabV3 (ResNet-50 backbone, dilated: full-resolution feature maps at a stride of 8)
    segmentation inference, fp16, on 1,024-pixel images in batches of 2 to 16, each twice."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(2, 1024), (8, 1024), (16, 1024), (4, 1024), (12, 1024)]
    model = torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None,
                                                               num_classes=21, aux_loss=False)
    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().half().eval(),
                            lambda out: float(out["out"].float().argmax(1).sum().item()))
    return {"shapes": shapes, "checksum": checksum}


def roberta_mlm_train(torch):
    """RoBERTa-base masked-language-model training (`RobertaForMaskedLM(RobertaConfig(...))`, 50k vocabulary),
    bf16 autocast, AdamW, 8 steps of 16 to 64 sequences of 512 tokens with 15 % of the tokens masked: logits of
    up to 3 GiB."""
    import random

    from transformers import RobertaConfig, RobertaForMaskedLM

    torch.manual_seed(0)
    vocab = 50265
    model = RobertaForMaskedLM(RobertaConfig(vocab_size=vocab, max_position_embeddings=514))
    rng = random.Random(0)
    batches = [rng.choice([16, 32, 48, 64]) for _ in range(8)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in batches:
        ids = torch.randint(5, vocab, (batch, 512), device="cuda", generator=gen)
        masked = torch.rand(batch, 512, device="cuda", generator=gen) < 0.15
        labels = torch.where(masked, ids, torch.full_like(ids, -100))
        inputs = torch.where(masked, torch.full_like(ids, 4), ids)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=inputs, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, masked, labels, inputs, loss
    del model, opt
    return {"batches": batches, "losses": losses}


def paged_kv_serving(torch):
    """A Llama-style decoder in plain torch (6 layers, 1024 wide, 8 heads of 128, 32k vocabulary), bf16, serving 12
    requests with a paged KV cache as vLLM keeps one: per layer a pool of 512 blocks of 16 tokens for the keys and
    one for the values, made once; each request holds a table of blocks, taken as it grows and given back when it
    ends, and every step its new keys and values are written into its blocks and gathered back for attention. Up to
    4 requests run at once, prompts of 64 to 1,024 tokens prefilled as a request joins, 16 to 96 new tokens each."""
    import random

    torch.manual_seed(0)
    heads, layers, vocab, block, blocks = 8, 6, 32000, 16, 512
    pools = []

    def keys_values(layer, state, k, v):
        # state: (block table, tokens before); the pools: (blocks, block, heads, head size) for keys and values
        (table, past), count = state, k.shape[0]
        slots = torch.arange(past, past + count, device=k.device)
        where = table[slots // block] * block + slots % block
        pools[layer][0].view(-1, *k.shape[1:])[where] = k
        pools[layer][1].view(-1, *k.shape[1:])[where] = v
        length = past + count
        used = table[:(length + block - 1) // block]
        return tuple(pool[used].view(-1, *k.shape[1:])[:length].transpose(0, 1) for pool in pools[layer])

    rng = random.Random(0)
    requests = [(rng.randint(64, 1024), rng.randint(16, 96)) for _ in range(12)]  # prompt, new tokens
    model = serving_decoder(torch, keys_values, 1024, heads, layers, vocab).eval()
    start_recording(torch)
    model = model.to("cuda", torch.bfloat16)
    pools.extend(tuple(torch.zeros(blocks, block, heads, 1024 // heads, device="cuda", dtype=torch.bfloat16)
                       for _ in range(2)) for _ in range(layers))
    free_blocks = list(range(blocks))

    def step_state(seq, count):
        # The blocks the sequence needs for `count` more tokens, taken; then its table, on the GPU, and its length.
        while len(seq["blocks"]) * block < seq["past"] + count:
            seq["blocks"].append(free_blocks.pop())
        state = (torch.tensor(seq["blocks"], device="cuda"), seq["past"])
        seq["past"] += count
        return state

    steps, token_sum = serve(torch, model, requests, 4, vocab, lambda: {"blocks": [], "past": 0}, step_state,
                             lambda seq: free_blocks.extend(seq["blocks"]))
    del model, pools
    return {"requests": requests, "steps": steps, "token_sum": token_sum}


def conformer_asr_train(torch):
    """A Conformer-style speech recognizer in plain torch (80-bin log-mel frames subsampled by 4 with two strided 2-D
    convolutions, 8 blocks 256 wide: half-step feed-forward, 4-head self-attention with padding masks, a
    depthwise-convolution module of kernel 31 with batch norm, feed-forward), CTC loss over 128 tokens, bf16
    autocast, AdamW, 10 steps of 8 to 32 utterances of 4 to 16 seconds (100 frames a second, each utterance of its
    own length): another shape every step."""
    import random

    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    width, tokens = 256, 128

    def feed_forward():
        return nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.SiLU(),
                             nn.Linear(4 * width, width))

    class ConvModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.pointwise1, self.pointwise2 = nn.Conv1d(width, 2 * width, 1), nn.Conv1d(width, width, 1)
            self.depthwise = nn.Conv1d(width, width, 31, padding=15, groups=width)
            self.batch_norm = nn.BatchNorm1d(width)

        def forward(self, x):
            y = F.glu(self.pointwise1(self.norm(x).transpose(1, 2)), dim=1)
            return self.pointwise2(F.silu(self.batch_norm(self.depthwise(y)))).transpose(1, 2)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ff1, self.ff2, self.conv = feed_forward(), feed_forward(), ConvModule()
            self.attn_norm, self.norm = nn.LayerNorm(width), nn.LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, 4, batch_first=True)

        def forward(self, x, pad):
            x = x + 0.5 * self.ff1(x)
            y = self.attn_norm(x)
            x = x + self.attn(y, y, y, key_padding_mask=pad, need_weights=False)[0]
            x = x + self.conv(x)
            return self.norm(x + 0.5 * self.ff2(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.subsample = nn.Sequential(nn.Conv2d(1, width, 3, stride=2), nn.SiLU(),
                                           nn.Conv2d(width, width, 3, stride=2), nn.SiLU())
            self.proj = nn.Linear(width * 19, width)  # 80 bins -> 39 -> 19
            self.blocks, self.out = nn.ModuleList(Block() for _ in range(8)), nn.Linear(width, tokens)

        def forward(self, mel, pad):
            x = self.proj(self.subsample(mel.unsqueeze(1)).permute(0, 2, 1, 3).flatten(2))
            for block in self.blocks:
                x = block(x, pad)
            return self.out(x).log_softmax(-1)

    rng = random.Random(0)
    steps = [(rng.choice([8, 16, 24, 32]), rng.randint(4, 16)) for _ in range(10)]  # utterances, seconds
    model = Model()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, seconds in steps:
        frames = seconds * 100
        mel = torch.randn(batch, frames, 80, device="cuda", generator=gen)
        lengths = torch.randint(frames // 2, frames + 1, (batch,), device="cuda", generator=gen)
        lengths[0] = frames
        sub = ((lengths - 3) // 2 + 1 - 3) // 2 + 1
        pad = torch.arange(int(sub.max()), device="cuda")[None, :] >= sub[:, None]
        target_lengths = sub // 4
        targets = torch.randint(1, tokens, (int(target_lengths.sum()),), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            log_probs = model(mel, pad)
        loss = F.ctc_loss(log_probs.float().transpose(0, 1), targets, sub, target_lengths, zero_infinity=True)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del mel, lengths, sub, pad, target_lengths, targets, log_probs, loss
    del model, opt
    return {"steps": steps, "losses": losses}

def unet3d_volume_train(torch):
    """Volumetric segmentation training in plain torch: a 3-D U-Net (four levels of two 3x3x3 convolutions with
    instance norm and ReLU, 24 to 192 channels, transposed convolutions up, 8 classes), fp16 autocast with
    GradScaler, Adam, 4 steps of 1 to 2 single-channel volumes of 128 to 160 voxels a side: activations of
    100-400 MiB each."""
    nn = torch.nn

    def block(inputs, outputs):
        return nn.Sequential(nn.Conv3d(inputs, outputs, 3, padding=1), nn.InstanceNorm3d(outputs), nn.ReLU(),
                             nn.Conv3d(outputs, outputs, 3, padding=1), nn.InstanceNorm3d(outputs), nn.ReLU())

    class UNet3d(nn.Module):
        def __init__(self, widths=(24, 48, 96, 192), classes=8):
            super().__init__()
            self.down = nn.ModuleList(block(a, b) for a, b in zip((1,) + widths[:-1], widths))
            self.up = nn.ModuleList(nn.ConvTranspose3d(b, a, 2, stride=2) for a, b in zip(widths, widths[1:]))
            self.merge = nn.ModuleList(block(2 * a, a) for a in widths[:-1])
            self.head = nn.Conv3d(widths[0], classes, 1)

        def forward(self, x):
            skips = []
            for index, level in enumerate(self.down):
                x = level(x if index == 0 else nn.functional.max_pool3d(x, 2))
                skips.append(x)
            for index in reversed(range(len(self.up))):
                x = self.merge[index](torch.cat([skips[index], self.up[index](x)], dim=1))
            return self.head(x)

    torch.manual_seed(0)
    shapes = [(1, 1, 128, 128, 128), (2, 1, 128, 128, 128), (1, 1, 160, 160, 160), (2, 1, 144, 144, 144)]
    losses = train_classifier(torch, UNet3d(), shapes, lambda params: torch.optim.Adam(params, lr=1e-3),
                              classes=8, per_pixel=True)
    return {"losses": losses, "shapes": shapes}


def vit_huge_bigbatch_infer(torch):
    """torchvision ViT-H/14 inference (32 layers, 1280 wide, 16 heads; 632 M parameters) at batches of 64 to 512
    images of 224 pixels, fp16, each twice: attention and MLP activations of hundreds of MiB to over a GiB."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(64, 224), (256, 224), (512, 224), (128, 224), (384, 224)]
    checksum = infer_images(torch, torchvision.models.vit_h_14(num_classes=1000), shapes,
                            lambda model: model.cuda().half().eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def long_prompt_serving(torch):
    """serving_continuous_batch's decoder (6 layers, 1024 wide, 8 heads of 128, 32k vocabulary), bf16, serving 10
    requests with long prompts (4k to 32k tokens) and 32 to 96 new tokens each, up to 3 at once, each sequence's
    keys and values per layer in a cache allocated at its full length when it joins (a static cache): caches of
    tens to hundreds of MiB and prefill activations of hundreds of MiB."""
    import random

    torch.manual_seed(0)
    layers, vocab, heads, head_dim, room = 6, 32000, 8, 128, 128

    def keys_values(layer, state, k, v):
        keys, values = state["caches"][layer]
        start, count = state["at"], k.shape[0]
        keys[:, start:start + count] = k.transpose(0, 1)
        values[:, start:start + count] = v.transpose(0, 1)
        return keys[:, :start + count], values[:, :start + count]

    def step_state(state, count):
        if state["caches"] is None:
            shape = (heads, count + room, head_dim)
            state["caches"] = [(torch.empty(shape, device="cuda", dtype=torch.bfloat16),
                                torch.empty(shape, device="cuda", dtype=torch.bfloat16)) for _ in range(layers)]
        state["at"] = state["length"]
        state["length"] += count
        return state

    def finished(state):
        state["caches"] = None

    rng = random.Random(0)
    requests = [(rng.randint(4096, 32768), rng.randint(32, 96)) for _ in range(10)]  # prompt, new tokens
    model = serving_decoder(torch, keys_values, heads * head_dim, heads, layers, vocab).eval()
    start_recording(torch)
    model = model.to("cuda", torch.bfloat16)
    steps, token_sum = serve(torch, model, requests, 3, vocab, lambda: {"caches": None, "length": 0, "at": 0},
                             step_state, finished)
    del model
    return {"requests": requests, "steps": steps, "token_sum": token_sum}


def latent_diffusion_sample(torch):
    """A text-conditioned latent-diffusion sampler in plain torch, fp16 inference: a 6-layer text encoder (512 wide,
    77 tokens) run once per batch of prompts, a UNet (3 levels of 192 / 384 / 768 channels, two residual blocks per
    level, self- and cross-attention to the text at the two lower-resolution levels) run 20 steps with
    classifier-free guidance (the conditional and unconditional halves in one batch) on 64 x 64 latents of 4
    channels, then a convolutional decoder up 8 x to 512 x 512 images; batches of 1, 4, 2 and 8 prompts."""
    nn = torch.nn
    functional = nn.functional

    class ResBlock(nn.Module):
        def __init__(self, inputs, outputs, time_width):
            super().__init__()
            self.norm1, self.conv1 = nn.GroupNorm(32, inputs), nn.Conv2d(inputs, outputs, 3, padding=1)
            self.time = nn.Linear(time_width, outputs)
            self.norm2, self.conv2 = nn.GroupNorm(32, outputs), nn.Conv2d(outputs, outputs, 3, padding=1)
            self.skip = nn.Conv2d(inputs, outputs, 1) if inputs != outputs else nn.Identity()

        def forward(self, x, time):
            h = self.conv1(functional.silu(self.norm1(x))) + self.time(time)[:, :, None, None]
            return self.skip(x) + self.conv2(functional.silu(self.norm2(h)))

    class Attention(nn.Module):
        def __init__(self, width, context_width, heads=8):
            super().__init__()
            self.heads = heads
            self.norm = nn.GroupNorm(32, width)
            self.query, self.key_value = nn.Linear(width, width), nn.Linear(width, 2 * width)
            self.cross_query, self.cross_key_value = nn.Linear(width, width), nn.Linear(context_width, 2 * width)
            self.out, self.cross_out = nn.Linear(width, width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width))

        def attend(self, query, key, value):
            b, n, c = query.shape
            split = lambda x: x.reshape(x.shape[0], x.shape[1], self.heads, c // self.heads).transpose(1, 2)
            out = functional.scaled_dot_product_attention(split(query), split(key), split(value))
            return out.transpose(1, 2).reshape(b, n, c)

        def forward(self, x, context):
            b, c, height, width = x.shape
            h = self.norm(x).flatten(2).transpose(1, 2)
            h = h + self.out(self.attend(self.query(h), *self.key_value(h).chunk(2, dim=-1)))
            h = h + self.cross_out(self.attend(self.cross_query(h), *self.cross_key_value(context).chunk(2, dim=-1)))
            h = h + self.mlp(h)
            return x + h.transpose(1, 2).reshape(b, c, height, width)

    class UNet(nn.Module):
        def __init__(self, widths=(192, 384, 768), context_width=512, time_width=768):
            super().__init__()
            self.first = widths[0]
            self.time = nn.Sequential(nn.Linear(widths[0], time_width), nn.SiLU(), nn.Linear(time_width, time_width))
            self.input = nn.Conv2d(4, widths[0], 3, padding=1)
            self.down, self.down_attention, self.downsample = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
            inputs = widths[0]
            for level, w in enumerate(widths):
                self.down.append(nn.ModuleList([ResBlock(inputs, w, time_width), ResBlock(w, w, time_width)]))
                self.down_attention.append(Attention(w, context_width) if level > 0 else nn.Identity())
                last = level + 1 == len(widths)
                self.downsample.append(nn.Identity() if last else nn.Conv2d(w, w, 3, stride=2, padding=1))
                inputs = w
            self.middle = nn.ModuleList([ResBlock(inputs, inputs, time_width), ResBlock(inputs, inputs, time_width)])
            self.middle_attention = Attention(inputs, context_width)
            self.up, self.up_attention = nn.ModuleList(), nn.ModuleList()
            for level in reversed(range(len(widths))):
                w = widths[level]
                self.up.append(nn.ModuleList([ResBlock(inputs + w, w, time_width), ResBlock(w, w, time_width)]))
                self.up_attention.append(Attention(w, context_width) if level > 0 else nn.Identity())
                inputs = w
            self.output = nn.Sequential(nn.GroupNorm(32, inputs), nn.SiLU(), nn.Conv2d(inputs, 4, 3, padding=1))

        def forward(self, x, steps, context):
            half = self.first // 2
            frequencies = torch.exp(-torch.arange(half, device=x.device, dtype=torch.float32) * (9.21 / half))
            angles = steps.float()[:, None] * frequencies[None]
            time = self.time(torch.cat([angles.sin(), angles.cos()], dim=1).to(x.dtype))
            h, skips = self.input(x), []
            for blocks, attention, downsample in zip(self.down, self.down_attention, self.downsample):
                for block in blocks:
                    h = block(h, time)
                h = attention(h, context) if isinstance(attention, Attention) else h
                skips.append(h)
                h = downsample(h)
            h = self.middle_attention(self.middle[0](h, time), context)
            h = self.middle[1](h, time)
            for blocks, attention in zip(self.up, self.up_attention):
                skip = skips.pop()
                if h.shape[-1] != skip.shape[-1]:
                    h = functional.interpolate(h, scale_factor=2.0, mode="nearest")
                h = torch.cat([h, skip], dim=1)
                for block in blocks:
                    h = block(h, time)
                h = attention(h, context) if isinstance(attention, Attention) else h
            return self.output(h)

    torch.manual_seed(0)
    vocab, tokens, steps, batches = 49408, 77, 20, [1, 4, 2, 8]
    embedding, positions = nn.Embedding(vocab, 512), nn.Parameter(torch.randn(tokens, 512) * 0.02)
    text = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 6)
    unet = UNet()
    decoder = nn.Sequential(
        nn.Conv2d(4, 512, 3, padding=1), nn.SiLU(), nn.Conv2d(512, 512, 3, padding=1), nn.SiLU(),
        nn.Upsample(scale_factor=2.0), nn.Conv2d(512, 256, 3, padding=1), nn.SiLU(),
        nn.Upsample(scale_factor=2.0), nn.Conv2d(256, 128, 3, padding=1), nn.SiLU(),
        nn.Upsample(scale_factor=2.0), nn.Conv2d(128, 128, 3, padding=1), nn.SiLU(), nn.Conv2d(128, 3, 3, padding=1))
    # Cumulative signal fractions from the first step's to the last's (a DDIM-style deterministic update).
    alphas = [0.9991 - (0.9991 - 0.02) * i / steps for i in range(steps + 1)]
    start_recording(torch)
    embedding, text = embedding.to("cuda", torch.float16), text.to("cuda", torch.float16).eval()
    positions = positions.detach().to("cuda", torch.float16)
    unet, decoder = unet.to("cuda", torch.float16).eval(), decoder.to("cuda", torch.float16).eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch in batches:
            ids = torch.randint(0, vocab, (2 * batch, tokens), device="cuda", generator=gen)
            context = text(embedding(ids) + positions)
            latents = torch.randn(batch, 4, 64, 64, device="cuda", generator=gen, dtype=torch.float16)
            for i in range(steps):
                timesteps = torch.full((2 * batch,), 999 - i * (1000 // steps), device="cuda")
                conditional, unconditional = unet(torch.cat([latents, latents]), timesteps, context).chunk(2)
                noise = unconditional + 7.5 * (conditional - unconditional)
                a, a_next = alphas[i], alphas[i + 1]
                clean = (latents - (1 - a) ** 0.5 * noise) / a ** 0.5
                latents = (a_next ** 0.5 * clean + (1 - a_next) ** 0.5 * noise).nan_to_num().clamp(-8, 8)
                del timesteps, conditional, unconditional, noise, clean
            images = decoder(latents)
            checksum += float(images.float().nan_to_num().mean().item())
            del ids, context, latents, images
    del embedding, positions, text, unet, decoder
    return {"batches": batches, "steps": steps, "checksum": checksum}


def mobilenet_infer(torch):
    """torchvision MobileNetV3-Large inference (5.5 M parameters: depthwise convolutions, squeeze-and-excitation,
    many small tensors), fp16, channels-last, 8 (batch, image side) shapes from (1, 224) to (64, 256), each twice."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(1, 224), (8, 224), (64, 256), (4, 320), (32, 224), (16, 288), (2, 384), (48, 224)]
    checksum = infer_images(torch, torchvision.models.mobilenet_v3_large(), shapes,
                            lambda model: model.cuda().half().to(memory_format=torch.channels_last).eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def dual_stream_infer(torch):
    """A two-tower retrieval model served on two streams: a BERT-base-sized text encoder (transformers `BertModel`)
    on one and torchvision ResNet-50 (channels-last) on another, both fp16, their pooled features projected to 512
    and scored against each other on the default stream (tensors handed between streams with `record_stream`);
    10 requests of 1 to 128 (text, image) pairs, texts of 16 to 256 tokens, images of 224 pixels."""
    import torchvision
    from transformers import BertConfig, BertModel

    nn = torch.nn
    torch.manual_seed(0)
    text_model, image_model = BertModel(BertConfig()), torchvision.models.resnet50()
    image_model.fc = nn.Identity()
    text_projection, image_projection = nn.Linear(768, 512), nn.Linear(2048, 512)
    requests = [(1, 16), (32, 128), (128, 64), (8, 256), (64, 32), (16, 192), (96, 48), (4, 128), (128, 16),
                (48, 96)]  # pairs, text tokens
    start_recording(torch)
    text_model = text_model.to("cuda", torch.float16).eval()
    image_model = image_model.to("cuda", torch.float16).to(memory_format=torch.channels_last).eval()
    text_projection = text_projection.to("cuda", torch.float16)
    image_projection = image_projection.to("cuda", torch.float16)
    main, text_stream, image_stream = torch.cuda.current_stream(), torch.cuda.Stream(), torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for pairs, length in requests:
            ids = torch.randint(0, 30522, (pairs, length), device="cuda", generator=gen)
            images = torch.randn(pairs, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            images = images.contiguous(memory_format=torch.channels_last)
            text_stream.wait_stream(main)
            image_stream.wait_stream(main)
            with torch.cuda.stream(text_stream):
                ids.record_stream(text_stream)
                text = text_projection(text_model(input_ids=ids).last_hidden_state[:, 0])
            with torch.cuda.stream(image_stream):
                images.record_stream(image_stream)
                image = image_projection(image_model(images))
            main.wait_stream(text_stream)
            main.wait_stream(image_stream)
            text.record_stream(main)
            image.record_stream(main)
            normalize = nn.functional.normalize
            scores = normalize(text.float(), dim=-1) @ normalize(image.float(), dim=-1).T
            checksum += float(scores.nan_to_num().sum().item())
            del ids, images, text, image, scores
    torch.cuda.synchronize()
    del text_model, image_model, text_projection, image_projection
    return {"requests": requests, "checksum": checksum,
            "streams": {"text": text_stream.cuda_stream, "image": image_stream.cuda_stream}}


def llama_padded_sample_generate(torch):
    """llama_hf_generate's model (`LlamaForCausalLM(LlamaConfig(...))`: 8 layers, 1024 wide, 16 heads with 4 KV
    heads, 32k vocabulary), fp16, `generate` with nucleus sampling (top-p 0.9) on batches of prompts of different
    lengths, left-padded (attention masks with zeros): 4 rounds of (batch, longest prompt, new tokens)
    (16, 96, 40), (4, 512, 32), (32, 48, 24), (8, 256, 40), each prompt a quarter of the longest or more."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)
    model = LlamaForCausalLM(config).eval()
    rounds = [(16, 96, 40), (4, 512, 32), (32, 48, 24), (8, 256, 40)]  # batch, longest prompt, new tokens
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for index, (batch, longest, new) in enumerate(rounds):
            torch.manual_seed(index)
            ids = torch.randint(3, config.vocab_size, (batch, longest), device="cuda", generator=gen)
            lengths = torch.randint(longest // 4, longest + 1, (batch,), device="cuda", generator=gen)
            mask = (torch.arange(longest, device="cuda")[None] >= longest - lengths[:, None]).long()
            ids = ids * mask  # pad id 0 on the left
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                                 do_sample=True, top_p=0.9, pad_token_id=0)
            shapes.append(list(out.shape))
            token_sum += int(out.sum().item())
            del ids, lengths, mask, out
    del model
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def small_lm_train(torch):
    """A small causal language model in plain torch (4 layers, 256 wide, 4 heads, 32k vocabulary: 8 M of its 11 M
    parameters in the embedding), bf16 autocast, AdamW, 8 steps of (batch, tokens) from (1, 512) to (8, 64): a heap
    of a few hundred MiB, most of it the optimizer's state and the logits."""
    return train_decoder_lm(torch, 256, 4, 4, [(4, 128), (2, 256), (8, 64), (4, 128), (1, 512), (4, 128), (6, 96),
                                                (2, 256)], lambda params: torch.optim.AdamW(params, lr=1e-3))


def cifar_resnet_train(torch):
    """torchvision ResNet-18 with 10 classes trained on CIFAR-sized images (32 x 32), SGD with momentum 0.9 and
    weight decay, fp16 autocast with GradScaler, channels-last, 16 steps with batches of 64 to 512: a small training
    heap, most of it the weights, their gradients and the momentum."""
    import torchvision

    batches = [128, 256, 64, 512, 128, 256, 384, 64] * 2
    losses = train_classifier(torch, torchvision.models.resnet18(num_classes=10),
                              [(batch, 3, 32, 32) for batch in batches],
                              lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=5e-4),
                              classes=10, channels_last=True)
    return {"losses": losses[::4], "batches": batches}


def minilm_embed_infer(torch):
    """Sentence embeddings from a MiniLM-L6-sized encoder through transformers (`BertModel(BertConfig(...))`: 6
    layers, 384 wide, 12 heads, 30k vocabulary), fp16, mean-pooled over attention masks, 12 batches of (sentences,
    longest) from (8, 16) to (256, 128), each sentence a quarter of the longest or more, padded on the right: the
    smallest model here."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
                        vocab_size=30522, max_position_embeddings=512)
    model = BertModel(config, add_pooling_layer=False).eval()
    batches = [(32, 64), (8, 16), (128, 32), (64, 128), (256, 24), (16, 96), (96, 64), (256, 128), (48, 48),
               (8, 128), (192, 40), (32, 112)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for sentences, longest in batches:
            ids = torch.randint(1000, config.vocab_size, (sentences, longest), device="cuda", generator=gen)
            lengths = torch.randint(max(1, longest // 4), longest + 1, (sentences,), device="cuda", generator=gen)
            mask = (torch.arange(longest, device="cuda")[None] < lengths[:, None]).long()
            hidden = model(input_ids=ids * mask, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1)
            embeddings = torch.nn.functional.normalize(pooled.float(), dim=-1)
            checksum += float((embeddings @ embeddings.T).mean().item())
            del ids, lengths, mask, hidden, weights, pooled, embeddings
    del model
    return {"batches": batches, "checksum": checksum}


def vit_tiny_train(torch):
    """A ViT-Tiny-sized vision transformer from torchvision's `VisionTransformer` (12 layers, 192 wide, 3 heads,
    patches of 8 on 64 x 64 images: 64 tokens), AdamW, bf16 autocast, 12 steps with batches of 64 to 512 and 100
    classes: a small training heap of many same-sized activations."""
    from torchvision.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    model = VisionTransformer(image_size=64, patch_size=8, num_layers=12, num_heads=3, hidden_dim=192,
                              mlp_dim=768, num_classes=100)
    batches = [128, 256, 64, 512, 192, 128, 384, 64, 256, 512, 96, 128]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in batches:
        images = torch.randn(batch, 3, 64, 64, device="cuda", generator=gen)
        labels = torch.randint(0, 100, (batch,), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, labels, loss
    del model, opt
    return {"losses": losses[::3], "batches": batches}


def vocoder_infer(torch):
    """A HiFi-GAN-style vocoder in plain torch: mel frames (80 channels) up to audio through four transposed 1-D
    convolutions (x8, x8, x2, x2; 512 to 32 channels), each followed by residual blocks of dilated 1-D convolutions
    (kernels 3 and 7, dilations 1, 3, 5), fp16 inference on 10 clips of 1 to 4 mel-frame batches of 100 to 800
    frames: activations that grow 256-fold from input to output."""
    torch.manual_seed(0)
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self, channels, kernel):
            super().__init__()
            self.convs = nn.ModuleList(nn.Conv1d(channels, channels, kernel, dilation=d, padding=d * (kernel - 1) // 2)
                                       for d in (1, 3, 5))

        def forward(self, x):
            for conv in self.convs:
                x = x + conv(nn.functional.leaky_relu(x, 0.1))
            return x

    class Vocoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = nn.Conv1d(80, 512, 7, padding=3)
            ups, blocks, channels = [], [], 512
            for factor in (8, 8, 2, 2):
                ups.append(nn.ConvTranspose1d(channels, channels // 2, factor * 2, factor, padding=factor // 2))
                channels //= 2
                blocks.append(nn.ModuleList(Residual(channels, kernel) for kernel in (3, 7)))
            self.ups, self.blocks = nn.ModuleList(ups), nn.ModuleList(blocks)
            self.post = nn.Conv1d(channels, 1, 7, padding=3)

        def forward(self, mel):
            x = self.pre(mel)
            for up, residuals in zip(self.ups, self.blocks):
                x = up(nn.functional.leaky_relu(x, 0.1))
                x = sum(block(x) for block in residuals) / len(residuals)
            return torch.tanh(self.post(nn.functional.leaky_relu(x, 0.1)))

    model = Vocoder().eval()
    clips = [(1, 200), (2, 400), (4, 100), (1, 800), (3, 300), (2, 600), (4, 250), (1, 500), (2, 150), (4, 400)]
    start_recording(torch)
    model = model.cuda().half()
    gen = torch.Generator(device="cuda").manual_seed(0)
    samples = 0
    checksum = 0.0
    with torch.inference_mode():
        for batch, frames in clips:
            mel = torch.randn(batch, 80, frames, device="cuda", generator=gen, dtype=torch.float16)
            audio = model(mel)
            samples += audio.shape[-1] * batch
            checksum += float(audio.float().abs().mean().item())
            del mel, audio
    del model
    return {"clips": clips, "samples": samples, "checksum": checksum}


def mixtral_sample_generate(torch):
    """A Mixtral-style sparse mixture-of-experts decoder through transformers (`MixtralForCausalLM(MixtralConfig(
    ...))`: 4 layers, 768 wide, 12 heads with 4 KV heads, 8 experts of 2,048 with 2 routed per token, 32k
    vocabulary), fp16, `generate` with nucleus sampling (top-p 0.95): each step's tokens are gathered and scattered
    per expert, so the temporaries' sizes follow the routing; 4 rounds (batch, prompt, new tokens) (2, 96, 40),
    (16, 64, 32), (32, 160, 24), (4, 320, 32)."""
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=4,
                           num_attention_heads=12, num_key_value_heads=4, num_local_experts=8,
                           num_experts_per_tok=2, max_position_embeddings=2048)
    rounds = [(2, 96, 40), (16, 64, 32), (32, 160, 24), (4, 320, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, MixtralForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.95, top_k=0, pad_token_id=0)


def static_cache_generate(torch):
    """A Llama-style decoder through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 6 layers, 1024 wide, 16
    heads with 4 KV heads, 32k vocabulary), fp16, greedy `generate` with a static KV cache
    (`cache_implementation="static"`: each call allocates every layer's keys and values at the full length up front
    instead of growing them a token at a time), 5 rounds (batch, prompt, new tokens) (1, 256, 64), (8, 128, 48),
    (24, 64, 32), (4, 512, 40), (12, 192, 24)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=6,
                         num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=2048)
    rounds = [(1, 256, 64), (8, 128, 48), (24, 64, 32), (4, 512, 40), (12, 192, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, LlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           cache_implementation="static", do_sample=False, pad_token_id=0)


def knn_retrieval(torch):
    """Exact nearest-neighbour search without a model: a database of 1.5 million 256-wide fp16 embeddings (768 MiB,
    on the GPU in 6 shards), queried by 9 batches of 64 to 2,048 normalized queries; each shard's similarities
    (queries x 250,000) are computed, its top 32 kept, and the shards' candidates merged by a second top-k: large
    temporaries whose size follows the query batch, beside a resident database."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    start_recording(torch)
    shards = [torch.nn.functional.normalize(torch.randn(250_000, 256, device="cuda", generator=gen,
                                                        dtype=torch.float16), dim=-1) for _ in range(6)]
    checksum = 0.0
    with torch.inference_mode():
        for queries in (256, 64, 1024, 512, 2048, 128, 768, 1536, 320):
            q = torch.nn.functional.normalize(torch.randn(queries, 256, device="cuda", generator=gen,
                                                          dtype=torch.float16), dim=-1)
            values, indices = [], []
            for index, shard in enumerate(shards):
                scores = q @ shard.T
                top = scores.topk(32, dim=1)
                values.append(top.values)
                indices.append(top.indices + index * shard.shape[0])
                del scores, top
            merged = torch.cat(values, dim=1).topk(32, dim=1)
            ids = torch.cat(indices, dim=1).gather(1, merged.indices)
            checksum += float(merged.values.float().mean().item()) + float(ids.float().mean().item()) * 1e-9
            del q, values, indices, merged, ids
    del shards
    return {"checksum": checksum}


def gru_translate(torch):
    """A GRU encoder-decoder with additive attention in plain torch (2-layer bidirectional encoder of 512, 2-layer
    decoder of 1,024, 16k-word vocabularies), fp32 greedy decoding a token at a time, 8 batches of (sentences,
    source length, target length) from (8, 20, 24) to (128, 60, 64): many small tensors and one step's temporaries
    after another, on a small heap."""
    torch.manual_seed(0)
    nn = torch.nn

    class Translator(nn.Module):
        def __init__(self, vocab=16000, embed=256, hidden=512):
            super().__init__()
            self.src_embed, self.tgt_embed = nn.Embedding(vocab, embed), nn.Embedding(vocab, embed)
            self.encoder = nn.GRU(embed, hidden, num_layers=2, bidirectional=True, batch_first=True)
            self.bridge = nn.Linear(2 * hidden, 2 * hidden)
            self.decoder = nn.GRU(embed + 2 * hidden, 2 * hidden, num_layers=2, batch_first=True)
            self.query, self.key = nn.Linear(2 * hidden, 256), nn.Linear(2 * hidden, 256)
            self.energy = nn.Linear(256, 1)
            self.out = nn.Linear(4 * hidden, vocab)

        def translate(self, src, steps):
            memory, _ = self.encoder(self.src_embed(src))
            keys = self.key(memory)
            state = torch.tanh(self.bridge(memory.mean(1))).unsqueeze(0).repeat(2, 1, 1).contiguous()
            token = torch.ones(src.shape[0], 1, dtype=torch.long, device=src.device)
            context = memory.mean(1, keepdim=True)
            tokens = []
            for _ in range(steps):
                step_in = torch.cat([self.tgt_embed(token), context], dim=-1)
                output, state = self.decoder(step_in, state)
                weights = self.energy(torch.tanh(self.query(output) + keys)).softmax(dim=1)
                context = (weights * memory).sum(1, keepdim=True)
                logits = self.out(torch.cat([output, context], dim=-1))
                token = logits.argmax(-1)
                tokens.append(token)
            return torch.cat(tokens, dim=1)

    model = Translator().eval()
    batches = [(32, 40, 44), (8, 20, 24), (128, 30, 36), (64, 60, 64), (16, 50, 48), (96, 24, 28), (48, 36, 40),
               (128, 60, 64)]
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    token_sum = 0
    with torch.inference_mode():
        for sentences, source, target in batches:
            src = torch.randint(3, 16000, (sentences, source), device="cuda", generator=gen)
            out = model.translate(src, target)
            token_sum += int(out.sum().item())
            del src, out
    del model
    return {"batches": batches, "token_sum": token_sum}


def simclr_train(torch):
    """Contrastive SimCLR-style training: a torchvision ResNet-18 trunk with a 2-layer projection head (512 -> 2,048
    -> 128), two views of each image (flips and crops done on the GPU), an NT-Xent loss over the (2 x batch)^2
    similarity matrix, SGD with momentum and weight decay, fp16 autocast with GradScaler, channels-last, 10 steps with
    batches of 128 to 768 images of 96 pixels."""
    import torchvision

    torch.manual_seed(0)
    nn = torch.nn
    trunk = torchvision.models.resnet18()
    trunk.fc = nn.Identity()
    model = nn.Sequential(trunk, nn.Linear(512, 2048), nn.BatchNorm1d(2048), nn.ReLU(), nn.Linear(2048, 128))
    batches = [256, 128, 512, 384, 768, 256, 640, 128, 512, 768]
    start_recording(torch)
    model = model.cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-6)
    scaler = torch.amp.GradScaler("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    crops = random.Random(0)
    losses = []
    for batch in batches:
        images = torch.rand(batch, 3, 112, 112, device="cuda", generator=gen)
        views = []
        for _ in range(2):
            top, left = crops.randrange(17), crops.randrange(17)
            view = images[:, :, top:top + 96, left:left + 96]
            flip = torch.rand(batch, 1, 1, 1, device="cuda", generator=gen) < 0.5
            views.append(torch.where(flip, view.flip(-1), view).contiguous(memory_format=torch.channels_last))
        with torch.autocast("cuda", dtype=torch.float16):
            z = nn.functional.normalize(model(torch.cat(views)).float(), dim=-1)
            similarity = z @ z.T / 0.2
            similarity.fill_diagonal_(float("-inf"))
            targets = torch.arange(2 * batch, device="cuda").roll(batch)
            loss = nn.functional.cross_entropy(similarity, targets)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(float(loss.item()))
        del images, views, view, flip, z, similarity, targets, loss
    del model, optimizer, scaler
    return {"batches": batches, "losses": losses}


def gaussian_densify_train(torch):
    """A 3-D Gaussian-splatting-style optimization in plain torch: 120,000 points (positions, scales, rotations,
    48 colour coefficients, opacities as parameters, Adam), splatted to a 512 x 512 image by `index_add_` and fit to
    a target; every 4 of 24 steps the third of the points with the largest colour gradients is cloned (points whose
    opacity falls under 0.05 would be pruned; in the recording none did), so every parameter and its Adam moments
    are made again, larger, by concatenation (120,000 points to 674,236): training state that grows by
    replacement, not a KV cache."""
    nn = torch.nn
    gen = torch.Generator(device="cuda").manual_seed(0)
    side = 512
    start_recording(torch)
    widths = {"means": 3, "scales": 3, "rotations": 4, "colors": 48, "opacity": 1}
    params = {name: nn.Parameter(torch.randn(120_000, width, device="cuda", generator=gen) * 0.5)
              for name, width in widths.items()}
    opt = torch.optim.Adam(params.values(), lr=0.01)
    camera = torch.randn(3, 2, device="cuda", generator=gen)
    target = torch.rand(side * side, 3, device="cuda", generator=gen)
    losses, counts = [], []
    for step in range(24):
        xy = torch.sigmoid(params["means"] @ camera)
        pixel = (xy[:, 0] * (side - 1)).long() * side + (xy[:, 1] * (side - 1)).long()
        weight = torch.exp(-params["scales"].norm(dim=1, keepdim=True)) * torch.sigmoid(params["opacity"])
        weight = weight * nn.functional.normalize(params["rotations"], dim=1)[:, :1].abs()
        color = torch.sigmoid(params["colors"][:, :3]) + 0.01 * params["colors"][:, 3:].tanh().mean(1, keepdim=True)
        image = torch.zeros(side * side, 3, device="cuda").index_add(0, pixel, color * weight)
        loss = (image - target).abs().mean() + 1e-3 * params["means"].pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        if step % 4 == 3:
            with torch.no_grad():
                score = params["colors"].grad.norm(dim=1)
                clone = score.topk(score.numel() // 3).indices
                keep = (torch.sigmoid(params["opacity"][:, 0]) > 0.05).nonzero()[:, 0]
                new_params = {}
                for name, old in params.items():
                    state = opt.state.get(old, {})
                    jitter = torch.randn(clone.numel(), old.shape[1], device="cuda", generator=gen) * 0.01
                    fresh = nn.Parameter(torch.cat([old[keep], old[clone] + jitter]))
                    if state:
                        state = {"step": state["step"],
                                 "exp_avg": torch.cat([state["exp_avg"][keep], state["exp_avg"][clone] * 0]),
                                 "exp_avg_sq": torch.cat([state["exp_avg_sq"][keep],
                                                          state["exp_avg_sq"][clone] * 0])}
                    new_params[name] = (fresh, state)
                    del jitter
                del score, clone, keep
            params = {name: fresh for name, (fresh, _) in new_params.items()}
            opt = torch.optim.Adam(params.values(), lr=0.01)
            for fresh, state in new_params.values():
                if state:
                    opt.state[fresh] = state
            del new_params
        counts.append(params["means"].shape[0])
        del xy, pixel, weight, color, image, loss
    del params, opt, camera, target
    return {"losses": losses[::4], "points": counts}


def packed_varlen_pretrain(torch):
    """Language-model pretraining on packed sequences in plain torch (6 layers, 768 wide, 12 heads, 32k
    vocabulary): each row packs documents of random lengths, attention is causal within a document only (a
    block-diagonal boolean mask of rows x tokens x tokens through `scaled_dot_product_attention`), bf16 autocast,
    AdamW, 10 steps of (rows, tokens) from (16, 512) to (2, 4,096): the masks' size goes with the square of the
    row length."""
    torch.manual_seed(0)
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x, mask):
            rows, tokens, width = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(rows, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            attn = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.proj(attn.transpose(1, 2).reshape(rows, tokens, width))
            return x + self.mlp(self.norm2(x))

    class PackedLM(nn.Module):
        def __init__(self, width=768, layers=6, heads=12, vocab=32000):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
            self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

        def forward(self, ids, docs):
            tokens = ids.shape[1]
            causal = torch.ones(tokens, tokens, dtype=torch.bool, device=ids.device).tril()
            mask = ((docs[:, :, None] == docs[:, None, :]) & causal).unsqueeze(1)
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x, mask)
            logits = self.head(self.norm(x))
            return nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())

    model = PackedLM()
    shapes = [(16, 512), (8, 1024), (4, 2048), (2, 4096), (16, 512), (4, 2048), (8, 1024), (2, 4096), (12, 768),
              (6, 1536)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    lengths = random.Random(0)
    losses = []
    for rows, tokens in shapes:
        ids = torch.randint(0, 32000, (rows, tokens), device="cuda", generator=gen)
        docs = []
        for _ in range(rows):
            row, doc = [], 0
            while len(row) < tokens:
                row.extend([doc] * lengths.randint(32, tokens // 2))
                doc += 1
            docs.append(row[:tokens])
        docs = torch.tensor(docs, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, docs)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        del ids, docs, loss
    del model, opt
    return {"shapes": shapes, "losses": losses}


def nmt_transformer_train(torch):
    """Machine-translation training with `nn.Transformer` (6 + 6 layers, 512 wide, 8 heads, 2,048 feed-forward) and
    a shared 32k vocabulary, source and target padded per batch with key-padding masks, label-smoothed cross
    entropy, bf16 autocast, AdamW, 12 steps of (sentences, source length, target length) from (16, 128, 120) to
    (256, 16, 20): batches sized by tokens, as translation trainers build them."""
    torch.manual_seed(0)
    nn = torch.nn

    class Translator(nn.Module):
        def __init__(self, vocab=32000, width=512):
            super().__init__()
            self.embed = nn.Embedding(vocab, width, padding_idx=0)
            self.position = nn.Embedding(512, width)
            self.core = nn.Transformer(width, 8, 6, 6, 2048, dropout=0.1, batch_first=True)
            self.out = nn.Linear(width, vocab)

        def forward(self, src, tgt_in, tgt_out):
            def embed(ids):
                return self.embed(ids) + self.position(torch.arange(ids.shape[1], device=ids.device))

            causal = self.core.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
            hidden = self.core(embed(src), embed(tgt_in), tgt_mask=causal, src_key_padding_mask=src == 0,
                               tgt_key_padding_mask=tgt_in == 0, memory_key_padding_mask=src == 0)
            logits = self.out(hidden).float()
            return nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0,
                                               label_smoothing=0.1)

    model = Translator()
    batches = [(64, 40, 44), (16, 128, 120), (128, 24, 28), (32, 80, 72), (256, 16, 20), (48, 60, 64),
               (24, 100, 96), (96, 32, 36), (64, 48, 40), (16, 120, 128), (128, 20, 24), (40, 72, 76)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for sentences, source, target in batches:
        def padded(longest):
            ids = torch.randint(3, 32000, (sentences, longest), device="cuda", generator=gen)
            lengths = torch.randint(longest // 2, longest + 1, (sentences, 1), device="cuda", generator=gen)
            return ids * (torch.arange(longest, device="cuda")[None] < lengths)

        src, tgt = padded(source), padded(target + 1)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(src, tgt[:, :-1], tgt[:, 1:])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        del src, tgt, loss
    del model, opt
    return {"batches": batches, "losses": losses}


def histogram_boosting(torch):
    """Gradient-boosted decision trees on the GPU in plain torch, without a model: 1 million rows of 64 features
    binned to 256 levels (uint8), 6 trees of depth 6 fit to squared error; at each level every row's gradient and
    hessian are added into per-(node, feature, bin) histograms by `index_add_` (index and value temporaries of
    several hundred MiB), the best split of every node found by cumulative sums, and the rows routed down: large
    temporaries per level beside a resident dataset."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, features, bins, depth = 1_000_000, 64, 256, 6
    start_recording(torch)
    data = torch.randint(0, bins, (rows, features), device="cuda", generator=gen, dtype=torch.uint8)
    noise = torch.randn(rows, device="cuda", generator=gen) * 0.1
    target = data[:, :8].float().sum(1) / (8 * 255) + noise
    prediction = torch.zeros(rows, device="cuda")
    offsets = torch.arange(features, device="cuda") * bins
    errors = []
    for _ in range(6):
        grad = prediction - target
        hess = torch.ones_like(grad)
        node = torch.zeros(rows, dtype=torch.long, device="cuda")
        for level in range(depth):
            nodes = 1 << level
            index = (node[:, None] * (features * bins) + offsets + data.long()).flatten()
            size = nodes * features * bins
            g_hist = torch.zeros(size, device="cuda").index_add_(0, index, grad[:, None].expand(-1, features).flatten())
            h_hist = torch.zeros(size, device="cuda").index_add_(0, index, hess[:, None].expand(-1, features).flatten())
            del index
            g_left = g_hist.view(nodes, features, bins).cumsum(-1)
            h_left = h_hist.view(nodes, features, bins).cumsum(-1)
            g_total, h_total = g_left[:, :1, -1:], h_left[:, :1, -1:]
            gain = g_left ** 2 / (h_left + 1) + (g_total - g_left) ** 2 / (h_total - h_left + 1)
            best = gain.view(nodes, -1).argmax(1)
            feature, threshold = best // bins, best % bins
            right = data.gather(1, feature[node][:, None])[:, 0].long() > threshold[node]
            node = node * 2 + right.long()
            del g_hist, h_hist, g_left, h_left, g_total, h_total, gain, best, feature, threshold, right
        leaves = 1 << depth
        g_leaf = torch.zeros(leaves, device="cuda").index_add_(0, node, grad)
        h_leaf = torch.zeros(leaves, device="cuda").index_add_(0, node, hess)
        prediction += 0.3 * (-g_leaf / (h_leaf + 1))[node]
        errors.append(float((prediction - target).pow(2).mean().item()))
        del grad, hess, node, g_leaf, h_leaf
    del data, noise, target, prediction, offsets
    return {"errors": errors}


def resnet34_infer_mid(torch):
    """torchvision ResNet-34 inference, fp16, channels-last, batches of 4 to 32 images of 192 to 288 pixels (10
    shapes, each twice): meant as a heap between 200 and 300 MiB, where the default policy's 16 MiB spare is 5 to
    8 % of the peak."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(8, 224), (16, 192), (4, 288), (32, 224), (12, 256), (24, 192), (8, 288), (32, 192), (16, 256),
              (4, 224)]
    checksum = infer_images(torch, torchvision.models.resnet34(num_classes=1000), shapes,
                            lambda m: m.cuda().half().to(memory_format=torch.channels_last).eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def lraspp_segment_infer(torch):
    """torchvision LR-ASPP MobileNetV3-Large semantic segmentation inference (21 classes, no pretrained weights),
    fp16, batches of 1 to 8 images of 384 to 640 pixels (10 shapes, each twice): a small model whose activations
    are most of a small heap."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(2, 512), (1, 640), (4, 384), (8, 448), (1, 512), (4, 576), (2, 640), (8, 384), (6, 512), (1, 384)]
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().half().eval(),
                            lambda out: float(out["out"].float().argmax(1).float().mean().item()))
    return {"shapes": shapes, "checksum": checksum}


def classify_padded(torch, model, vocab_size, batches, forward, count):
    """Records from before `model` (an encoder built on the CPU by the caller, passed as its only reference so that it
    is freed here) moves to the GPU in fp16, then runs each (sentences, tokens) batch of random ids padded on the
    right from a random length of at least a quarter of the batch's: `forward(model, ids, mask)` runs the model on
    `ids * mask` (the padding zeroed: a temporary for the call alone) and gives what is kept of the output,
    `count(kept, mask)` an integer for the checksum. The inputs are freed, then what was kept. Returns the sum of the
    counts."""
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    total = 0
    with torch.inference_mode():
        for sentences, tokens in batches:
            ids = torch.randint(1000, vocab_size, (sentences, tokens), device="cuda", generator=gen)
            lengths = torch.randint(tokens // 4, tokens + 1, (sentences, 1), device="cuda", generator=gen)
            mask = (torch.arange(tokens, device="cuda")[None] < lengths).long()
            kept = forward(model, ids, mask)
            total += count(kept, mask)
            del ids, lengths, mask, kept
    del model
    return total


def masked_logits(model, ids, mask):
    """A [`classify_padded`] forward for a sequence classifier: its logits on `ids * mask` (the padding zeroed)."""
    return model(input_ids=ids * mask, attention_mask=mask).logits


def rows_labelled(label):
    """A [`classify_padded`] count: how many rows the classifier's logits give `label`."""
    return lambda logits, mask: int((logits.argmax(-1) == label).sum().item())


def answer_spans(torch, model, vocab_size, batches, ordered):
    """Records from before `model` (an extractive question-answering model built on the CPU by the caller, passed as
    its only reference so that it is freed here) moves to the GPU in fp16, then answers each (questions, tokens)
    batch of random ids padded on the right: the best span from the start and end logits (with `ordered`, spans
    that end before they start are masked out first). Returns the batches and a checksum of the spans."""
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0
    with torch.inference_mode():
        for questions, tokens in batches:
            ids = torch.randint(1000, vocab_size, (questions, tokens), device="cuda", generator=gen)
            lengths = torch.randint(tokens // 2, tokens + 1, (questions, 1), device="cuda", generator=gen)
            mask = (torch.arange(tokens, device="cuda")[None] < lengths).long()
            out = model(input_ids=ids * mask, attention_mask=mask)
            scores = out.start_logits[:, :, None] + out.end_logits[:, None, :]
            if ordered:
                scores = scores.masked_fill(~torch.ones(tokens, tokens, dtype=torch.bool, device="cuda").triu(), -1e4)
            best = scores.flatten(1).argmax(1)
            checksum += int(best.sum().item())
            del ids, lengths, mask, out, scores, best
    del model
    return {"batches": batches, "checksum": checksum}


def distilbert_qa_infer(torch):
    """Extractive question answering with a DistilBERT-sized encoder through transformers
    (`DistilBertForQuestionAnswering(DistilBertConfig())`: 6 layers, 768 wide, 12 heads, 30k vocabulary), fp16,
    12 batches of (questions, tokens) from (1, 512) to (32, 128), padded on the right; the best answer span taken
    from the start and end logits: meant as a heap a little over 200 MiB."""
    from transformers import DistilBertConfig, DistilBertForQuestionAnswering

    torch.manual_seed(0)
    config = DistilBertConfig()
    batches = [(4, 384), (1, 512), (16, 256), (32, 128), (8, 384), (2, 512), (24, 192), (12, 320), (32, 96),
               (6, 448), (16, 384), (1, 128)]
    return answer_spans(torch, DistilBertForQuestionAnswering(config).eval(), config.vocab_size, batches, ordered=True)


def small_decoder_sample_generate(torch):
    """A small Llama-style decoder through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 6 layers, 512 wide,
    8 heads, 32k vocabulary, untied embeddings), fp16, `generate` with top-k sampling, 4 rounds (batch, prompt, new
    tokens) (8, 128, 48), (16, 64, 32), (4, 256, 40), (24, 96, 24): a generation heap meant to be about 200 MiB."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024,
                         tie_word_embeddings=False)
    rounds = [(8, 128, 48), (16, 64, 32), (4, 256, 40), (24, 96, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, LlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=0)


def efficientnet_infer_small(torch):
    """torchvision EfficientNet-B0 inference (random weights), fp16, channels-last, batches of 4 to 48 images of 192
    to 320 pixels (8 shapes, each twice): depthwise convolutions' wide expanded activations in a heap meant to be
    between 100 and 300 MiB."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(8, 224), (32, 224), (16, 288), (48, 192), (24, 256), (4, 320), (32, 256), (12, 224)]
    checksum = infer_images(torch, torchvision.models.efficientnet_b0(num_classes=1000), shapes,
                            lambda m: m.cuda().half().to(memory_format=torch.channels_last).eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def regnet_train_small(torch):
    """torchvision RegNetY-400MF training (grouped convolutions, squeeze-and-excitation), SGD with momentum, fp16
    autocast with GradScaler, 10 steps of 16 to 48 images of 128 pixels, 100 classes: a small training heap."""
    import torchvision

    torch.manual_seed(0)
    batches = [32, 16, 48, 24, 40, 16, 48, 32, 24, 40]
    losses = train_classifier(torch, torchvision.models.regnet_y_400mf(num_classes=100),
                              [(batch, 3, 128, 128) for batch in batches],
                              lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), classes=100,
                              channels_last=True)
    return {"batches": batches, "losses": losses}


def distilgpt2_greedy_generate(torch):
    """A DistilGPT-2-sized decoder (`GPT2LMHeadModel(GPT2Config(n_layer=6))`: 6 layers, 768 wide, 50k vocabulary),
    fp16, greedy `generate`, 4 rounds (batch, prompt, new tokens) (4, 128, 64), (16, 64, 48), (1, 512, 64),
    (8, 256, 32): meant as a generation heap of about 200 MiB (its peak is 291 MiB)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=6)
    rounds = [(4, 128, 64), (16, 64, 48), (1, 512, 64), (8, 256, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPT2LMHeadModel(config).eval(), rounds, config.vocab_size, do_sample=False,
                           pad_token_id=0)


def t5_small_greedy_translate(torch):
    """A T5-small-sized encoder-decoder (`T5ForConditionalGeneration(T5Config(...))`: 6 + 6 layers, 512 wide, 32k
    vocabulary), bf16, greedy `generate` for 4 rounds of (batch, input length, new tokens) from (2, 512, 48) to
    (32, 64, 24), inputs with random padding: an encoder-decoder cache in a heap of about 200 MiB."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                      num_heads=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    rounds = [(8, 256, 32), (2, 512, 48), (32, 64, 24), (4, 384, 32)]  # batch, length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, T5ForConditionalGeneration(config).eval(), rounds,
                                               config.vocab_size, num_beams=1, do_sample=False)
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def gcn_sparse_train(torch):
    """A 2-layer graph convolutional network in plain torch whose aggregation is a sparse-dense product
    (`torch.sparse.mm` with a normalized COO adjacency), 64 features, 128 wide, 16 classes, fp32, Adam, 8 steps on
    random graphs of 30,000 to 90,000 nodes and 6 to 12 edges per node: a small heap of index and feature tensors
    whose sizes change every step."""
    import random

    torch.manual_seed(0)
    nn = torch.nn
    features, width, classes = 64, 128, 16
    model = nn.ModuleList([nn.Linear(features, width), nn.Linear(width, classes)])
    rng = random.Random(0)
    graphs = [(rng.randint(30_000, 90_000), rng.randint(6, 12)) for _ in range(8)]  # nodes, edges per node
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for nodes, per_node in graphs:
        edges = nodes * per_node
        index = torch.randint(0, nodes, (2, edges), device="cuda", generator=gen)
        degree = torch.zeros(nodes, device="cuda").index_add_(0, index[0], torch.ones(edges, device="cuda"))
        values = 1.0 / degree.clamp(min=1)[index[0]]
        adjacency = torch.sparse_coo_tensor(index, values, (nodes, nodes)).coalesce()
        x = torch.randn(nodes, features, device="cuda", generator=gen)
        labels = torch.randint(0, classes, (nodes,), device="cuda", generator=gen)
        hidden = torch.relu(torch.sparse.mm(adjacency, model[0](x)))
        logits = torch.sparse.mm(adjacency, model[1](hidden))
        loss = torch.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del index, degree, values, adjacency, x, labels, hidden, logits, loss
    del model, opt
    return {"graphs": graphs, "losses": losses}


def kws_conv1d_train(torch):
    """Keyword spotting in plain torch: a 1-D convolutional classifier over raw one-second 16 kHz clips (a strided
    80-tap front end, then 3 convolution blocks of 64 / 128 / 256 channels with batch norm and pooling, 35 classes),
    fp32, Adam, 12 steps of 16 to 64 clips: a small audio training heap."""
    import random

    torch.manual_seed(0)
    nn = torch.nn

    def block(cin, cout, kernel, stride=1):
        return [nn.Conv1d(cin, cout, kernel, stride=stride, padding=kernel // 2), nn.BatchNorm1d(cout), nn.ReLU(),
                nn.MaxPool1d(4)]

    model = nn.Sequential(*block(1, 64, 80, stride=4), *block(64, 64, 3), *block(64, 128, 3), *block(128, 256, 3),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(256, 35))
    rng = random.Random(0)
    batches = [rng.choice([16, 32, 48, 64]) for _ in range(12)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = fp32_classifier_steps(torch, model, opt, batches, gen, sample=(1, 16000), classes=35)
    del model, opt
    return {"batches": batches, "losses": losses}


def bert_mini_embed_infer(torch):
    """Sentence embeddings from a BERT-mini-sized encoder through transformers (`BertModel(BertConfig(...))`: 4
    layers, 256 wide, 4 heads, 30k vocabulary), fp16, mean pooling over the attention mask, 10 batches of
    (sentences, tokens) from (512, 32) to (16, 512), padded on the right: meant as a heap of about 100 MiB (its peak
    is 155 MiB)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
    model = BertModel(config, add_pooling_layer=False).eval()
    batches = [(128, 128), (512, 32), (16, 512), (64, 256), (256, 64), (32, 384), (192, 96), (8, 512), (96, 160),
               (384, 48)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for sentences, tokens in batches:
            ids = torch.randint(1000, config.vocab_size, (sentences, tokens), device="cuda", generator=gen)
            lengths = torch.randint(tokens // 4, tokens + 1, (sentences, 1), device="cuda", generator=gen)
            mask = (torch.arange(tokens, device="cuda")[None] < lengths).long()
            hidden = model(input_ids=ids * mask, attention_mask=mask).last_hidden_state
            weights = mask[:, :, None].to(hidden.dtype)
            embeddings = (hidden * weights).sum(1) / weights.sum(1)
            embeddings = torch.nn.functional.normalize(embeddings.float(), dim=1)
            checksum += float((embeddings @ embeddings.T).mean().item())
            del ids, lengths, mask, hidden, weights, embeddings
    del model
    return {"batches": batches, "checksum": checksum}


def small_unet_denoise_infer(torch):
    """Image denoising inference with a small UNet in plain torch (3 levels of 32 / 64 / 128 channels, two 3 x 3
    convolutions with GroupNorm and SiLU per level, skip connections by concatenation), fp16, 9 rounds of (batch,
    side) from (1, 768) to (16, 128): full-resolution activations in a heap meant to be about 150 MiB
    (its peak is 389 MiB)."""
    torch.manual_seed(0)
    nn = torch.nn

    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.down1, self.down2, self.mid = double(3, 32), double(32, 64), double(64, 128)
            self.up2, self.up1 = double(128 + 64, 64), double(64 + 32, 32)
            self.out = nn.Conv2d(32, 3, 1)

        def forward(self, x):
            d1 = self.down1(x)
            d2 = self.down2(nn.functional.max_pool2d(d1, 2))
            m = self.mid(nn.functional.max_pool2d(d2, 2))
            u2 = self.up2(torch.cat([nn.functional.interpolate(m, scale_factor=2.0), d2], 1))
            u1 = self.up1(torch.cat([nn.functional.interpolate(u2, scale_factor=2.0), d1], 1))
            return x - self.out(u1)

    rounds = [(4, 256), (1, 768), (16, 128), (2, 512), (8, 256), (1, 640), (6, 320), (12, 192), (3, 448)]
    model = UNet()
    start_recording(torch)
    model = model.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch, side in rounds:
            noisy = torch.randn(batch, 3, side, side, device="cuda", generator=gen, dtype=torch.float16)
            clean = model(noisy)
            checksum += float(clean.float().abs().mean().item())
            del noisy, clean
    del model
    return {"rounds": rounds, "checksum": checksum}


def squeezenet_infer(torch):
    """torchvision SqueezeNet 1.1 inference (fire modules: 1 x 1 squeezes and concatenated expands), fp16,
    channels-last, 8 (batch, image side) shapes from (2, 384) to (96, 224), each twice: a small vision heap."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(16, 224), (96, 224), (2, 384), (48, 256), (8, 320), (64, 192), (4, 448), (32, 288)]
    checksum = infer_images(torch, torchvision.models.squeezenet1_1(), shapes,
                            lambda m: m.cuda().half().to(memory_format=torch.channels_last).eval(), image_score)
    return {"shapes": shapes, "checksum": checksum}


def densenet_infer(torch):
    """torchvision DenseNet-121 inference (every layer's input the concatenation of all before it in its block),
    fp16, 8 (batch, image side) shapes from (1, 448) to (32, 224), each twice."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(8, 224), (1, 448), (32, 224), (4, 320), (16, 256), (2, 384), (24, 192), (12, 288)]
    checksum = infer_images(torch, torchvision.models.densenet121(), shapes,
                            lambda m: m.cuda().half().eval(), image_score)
    return {"shapes": shapes, "checksum": checksum}


def vit_b32_infer(torch):
    """torchvision ViT-B/32 inference (88 M parameters, 49 patches at 224 pixels), fp16, 8 batches from 1 to 128
    images of 224 pixels, each twice: weights are most of the heap."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(16, 224), (1, 224), (128, 224), (8, 224), (64, 224), (4, 224), (96, 224), (32, 224)]
    checksum = infer_images(torch, torchvision.models.vit_b_32(), shapes, lambda m: m.cuda().half().eval(),
                            image_score)
    return {"shapes": shapes, "checksum": checksum}


def shufflenet_train_small(torch):
    """torchvision ShuffleNetV2 x1.0 training (channel shuffles and splits), 200 classes, AdamW, fp16 autocast with
    GradScaler, 10 steps of 32 to 96 images of 128 pixels."""
    import torchvision

    torch.manual_seed(0)
    batches = [64, 32, 96, 48, 80, 32, 96, 64, 48, 80]
    losses = train_classifier(torch, torchvision.models.shufflenet_v2_x1_0(num_classes=200),
                              [(batch, 3, 128, 128) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-3), classes=200)
    return {"batches": batches, "losses": losses}


def opt_small_sample_generate(torch):
    """A small OPT-style decoder through transformers (`OPTForCausalLM(OPTConfig(...))`: 6 layers, 512 wide, 8 heads,
    50k vocabulary), fp16, `generate` with nucleus sampling (top-p 0.9), 4 rounds (batch, prompt, new tokens)
    (8, 96, 48), (2, 384, 64), (24, 32, 32), (4, 192, 40)."""
    from transformers import OPTConfig, OPTForCausalLM

    torch.manual_seed(0)
    config = OPTConfig(vocab_size=50272, hidden_size=512, num_hidden_layers=6, ffn_dim=2048, num_attention_heads=8,
                       word_embed_proj_dim=512, max_position_embeddings=1024)
    rounds = [(8, 96, 48), (2, 384, 64), (24, 32, 32), (4, 192, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, OPTForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.9, top_k=0, pad_token_id=1)


def bart_small_greedy_summarize(torch):
    """A small BART-style encoder-decoder through transformers (`BartForConditionalGeneration(BartConfig(...))`:
    4 + 4 layers, 512 wide, 8 heads, 50k vocabulary), bf16, greedy `generate` for 4 rounds of (batch, input length,
    new tokens) from (2, 1024, 48) to (16, 256, 32), inputs with random padding."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    config = BartConfig(vocab_size=50265, d_model=512, encoder_layers=4, decoder_layers=4, encoder_attention_heads=8,
                        decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                        max_position_embeddings=1024, pad_token_id=0, bos_token_id=2, eos_token_id=3,
                        decoder_start_token_id=2, forced_eos_token_id=None)
    rounds = [(4, 512, 40), (2, 1024, 48), (16, 256, 32), (8, 384, 24)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, BartForConditionalGeneration(config).eval(), rounds,
                                               config.vocab_size, num_beams=1, do_sample=False)
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def tiny_llama_greedy_generate(torch):
    """A tiny Llama-style decoder through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 4 layers, 384 wide, 6
    heads with 2 KV heads, 32k vocabulary), fp16, greedy `generate`, 5 rounds (batch, prompt, new tokens) from
    (1, 512, 64) to (32, 48, 24): a heap of about 100 MiB."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=384, intermediate_size=1024, num_hidden_layers=4,
                         num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=1024)
    rounds = [(4, 128, 48), (1, 512, 64), (32, 48, 24), (8, 256, 32), (16, 96, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, LlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def raft_flow_infer(torch):
    """torchvision RAFT-small optical flow inference (`raft_small()`, random weights: a correlation pyramid and 12
    recurrent refinement updates, every update's flow kept in the output), fp32, 6 (batch, height, width) image
    pairs from (1, 256, 448) to (4, 368, 496), each twice."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.optical_flow.raft_small()
    shapes = [(1, 256, 448), (2, 368, 496), (4, 256, 256), (1, 480, 640), (4, 368, 496), (2, 200, 320)]
    start_recording(torch)
    model = model.cuda().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for _ in range(2):
            for batch, height, width in shapes:
                first = torch.rand(batch, 3, height, width, device="cuda", generator=gen) * 2 - 1
                second = torch.roll(first, shifts=(3, 5), dims=(2, 3))
                flows = model(first, second)
                checksum += float(flows[-1].abs().mean().item())
                del first, second, flows
    del model
    return {"shapes": shapes, "checksum": checksum}


def sr_pixelshuffle_infer(torch):
    """Image super-resolution inference with an EDSR-style network in plain torch (a 3 x 3 convolution to 64
    channels, 12 residual blocks of two convolutions, x4 upsampling as two convolution + PixelShuffle(2) stages),
    fp16, 8 (batch, side) low-resolution inputs from (1, 256) to (32, 48), each twice: outputs 16 times the input."""
    torch.manual_seed(0)
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1))

        def forward(self, x):
            return x + 0.1 * self.body(x)

    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), *[Block() for _ in range(12)],
                          nn.Conv2d(64, 256, 3, padding=1), nn.PixelShuffle(2),
                          nn.Conv2d(64, 256, 3, padding=1), nn.PixelShuffle(2), nn.Conv2d(64, 3, 3, padding=1))
    shapes = [(1, 256), (4, 128), (16, 64), (2, 192), (32, 48), (8, 96), (1, 320), (12, 80)]
    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().half().eval(),
                            lambda out: float(out.float().mean().item()))
    return {"shapes": shapes, "checksum": checksum}


def model_sweep_train(torch):
    """A hyperparameter sweep in one process: four transformer encoders in plain torch (`nn.TransformerEncoder`,
    4 layers, widths 256 / 768 / 512 / 1024, sequences of 128 tokens, batch 32, a 10k-token classifier head) trained
    one after another for 4 steps each with bf16 autocast and AdamW, each model and optimizer freed before the
    next is built: the heap's whole working set is replaced three times."""
    torch.manual_seed(0)
    nn = torch.nn
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    results = []
    for width in (256, 768, 512, 1024):
        layer = nn.TransformerEncoderLayer(width, width // 64, 4 * width, batch_first=True, norm_first=True)
        model = nn.ModuleDict({"embed": nn.Embedding(10000, width), "body": nn.TransformerEncoder(layer, 4),
                               "head": nn.Linear(width, 10000)}).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for _ in range(4):
            tokens = torch.randint(0, 10000, (32, 128), device="cuda", generator=gen)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model["head"](model["body"](model["embed"](tokens)))
                loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), tokens.flatten())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            results.append(loss.item())
            del tokens, logits, loss
        del layer, model, opt
    return {"losses": results}


def neural_ode_train(torch):
    """A neural ODE in plain torch: an MLP vector field (512 -> 1024 -> 1024 -> 512 with SiLU, time as an extra
    input) integrated by fixed-step RK4 over 24 steps (4 evaluations each, every intermediate kept for the
    backward pass), a linear readout to 10 classes, Adam, 8 training steps with batches of 64 to 512."""
    torch.manual_seed(0)
    nn = torch.nn
    field = nn.Sequential(nn.Linear(513, 1024), nn.SiLU(), nn.Linear(1024, 1024), nn.SiLU(), nn.Linear(1024, 512))
    readout = nn.Linear(512, 10)
    start_recording(torch)
    field, readout = field.cuda(), readout.cuda()
    opt = torch.optim.Adam(list(field.parameters()) + list(readout.parameters()), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def f(t, y):
        return field(torch.cat([y, torch.full_like(y[:, :1], t)], dim=1))

    losses, steps, h = [], 24, 1.0 / 24
    for batch in (64, 256, 512, 128, 384, 512, 64, 256):
        y = torch.randn(batch, 512, device="cuda", generator=gen)
        labels = torch.randint(0, 10, (batch,), device="cuda", generator=gen)
        for k in range(steps):
            t = k * h
            k1 = f(t, y)
            k2 = f(t + h / 2, y + h / 2 * k1)
            k3 = f(t + h / 2, y + h / 2 * k2)
            k4 = f(t + h, y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        loss = nn.functional.cross_entropy(readout(y), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del y, labels, loss, k1, k2, k3, k4
    del field, readout, opt
    return {"losses": losses}


def keypoint_rcnn_infer(torch):
    """torchvision Keypoint R-CNN (ResNet-50 FPN, random weights, no pretrained backbone) inference, fp32, 8
    batches of 1 to 4 images of 320 to 640 pixels (the number of detections, and so the keypoint heads' work,
    depends on the data)."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.detection.keypointrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                                                   box_score_thresh=0.0).eval()
    sizes = [(1, 480, 640), (2, 320, 480), (4, 400, 400), (1, 640, 512), (3, 360, 640), (2, 512, 512),
             (4, 320, 320), (1, 600, 600)]
    holder = [model]
    del model
    counts = detect(torch, holder, [[(height, width)] * batch for batch, height, width in sizes])
    return {"sizes": sizes, "detections": counts}


def multi_model_serving(torch):
    """Two models served from one process: torchvision ResNet-50 (fp16, channels-last) and a BERT-base-sized
    encoder in plain torch (`nn.TransformerEncoder`, 12 layers, 768 wide, fp16), both resident, 24 requests
    alternating between them in an irregular order (image batches of 1 to 32, text batches of 1 to 16 at 64 to 384
    tokens)."""
    import torchvision

    torch.manual_seed(0)
    nn = torch.nn
    vision = torchvision.models.resnet50(num_classes=1000)
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
    text = nn.ModuleDict({"embed": nn.Embedding(30522, 768), "body": nn.TransformerEncoder(layer, 12)})
    requests = [("image", 8), ("text", (4, 128)), ("text", (1, 384)), ("image", 32), ("image", 1),
                ("text", (16, 64)), ("image", 16), ("text", (8, 256)), ("text", (2, 128)), ("image", 4),
                ("image", 24), ("text", (12, 96)), ("text", (4, 384)), ("image", 2), ("text", (16, 128)),
                ("image", 12), ("text", (1, 64)), ("image", 32), ("text", (6, 320)), ("image", 6),
                ("text", (10, 192)), ("image", 20), ("text", (3, 256)), ("image", 1)]
    start_recording(torch)
    vision = vision.cuda().half().to(memory_format=torch.channels_last).eval()
    text = text.cuda().half().eval()
    checksum = serve_image_and_text(torch, vision, text, requests, torch.float16, channels_last=True)
    del vision, text, layer
    return {"requests": len(requests), "checksum": checksum}


def serve_image_and_text(torch, vision, text, requests, dtype, channels_last=False):
    """Serves `requests` (("image", batch) or ("text", (batch, tokens))) on a classifier `vision` and an encoder
    `text` (an `embed` and a `body`), both on the GPU in `dtype`, in inference mode on random inputs (images of 224
    pixels in `dtype`, moved to channels-last first with `channels_last`). Returns a checksum of the outputs; the
    models are the caller's to free."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for kind, shape in requests:
            if kind == "image":
                images = torch.randn(shape, 3, 224, 224, device="cuda", generator=gen, dtype=dtype)
                checksum += image_score(vision(images.to(memory_format=torch.channels_last) if channels_last
                                               else images))
                del images
            else:
                tokens = torch.randint(0, 30522, shape, device="cuda", generator=gen)
                checksum += float(text["body"](text["embed"](tokens)).float().mean().item())
                del tokens
    return checksum


def spectrogram_transformer_train(torch):
    """Audio classification training in plain torch: log-mel spectrograms computed on the GPU (`torch.stft`, 512-
    point FFT, hop 160, an 80-band filterbank as a matrix product) from 2 s clips at 16 kHz, 16 x 16 patches, a
    6-layer transformer encoder (384 wide, 6 heads), 50 classes, bf16 autocast, AdamW, 10 steps with batches of 16
    to 96."""
    torch.manual_seed(0)
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(1, 384, 16, 16)
            layer = nn.TransformerEncoderLayer(384, 6, 1536, batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, 6)
            self.head = nn.Linear(384, 50)

        def forward(self, mel):
            x = self.patch(mel.unsqueeze(1)).flatten(2).transpose(1, 2)
            return self.head(self.body(x).mean(1))

    model = Model()
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    window = torch.hann_window(512, device="cuda")
    bank = torch.rand(80, 257, device="cuda", generator=gen)
    losses = []
    for batch in (16, 64, 32, 96, 48, 16, 80, 64, 32, 96):
        audio = torch.randn(batch, 32000, device="cuda", generator=gen)
        labels = torch.randint(0, 50, (batch,), device="cuda", generator=gen)
        spec = torch.stft(audio, 512, hop_length=160, window=window, return_complex=True).abs().pow(2)
        mel = torch.log(bank @ spec + 1e-6)[:, :, :192]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(mel), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del audio, labels, spec, mel, loss
    del model, opt, window, bank
    return {"losses": losses}


def longformer_infer(torch):
    """A Longformer-style encoder through transformers (`LongformerModel(LongformerConfig(...))`: 6 layers, 512
    wide, 8 heads, sliding-window attention of 256 tokens with global attention on the first token), fp16, 6
    (batch, length) inputs from (1, 4096) to (8, 512), each twice."""
    from transformers import LongformerConfig, LongformerModel

    torch.manual_seed(0)
    config = LongformerConfig(vocab_size=30522, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                              intermediate_size=2048, attention_window=256, max_position_embeddings=4098)
    model = LongformerModel(config)
    shapes = [(1, 4096), (2, 2048), (8, 512), (4, 1024), (1, 3072), (2, 1536)]
    start_recording(torch)
    model = model.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for _ in range(2):
            for batch, length in shapes:
                tokens = torch.randint(3, config.vocab_size, (batch, length), device="cuda", generator=gen)
                glob = torch.zeros(batch, length, dtype=torch.long, device="cuda")
                glob[:, 0] = 1
                out = model(input_ids=tokens, global_attention_mask=glob).last_hidden_state
                checksum += float(out.float().mean().item())
                del tokens, glob, out
    del model
    return {"shapes": shapes, "checksum": checksum}


def model_swap_infer(torch):
    """Three torchvision classifiers served one at a time from one process, each loaded (`.cuda().half()`,
    channels-last), run on 3 (batch, side) shapes and freed before the next is loaded: ResNet-34, MobileNetV3-Large,
    EfficientNet-B1, then the three again."""
    import torchvision

    torch.manual_seed(0)
    builders = [torchvision.models.resnet34, torchvision.models.mobilenet_v3_large, torchvision.models.efficientnet_b1]
    shapes = [(8, 224), (32, 192), (2, 320)]
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    for build in builders * 2:
        model = build(num_classes=1000).cuda().half().to(memory_format=torch.channels_last).eval()
        with torch.inference_mode():
            for batch, side in shapes:
                images = torch.randn(batch, 3, side, side, device="cuda", generator=gen, dtype=torch.float16)
                checksum += image_score(model(images.to(memory_format=torch.channels_last)))
                del images
        del model
    return {"shapes": shapes, "checksum": checksum}


def eval_copy_train(torch):
    """A 6-layer transformer encoder in plain torch (512 wide, 8 heads, a 16k-token classifier head) trained with
    bf16 autocast and AdamW for 9 steps (batch 32, 256 tokens); after every third step an fp16 copy
    (`copy.deepcopy(model).half()`) evaluates a batch of 64 and is freed."""
    import copy

    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, norm_first=True)
    model = nn.ModuleDict({"embed": nn.Embedding(16000, 512), "body": nn.TransformerEncoder(layer, 6),
                           "head": nn.Linear(512, 16000)})
    start_recording(torch)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def run(m, tokens):
        return m["head"](m["body"](m["embed"](tokens)))

    losses, evals = [], []
    for step in range(9):
        tokens = torch.randint(0, 16000, (32, 256), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(run(model, tokens).float().flatten(0, 1), tokens.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del tokens, loss
        if step % 3 == 2:
            copy_ = copy.deepcopy(model).half().eval()
            with torch.inference_mode():
                tokens = torch.randint(0, 16000, (64, 256), device="cuda", generator=gen)
                evals.append(float(run(copy_, tokens).float().argmax(-1).eq(tokens).float().mean().item()))
                del tokens
            del copy_
    del model, opt, layer
    return {"losses": losses, "evals": evals}


def ensemble_infer(torch):
    """An ensemble built up while serving: torchvision ResNet-18 loaded and run, then ViT-B/16 added, then
    ConvNeXt-Tiny (each `.cuda().half()`), every model kept; then the three averaged over 4 batches of 4 to 32
    images of 224 pixels."""
    import torchvision

    torch.manual_seed(0)
    builders = [torchvision.models.resnet18, torchvision.models.vit_b_16, torchvision.models.convnext_tiny]
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    models, checksum = [], 0.0
    with torch.inference_mode():
        for build in builders:
            models.append(build(num_classes=1000).cuda().half().eval())
            for batch in (8, 16):
                images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
                checksum += image_score(sum(m(images) for m in models) / len(models))
                del images
        for batch in (4, 32, 16, 24):
            images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            checksum += image_score(sum(m(images) for m in models) / len(models))
            del images
    del models
    return {"checksum": checksum}


def adapter_switch_infer(torch):
    """A frozen 8-layer transformer encoder in plain torch (768 wide, 12 heads, fp16) serving 6 low-rank adapters in
    turn: each adapter (a rank-32 pair of matrices per layer, added to every layer's output) is moved from the CPU,
    run on 2 batches (of 2 to 32 sequences of 128 to 384 tokens), and freed before the next."""
    torch.manual_seed(0)
    nn = torch.nn
    layers = nn.ModuleList([nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True) for _ in range(8)])
    adapters = [[(torch.randn(768, 32) * 0.02, torch.randn(32, 768) * 0.02) for _ in range(8)] for _ in range(6)]
    batches = [(4, 384), (32, 128), (8, 256), (16, 192), (2, 384), (24, 128)]
    start_recording(torch)
    layers = layers.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for index, adapter in enumerate(adapters):
            pairs = [(a.cuda().half(), b.cuda().half()) for a, b in adapter]
            for batch, length in (batches[index], batches[(index + 3) % len(batches)]):
                x = torch.randn(batch, length, 768, device="cuda", generator=gen, dtype=torch.float16)
                for layer, (a, b) in zip(layers, pairs):
                    x = layer(x)
                    x = x + (x @ a) @ b
                checksum += float(x.float().mean().item())
                del x
            del pairs
    del layers
    return {"batches": batches, "checksum": checksum}


def teacher_late_distill(torch):
    """A torchvision ResNet-18 student trained alone for 3 steps, then distilled for 5 more from a ResNet-50
    teacher loaded only then (`.cuda().half()`, frozen), bf16 autocast, AdamW, batches of 32 to 64 images of 160 to
    224 pixels."""
    import torchvision

    torch.manual_seed(0)
    F = torch.nn.functional
    student = torchvision.models.resnet18(num_classes=100)
    start_recording(torch)
    student = student.cuda().to(memory_format=torch.channels_last).train()
    opt = torch.optim.AdamW(student.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    teacher, losses = None, []
    for step, (batch, side) in enumerate([(32, 224), (64, 160), (48, 192), (64, 224), (32, 160), (48, 224),
                                          (64, 192), (32, 224)]):
        if step == 3:
            teacher = torchvision.models.resnet50(num_classes=100).cuda().half()
            teacher = teacher.to(memory_format=torch.channels_last).eval()
        images = torch.randn(batch, 3, side, side, device="cuda", generator=gen).to(memory_format=torch.channels_last)
        labels = torch.randint(0, 100, (batch,), device="cuda", generator=gen)
        soft = None
        if teacher is not None:
            with torch.inference_mode():
                soft = teacher(images.half()).float().div(4).softmax(-1)
            soft = soft.clone()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = student(images).float()
            loss = F.cross_entropy(out, labels)
            if soft is not None:
                loss = loss + F.kl_div(out.div(4).log_softmax(-1), soft, reduction="batchmean")
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, labels, soft, out, loss
    del student, opt, teacher
    return {"losses": losses}


def checkpoint_reload_train(torch):
    """A causal 8-layer transformer in plain torch (768 wide, 12 heads, 32k vocabulary) trained 4 steps with bf16
    autocast and AdamW, its model and optimizer state copied to the CPU (`state_dict`), everything on the GPU freed,
    then rebuilt from that checkpoint and trained 4 more steps (batches of 8 to 16 sequences of 256 to 512)."""
    import copy

    torch.manual_seed(0)
    nn = torch.nn

    def build():
        layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True)
        return nn.ModuleDict({"embed": nn.Embedding(32000, 768), "body": nn.TransformerEncoder(layer, 8),
                              "head": nn.Linear(768, 32000)})

    def to_cpu(value):
        if isinstance(value, torch.Tensor):
            return value.detach().to("cpu", copy=True)
        if isinstance(value, dict):
            return {k: to_cpu(v) for k, v in value.items()}
        if isinstance(value, list):
            return [to_cpu(v) for v in value]
        return copy.deepcopy(value)

    model = build()
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = []
    shapes = [(8, 512), (16, 256), (12, 384), (8, 448)]

    def train(model, opt):
        for batch, length in shapes:
            tokens = torch.randint(0, 32000, (batch, length), device="cuda", generator=gen)
            mask = nn.Transformer.generate_square_subsequent_mask(length, device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model["head"](model["body"](model["embed"](tokens), mask=mask, is_causal=True))
                loss = nn.functional.cross_entropy(logits[:, :-1].float().flatten(0, 1), tokens[:, 1:].flatten())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            del tokens, mask, logits, loss

    train(model, opt)
    saved = (to_cpu(model.state_dict()), to_cpu(opt.state_dict()))
    del model, opt
    gc.collect()
    model = build()
    model.load_state_dict(saved[0])
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    opt.load_state_dict(saved[1])
    train(model, opt)
    del model, opt
    return {"losses": losses}


def bf16_direct_load_infer(torch):
    """Models moved to the GPU and to bf16 in one call (`.to("cuda", torch.bfloat16)`: no fp32 copy on the GPU):
    torchvision ResNet-50 and a 12-layer, 768-wide `nn.TransformerEncoder`, then 12 requests alternating between them
    (image batches of 4 to 48, text batches of 4 to 16 at 128 to 512 tokens)."""
    import torchvision

    torch.manual_seed(0)
    nn = torch.nn
    vision = torchvision.models.resnet50(num_classes=1000)
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
    text = nn.ModuleDict({"embed": nn.Embedding(30522, 768), "body": nn.TransformerEncoder(layer, 12)})
    requests = [("image", 16), ("text", (8, 256)), ("image", 48), ("text", (4, 512)), ("image", 4),
                ("text", (16, 128)), ("image", 32), ("text", (8, 384)), ("image", 8), ("text", (12, 256)),
                ("image", 24), ("text", (4, 128))]
    start_recording(torch)
    vision = vision.to("cuda", torch.bfloat16).eval()
    text = text.to("cuda", torch.bfloat16).eval()
    checksum = serve_image_and_text(torch, vision, text, requests, torch.bfloat16)
    del vision, text, layer
    return {"requests": len(requests), "checksum": checksum}


def gpt2_half_short_generate(torch):
    """GPT-2 small (`GPT2LMHeadModel(GPT2Config())`) moved to the GPU in fp32 and converted there (`.cuda().half()`),
    then greedy `generate` for 3 short rounds of (batch, prompt, new tokens) from (1, 32, 16) to (4, 64, 24): a
    heap whose peak comes while the weights are converted."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    start_recording(torch)
    model = model.cuda().half()
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for batch, prompt, new in [(1, 32, 16), (4, 64, 24), (2, 48, 20)]:
            ids = torch.randint(0, 50257, (batch, prompt), device="cuda", generator=gen)
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False, pad_token_id=0)
            shapes.append(list(out.shape))
            token_sum += int(out.sum().item())
            del ids, out
    del model
    return {"output_shapes": shapes, "token_sum": token_sum}


def two_llms_serving(torch):
    """Two Llama-style decoders through transformers (`LlamaForCausalLM`: 6 layers 768 wide and 4 layers 1024 wide,
    32k vocabulary) in bf16, the second moved to the GPU (`.to("cuda", torch.bfloat16)`) only after the first has
    served 2 greedy rounds; then 4 rounds alternating between them, (batch, prompt, new tokens) from (1, 128, 32) to
    (8, 64, 16)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    configs = [LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=6,
                           num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=1024),
               LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                           num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=1024)]
    first, second = (LlamaForCausalLM(c).eval() for c in configs)
    start_recording(torch)
    models = [first.to("cuda", torch.bfloat16)]
    del first
    gen = torch.Generator(device="cuda").manual_seed(0)
    rounds = [(0, 4, 96, 24), (0, 1, 128, 32), (1, 8, 64, 16), (0, 2, 80, 24), (1, 4, 128, 20), (0, 8, 48, 16)]
    token_sum = 0
    with torch.inference_mode():
        for index, (which, batch, prompt, new) in enumerate(rounds):
            if index == 2:
                models.append(second.to("cuda", torch.bfloat16))
                del second
            ids = torch.randint(3, 32000, (batch, prompt), device="cuda", generator=gen)
            out = models[which].generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                         min_new_tokens=new, do_sample=False, pad_token_id=0)
            token_sum += int(out.sum().item())
            del ids, out
    del models
    return {"rounds": rounds, "token_sum": token_sum}


def vision_lazy_load_infer(torch):
    """torchvision ResNet-50 served alone (fp16, channels-last) for 3 batches, then Swin-T loaded beside it
    (`.cuda().half()`) and both served for 6 more (batches of 2 to 48 images of 224 pixels)."""
    import torchvision

    torch.manual_seed(0)
    resnet, swin = torchvision.models.resnet50(num_classes=1000), torchvision.models.swin_t(num_classes=1000)
    start_recording(torch)
    models = [resnet.cuda().half().to(memory_format=torch.channels_last).eval()]
    del resnet
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for index, batch in enumerate([8, 32, 2, 16, 48, 4, 24, 12, 32]):
            if index == 3:
                models.append(swin.cuda().half().eval())
                del swin
            images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            for model in models:
                checksum += image_score(model(images.contiguous(memory_format=torch.channels_last)))
            del images
    del models
    return {"checksum": checksum}


def bert_large_half_infer(torch):
    """A BERT-large-sized encoder in plain torch (`nn.TransformerEncoder`: 24 layers, 1024 wide, 16 heads, a 30k
    embedding) moved to the GPU in fp32 and converted there (`.cuda().half()`), then 6 small batches (1 to 8
    sequences of 64 to 256 tokens): a heap whose peak comes while the weights are converted."""
    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True)
    model = nn.ModuleDict({"embed": nn.Embedding(30522, 1024), "body": nn.TransformerEncoder(layer, 24)})
    del layer
    start_recording(torch)
    model = model.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch, length in [(1, 128), (8, 64), (4, 256), (2, 192), (8, 128), (1, 256)]:
            tokens = torch.randint(0, 30522, (batch, length), device="cuda", generator=gen)
            checksum += float(model["body"](model["embed"](tokens)).float().mean().item())
            del tokens
    del model
    return {"checksum": checksum}


def sweep_cnn_train(torch):
    """A sweep of torchvision classifiers trained one after another, 3 steps each and freed before the next:
    MobileNetV3-Small, ResNet-18, EfficientNet-B0 and ResNet-34 (100 classes, batches of 64 images of 160 pixels,
    fp16 autocast with GradScaler, AdamW)."""
    import torchvision

    torch.manual_seed(0)
    builders = [torchvision.models.mobilenet_v3_small, torchvision.models.resnet18,
                torchvision.models.efficientnet_b0, torchvision.models.resnet34]
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for build in builders:
        model = build(num_classes=100).cuda().train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cuda")
        for _ in range(3):
            images = torch.randn(64, 3, 160, 160, device="cuda", generator=gen)
            labels = torch.randint(0, 100, (64,), device="cuda", generator=gen)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(images), labels)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            del images, labels, loss
        del model, opt, scaler
    return {"losses": losses}


def clip_zero_shot_infer(torch):
    """A CLIP-sized dual encoder through transformers (`CLIPModel(CLIPConfig())`: ViT-B/32 image tower, 12-layer
    text tower) moved to the GPU in fp32 and converted there (`.cuda().half()`), then zero-shot scoring: 100 class
    prompts of 16 tokens embedded once, and 5 batches of 8 to 64 images of 224 pixels scored against them."""
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig()).eval()
    start_recording(torch)
    model = model.cuda().half()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        prompts = torch.randint(1, 49000, (100, 16), device="cuda", generator=gen)
        text = features(torch, model.get_text_features(input_ids=prompts))
        text = text / text.norm(dim=-1, keepdim=True)
        for batch in (8, 32, 64, 16, 48):
            images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            image = features(torch, model.get_image_features(pixel_values=images))
            image = image / image.norm(dim=-1, keepdim=True)
            checksum += float((image @ text.T).softmax(-1).max(-1).values.sum().item())
            del images, image
        del prompts, text
    del model
    return {"checksum": checksum}


def features(torch, out):
    """CLIP's `get_*_features` output as a tensor (a model output with the pooled projection in some transformers
    versions)."""
    if isinstance(out, torch.Tensor):
        return out
    return out.pooler_output if getattr(out, "pooler_output", None) is not None else out[0]


def t5_fp32_translate(torch):
    """A T5-base-sized encoder-decoder through transformers (`T5ForConditionalGeneration(T5Config(...))`: 12 + 12
    layers, 768 wide) kept in fp32, greedy `generate` for 4 rounds of (batch, input length, new tokens) from (2, 256,
    32) to (16, 64, 16)."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, d_model=768, d_ff=3072, num_layers=12, num_decoder_layers=12, num_heads=12,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config).eval()
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for batch, length, new in [(2, 256, 32), (8, 128, 24), (16, 64, 16), (4, 192, 20)]:
            ids = torch.randint(2, 32128, (batch, length), device="cuda", generator=gen)
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False)
            shapes.append(list(out.shape))
            token_sum += int(out.sum().item())
            del ids, out
    del model
    return {"output_shapes": shapes, "token_sum": token_sum}


def dit_train(torch):
    """A diffusion transformer (DiT-S-sized, plain torch: 12 blocks 384 wide, 6 heads, adaptive layer norm from a
    timestep and class embedding) trained on 32 x 32 x 4 latents in 2 x 2 patches, bf16 autocast, AdamW, 8 steps of
    16 to 64 latents."""
    torch.manual_seed(0)
    nn = torch.nn
    width, patches = 384, 256

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(width, elementwise_affine=False)
            self.attn = nn.MultiheadAttention(width, 6, batch_first=True)
            self.norm2 = nn.LayerNorm(width, elementwise_affine=False)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
            self.ada = nn.Linear(width, 6 * width)

        def forward(self, x, c):
            shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(nn.functional.silu(c)).unsqueeze(1).chunk(6, -1)
            h = self.norm1(x) * (1 + scale1) + shift1
            x = x + gate1 * self.attn(h, h, h, need_weights=False)[0]
            return x + gate2 * self.mlp(self.norm2(x) * (1 + scale2) + shift2)

    class DiT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(4, width, 2, 2)
            self.pos = nn.Parameter(torch.randn(1, patches, width) * 0.02)
            self.time = nn.Sequential(nn.Linear(256, width), nn.SiLU(), nn.Linear(width, width))
            self.label = nn.Embedding(1001, width)
            self.blocks = nn.ModuleList(Block() for _ in range(12))
            self.out = nn.Linear(width, 2 * 2 * 4)

        def forward(self, x, t, y):
            half = torch.arange(128, device=x.device) / 128
            freqs = t.float()[:, None] * torch.exp(-9.21 * half)[None]
            c = self.time(torch.cat([freqs.sin(), freqs.cos()], 1)) + self.label(y)
            h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
            for block in self.blocks:
                h = block(h, c)
            h = self.out(h).view(x.shape[0], 16, 16, 4, 2, 2).permute(0, 3, 1, 4, 2, 5)
            return h.reshape(x.shape)

    model = DiT()
    start_recording(torch)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in [32, 64, 16, 48, 64, 24, 32, 56]:
        latents = torch.randn(batch, 4, 32, 32, device="cuda", generator=gen)
        noise = torch.randn_like(latents)
        t = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)
        y = torch.randint(0, 1001, (batch,), device="cuda", generator=gen)
        alpha = (1 - t.float() / 1000).view(-1, 1, 1, 1)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = (model(alpha.sqrt() * latents + (1 - alpha).sqrt() * noise, t, y).float() - noise).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        del latents, noise, t, y, alpha, loss
    del model, opt
    return {"losses": losses}


def tts_autoregressive_infer(torch):
    """A Tacotron-style text-to-speech decoder in plain torch: a character encoder (embedding, 3 convolutions, a
    bidirectional LSTM, 512 wide) and an attention LSTM decoder emitting 80-bin mel frames one at a time, the frames
    gathered by `torch.cat` every step (a growing tensor) for 4 batches of 1 to 8 utterances of 40 to 160 characters
    and 120 to 300 frames, fp32."""
    torch.manual_seed(0)
    nn = torch.nn

    class Tts(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(80, 512)
            self.convs = nn.Sequential(*[nn.Sequential(nn.Conv1d(512, 512, 5, padding=2), nn.BatchNorm1d(512),
                                                       nn.ReLU()) for _ in range(3)])
            self.encoder = nn.LSTM(512, 256, batch_first=True, bidirectional=True)
            self.prenet = nn.Sequential(nn.Linear(80, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
            self.attn_rnn = nn.LSTMCell(256 + 512, 1024)
            self.query = nn.Linear(1024, 128)
            self.keys = nn.Linear(512, 128)
            self.score = nn.Linear(128, 1)
            self.dec_rnn = nn.LSTMCell(1024 + 512, 1024)
            self.frame = nn.Linear(1024 + 512, 80)

    model = Tts().eval()
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    frames_total, checksum = 0, 0.0
    with torch.inference_mode():
        for batch, chars, frames in [(1, 160, 300), (8, 40, 120), (4, 100, 200), (2, 140, 260)]:
            text = torch.randint(0, 80, (batch, chars), device="cuda", generator=gen)
            memory = model.encoder(model.convs(model.embed(text).transpose(1, 2)).transpose(1, 2))[0]
            keys = model.keys(memory)
            zeros = memory.new_zeros
            h1, c1, h2, c2 = zeros(batch, 1024), zeros(batch, 1024), zeros(batch, 1024), zeros(batch, 1024)
            context, frame = zeros(batch, 512), zeros(batch, 80)
            mel = zeros(batch, 0, 80)
            for _ in range(frames):
                h1, c1 = model.attn_rnn(torch.cat([model.prenet(frame), context], 1), (h1, c1))
                weights = model.score(torch.tanh(keys + model.query(h1).unsqueeze(1))).softmax(1)
                context = (weights * memory).sum(1)
                h2, c2 = model.dec_rnn(torch.cat([h1, context], 1), (h2, c2))
                frame = model.frame(torch.cat([h2, context], 1))
                mel = torch.cat([mel, frame.unsqueeze(1)], 1)
            frames_total += mel.shape[1]
            checksum += float(mel.float().abs().mean().item())
            del text, memory, keys, h1, c1, h2, c2, context, frame, mel, weights
    del model
    return {"frames": frames_total, "checksum": checksum}


def sam_prompt_infer(torch):
    """Promptable segmentation in the manner of SAM, plain torch, fp16: a ViT-B-sized image encoder (12 layers, 768
    wide, 16 x 16 patches of 512-pixel images) run once per image, then a light mask decoder (2 two-way attention
    layers, 256 wide, upsampling to 128 x 128 masks) run for 4 rounds of 8 to 32 point prompts on each of 3
    images."""
    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True)
    encoder = nn.ModuleDict({"patch": nn.Conv2d(3, 768, 16, 16), "body": nn.TransformerEncoder(layer, 12),
                             "neck": nn.Conv2d(768, 256, 1)})
    decoder = nn.ModuleDict({"points": nn.Linear(2, 256), "tokens": nn.Embedding(4, 256),
                             "layers": nn.ModuleList(nn.TransformerDecoderLayer(256, 8, 2048, batch_first=True)
                                                     for _ in range(2)),
                             "up": nn.Sequential(nn.ConvTranspose2d(256, 64, 2, 2), nn.GELU(),
                                                 nn.ConvTranspose2d(64, 32, 2, 2)),
                             "hyper": nn.Linear(256, 32)})
    del layer
    start_recording(torch)
    encoder, decoder = encoder.cuda().half().eval(), decoder.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    area = 0.0
    with torch.inference_mode():
        for _ in range(3):
            image = torch.randn(1, 3, 512, 512, device="cuda", generator=gen, dtype=torch.float16)
            grid = encoder["patch"](image)
            tokens = encoder["body"](grid.flatten(2).transpose(1, 2))
            embedding = encoder["neck"](tokens.transpose(1, 2).reshape(1, 768, 32, 32))
            del image, grid, tokens
            for prompts in [8, 32, 16, 24]:
                points = torch.rand(prompts, 1, 2, device="cuda", generator=gen, dtype=torch.float16)
                query = torch.cat([decoder["tokens"].weight.unsqueeze(0).expand(prompts, -1, -1),
                                   decoder["points"](points)], 1)
                memory = embedding.flatten(2).transpose(1, 2).expand(prompts, -1, -1)
                for block in decoder["layers"]:
                    query = block(query, memory)
                upscaled = decoder["up"](memory.transpose(1, 2).reshape(prompts, 256, 32, 32))
                masks = torch.einsum("pc,pchw->phw", decoder["hyper"](query[:, 0]), upscaled)
                area += float((masks > 0).float().mean().item())
                del points, query, memory, upscaled, masks
            del embedding
    del encoder, decoder
    return {"mask_area": area}


def mobilenet_v2_half_infer(torch):
    """torchvision MobileNetV2 moved to the GPU in fp32 and converted there (`.cuda().half()`, then channels-last),
    served on 8 batches of 1 to 32 images of 224 pixels: a small heap of BatchNorm layers, whose int64 counters stay
    among the converted weights."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(num_classes=1000)
    start_recording(torch)
    model = model.cuda().half().to(memory_format=torch.channels_last).eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch in [1, 8, 32, 4, 16, 2, 24, 8]:
            images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            checksum += image_score(model(images.contiguous(memory_format=torch.channels_last)))
            del images
    del model
    return {"checksum": checksum}


def vit_varres_infer(torch):
    """A ViT-B/16 in plain torch (12 layers, 768 wide) with its position embeddings interpolated to each input's
    grid, fp16, 8 (batch, image side) shapes from (32, 160) to (2, 512), each twice."""
    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True, activation="gelu")
    model = nn.ModuleDict({"patch": nn.Conv2d(3, 768, 16, 16), "body": nn.TransformerEncoder(layer, 12),
                           "norm": nn.LayerNorm(768), "head": nn.Linear(768, 1000)})
    pos = torch.randn(1, 768, 14, 14) * 0.02
    del layer
    start_recording(torch)
    model, pos = model.cuda().half().eval(), pos.cuda().half()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch, side in [(32, 160), (8, 384), (2, 512), (16, 224), (4, 448), (24, 288), (1, 512), (12, 320)] * 2:
            images = torch.randn(batch, 3, side, side, device="cuda", generator=gen, dtype=torch.float16)
            grid = model["patch"](images)
            grid = grid + nn.functional.interpolate(pos, size=grid.shape[-2:], mode="bilinear", align_corners=False)
            tokens = model["body"](grid.flatten(2).transpose(1, 2))
            checksum += image_score(model["head"](model["norm"](tokens.mean(1))))
            del images, grid, tokens
    del model, pos
    return {"checksum": checksum}


def two_tower_retrieval_train(torch):
    """A two-tower retrieval model in plain torch: user and item towers (embeddings of 500,000 and 200,000 ids x 128,
    history bags through `EmbeddingBag`, MLPs 128-512-256-128) trained with in-batch negatives (a batch x batch
    score matrix), Adam, 10 steps of 1,024 to 8,192 pairs."""
    torch.manual_seed(0)
    nn = torch.nn

    def mlp():
        return nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128))

    model = nn.ModuleDict({"users": nn.Embedding(500_000, 128), "history": nn.EmbeddingBag(200_000, 128, mode="mean"),
                           "item_ids": nn.Embedding(200_000, 128), "user_mlp": mlp(), "item_mlp": mlp()})
    start_recording(torch)
    model = model.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in [1024, 4096, 8192, 2048, 6144, 1024, 8192, 3072, 4096, 5120]:
        users = torch.randint(0, 500_000, (batch,), device="cuda", generator=gen)
        history = torch.randint(0, 200_000, (batch * 20,), device="cuda", generator=gen)
        offsets = torch.arange(0, batch * 20, 20, device="cuda")
        items = torch.randint(0, 200_000, (batch,), device="cuda", generator=gen)
        u = model["user_mlp"](model["users"](users) + model["history"](history, offsets))
        v = model["item_mlp"](model["item_ids"](items))
        scores = nn.functional.normalize(u, dim=1) @ nn.functional.normalize(v, dim=1).T / 0.05
        loss = nn.functional.cross_entropy(scores, torch.arange(batch, device="cuda"))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        del users, history, offsets, items, u, v, scores, loss
    del model, opt
    return {"losses": losses}


def perceiver_train(torch):
    """A Perceiver-style model in plain torch: inputs of 512 to 8,192 tokens (64 features, Fourier position
    features) cross-attended into 256 latents 512 wide, 6 latent self-attention layers, a classifier; bf16
    autocast, AdamW, 10 steps whose input length and batch vary (the cross-attention's size with them)."""
    torch.manual_seed(0)
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, norm_first=True)
    model = nn.ModuleDict({"inp": nn.Linear(64 + 32, 512), "cross": nn.MultiheadAttention(512, 8, batch_first=True),
                           "latent_body": nn.TransformerEncoder(layer, 6), "head": nn.Linear(512, 100)})
    latents = nn.Parameter(torch.randn(256, 512) * 0.02)
    del layer
    start_recording(torch)
    model, latents = model.cuda(), nn.Parameter(latents.detach().cuda())
    opt = torch.optim.AdamW(list(model.parameters()) + [latents], lr=3e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, length in [(16, 2048), (4, 8192), (64, 512), (8, 4096), (32, 1024), (16, 3072), (2, 8192),
                          (48, 768), (12, 2560), (24, 1536)]:
        x = torch.randn(batch, length, 64, device="cuda", generator=gen)
        position = torch.linspace(0, 1, length, device="cuda")[:, None] * torch.arange(1, 17, device="cuda")[None]
        fourier = torch.cat([position.sin(), position.cos()], 1).expand(batch, -1, -1)
        y = torch.randint(0, 100, (batch,), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            inputs = model["inp"](torch.cat([x, fourier], 2))
            query = latents.unsqueeze(0).expand(batch, -1, -1)
            h = model["cross"](query, inputs, inputs, need_weights=False)[0] + query
            h = model["latent_body"](h)
            loss = nn.functional.cross_entropy(model["head"](h.mean(1)).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        del x, position, fourier, y, inputs, query, h, loss
    del model, latents, opt
    return {"losses": losses}


def mnasnet_half_infer(torch):
    """torchvision MNASNet 0.5 moved to the GPU in fp32 and converted there (`.cuda().half()`), served on 10 batches
    of 2 to 64 images of 224 pixels: the smallest BatchNorm-heavy heap here."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.mnasnet0_5(num_classes=1000)
    start_recording(torch)
    model = model.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch in [2, 16, 64, 8, 32, 4, 48, 12, 24, 6]:
            images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            checksum += image_score(model(images))
            del images
    del model
    return {"checksum": checksum}


def infer_converted(torch, build, shapes, score=image_score, forward_args=None):
    """A classifier built by `build` on the CPU (after seeding), moved to the GPU in fp32 and converted there
    (`.cuda().half()`), run by `infer_images` over `shapes` (with `forward_args`, each output turned into a number
    by `score`)."""
    torch.manual_seed(0)
    checksum = infer_images(torch, build(), shapes, lambda m: m.cuda().half().eval(), score,
                            forward_args=forward_args)
    return {"shapes": shapes, "checksum": checksum}


def googlenet_half_infer(torch):
    """torchvision GoogLeNet (inception blocks, BatchNorm, no auxiliary heads) moved to the GPU in fp32 and converted
    there (`.cuda().half()`), 8 (batch, image side) shapes from (1, 224) to (48, 224), each twice: a small heap."""
    import torchvision

    return infer_converted(torch,
                           lambda: torchvision.models.googlenet(num_classes=1000, aux_logits=False, init_weights=True),
                           [(8, 224), (1, 224), (48, 224), (4, 288), (16, 224), (2, 320), (32, 192), (12, 256)])


def shufflenet_half_infer(torch):
    """torchvision ShuffleNetV2 x0.5 moved to the GPU in fp32 and converted there (`.cuda().half()`), 8 (batch, image
    side) shapes from (2, 224) to (96, 224), each twice: the smallest model here, a heap of activations."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.shufflenet_v2_x0_5(num_classes=1000),
                           [(16, 224), (2, 224), (96, 224), (8, 320), (48, 192), (4, 384), (64, 160), (24, 256)])


def wide_resnet_half_infer(torch):
    """torchvision Wide ResNet-50-2 (69 M parameters) moved to the GPU in fp32 and converted there
    (`.cuda().half()`), 8 (batch, image side) shapes from (1, 224) to (32, 224), each twice."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.wide_resnet50_2(num_classes=1000),
                           [(4, 224), (1, 224), (32, 224), (8, 288), (16, 192), (2, 320), (24, 224), (12, 256)])


def resnext_half_infer(torch):
    """torchvision ResNeXt-50 32x4d (grouped convolutions) moved to the GPU in fp32 and converted there
    (`.cuda().half()`), 8 (batch, image side) shapes from (1, 320) to (48, 192), each twice."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.resnext50_32x4d(num_classes=1000),
                           [(8, 224), (1, 320), (48, 192), (4, 256), (16, 224), (2, 288), (24, 224), (32, 160)])


def gpt_neo_small_generate(torch):
    """A small GPT-Neo-style decoder through transformers (`GPTNeoForCausalLM(GPTNeoConfig(...))`: 6 layers 512 wide,
    global and local (256-token window) attention in turn, 50k vocabulary), fp16, greedy `generate` for 4 rounds
    (batch, prompt, new tokens) from (1, 256, 48) to (16, 32, 24)."""
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    torch.manual_seed(0)
    config = GPTNeoConfig(vocab_size=50257, hidden_size=512, num_layers=6, num_heads=8,
                          attention_types=[[["global", "local"], 3]], window_size=256, max_position_embeddings=1024)
    rounds = [(4, 128, 32), (1, 256, 48), (16, 32, 24), (8, 96, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPTNeoForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def bloom_small_sample_generate(torch):
    """A small BLOOM-style decoder through transformers (`BloomForCausalLM(BloomConfig(...))`: 8 layers 640 wide,
    ALiBi positions, 64k vocabulary), fp16, `generate` sampling at temperature 0.8 (top-k 40) for 4 rounds (batch,
    prompt, new tokens) from (2, 320, 48) to (12, 48, 32)."""
    from transformers import BloomConfig, BloomForCausalLM

    torch.manual_seed(0)
    config = BloomConfig(vocab_size=64000, hidden_size=640, n_layer=8, n_head=10)
    rounds = [(6, 128, 40), (2, 320, 48), (12, 48, 32), (4, 192, 36)]  # batch, prompt, new tokens
    return generate_rounds(torch, BloomForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, temperature=0.8, top_k=40, pad_token_id=3)


def bert_base_qa_infer(torch):
    """Extractive question answering with a BERT-base-sized encoder through transformers
    (`BertForQuestionAnswering(BertConfig())`: 12 layers, 768 wide), fp16, 10 batches of (questions, tokens) from
    (1, 512) to (32, 128), padded on the right; the best answer span taken from the start and end logits."""
    from transformers import BertConfig, BertForQuestionAnswering

    torch.manual_seed(0)
    config = BertConfig()
    batches = [(8, 256), (1, 512), (32, 128), (4, 384), (16, 192), (2, 448), (24, 160), (12, 320), (6, 512),
               (32, 96)]
    return answer_spans(torch, BertForQuestionAnswering(config).eval(), config.vocab_size, batches, ordered=False)


def lstm_lm_sample_small(torch):
    """A word-level LSTM language model in plain torch (2 layers of 650, a 33k vocabulary, tied embedding), fp32,
    sampling 4 batches of 4 to 32 sequences for 120 to 300 tokens each after a prompt of 32, the tokens gathered
    by `torch.cat` every step: a small heap."""
    torch.manual_seed(0)
    nn = torch.nn
    embed, lstm = nn.Embedding(33278, 650), nn.LSTM(650, 650, 2, batch_first=True)
    head = nn.Linear(650, 33278)
    head.weight = embed.weight
    model = nn.ModuleDict({"embed": embed, "lstm": lstm, "head": head}).eval()
    del embed, lstm, head
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    token_sum = 0
    with torch.inference_mode():
        for batch, steps in [(8, 200), (32, 120), (4, 300), (16, 160)]:
            tokens = torch.randint(0, 33278, (batch, 32), device="cuda", generator=gen)
            out, state = model["lstm"](model["embed"](tokens))
            for _ in range(steps):
                probs = (model["head"](out[:, -1]) / 0.9).softmax(-1)
                nxt = torch.multinomial(probs, 1, generator=gen)
                tokens = torch.cat([tokens, nxt], 1)
                out, state = model["lstm"](model["embed"](nxt), state)
            token_sum += int(tokens.sum().item())
            del tokens, out, state, probs, nxt
    del model
    return {"token_sum": token_sum}


def regnet_half_infer(torch):
    """torchvision RegNetY-800MF (grouped convolutions, squeeze-and-excitation, 6.4 M parameters) moved to the GPU in
    fp32 and converted there (`.cuda().half()`), 8 (batch, image side) shapes from (1, 448) to (96, 224), each twice:
    a small heap of activations."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.regnet_y_800mf(weights=None, num_classes=1000),
                           [(16, 224), (2, 224), (96, 224), (8, 320), (48, 192), (4, 384), (32, 256), (1, 448)])


def vgg11_bn_half_infer(torch):
    """torchvision VGG-11 with BatchNorm (133 M parameters, 103 M of them in the first classifier layer) moved to the
    GPU in fp32 and converted there (`.cuda().half()`), 8 small (batch, image side) shapes from (1, 224) to
    (16, 224), each twice: a heap whose peak comes while the weights are converted."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.vgg11_bn(weights=None, num_classes=1000),
                           [(8, 224), (1, 224), (16, 224), (4, 288), (8, 256), (2, 320), (12, 192), (6, 224)])


def efficientnet_b1_half_infer(torch):
    """torchvision EfficientNet-B1 (depthwise convolutions, squeeze-and-excitation, 7.8 M parameters) moved to the GPU
    in fp32 and converted there (`.cuda().half()`), 8 (batch, image side) shapes from (1, 240) to (32, 240), each
    twice: wide expanded activations in a small heap."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.efficientnet_b1(weights=None, num_classes=1000),
                           [(8, 240), (1, 240), (32, 240), (4, 320), (16, 256), (2, 384), (24, 224), (12, 288)])


def fp32_classifier_steps(torch, model, opt, batches, gen, sample=(3, 224, 224), classes=1000):
    """Trains `model` (on the GPU, `classes` classes) in fp32, without autocast, one step of `opt` per batch size in
    `batches` on random inputs of shape `sample` (224-pixel images by default) and labels from `gen`. Returns the
    losses."""
    losses = []
    for batch in batches:
        inputs = torch.randn(batch, *sample, device="cuda", generator=gen)
        labels = torch.randint(0, classes, (batch,), device="cuda", generator=gen)
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del inputs, labels, loss
    return losses


def mobilenet_v3_train_small(torch):
    """torchvision MobileNetV3-Small (2.5 M parameters: depthwise convolutions, squeeze-and-excitation, hard-swish)
    trained in fp32 (no autocast), SGD with momentum 0.9 and weight decay, 20 steps of 32 to 64 images of 224
    pixels: a training heap of activations, the weights and their state small beside them."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v3_small(weights=None, num_classes=1000)
    batches = [64, 64, 48, 64, 56, 64, 32, 64, 48, 64, 64, 56, 64, 40, 64, 48, 64, 64, 32, 64]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=4e-5)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = fp32_classifier_steps(torch, model, opt, batches, gen)
    del model, opt
    return {"batches": batches, "losses": losses}


def encode_padded_fp32(torch, model, batches, low, vocab_size, pad, summary=None):
    """Records from before `model` (an encoder with a pooler, built on the CPU by the caller, passed as its only
    reference so that it is freed here) moves to the GPU in fp32, then runs it under `torch.no_grad()` once per
    (sequences, tokens) batch of random ids in [low, vocab_size), each sequence padded on the right from a random
    length of at least half the tokens: `pad(ids, mask)` gives the ids with the padding written in. Returns the
    batches and a checksum of the pooled outputs (of the tensor `summary(out)` picks from each output, if given)."""
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for batch, tokens in batches:
            ids = torch.randint(low, vocab_size, (batch, tokens), device="cuda", generator=gen)
            lengths = torch.randint(tokens // 2, tokens + 1, (batch, 1), device="cuda", generator=gen)
            mask = (torch.arange(tokens, device="cuda")[None, :] < lengths).long()
            out = model(input_ids=pad(ids, mask), attention_mask=mask)
            checksum += float((summary(out) if summary else out.pooler_output).sum().item())
            del ids, lengths, mask, out
    del model
    return {"batches": batches, "checksum": checksum}


def distilroberta_infer(torch):
    """A DistilRoBERTa-sized encoder through transformers (`RobertaModel(RobertaConfig(...))`: 6 layers, 768 wide,
    12 heads, 50k vocabulary) kept in fp32, under `torch.no_grad()`, 10 batches of (sequences, tokens) from (1, 512)
    to (32, 256), padded on the right (token 1): fp32 weights of 330 MB and the activations of one layer at a
    time."""
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=50265, hidden_size=768, num_hidden_layers=6, num_attention_heads=12,
                           intermediate_size=3072, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1)
    batches = [(8, 128), (1, 512), (32, 256), (4, 384), (16, 192), (2, 512), (24, 96), (12, 320), (6, 448),
               (32, 64)]
    return encode_padded_fp32(torch, RobertaModel(config).eval(), batches, 3, config.vocab_size,
                              lambda ids, mask: ids * mask + (1 - mask))  # padding is token 1


def pythia_small_generate(torch):
    """A small Pythia-style decoder through transformers (`GPTNeoXForCausalLM(GPTNeoXConfig(...))`: 6 layers, 512
    wide, 8 heads, partial rotary positions, parallel attention and MLP, untied 50k embeddings), fp16, greedy
    `generate` for 4 batches of 4 prompts (batch, prompt, new tokens) from (4, 32, 48) to (4, 160, 40)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    config = GPTNeoXConfig(vocab_size=50304, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                           intermediate_size=2048, max_position_embeddings=2048)
    rounds = [(4, 96, 48), (4, 32, 48), (4, 160, 40), (4, 64, 56)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPTNeoXForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def t5_small_train(torch):
    """A T5-small-sized encoder-decoder (`T5ForConditionalGeneration(T5Config(...))`: 6 + 6 layers, 512 wide, 32k
    vocabulary) trained with teacher forcing in fp32 (no autocast), AdamW, 10 steps of (batch, source tokens, target
    tokens) (8, 128, 32), (6, 192, 48) and (4, 256, 64): most of the heap the weights, their gradients and AdamW's
    two moments."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                      num_heads=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config)
    steps = [(8, 128, 32), (4, 256, 64), (8, 128, 32), (6, 192, 48), (4, 256, 64), (8, 128, 32), (6, 192, 48),
             (4, 256, 64), (8, 128, 32), (6, 192, 48)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, source, target in steps:
        ids = torch.randint(2, config.vocab_size, (batch, source), device="cuda", generator=gen)
        labels = torch.randint(2, config.vocab_size, (batch, target), device="cuda", generator=gen)
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, labels, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def train_fp32_then_half_eval(torch, model, batches, make_optimizer, shapes):
    """Records from before `model` (a 1000-class classifier built on the CPU by the caller, passed as its only
    reference so that it is freed here) moves to the GPU, trains it through `fp32_classifier_steps` with the
    optimizer from `make_optimizer`, frees the optimizer, converts the model in place to fp16 (`.half().eval()`) and
    evaluates it in inference mode once per (batch, image side) in `shapes` on random fp16 images from the same
    generator. Returns the batches, the losses, the shapes and a checksum of the evaluations."""
    start_recording(torch)
    model = model.cuda().train()
    opt = make_optimizer(model.parameters())
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = fp32_classifier_steps(torch, model, opt, batches, gen)
    del opt
    model = model.half().eval()
    checksum = 0.0
    with torch.inference_mode():
        for batch, side in shapes:
            images = torch.randn(batch, 3, side, side, device="cuda", generator=gen, dtype=torch.float16)
            checksum += image_score(model(images))
            del images
    del model
    return {"batches": batches, "losses": losses, "shapes": shapes, "checksum": checksum}


def squeezenet_half_train_eval(torch):
    """torchvision SqueezeNet 1.1 trained in fp32 (SGD with momentum, 10 steps of 16 to 40 images of 224 pixels),
    then its optimizer freed and the model converted in place to fp16 (`.half()`) and evaluated on 6 batches of 4
    to 64 images: a training heap of activations followed by the converted model's small inference heap."""
    import torchvision

    torch.manual_seed(0)
    batches = [32, 16, 40, 24, 32, 40, 16, 24, 32, 40]
    shapes = [(16, 224), (64, 224), (4, 288), (32, 192), (8, 256), (48, 224)]
    return train_fp32_then_half_eval(torch, torchvision.models.squeezenet1_1(weights=None, num_classes=1000), batches,
                                     lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=5e-4),
                                     shapes)


def resnet101_half_infer(torch):
    """torchvision ResNet-101 (44.5 M parameters, 33 bottleneck blocks) moved to the GPU in fp32 and converted there
    (`.cuda().half()`), 8 (batch, image side) shapes from (1, 320) to (48, 192), each twice: a deep network whose
    weights outweigh most of its activations."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.resnet101(weights=None, num_classes=1000),
                           [(8, 224), (1, 320), (32, 224), (4, 288), (16, 256), (2, 384), (48, 192), (12, 224)])


def mobilenet_v3_large_half_infer(torch):
    """torchvision MobileNetV3-Large (5.5 M parameters: depthwise convolutions, squeeze-and-excitation, hard-swish)
    moved to the GPU in fp32 and converted there (`.cuda().half()`, no channels-last), 8 (batch, image side) shapes
    from (2, 224) to (96, 224), each twice: a heap of wide expanded activations beside 11 MB of weights."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.mobilenet_v3_large(weights=None, num_classes=1000),
                           [(16, 224), (2, 224), (96, 224), (8, 320), (48, 256), (4, 384), (64, 192), (24, 288)])


def convnext_tiny_train_small(torch):
    """torchvision ConvNeXt-Tiny training (7 x 7 depthwise convolutions, LayerNorm, layer scale, stochastic depth),
    100 classes, AdamW, fp16 autocast with GradScaler, 10 steps of 8 to 24 images of 160 or 192 pixels."""
    import torchvision

    torch.manual_seed(0)
    steps = [(16, 160), (8, 192), (24, 160), (12, 192), (16, 192), (24, 160), (8, 160), (16, 192), (20, 160),
             (12, 192)]  # batch, image side
    losses = train_classifier(torch, torchvision.models.convnext_tiny(weights=None, num_classes=100),
                              [(batch, 3, side, side) for batch, side in steps],
                              lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05), classes=100)
    return {"steps": steps, "losses": losses}


def electra_small_train(torch):
    """An ELECTRA-small-sized discriminator through transformers (`ElectraForPreTraining(ElectraConfig(...))`: 128-wide
    embeddings projected to 12 layers 256 wide, 4 heads, 1,024 feed-forward, 30k vocabulary) trained in fp32
    (`train_bf16` with autocast turned off around the forward pass), AdamW, 12 steps of (batch, tokens) (16, 128),
    (8, 256) and (4, 512) on random ids with random replaced-token labels (0 or 1 per token)."""
    from transformers import ElectraConfig, ElectraForPreTraining

    torch.manual_seed(0)
    config = ElectraConfig(vocab_size=30522, embedding_size=128, hidden_size=256, num_hidden_layers=12,
                           num_attention_heads=4, intermediate_size=1024, max_position_embeddings=512)
    steps = [(16, 128), (8, 256), (4, 512)] * 4  # batch, tokens

    def replaced_tokens(gen, step):
        ids = torch.randint(5, config.vocab_size, step, device="cuda", generator=gen)
        return {"input_ids": ids, "labels": torch.randint(0, 2, step, device="cuda", generator=gen)}

    losses = train_bf16(torch, ElectraForPreTraining(config), steps, replaced_tokens,
                        lambda params: torch.optim.AdamW(params, lr=5e-4),
                        forward_context=lambda: torch.autocast("cuda", enabled=False))
    return {"steps": steps, "losses": losses}


def albert_base_infer(torch):
    """An ALBERT-base-sized encoder through transformers (`AlbertModel(AlbertConfig(...))`: 128-wide embeddings
    projected to 768, one set of layer weights shared by all 12 layers, 12 heads, 3,072 feed-forward, 30k
    vocabulary) kept in fp32, under `torch.no_grad()`, 10 batches of (sequences, tokens) from (1, 512) to (32, 384),
    padded on the right (token 0): 47 MB of weights and the activations of one layer at a time."""
    from transformers import AlbertConfig, AlbertModel

    torch.manual_seed(0)
    config = AlbertConfig(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
                          num_hidden_groups=1, inner_group_num=1, num_attention_heads=12, intermediate_size=3072,
                          hidden_act="gelu_new", max_position_embeddings=512, type_vocab_size=2, pad_token_id=0)
    batches = [(16, 256), (1, 512), (32, 384), (4, 448), (24, 128), (8, 512), (32, 192), (2, 320), (12, 384),
               (16, 512)]
    return encode_padded_fp32(torch, AlbertModel(config).eval(), batches, 5, config.vocab_size,
                              lambda ids, mask: ids * mask)  # padding is token 0


def marian_small_generate(torch):
    """A small Marian-style translation model through transformers (`MarianMTModel(MarianConfig(...))`: 6 + 6
    layers, 512 wide, 8 heads, 2,048 feed-forward, sinusoidal positions, a 32k vocabulary shared by the encoder, the
    decoder and the output layer), bf16 (`generate_padded_rounds`), greedy `generate` for 4 rounds of (batch, input
    length, new tokens) from (2, 512, 40) to (32, 64, 24), inputs with random padding."""
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    config = MarianConfig(vocab_size=32000, d_model=512, encoder_layers=6, decoder_layers=6,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                          decoder_ffn_dim=2048, max_position_embeddings=512, pad_token_id=0, eos_token_id=1,
                          decoder_start_token_id=0, forced_eos_token_id=None)
    rounds = [(8, 256, 32), (2, 512, 40), (32, 64, 24), (4, 384, 32)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, MarianMTModel(config).eval(), rounds, config.vocab_size,
                                               num_beams=1, do_sample=False)
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def gpt2_small_train_bf16(torch):
    """A small GPT-2-style decoder through transformers (`GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=512,
    n_head=8))`: 50k vocabulary, tied embedding) trained with bf16 autocast, AdamW, 10 steps of 1,024 tokens as
    (batch, tokens) (8, 128), (4, 256), (2, 512) and (1, 1024), the labels the inputs: most of the heap the fp32
    weights, their gradients and AdamW's moments, and the logits."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=6, n_embd=512, n_head=8)
    steps = [(4, 256), (2, 512), (1, 1024), (8, 128), (4, 256), (1, 1024), (2, 512), (8, 128), (1, 1024),
             (4, 256)]  # batch, tokens

    return train_causal_lm_bf16(torch, lambda: GPT2LMHeadModel(config), steps, config.vocab_size)


def resnet18_train_then_half_infer(torch):
    """torchvision ResNet-18 trained in fp32 (SGD with momentum and weight decay, 8 steps of 16 to 40 images of 224
    pixels), then its optimizer freed and the model converted in place to fp16 (`.half()`) and evaluated on 6
    batches of 4 to 64 images: squeezenet_half_train_eval's sequence on a network of 11.7 M parameters, whose
    fp32 training activations dwarf the converted model's inference heap."""
    import torchvision

    torch.manual_seed(0)
    batches = [32, 16, 40, 24, 32, 40, 16, 24]
    shapes = [(32, 224), (8, 288), (64, 192), (4, 320), (16, 256), (48, 224)]
    return train_fp32_then_half_eval(torch, torchvision.models.resnet18(weights=None, num_classes=1000), batches,
                                     lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4),
                                     shapes)


def efficientnet_v2s_half_infer(torch):
    """torchvision EfficientNetV2-S (fused MBConv early stages, MBConv with squeeze-and-excitation later, 21.5 M
    parameters) moved to the GPU in fp32 and converted there (`.cuda().half()`), 8 (batch, image side) shapes from
    (1, 384) to (48, 256) and (2, 512), each twice: a small heap of wide early activations."""
    import torchvision

    return infer_converted(torch, lambda: torchvision.models.efficientnet_v2_s(weights=None, num_classes=1000),
                           [(8, 384), (1, 384), (32, 300), (4, 480), (16, 320), (2, 512), (48, 256), (12, 384)])


def deberta_small_infer(torch):
    """Sequence classification with a DeBERTa-v3-xsmall-sized encoder through transformers
    (`DebertaV2ForSequenceClassification(DebertaV2Config(...))`: 12 layers, 384 wide, 6 heads, 1,536 feed-forward,
    disentangled attention over 256 relative-position buckets, a 128k vocabulary, 3 labels) kept in fp32, under
    `torch.no_grad()` (`encode_padded_fp32`, the logits summed), 10 batches of (sequences, tokens) from (1, 512) to
    (32, 384), padded on the right (token 0): content-to-position and position-to-content score matrices beside
    the attention scores of one layer at a time."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    config = DebertaV2Config(vocab_size=128100, hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                             intermediate_size=1536, max_position_embeddings=512, type_vocab_size=0,
                             relative_attention=True, position_buckets=256, max_relative_positions=-1,
                             norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                             position_biased_input=False, pad_token_id=0, num_labels=3)
    batches = [(8, 128), (1, 512), (16, 384), (4, 256), (32, 128), (2, 512), (12, 256), (16, 512), (24, 192),
               (32, 384)]
    return encode_padded_fp32(torch, DebertaV2ForSequenceClassification(config).eval(), batches, 4,
                              config.vocab_size, lambda ids, mask: ids * mask,  # padding is token 0
                              summary=lambda out: out.logits)


def llama_tiny_train_bf16(torch):
    """A tiny Llama-style decoder through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 4 layers, 512 wide, 8
    heads with 4 KV heads, 1,408 feed-forward, untied 32k embeddings, 45 M parameters) trained with bf16 autocast
    (`train_bf16`), AdamW, 10 steps of 768 to 1,536 tokens as (batch, tokens) from (12, 64) to (1, 1536), the labels
    the inputs: the fp32 weights, their gradients and AdamW's moments beside logits that change size every step."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048)
    steps = [(4, 256), (8, 128), (2, 512), (1, 1536), (6, 160), (3, 384), (12, 64), (2, 768), (1, 1024),
             (4, 320)]  # batch, tokens

    return train_causal_lm_bf16(torch, lambda: LlamaForCausalLM(config), steps, config.vocab_size, low=3)


def mobilenet_v3s_train_eval(torch):
    """torchvision MobileNetV3-Small (2.5 M parameters) trained in fp32 (no autocast) with RMSprop (momentum 0.9:
    a square average and a momentum buffer per weight), 12 steps of 16 to 48 images of 224 pixels, then its
    optimizer freed and the model converted in place to fp16 (`.half()`) and evaluated on 6 batches of 4 to 96
    images (`train_fp32_then_half_eval`): a training heap of activations followed by a small inference heap."""
    import torchvision

    torch.manual_seed(0)
    batches = [32, 48, 16, 40, 24, 48, 32, 16, 40, 48, 24, 32]
    shapes = [(32, 224), (8, 288), (96, 192), (4, 320), (16, 256), (64, 224)]
    return train_fp32_then_half_eval(torch, torchvision.models.mobilenet_v3_small(weights=None, num_classes=1000),
                                     batches,
                                     lambda params: torch.optim.RMSprop(params, lr=0.01, alpha=0.9, eps=0.0316,
                                                                        momentum=0.9, weight_decay=1e-5),
                                     shapes)


def blenderbot_small_beam_generate(torch):
    """A small BlenderbotSmall-style encoder-decoder through transformers
    (`BlenderbotSmallForConditionalGeneration(BlenderbotSmallConfig(...))`: 4 + 4 layers, 512 wide, 16 heads, 2,048
    feed-forward, learned positions, a 55k vocabulary shared by the encoder, the decoder and the output layer) kept
    in fp32 (`generate_padded_rounds` with `dtype`), beam search with 4 beams for 4 rounds of (batch, input length,
    new tokens) from (2, 512, 32) to (16, 64, 20), inputs with random padding."""
    from transformers import BlenderbotSmallConfig, BlenderbotSmallForConditionalGeneration

    torch.manual_seed(0)
    config = BlenderbotSmallConfig(vocab_size=54944, d_model=512, encoder_layers=4, decoder_layers=4,
                                   encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=2048,
                                   decoder_ffn_dim=2048, max_position_embeddings=512, pad_token_id=0, bos_token_id=1,
                                   eos_token_id=2, decoder_start_token_id=1, forced_eos_token_id=None)
    rounds = [(4, 256, 32), (8, 128, 24), (2, 512, 32), (16, 64, 20)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, BlenderbotSmallForConditionalGeneration(config).eval(), rounds,
                                               config.vocab_size, dtype=torch.float32, num_beams=4, do_sample=False)
    return {"rounds": rounds, "num_beams": 4, "output_shapes": shapes, "token_sum": token_sum}


def wavenet_conv1d_train(torch):
    """A WaveNet-style autoregressive audio model in plain torch: raw waveforms through a causal front convolution
    to 64 channels, 2 stacks of 10 dilated causal convolutions (kernel 2, dilations 1 to 512, gated tanh x sigmoid
    units, 1 x 1 residual and 128-channel skip convolutions), a head predicting one of 256 mu-law levels for every
    sample; trained through `train_classifier` (fp16 autocast with GradScaler, a label per time step), Adam, 10
    steps of (clips, samples) from (16, 2048) to (1, 40000): activations of 20 layers whose length changes with the
    step."""
    torch.manual_seed(0)
    nn = torch.nn
    channels, dilations = 64, [2 ** i for i in range(10)] * 2

    class WaveNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.front = nn.Conv1d(1, channels, 2, padding=1)
            self.filters = nn.ModuleList(nn.Conv1d(channels, 2 * channels, 2, dilation=d, padding=d)
                                         for d in dilations)
            self.residuals = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in dilations)
            self.skips = nn.ModuleList(nn.Conv1d(channels, 128, 1) for _ in dilations)
            self.head = nn.Sequential(nn.ReLU(), nn.Conv1d(128, 256, 1), nn.ReLU(), nn.Conv1d(256, 256, 1))

        def forward(self, audio):
            length = audio.shape[-1]
            x = self.front(audio)[..., :length]  # padded on both sides, the future cut off: causal
            skip = 0
            for conv, residual, to_skip in zip(self.filters, self.residuals, self.skips):
                h = conv(x)[..., :length]
                h = torch.tanh(h[:, :channels]) * torch.sigmoid(h[:, channels:])
                skip = skip + to_skip(h)
                x = x + residual(h)
            return self.head(skip)

    steps = [(16, 2048), (4, 12000), (8, 6000), (2, 20000), (6, 8000), (12, 3000), (3, 16000), (1, 40000),
             (8, 4096), (4, 10000)]  # clips, samples
    losses = train_classifier(torch, WaveNet(), [(clips, 1, samples) for clips, samples in steps],
                              lambda params: torch.optim.Adam(params, lr=1e-3), classes=256, per_pixel=True)
    return {"steps": steps, "losses": losses}


def gpt_bigcode_small_generate(torch):
    """A small StarCoder-style decoder through transformers (`GPTBigCodeForCausalLM(GPTBigCodeConfig(...))`: 6
    layers, 512 wide, 8 query heads sharing one key and value head (multi-query attention, so a KV cache an eighth
    of the usual), learned positions, tied 49k embeddings), fp16, greedy `generate` for 4 rounds (batch, prompt, new
    tokens) from (1, 512, 64) to (16, 64, 32)."""
    from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM

    torch.manual_seed(0)
    config = GPTBigCodeConfig(vocab_size=49152, n_positions=2048, n_embd=512, n_layer=6, n_head=8, multi_query=True,
                              bos_token_id=0, eos_token_id=0, pad_token_id=0)
    rounds = [(4, 128, 48), (1, 512, 64), (16, 64, 32), (8, 256, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPTBigCodeForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def resnet50_autocast_bf16_infer(torch):
    """torchvision ResNet-50 whose weights stay fp32 (channels-last), run in inference mode under `torch.autocast`
    in bf16 on fp32 images (`infer_images` with a forward context): every convolution and the classifier cast their
    fp32 weight to a bf16 copy as they run (autocast caches no casts in inference mode) beside bf16 activations;
    batches of 1, 8, 32 and 64 images of 224 pixels, each twice."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(1, 224), (8, 224), (32, 224), (64, 224)]
    checksum = infer_images(torch, torchvision.models.resnet50(weights=None, num_classes=1000), shapes,
                            lambda m: m.cuda().to(memory_format=torch.channels_last).eval(), image_score,
                            image_dtype=torch.float32,
                            forward_context=lambda: torch.autocast("cuda", dtype=torch.bfloat16))
    return {"shapes": shapes, "checksum": checksum}


def phi_small_sample_generate(torch):
    """A small Phi-style decoder through transformers (`PhiForCausalLM(PhiConfig(...))`: 6 layers, 512 wide, 8 heads,
    2,048 feed-forward, attention and MLP in parallel off one LayerNorm, rotary positions on half of each head,
    untied 51k embeddings, 71 M parameters), fp16 (`generate_rounds`), `generate` sampling at temperature 0.7 with
    nucleus sampling (top-p 0.95) and a repetition penalty of 1.2 (a gather and a scatter over the tokens so far every
    step), two samples per prompt (`num_return_sequences`: the prompts and the cache doubled), 4 rounds of (prompts,
    prompt length, new tokens) (4, 128, 48), (8, 64, 40), (2, 384, 56), (12, 96, 32): a heap of 278 MiB at its peak
    (recorded 2026-12-03)."""
    from transformers import PhiConfig, PhiForCausalLM

    torch.manual_seed(0)
    config = PhiConfig(vocab_size=51200, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                       num_attention_heads=8, max_position_embeddings=1024)
    rounds = [(4, 128, 48), (8, 64, 40), (2, 384, 56), (12, 96, 32)]  # prompts, prompt length, new tokens
    result = generate_rounds(torch, PhiForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                             seed_each_round=True, do_sample=True, temperature=0.7, top_p=0.95, top_k=0,
                             repetition_penalty=1.2, num_return_sequences=2, pad_token_id=0)
    result["num_return_sequences"] = 2
    return result


def deit_small_half_infer(torch):
    """A DeiT-Small-sized distilled vision transformer through transformers
    (`DeiTForImageClassificationWithTeacher(DeiTConfig(...))`: 12 layers, 384 wide, 6 heads, 1,536 feed-forward,
    patches of 16, a class and a distillation token with a head each, averaged, 1,000 classes, 22 M parameters)
    moved to the GPU in fp32 and converted there (`infer_converted`: `.cuda().half()`), 9 (batch, image side) shapes
    from (1, 224) to (128, 224) and (4, 384), each twice, the position embeddings interpolated (bicubic) to every
    side other than 224 (`interpolate_pos_encoding`): a converted classifier's heap of 335 MiB at its peak
    (recorded 2026-12-03)."""
    from transformers import DeiTConfig, DeiTForImageClassificationWithTeacher

    config = DeiTConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536,
                        image_size=224, patch_size=16, num_labels=1000)
    return infer_converted(torch, lambda: DeiTForImageClassificationWithTeacher(config),
                           [(16, 224), (1, 224), (128, 224), (8, 288), (64, 224), (4, 384), (32, 256), (2, 320),
                            (96, 224)],
                           score=lambda out: image_score(out.logits),
                           forward_args={"interpolate_pos_encoding": True})


def sac_replay_train(torch):
    """Soft actor-critic in plain torch, fp32, on a simulated vectorized continuous-control environment (16
    environments, 96-dimensional observations, 8-dimensional actions squashed by tanh): a Gaussian policy MLP
    (96 -> 256 -> 256 -> 2 x 8), two Q networks (104 -> 256 -> 256 -> 1) and their target copies (Polyak-averaged in
    place by `torch._foreach_lerp_`), a learned entropy temperature, three Adam optimizers; a replay buffer on the GPU
    of 131,072 transitions (five tensors allocated up front, 106 MB) written as a ring: 64 steps of random actions,
    then 160 iterations of one environment step with the policy and one update on 256 transitions drawn at random
    (the critics' gradients from the policy loss left until the next critic update), and every 40 iterations a
    deterministic evaluation of 64 environments for 25 steps: one large buffer beside many small tensors, a heap
    of 173 MiB at its peak (recorded 2026-12-03)."""
    import copy
    import math

    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    envs, obs_dim, act_dim, capacity, batch = 16, 96, 8, 131072, 256

    def mlp(inputs, outputs):
        return nn.Sequential(nn.Linear(inputs, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, outputs))

    nets = nn.ModuleDict({"actor": mlp(obs_dim, 2 * act_dim), "q1": mlp(obs_dim + act_dim, 1),
                          "q2": mlp(obs_dim + act_dim, 1)})
    nets["q1_target"], nets["q2_target"] = copy.deepcopy(nets["q1"]), copy.deepcopy(nets["q2"])
    nets["q1_target"].requires_grad_(False)
    nets["q2_target"].requires_grad_(False)
    dynamics = torch.randn(act_dim, obs_dim) * 0.3  # how actions move the observations
    start_recording(torch)
    nets, dynamics = nets.cuda(), dynamics.cuda()
    log_alpha = torch.zeros((), device="cuda", requires_grad=True)
    actor_opt = torch.optim.Adam(nets["actor"].parameters(), lr=3e-4)
    critic_opt = torch.optim.Adam(list(nets["q1"].parameters()) + list(nets["q2"].parameters()), lr=3e-4)
    alpha_opt = torch.optim.Adam([log_alpha], lr=3e-4)
    online = list(nets["q1"].parameters()) + list(nets["q2"].parameters())
    targets = list(nets["q1_target"].parameters()) + list(nets["q2_target"].parameters())
    replay = {"obs": torch.zeros(capacity, obs_dim, device="cuda"),
              "act": torch.zeros(capacity, act_dim, device="cuda"), "rew": torch.zeros(capacity, device="cuda"),
              "next": torch.zeros(capacity, obs_dim, device="cuda"), "done": torch.zeros(capacity, device="cuda")}
    gen = torch.Generator(device="cuda").manual_seed(0)

    def policy(obs, deterministic=False):
        mean, log_std = nets["actor"](obs).chunk(2, dim=-1)
        if deterministic:
            return torch.tanh(mean), None
        log_std = log_std.clamp(-5.0, 2.0)
        noise = torch.randn(mean.shape, device="cuda", generator=gen)
        action = torch.tanh(mean + log_std.exp() * noise)
        logp = ((-0.5 * noise.square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
                - torch.log1p(-action.square() + 1e-6).sum(-1))
        return action, logp

    def env_step(obs, action):
        nxt = (0.95 * obs + 0.1 * torch.tanh(action @ dynamics)
               + 0.05 * torch.randn(obs.shape, device="cuda", generator=gen))
        reward = -nxt.square().mean(-1) - 0.01 * action.square().sum(-1)
        done = (torch.rand(obs.shape[0], device="cuda", generator=gen) < 0.01).float()
        return nxt, reward, done

    def q_min(first, second, obs, action):
        both = torch.cat([obs, action], dim=-1)
        return torch.min(first(both), second(both)).squeeze(-1)

    losses, returns, stored = [], [], 0
    obs = torch.randn(envs, obs_dim, device="cuda", generator=gen)
    for step in range(64 + 160):
        with torch.no_grad():
            if step < 64:
                action = torch.rand(envs, act_dim, device="cuda", generator=gen) * 2 - 1
            else:
                action = policy(obs)[0]
            nxt, reward, done = env_step(obs, action)
            at = stored % capacity
            for key, value in (("obs", obs), ("act", action), ("rew", reward), ("next", nxt), ("done", done)):
                replay[key][at:at + envs] = value
            stored += envs
            obs = torch.where(done[:, None] > 0, torch.randn(envs, obs_dim, device="cuda", generator=gen), nxt)
            del action, nxt, reward, done
        if step < 64:
            continue
        index = torch.randint(0, min(stored, capacity), (batch,), device="cuda", generator=gen)
        o, a, r, o2, d = (replay[key][index] for key in ("obs", "act", "rew", "next", "done"))
        alpha = log_alpha.exp().detach()
        with torch.no_grad():
            a2, logp2 = policy(o2)
            y = r + 0.99 * (1 - d) * (q_min(nets["q1_target"], nets["q2_target"], o2, a2) - alpha * logp2)
        both = torch.cat([o, a], dim=-1)
        critic_loss = F.mse_loss(nets["q1"](both).squeeze(-1), y) + F.mse_loss(nets["q2"](both).squeeze(-1), y)
        critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        critic_opt.step()
        new_action, logp = policy(o)
        actor_loss = (alpha * logp - q_min(nets["q1"], nets["q2"], o, new_action)).mean()
        actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        actor_opt.step()
        alpha_loss = -(log_alpha * (logp.detach() - act_dim)).mean()
        alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        alpha_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(targets, online, 0.005)
        losses.append(critic_loss.item())
        del index, o, a, r, o2, d, alpha, a2, logp2, y, both, critic_loss, new_action, logp, actor_loss, alpha_loss
        if (step - 64) % 40 == 39:  # after every 40th update
            with torch.no_grad():
                state, total = torch.randn(64, obs_dim, device="cuda", generator=gen), 0.0
                for _ in range(25):
                    action = policy(state, deterministic=True)[0]
                    state, reward = env_step(state, action)[:2]
                    total += float(reward.mean().item())
                returns.append(total)
                del state, action, reward
    del nets, dynamics, log_alpha, actor_opt, critic_opt, alpha_opt, online, targets, replay, obs
    return {"losses": losses[::10], "returns": returns}


def mpnet_sorted_embed_infer(torch):
    """Sentence embeddings as sentence-transformers computes them, from an MPNet-base-sized encoder through
    transformers (`MPNetModel(MPNetConfig())`: 12 layers, 768 wide, 12 heads, 30k vocabulary, relative position
    buckets: a batch x heads x tokens x tokens bias built once per batch and added to the scores of every layer's
    eager attention), fp16, 1,536 sentences of 6 to 256 tokens (mostly short: 6 + 250 u^3) sorted longest first and
    encoded 32 at a time, each batch padded on the right (token 1) to its own longest: 48 batches whose shapes
    shrink step by step; embeddings mean-pooled over the attention mask, normalized and kept on the GPU, put back in
    input order at the end and compared all against all: a heap of 471 MiB at its peak, in the first
    batches (recorded 2026-12-03)."""
    import random

    from transformers import MPNetConfig, MPNetModel

    torch.manual_seed(0)
    config = MPNetConfig()
    model = MPNetModel(config, add_pooling_layer=False).eval()
    rng = random.Random(0)
    lengths = [6 + int(250 * rng.random() ** 3) for _ in range(1536)]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    chunks, shapes = [], []
    with torch.inference_mode():
        for start in range(0, len(order), 32):
            batch_lengths = torch.tensor([lengths[i] for i in order[start:start + 32]], device="cuda")
            longest = lengths[order[start]]
            ids = torch.randint(3, config.vocab_size, (len(batch_lengths), longest), device="cuda", generator=gen)
            mask = (torch.arange(longest, device="cuda")[None] < batch_lengths[:, None]).long()
            hidden = model(input_ids=ids * mask + (1 - mask), attention_mask=mask).last_hidden_state  # pad id 1
            weights = mask[:, :, None].to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1)
            chunks.append(torch.nn.functional.normalize(pooled.float(), dim=-1))
            shapes.append([len(batch_lengths), longest])
            del batch_lengths, ids, mask, hidden, weights, pooled
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        embeddings = torch.cat(chunks)[inverse.cuda()]
        del chunks
        similarity = embeddings @ embeddings.T
        checksum = float(similarity.mean().item())
        del embeddings, similarity
    del model
    return {"shapes": shapes, "checksum": checksum}


def m2m100_small_beam_generate(torch):
    """A small M2M100-style multilingual translation model through transformers
    (`M2M100ForConditionalGeneration(M2M100Config(...))`: 6 + 6 layers, 512 wide, 8 heads, 2,048 feed-forward,
    sinusoidal positions, scaled embeddings, a 128k vocabulary shared by the encoder, the decoder and the output
    layer, 110 M parameters), fp16 (`generate_padded_rounds` with `dtype`), beam search with 5 beams returning the
    best 2 of each (`num_return_sequences`) for 4 rounds of (batch, input length, new tokens) (8, 128, 32),
    (2, 512, 40), (16, 64, 24), (4, 256, 32), inputs with random padding: each step's (batch x 5) x 128k scores
    beside the beams' self- and cross-attention caches, reordered every step; a heap of 548 MiB at its peak
    (recorded 2026-12-03)."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(0)
    config = M2M100Config(vocab_size=128112, d_model=512, encoder_layers=6, decoder_layers=6,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                          decoder_ffn_dim=2048, max_position_embeddings=1024, pad_token_id=0, bos_token_id=1,
                          eos_token_id=2, decoder_start_token_id=2)
    rounds = [(8, 128, 32), (2, 512, 40), (16, 64, 24), (4, 256, 32)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, M2M100ForConditionalGeneration(config).eval(), rounds,
                                               config.vocab_size, dtype=torch.float16, num_beams=5,
                                               num_return_sequences=2, do_sample=False)
    return {"rounds": rounds, "num_beams": 5, "num_return_sequences": 2, "output_shapes": shapes,
            "token_sum": token_sum}


def deeplabv3_mobilenet_half_infer(torch):
    """torchvision DeepLabV3 with a MobileNetV3-Large backbone (last stage dilated: stride 16; an ASPP head of five
    256-channel branches concatenated; the auxiliary FCN head on the stride-8 features kept, `aux_loss=True`; 21
    classes, no pretrained weights) moved to the GPU in fp32 and converted there (`.cuda().half()`, then
    channels-last), `infer_images` over 10 (batch, image side) shapes from (1, 1024) to (16, 320), each twice, both
    full-resolution outputs reduced to class maps (argmax in fp16): a heap of activations and upsampled outputs
    beside 22 MB of weights: 225 MiB at its peak (recorded 2026-12-03)."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(4, 512), (1, 1024), (16, 320), (2, 768), (8, 448), (1, 640), (6, 576), (12, 384), (3, 704), (8, 512)]
    model = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                         num_classes=21, aux_loss=True)
    checksum = infer_images(torch, model, shapes,
                            lambda m: m.cuda().half().to(memory_format=torch.channels_last).eval(),
                            lambda out: float(out["out"].argmax(1).float().mean().item()
                                              + out["aux"].argmax(1).float().mean().item()))
    return {"shapes": shapes, "checksum": checksum}


def xlmr_finetune_dynamic_bf16(torch):
    """Sequence classification fine-tuning of an XLM-R-base-sized encoder through transformers
    (`XLMRobertaForSequenceClassification(XLMRobertaConfig(...))`: 12 layers, 768 wide, 12 heads, 3 labels, a
    250k vocabulary: 192 M of its 278 M parameters in the word embedding, whose dense fp32 gradient of 768 MB is
    made and freed every step) with bf16 autocast (`train_bf16`), AdamW, 16 steps of 16 sequences of 12 to 256
    tokens (12 + 244 u^3) padded on the right (token 1) to the batch's longest rounded up to a multiple of 8, as a
    dynamic-padding collator does: another shape nearly every step; the fp32 weights, gradients and AdamW's moments
    (4.4 GB) under activations of up to 4,096 tokens, a heap of 5.2 GiB at its peak (recorded 2026-12-03)."""
    import random

    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=250002, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                              intermediate_size=3072, max_position_embeddings=514, type_vocab_size=1,
                              pad_token_id=1, num_labels=3)
    rng = random.Random(0)
    steps = []
    for _ in range(16):
        lengths = [12 + int(244 * rng.random() ** 3) for _ in range(16)]
        steps.append((-(-max(lengths) // 8) * 8, tuple(lengths)))  # padded length, each sequence's length

    def padded_batch(gen, step):
        padded, lengths = step
        ids = torch.randint(3, config.vocab_size, (len(lengths), padded), device="cuda", generator=gen)
        mask = (torch.arange(padded, device="cuda")[None] < torch.tensor(lengths, device="cuda")[:, None]).long()
        labels = torch.randint(0, 3, (len(lengths),), device="cuda", generator=gen)
        return {"input_ids": ids * mask + (1 - mask), "attention_mask": mask, "labels": labels}

    losses = train_bf16(torch, XLMRobertaForSequenceClassification(config), steps, padded_batch,
                        lambda params: torch.optim.AdamW(params, lr=2e-5, weight_decay=0.01))
    return {"padded_lengths": [padded for padded, _ in steps], "losses": losses}


def regnet_train_val_bf16(torch):
    """torchvision RegNetY-1.6GF (grouped convolutions, squeeze-and-excitation, 11 M parameters) trained through
    `train_classifier` with bf16 autocast (no GradScaler), channels-last, SGD with Nesterov momentum and weight decay,
    label smoothing 0.1, 12 steps of 32 to 96 images of 224 pixels; after every fourth step a validation pass in
    eval mode under inference mode and bf16 autocast on 128 and then 64 images of 256 pixels, between training steps
    whose activations are freed and whose weights and momentum stay: a heap of 3.4 GiB at its peak (recorded
    2026-12-03)."""
    import torchvision

    torch.manual_seed(0)
    batches = [48, 64, 96, 32, 80, 64, 96, 48, 80, 64, 96, 32]
    accuracies = []

    def validate(model, index, gen):
        if index % 4 != 3:
            return
        model.eval()
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            for batch in (128, 64):
                images = torch.randn(batch, 3, 256, 256, device="cuda", generator=gen)
                labels = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)
                logits = model(images.contiguous(memory_format=torch.channels_last))
                accuracies.append(float((logits.argmax(1) == labels).float().mean().item()))
                del images, labels, logits
        model.train()

    losses = train_classifier(torch, torchvision.models.regnet_y_1_6gf(weights=None, num_classes=1000),
                              [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True,
                                                             weight_decay=5e-5),
                              channels_last=True, autocast_dtype=torch.bfloat16, label_smoothing=0.1,
                              after_step=validate)
    return {"batches": batches, "losses": losses, "accuracies": accuracies}


def fno_darcy_train(torch):
    """A 2-D Fourier neural operator in plain torch (FNO, Darcy-flow-style): a coefficient field and its two
    coordinates lifted to 64 channels by a 1 x 1 convolution, 4 Fourier layers that each multiply the 32 x 32 lowest
    modes in two corners of the `rfft2` spectrum by complex weights of 64 x 64 x 32 x 32 (32 MiB each, 256 MiB of
    complex64 weights in all, with their Adam states) and add a 1 x 1 convolution, GELU between, and a projection
    64 -> 128 -> 1; fp32 (cuFFT `rfft2` / `irfft2`), Adam, a relative L2 loss, 6 steps of (batch, grid side) from
    (20, 256) to (4, 512): activations of 256 to 320 MiB each."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    width, modes = 64, 32

    class Spectral(nn.Module):
        def __init__(self):
            super().__init__()
            scale = 1 / (width * width)
            self.low = nn.Parameter(scale * torch.randn(width, width, modes, modes, dtype=torch.cfloat))
            self.high = nn.Parameter(scale * torch.randn(width, width, modes, modes, dtype=torch.cfloat))

        def forward(self, x):
            side = x.shape[-1]
            spectrum = torch.fft.rfft2(x)
            out = torch.zeros(x.shape[0], width, side, side // 2 + 1, dtype=torch.cfloat, device=x.device)
            out[:, :, :modes, :modes] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, :modes, :modes], self.low)
            out[:, :, -modes:, :modes] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, -modes:, :modes], self.high)
            return torch.fft.irfft2(out, s=(side, side))

    class Fno(nn.Module):
        def __init__(self):
            super().__init__()
            self.lift = nn.Conv2d(3, width, 1)
            self.spectral = nn.ModuleList(Spectral() for _ in range(4))
            self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(4))
            self.project = nn.Sequential(nn.Conv2d(width, 128, 1), nn.GELU(), nn.Conv2d(128, 1, 1))

        def forward(self, field):
            batch, _, side, _ = field.shape
            axis = torch.linspace(0, 1, side, device=field.device)
            coords = torch.stack(torch.meshgrid(axis, axis, indexing="ij")).expand(batch, -1, -1, -1)
            x = self.lift(torch.cat([field, coords], dim=1))
            for index, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise)):
                x = spectral(x) + pointwise(x)
                if index < len(self.spectral) - 1:
                    x = F.gelu(x)
            return self.project(x)

    model = Fno()
    steps = [(20, 256), (8, 384), (4, 512), (16, 256), (6, 448), (12, 320)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, side in steps:
        field = torch.rand(batch, 1, side, side, device="cuda", generator=gen)
        target = torch.randn(batch, 1, side, side, device="cuda", generator=gen)
        error = (model(field) - target).flatten(1).norm(dim=1) / target.flatten(1).norm(dim=1)
        loss = error.mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del field, target, error, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def graph_attention_train(torch):
    """Full-batch graph attention (GAT-style) training in plain torch on one fixed random graph of 250,000 nodes (128
    features) with 3 million random directed edges plus a self loop per node: two attention layers of 4 heads x 32
    (ELU between) and an output layer of one head over 40 classes. In each layer every edge gets a score (a leaky
    ReLU of its ends' projections), the scores are softmaxed over each node's incoming edges (the maximum by
    `scatter_reduce`, the sums by `index_add_`) and the weighted messages summed by `index_add_`: gathered edge
    features of 3.25 million x 128 (1.6 GB) per hidden layer. fp32, Adam, 6 full-graph steps, the loss on the first
    100,000 nodes."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    nodes, edges, features, classes, train = 250_000, 3_000_000, 128, 40, 100_000

    class Attention(nn.Module):
        def __init__(self, width_in, heads, width):
            super().__init__()
            self.heads, self.width = heads, width
            self.lin = nn.Linear(width_in, heads * width, bias=False)
            self.att_src = nn.Parameter(torch.randn(heads, width) * width ** -0.5)
            self.att_dst = nn.Parameter(torch.randn(heads, width) * width ** -0.5)
            self.bias = nn.Parameter(torch.zeros(heads * width))

        def forward(self, x, src, dst):
            h = self.lin(x).view(-1, self.heads, self.width)
            score = F.leaky_relu((h * self.att_src).sum(-1)[src] + (h * self.att_dst).sum(-1)[dst], 0.2)
            peak = score.new_full((x.shape[0], self.heads), float("-inf")).scatter_reduce(
                0, dst[:, None].expand(-1, self.heads), score.detach(), reduce="amax", include_self=False)
            weight = (score - peak[dst]).exp()
            total = weight.new_zeros(x.shape[0], self.heads).index_add_(0, dst, weight)
            alpha = weight / total[dst]
            out = h.new_zeros(h.shape).index_add_(0, dst, h[src] * alpha.unsqueeze(-1))
            return out.flatten(1) + self.bias

    layers = nn.ModuleList([Attention(features, 4, 32), Attention(128, 4, 32), Attention(128, 1, classes)])
    start_recording(torch)
    layers = layers.cuda().train()
    opt = torch.optim.Adam(layers.parameters(), lr=5e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    loops = torch.arange(nodes, device="cuda")
    src = torch.cat([torch.randint(0, nodes, (edges,), device="cuda", generator=gen), loops])
    dst = torch.cat([torch.randint(0, nodes, (edges,), device="cuda", generator=gen), loops])
    x = torch.randn(nodes, features, device="cuda", generator=gen)
    labels = torch.randint(0, classes, (nodes,), device="cuda", generator=gen)
    losses, accuracies = [], []
    for _ in range(6):
        h = x
        for index, layer in enumerate(layers):
            h = layer(h, src, dst)
            if index < len(layers) - 1:
                h = F.elu(h)
        loss = F.cross_entropy(h[:train], labels[:train])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        accuracies.append(float((h[train:].argmax(1) == labels[train:]).float().mean().item()))
        del h, loss
    del layers, opt, loops, src, dst, x, labels
    return {"losses": losses, "accuracies": accuracies}


def mlp_mixer_train(torch):
    """MLP-Mixer image classification training in plain torch (Mixer-B/16-wide, 8 blocks: 16 x 16 patches embedded
    to 768 channels by a strided convolution, each block a token-mixing MLP 196 -> 384 -> 196 across the patches and
    a channel-mixing MLP 768 -> 3,072 -> 768, pre-norm with residuals; mean pooling, 1000 classes), bf16 autocast,
    AdamW, 5 steps at large batches (128, 256, 192, 96, 224) of 224-pixel images: channel-MLP hidden activations of
    up to 294 MiB."""
    torch.manual_seed(0)
    nn = torch.nn
    width, tokens = 768, 196

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.token_mlp = nn.Sequential(nn.Linear(tokens, 384), nn.GELU(), nn.Linear(384, tokens))
            self.channel_mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.channel_mlp(self.norm2(x))

    class Mixer(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, width, 16, 16)
            self.blocks = nn.Sequential(*[Block() for _ in range(8)])
            self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, 1000)

        def forward(self, images):
            x = self.blocks(self.patch(images).flatten(2).transpose(1, 2))
            return self.head(self.norm(x).mean(1))

    batches = [128, 256, 192, 96, 224]
    losses = train_classifier(torch, Mixer(), [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05),
                              autocast_dtype=torch.bfloat16)
    return {"batches": batches, "losses": losses}


def vqvae_hires_train(torch):
    """A VQ-VAE in plain torch at high resolution: an encoder of two stride-2 4 x 4 convolutions (3 -> 128 -> 256)
    and two residual blocks to a 64-wide latent at a quarter of the image side, a codebook of 4,096 x 64, a decoder
    of two residual blocks and two transposed convolutions back to the image; each latent's nearest code from one
    `addmm` of squared distances (latents x 4,096 fp32: 1.7 to 2.3 GiB, without gradients), straight-through
    gradients, codebook and commitment losses beside the reconstruction's; fp32, Adam, 6 steps of (batch, image
    side) from (12, 384) to (2, 1024)."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    codes, dim = 4096, 64

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.Conv2d(256, 256, 1))

        def forward(self, x):
            return x + self.body(x)

    class VqVae(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Conv2d(3, 128, 4, 2, 1), nn.ReLU(), nn.Conv2d(128, 256, 4, 2, 1),
                                         Residual(), Residual(), nn.ReLU(), nn.Conv2d(256, dim, 1))
            self.codebook = nn.Parameter(torch.empty(codes, dim).uniform_(-1 / codes, 1 / codes))
            self.decoder = nn.Sequential(nn.Conv2d(dim, 256, 3, padding=1), Residual(), Residual(), nn.ReLU(),
                                         nn.ConvTranspose2d(256, 128, 4, 2, 1), nn.ReLU(),
                                         nn.ConvTranspose2d(128, 3, 4, 2, 1))

        def forward(self, images):
            z = self.encoder(images)
            batch, _, rows, cols = z.shape
            with torch.no_grad():
                flat = z.permute(0, 2, 3, 1).reshape(-1, dim)
                scores = torch.addmm(self.codebook.square().sum(1), flat, self.codebook.t(), alpha=-2)
                index = scores.argmin(1)
                del flat, scores
            quantized = F.embedding(index, self.codebook).view(batch, rows, cols, dim).permute(0, 3, 1, 2)
            vq_loss = F.mse_loss(quantized, z.detach()) + 0.25 * F.mse_loss(z, quantized.detach())
            return self.decoder(z + (quantized - z).detach()), vq_loss, index

    model = VqVae()
    steps = [(8, 512), (4, 768), (2, 1024), (6, 640), (12, 384), (3, 896)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses, used = [], []
    for batch, side in steps:
        images = torch.rand(batch, 3, side, side, device="cuda", generator=gen) * 2 - 1
        recon, vq_loss, index = model(images)
        loss = F.mse_loss(recon, images) + vq_loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        used.append(int(torch.bincount(index, minlength=codes).count_nonzero().item()))
        del images, recon, vq_loss, index, loss
    del model, opt
    return {"steps": steps, "losses": losses, "codes_used": used}


def vocab_250k_chunked_train(torch):
    """A language model with a 250k vocabulary whose loss is computed in chunks, in plain torch: `decoder_lm`'s
    2-layer trunk (768 wide, 12 heads, flash attention) with its output head tied to the 250,002 x 768 embedding
    (192 M parameters: 732 MiB in fp32, a dense gradient and AdamW states of the same size); the next-token
    cross-entropy is taken 2,048 tokens at a time, each chunk's head and loss under activation checkpointing, so that
    only one chunk's logits (2,048 x 250,002: 977 MiB in bf16, 1.9 GiB as fp32 for the loss) are live at once, built
    again in the backward pass; bf16 autocast, 4 steps of (batch, tokens) (16, 2048), (8, 4096), (4, 8192),
    (12, 2048)."""
    import types

    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    vocab, chunk = 250_002, 2048

    class ChunkedLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = decoder_lm(torch, 768, 2, 12, vocab)
            self.lm.head.weight = self.lm.embed.weight
            nn.init.normal_(self.lm.embed.weight, std=0.02)

        def forward(self, input_ids):
            lm = self.lm
            x = lm.embed(input_ids[:, :-1])
            for block in lm.blocks:
                x = block(x)
            hidden, targets = lm.norm(x).flatten(0, 1), input_ids[:, 1:].flatten()

            def chunk_loss(h, t):
                return F.cross_entropy(lm.head(h).float(), t, reduction="sum")

            total = 0
            for start in range(0, targets.numel(), chunk):
                total = total + checkpoint(chunk_loss, hidden[start:start + chunk], targets[start:start + chunk],
                                           use_reentrant=False)
            return types.SimpleNamespace(loss=total / targets.numel())

    steps = [(16, 2048), (8, 4096), (4, 8192), (12, 2048)]
    losses = train_bf16(torch, ChunkedLoss(), steps, token_inputs(torch, vocab),
                        lambda params: torch.optim.AdamW(params, lr=3e-4, weight_decay=0.01))
    return {"steps": steps, "losses": losses}


def sr_hires_train(torch):
    """Image super-resolution training at high resolution with an EDSR-baseline-style network in plain torch (a
    3 x 3 convolution to 64 channels, 16 residual blocks of two convolutions scaled by 0.1, a global skip, x2
    upsampling by a convolution to 256 channels and PixelShuffle(2), a convolution to RGB), bf16 autocast,
    channels-last, AdamW, an L1 loss against the high-resolution image (the input its 2 x 2 average), 6 steps of
    (batch, low-resolution side) from (24, 192) to (4, 512): feature maps of 108 to 150 MiB each, two of them kept
    for the backward pass per residual block."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1))

        def forward(self, x):
            return x + 0.1 * self.body(x)

    class Edsr(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Conv2d(3, 64, 3, padding=1)
            self.body = nn.Sequential(*[Block() for _ in range(16)], nn.Conv2d(64, 64, 3, padding=1))
            self.tail = nn.Sequential(nn.Conv2d(64, 256, 3, padding=1), nn.PixelShuffle(2),
                                      nn.Conv2d(64, 3, 3, padding=1))

        def forward(self, x):
            h = self.head(x)
            return self.tail(h + self.body(h))

    model = Edsr()
    steps = [(16, 256), (8, 384), (4, 512), (24, 192), (12, 320), (16, 256)]
    start_recording(torch)
    model = model.cuda().to(memory_format=torch.channels_last).train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, side in steps:
        high = torch.rand(batch, 3, 2 * side, 2 * side, device="cuda", generator=gen)
        low = F.avg_pool2d(high, 2).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.l1_loss(model(low).float(), high)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del high, low, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def gp_cholesky_fit(torch):
    """Gaussian-process regression without a model, fp64: 4 independent GPs of 5,120 points in 8 dimensions (targets
    a sum of sines plus noise) fit by their exact marginal likelihood; each of 6 Adam steps builds the RBF kernel
    matrices (4 x 5,120 x 5,120: 800 MiB, a handful of such temporaries) from squared distances by `baddbmm`, adds
    the noise variance, factors them (`linalg.cholesky`), solves for the weights (`cholesky_solve`), takes the
    log-determinant from the factor's diagonal and back-propagates through all of it to the per-dimension
    lengthscales and the signal and noise variances; then 2,048 test points per GP are predicted (means, and
    variances through `linalg.solve_triangular`)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    gps, points, dims, tests, f64 = 4, 5120, 8, 2048, torch.float64
    start_recording(torch)
    x = torch.rand(gps, points, dims, device="cuda", dtype=f64, generator=gen)
    noise = torch.randn(gps, points, 1, device="cuda", dtype=f64, generator=gen)
    y = torch.sin(6 * x).sum(-1, keepdim=True) + 0.1 * noise
    log_length = torch.zeros(gps, 1, dims, device="cuda", dtype=f64, requires_grad=True)
    log_signal = torch.zeros(gps, 1, 1, device="cuda", dtype=f64, requires_grad=True)
    log_noise = torch.full((gps, 1, 1), -2.0, device="cuda", dtype=f64, requires_grad=True)
    opt = torch.optim.Adam([log_length, log_signal, log_noise], lr=0.05)
    eye = torch.eye(points, device="cuda", dtype=f64)

    def kernel(a, b):
        a, b = a / log_length.exp(), b / log_length.exp()
        squares = a.square().sum(-1, keepdim=True) + b.square().sum(-1).unsqueeze(-2)
        distances = torch.baddbmm(squares, a, b.transpose(1, 2), alpha=-2).clamp_min(0)
        return log_signal.exp() * distances.mul(-0.5).exp()

    def factor():
        return torch.linalg.cholesky(kernel(x, x) + (log_noise.exp() + 1e-6) * eye)

    losses = []
    for _ in range(6):
        lower = factor()
        weights = torch.cholesky_solve(y, lower)
        loss = (0.5 * (y * weights).sum() + lower.diagonal(dim1=-2, dim2=-1).log().sum()) / (gps * points)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del lower, weights, loss
    with torch.no_grad():
        lower = factor()
        weights = torch.cholesky_solve(y, lower)
        queries = torch.rand(gps, tests, dims, device="cuda", dtype=f64, generator=gen)
        cross = kernel(x, queries)
        mean = cross.transpose(1, 2) @ weights
        solved = torch.linalg.solve_triangular(lower, cross, upper=False)
        variance = log_signal.exp().squeeze(-1) - solved.square().sum(1)
        error = float((mean - torch.sin(6 * queries).sum(-1, keepdim=True)).square().mean().item())
        spread = float(variance.mean().item())
        del lower, weights, queries, cross, mean, solved, variance
    return {"losses": losses, "test_error": error, "mean_variance": spread}


def voxel_cnn_train(torch):
    """3-D object classification from point clouds through occupancy voxels, in plain torch: each step's clouds
    (4,096 points each on an ellipsoid of random radii, jittered) are voxelized on the GPU into 64^3 grids (points
    per voxel added by `index_put_` with `accumulate`, then log1p), and a VoxNet-style 3-D CNN (3 x 3 x 3
    convolutions 1 -> 32 -> 64 -> 128 -> 256 with batch norm and ReLU, 2 x 2 x 2 max pooling between, global average
    pooling, 40 classes) is trained on them, bf16 autocast, AdamW, 6 steps of 32 to 96 clouds: first-level
    activations of 0.5 to 1.5 GiB each."""
    torch.manual_seed(0)
    nn, F = torch.nn, torch.nn.functional
    side, points, classes = 64, 4096, 40

    def level(a, b):
        return [nn.Conv3d(a, b, 3, padding=1, bias=False), nn.BatchNorm3d(b), nn.ReLU()]

    model = nn.Sequential(*level(1, 32), nn.MaxPool3d(2), *level(32, 64), nn.MaxPool3d(2), *level(64, 128),
                          nn.MaxPool3d(2), *level(128, 256), nn.AdaptiveAvgPool3d(1), nn.Flatten(),
                          nn.Linear(256, classes))
    batches = [32, 64, 96, 48, 80, 64]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses, occupancy = [], []
    for batch in batches:
        direction = F.normalize(torch.randn(batch, points, 3, device="cuda", generator=gen), dim=-1)
        radii = 0.15 + 0.3 * torch.rand(batch, 1, 3, device="cuda", generator=gen)
        cloud = 0.5 + direction * radii + 0.01 * torch.randn(batch, points, 3, device="cuda", generator=gen)
        cell = (cloud.clamp(0, 1 - 1e-6) * side).long()
        flat = ((torch.arange(batch, device="cuda")[:, None] * side + cell[..., 0]) * side + cell[..., 1]) * side
        flat = (flat + cell[..., 2]).flatten()
        grid = torch.zeros(batch * side ** 3, device="cuda").index_put_(
            (flat,), torch.ones(flat.numel(), device="cuda"), accumulate=True)
        voxels = grid.view(batch, 1, side, side, side).log1p()
        labels = torch.randint(0, classes, (batch,), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(voxels), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        occupancy.append(float((grid > 0).float().mean().item()))
        del direction, radii, cloud, cell, flat, grid, voxels, labels, loss
    del model, opt
    return {"batches": batches, "losses": losses, "occupancy": occupancy}



def lm_1_6b_varlen_train(torch):
    """A 1.6-billion-parameter causal language model in plain torch (24 layers, 2304 wide, 18 heads, 32k
    vocabulary, through `decoder_lm`), bf16 autocast with fp32 weights, AdamW, 6 steps whose shapes change every
    step, (batch, tokens) (12, 1024), (3, 4096), (6, 2048), (24, 512), (2, 6144), (12, 1024): a heap of tens of GiB
    (weights and gradients of 6 GiB each, optimizer state of 12 GiB) whose activations change size at every step.
    Recorded in the thirtieth session to judge the heap's tiers on a heap past 16 GiB they were not chosen on."""
    return train_decoder_lm(torch, 2304, 24, 18, [(12, 1024), (3, 4096), (6, 2048), (24, 512), (2, 6144), (12, 1024)],
                            lambda params: torch.optim.AdamW(params, lr=1e-4))


def vit_huge_train(torch):
    """torchvision ViT-H/14 training (32 layers, 1280 wide, 632 M parameters), AdamW, fp16 autocast with
    GradScaler, 4 steps of batch 32, 48, 24 and 48 at 224 pixels: activations of tens of GiB beside 10 GiB of
    weights, gradients and optimizer state. Recorded in the thirtieth session to judge the heap's tiers."""
    return train_vit(torch, "vit_h_14", [32, 48, 24, 48])


def t5_large_train(torch):
    """T5-large-sized sequence-to-sequence training through transformers (`T5ForConditionalGeneration(T5Config(
    ...))`: 24 encoder and 24 decoder layers, 1024 wide, 16 heads, 32k vocabulary, 738 M parameters), bf16
    autocast, AdamW, 6 steps of (batch, source tokens, target tokens) from (8, 1024, 256) to (48, 256, 64): encoder
    and decoder activations beside 12 GiB of weights, gradients and optimizer state. Recorded in the thirtieth
    session to judge the heap's tiers."""
    import random

    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    vocab = 32128
    config = T5Config(vocab_size=vocab, d_model=1024, d_kv=64, d_ff=4096, num_layers=24, num_decoder_layers=24,
                      num_heads=16, decoder_start_token_id=0, pad_token_id=0)
    model = T5ForConditionalGeneration(config)
    shapes = [(8, 1024, 256), (32, 512, 128), (48, 256, 64), (16, 1024, 128), (24, 512, 256), (8, 1024, 256)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch, source, target in shapes:
        inputs = torch.randint(1, vocab, (batch, source), device="cuda", generator=gen)
        labels = torch.randint(1, vocab, (batch, target), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=inputs, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del inputs, labels, loss
    del model, opt
    return {"shapes": shapes, "losses": losses}


def gpt2_tiny_sample_generate(torch):
    """A small GPT-2-style decoder through transformers (`GPT2LMHeadModel(GPT2Config(...))`: 4 layers, 384 wide, 6
    heads, 50k vocabulary), fp16, `generate` sampling at temperature 0.9 (top-p 0.95) for 5 rounds (batch, prompt,
    new tokens) from (1, 192, 64) to (24, 24, 32): meant as a heap of about 100 MiB (its peak is 163 MiB). Recorded in
    the thirty-first session as an unseen trace."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=4, n_embd=384, n_head=6, n_positions=512)
    rounds = [(8, 64, 48), (1, 192, 64), (24, 24, 32), (4, 128, 40), (12, 48, 56)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPT2LMHeadModel(config).eval(), rounds, config.vocab_size, seed_each_round=True,
                           do_sample=True, temperature=0.9, top_p=0.95, pad_token_id=0)


def llama_small_beam_generate(torch):
    """A small Llama-style decoder through transformers (`LlamaForCausalLM(LlamaConfig(...))`: 6 layers, 512 wide, 8
    heads with 2 key-value heads, 1,408 feed-forward, 32k vocabulary), fp16, beam search with 4 beams for 4 rounds
    (batch, prompt, new tokens) from (2, 256, 40) to (8, 32, 24). Recorded in the thirty-first session as an unseen
    trace."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024)
    rounds = [(4, 96, 32), (2, 256, 40), (8, 32, 24), (6, 128, 28)]  # batch, prompt, new tokens
    return generate_rounds(torch, LlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3, num_beams=4,
                           do_sample=False, pad_token_id=0)


def bert_tiny_ner_infer(torch):
    """Token classification (named entities) with a small BERT through transformers
    (`BertForTokenClassification(BertConfig(...))`: 4 layers, 312 wide, 12 heads, 30k vocabulary, 9 labels), fp16,
    12 batches of (sentences, tokens) from (256, 32) to (8, 512) with random padding, the argmax label per token kept:
    meant as a heap of about 100 MiB (its peak is 380 MiB). Recorded in the thirty-first session as an unseen
    trace."""
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    config = BertConfig(hidden_size=312, num_hidden_layers=4, num_attention_heads=12, intermediate_size=1200,
                        num_labels=9)
    batches = [(64, 128), (256, 32), (8, 512), (32, 256), (128, 64), (16, 384), (96, 96), (48, 192), (4, 512),
               (192, 48), (24, 320), (160, 80)]
    tagged = classify_padded(
        torch, BertForTokenClassification(config).eval(), config.vocab_size, batches,
        forward=lambda model, ids, mask: model(input_ids=ids * mask, attention_mask=mask).logits.argmax(-1),
        count=lambda labels, mask: int(((labels > 0) & (mask > 0)).sum().item()))
    return {"batches": batches, "tagged": tagged}


def inception_v3_half_infer(torch):
    """torchvision Inception v3 inference (factorized convolutions, four-branch blocks whose outputs are
    concatenated), fp16, 8 (batch, image side) shapes from (1, 299) to (48, 299), each twice. Recorded in the
    thirty-first session as an unseen trace."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(8, 299), (1, 299), (32, 299), (4, 342), (16, 299), (2, 384), (48, 299), (12, 320)]
    model = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().half().eval(), image_score)
    return {"shapes": shapes, "checksum": checksum}


def swin_t_train_mid(torch):
    """torchvision Swin-T training (shifted-window attention, 28 M parameters), AdamW, bf16 autocast, 8 steps with
    batches of 64 to 160 images of 224 pixels: a heap of several GiB of activations. Recorded in the thirty-first
    session as an unseen trace."""
    import torchvision

    torch.manual_seed(0)
    batches = [96, 64, 160, 128, 64, 160, 96, 128]
    losses = train_classifier(torch, torchvision.models.swin_t(), [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-3), autocast_dtype=torch.bfloat16)
    return {"batches": batches, "losses": losses}


def efficientnet_b3_train_mid(torch):
    """torchvision EfficientNet-B3 training (12 M parameters, depthwise convolutions and squeeze-and-excitation),
    AdamW, fp16 autocast with GradScaler, channels-last, 8 steps with batches of 32 to 96 images of 300 pixels: a
    heap of several GiB of many activations. Recorded in the thirty-first session as an unseen trace."""
    import torchvision

    torch.manual_seed(0)
    batches = [48, 96, 32, 64, 96, 48, 80, 64]
    losses = train_classifier(torch, torchvision.models.efficientnet_b3(), [(batch, 3, 300, 300) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-3), channels_last=True)
    return {"batches": batches, "losses": losses}


def mamba_small_generate(torch):
    """A small Mamba-style state-space language model through transformers (`MambaForCausalLM(MambaConfig(...))`:
    8 layers, 512 wide, state size 16, 32k vocabulary; the convolution and SSM states are the cache, not a growing
    key-value cache), fp16, greedy `generate` for 4 rounds (batch, prompt, new tokens) from (1, 256, 48) to (16, 32,
    32). Recorded in the thirty-first session as an unseen trace."""
    from transformers import MambaConfig, MambaForCausalLM

    torch.manual_seed(0)
    config = MambaConfig(vocab_size=32000, hidden_size=512, num_hidden_layers=8, state_size=16)
    rounds = [(4, 96, 40), (1, 256, 48), (16, 32, 32), (8, 128, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, MambaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def segformer_infer(torch):
    """Semantic segmentation with a SegFormer-B0-sized model through transformers
    (`SegformerForSemanticSegmentation(SegformerConfig(...))`: 4 stages of efficient attention, 150 classes), fp16,
    8 (batch, image side) shapes from (1, 1024) to (16, 256), each twice. Recorded in the thirty-first session as an
    unseen trace."""
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    torch.manual_seed(0)
    model = SegformerForSemanticSegmentation(SegformerConfig(num_labels=150)).eval()
    shapes = [(4, 512), (1, 1024), (16, 256), (2, 768), (8, 384), (1, 640), (12, 320), (4, 448)]

    def score(out):
        return float(out.logits.float().softmax(1).max(1).values.mean().item())

    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().half().eval(), score)
    return {"shapes": shapes, "checksum": checksum}


def retinanet_infer(torch):
    """torchvision RetinaNet (ResNet-50 FPN, random weights, no pretrained backbone) inference, fp32, 8 batches of
    1 to 4 images whose sides vary from 480 to 1024 pixels (anchors and detections vary in number). Recorded in the
    thirty-first session as an unseen trace."""
    import torchvision

    torch.manual_seed(0)
    holder = [torchvision.models.detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None).eval()]
    return detect_random_sides(torch, holder, seed=1, count=8, low=480, high=1025, most=4)


def bert_large_mlm_train_mid(torch):
    """Masked-language-model training of a BERT-large-sized encoder through transformers
    (`BertForMaskedLM(BertConfig(...))`: 24 layers, 1024 wide, 16 heads, 30k vocabulary), bf16 autocast, AdamW, 8
    steps of (batch, tokens) from (64, 128) to (8, 512), 15 % of the tokens as labels: a heap of several GiB.
    Recorded in the thirty-first session as an unseen trace."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    steps = [(32, 256), (64, 128), (8, 512), (16, 384), (48, 192), (8, 512), (32, 256), (64, 128)]

    def masked(gen, step):
        ids = torch.randint(1000, config.vocab_size, step, device="cuda", generator=gen)
        chosen = torch.rand(step, device="cuda", generator=gen) < 0.15
        return {"input_ids": ids, "labels": torch.where(chosen, ids, torch.full_like(ids, -100))}

    losses = train_bf16(torch, BertForMaskedLM(config), steps, masked,
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def convnext_base_train_mid(torch):
    """torchvision ConvNeXt-Base training (89 M parameters), AdamW, bf16 autocast, channels-last, 6 steps with
    batches of 32 to 96 images of 224 pixels. Recorded in the thirty-first session as an unseen trace."""
    import torchvision

    torch.manual_seed(0)
    batches = [64, 32, 96, 48, 96, 64]
    losses = train_classifier(torch, torchvision.models.convnext_base(), [(batch, 3, 224, 224) for batch in batches],
                              lambda params: torch.optim.AdamW(params, lr=1e-3), channels_last=True,
                              autocast_dtype=torch.bfloat16)
    return {"batches": batches, "losses": losses}


def gpt2_medium_beam_generate(torch):
    """GPT-2 medium-sized decoder through transformers (`GPT2LMHeadModel(GPT2Config(...))`: 24 layers, 1024 wide,
    16 heads, 50k vocabulary), fp16, beam search with 4 beams (the cache reordered by beam every step) for 4 rounds
    (batch, prompt, new tokens) from (1, 384, 32) to (8, 64, 24). Recorded in the thirty-first session as an unseen
    trace."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=24, n_embd=1024, n_head=16)
    rounds = [(4, 128, 32), (1, 384, 32), (8, 64, 24), (2, 256, 28)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPT2LMHeadModel(config).eval(), rounds, config.vocab_size, num_beams=4,
                           do_sample=False, pad_token_id=0)


def wide_mlp_train(torch):
    """A wide multi-layer perceptron in plain torch, fp32: 8,192 -> 16,384 -> 16,384 -> 1,000 with GELU (1.6 G
    parameters: 6.3 GiB with gradients and AdamW's states), trained 6 steps on random batches of 1,024 to 4,096
    rows (activations of 64 to 256 MiB per layer). Recorded in the thirty-second session as an unseen trace for the
    request-mix rule."""
    torch.manual_seed(0)
    nn = torch.nn
    batches = [2048, 4096, 1024, 3072, 4096, 2048]
    # The model is built in the call, so that `train_steps` holds its only reference and frees it there.
    losses = train_steps(torch, nn.Sequential(nn.Linear(8192, 16384), nn.GELU(), nn.Linear(16384, 16384),
                                              nn.GELU(), nn.Linear(16384, 1000)),
                         lambda params: torch.optim.AdamW(params, lr=1e-4), batches, noise_rows(torch, 8192))
    return {"batches": batches, "losses": losses}


def conv3d_volume_infer(torch):
    """A 3-D convolutional encoder on volumes, inference in fp16: 3 x 3 x 3 convolutions 1 -> 16 -> 32 -> 64 -> 128
    with ReLU and stride-2 downsampling between, global average pooling and a linear head, run twice over batches
    of (batch, side) (2, 160), (1, 192), (4, 128), (2, 176): first-level activations of 128 to 256 MiB. Recorded in
    the thirty-second session as an unseen trace for the request-mix rule."""
    torch.manual_seed(0)
    nn = torch.nn

    def level(a, b, stride):
        return [nn.Conv3d(a, b, 3, stride=stride, padding=1), nn.ReLU()]

    model = nn.Sequential(*level(1, 16, 1), *level(16, 32, 2), *level(32, 64, 2), *level(64, 128, 2),
                          nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(128, 10))
    shapes = [(2, 160), (1, 192), (4, 128), (2, 176)]
    return {"checksum": infer_volumes(torch, model, shapes, lambda out: float(out.float().sum().item()))}


def naive_attention_infer(torch):
    """Self-attention with its scores materialized, in plain torch, fp16, inference: a 4-layer block stack (1,024
    wide, 16 heads, the softmax of Q K^T taken explicitly, then a 4,096-wide MLP) over batches of (batch, tokens)
    (2, 2048), (1, 4096), (2, 3072), (1, 6144): score matrices of 256 MiB to 1.1 GiB per layer. Recorded in the
    thirty-second session as an unseen trace for the request-mix rule."""
    torch.manual_seed(0)
    nn = torch.nn
    width, heads, layers = 1024, 16, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)

        def forward(self, x):
            batch, tokens, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(batch, tokens, 3, heads, -1).permute(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
            attention = scores.softmax(-1)
            del scores
            x = x + self.out((attention @ v).transpose(1, 2).reshape(batch, tokens, width))
            return x + self.mlp(self.norm2(x))

    model = nn.Sequential(*[Block() for _ in range(layers)])
    shapes = [(2, 2048), (1, 4096), (2, 3072), (1, 6144)]
    start_recording(torch)
    model = model.cuda().half().eval()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for batch, tokens in shapes:
            x = torch.randn(batch, tokens, width, device="cuda", generator=gen, dtype=torch.float16)
            out = model(x)
            checksum += float(out.float().mean().item())
            del x, out
    del model
    return {"checksum": checksum}


def kmeans_chunked_fit(torch):
    """k-means in plain torch, fp32: 1,048,576 points in 64 dimensions (256 MiB) around 1,024 centroids, 8 Lloyd
    iterations, the distances taken 131,072 points at a time (512 MiB per chunk, with its argmin), the centroids
    updated by `index_add_`. Recorded in the thirty-second session as an unseen trace for the request-mix rule."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    points, dims, k, chunk = 1 << 20, 64, 1024, 1 << 17
    start_recording(torch)
    x = torch.randn(points, dims, device="cuda", generator=gen)
    centroids = x[torch.randperm(points, device="cuda", generator=gen)[:k]].clone()
    inertia = []
    for _ in range(8):
        labels = torch.empty(points, dtype=torch.long, device="cuda")
        total = 0.0
        for start in range(0, points, chunk):
            part = x[start:start + chunk]
            distances = torch.cdist(part, centroids).square()
            best, labels[start:start + chunk] = distances.min(1)
            total += float(best.sum().item())
            del part, distances, best
        sums = torch.zeros_like(centroids).index_add_(0, labels, x)
        counts = torch.bincount(labels, minlength=k).clamp_min(1).unsqueeze(1)
        centroids = sums / counts
        inertia.append(total)
        del labels, sums, counts
    del x, centroids
    return {"inertia": inertia}


def embedding_table_train(torch):
    """A recommender's embedding table in plain torch, fp32: 2,000,000 x 256 (1.9 GiB; dense gradients and AdamW's
    states of the same size), looked up 32 ids per sample, the bags summed, a 3-layer MLP (256 -> 1,024 -> 1,024 ->
    1) on top, trained 4 steps on batches of 16,384 to 65,536 samples (gathered rows of 0.5 to 2 GiB). Recorded in
    the thirty-second session as an unseen trace for the request-mix rule."""
    torch.manual_seed(0)
    nn = torch.nn
    rows, width, per_sample = 2_000_000, 256, 32
    batches = [16384, 65536, 32768, 49152]
    losses = train_click_model(
        torch, nn.Embedding(rows, width),
        nn.Sequential(nn.Linear(width, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1)),
        lambda rows: rows.sum(1), lambda params: torch.optim.AdamW(params, lr=1e-3), batches, per_sample)
    return {"batches": batches, "losses": losses}


def sr_conv_half_infer(torch):
    """A small super-resolution network in fp16, inference: a 3 x 3 convolution to 64 channels, 6 residual blocks of
    two 3 x 3 convolutions, and a 2x pixel-shuffle upsampler, on batches of (batch, side) (2, 768), (1, 1024),
    (3, 640), (2, 896), twice: activations of 75 to 200 MiB. Recorded in the thirty-second session as an unseen trace
    for the request-mix rule (a heap of about a gigabyte whose requests are large)."""
    torch.manual_seed(0)
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1))

        def forward(self, x):
            return x + self.body(x)

    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), *[Residual() for _ in range(6)],
                          nn.Conv2d(64, 3 * 4, 3, padding=1), nn.PixelShuffle(2))
    return infer_images(torch, model, [(2, 768), (1, 1024), (3, 640), (2, 896)], lambda m: m.cuda().half().eval(),
                        image_score)


def fft_filter_small_infer(torch):
    """Frequency-domain filtering in plain torch, fp32: 12 rounds of 4 images of 1,024 x 1,024 through `rfft2`, a
    Gaussian low-pass and `irfft2` (spectra of 16 MiB, images of 16 MiB), with the filter rebuilt each round: a
    heap of a few hundred megabytes whose requests are mostly 16 MiB. Recorded in the thirty-second session as an
    unseen trace for the request-mix rule (a small heap)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    side, batch = 1024, 4
    start_recording(torch)
    checksum = 0.0
    for round_ in range(12):
        images = torch.randn(batch, side, side, device="cuda", generator=gen)
        fy = torch.fft.fftfreq(side, device="cuda").square().unsqueeze(1)
        fx = torch.fft.rfftfreq(side, device="cuda").square().unsqueeze(0)
        low_pass = torch.exp(-(fy + fx) / (2 * (0.02 + 0.01 * (round_ % 4)) ** 2))
        filtered = torch.fft.irfft2(torch.fft.rfft2(images) * low_pass, s=(side, side))
        checksum += float(filtered.std().item())
        del images, fy, fx, low_pass, filtered
    return {"checksum": checksum}


def small_decoder_train(torch):
    """`train_decoder_lm` at 512 wide, 6 layers, 8 heads (a 32,000-token vocabulary), AdamW, 8 steps of (batch,
    tokens) from (16, 128) to (2, 1024): a heap of mostly smaller requests. Recorded in the thirty-second session as
    an unseen trace for the request-mix rule."""
    steps = [(8, 256), (16, 128), (4, 512), (8, 384), (16, 256), (2, 1024), (8, 256), (12, 192)]
    return train_decoder_lm(torch, 512, 6, 8, steps, lambda params: torch.optim.AdamW(params, lr=1e-3))


def dense_solve_fit(torch):
    """Dense linear algebra in plain torch, fp32: 4 rounds of a 12,288 x 12,288 symmetric positive definite system
    (576 MiB) built as A A^T / n + I, solved by `torch.linalg.solve` for 512 right-hand sides, its residual
    checked by a matrix product: a heap of a few GiB whose requests are large from its first. Recorded in the
    thirty-third session as an unseen trace for rule C."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    n, rhs = 12288, 512
    start_recording(torch)
    residuals = []
    for _ in range(4):
        a = torch.randn(n, n, device="cuda", generator=gen)
        system = a @ a.T / n
        system.diagonal().add_(1.0)
        del a
        b = torch.randn(n, rhs, device="cuda", generator=gen)
        x = torch.linalg.solve(system, b)
        residuals.append(float((system @ x - b).norm().item() / b.norm().item()))
        del system, b, x
    return {"residuals": residuals}


def deep_mlp_bigbatch_train(torch):
    """A deep, wide perceptron in plain torch, fp32: 8 layers of 4,096 x 4,096 with GELU and a 1,000-way head (135 M
    parameters), SGD with momentum, 6 steps on batches of 8,192 to 24,576 rows (activations of 128 to 384 MiB per
    layer). Recorded in the thirty-third session as an unseen trace for rule C."""
    torch.manual_seed(0)
    nn = torch.nn
    layers = []
    for _ in range(8):
        layers += [nn.Linear(4096, 4096), nn.GELU()]
    batches = [8192, 16384, 24576, 8192, 16384, 12288]
    # The model is built in the call, so that `train_steps` holds its only reference (as recorded, `layers` keeps
    # the hidden layers' weights until this function returns).
    losses = train_steps(torch, nn.Sequential(*layers, nn.Linear(4096, 1000)),
                         lambda params: torch.optim.SGD(params, lr=1e-3, momentum=0.9), batches,
                         noise_rows(torch, 4096))
    return {"batches": batches, "losses": losses}


def image_batch_preprocess(torch):
    """A data-loading step on the GPU in plain torch: 6 batches of 24 to 48 uint8 images of 2,048 x 2,048 x 3
    converted to fp32, normalized per channel, resized to 1,024 x 1,024 (bilinear, antialiased) and to 512 x 512,
    and randomly flipped and cropped to 448 x 448: requests of 288 MiB to 1.1 GiB. Recorded in the thirty-third
    session as an unseen trace for rule C."""
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(0)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    batches = [32, 48, 24, 40, 48, 32]
    start_recording(torch)
    mean, std = mean.cuda(), std.cuda()
    checksum = 0.0
    for batch in batches:
        raw = torch.randint(0, 256, (batch, 3, 2048, 2048), dtype=torch.uint8, device="cuda", generator=gen)
        images = (raw.float() / 255.0 - mean) / std
        del raw
        half = F.interpolate(images, size=(1024, 1024), mode="bilinear", antialias=True, align_corners=False)
        del images
        quarter = F.interpolate(half, size=(512, 512), mode="bilinear", antialias=True, align_corners=False)
        flip = torch.rand(batch, device="cuda", generator=gen) < 0.5
        quarter = torch.where(flip.view(-1, 1, 1, 1), quarter.flip(-1), quarter)
        top, left = (int(v) for v in torch.randint(0, 64, (2,), device="cuda", generator=gen).tolist())
        crops = quarter[:, :, top:top + 448, left:left + 448].contiguous()
        checksum += float(half.mean().item()) + float(crops.std().item())
        del half, quarter, flip, crops
    return {"batches": batches, "checksum": checksum}


def unet3d_small_half_infer(torch):
    """A small 3-D U-Net in fp16, inference: two down levels (3 x 3 x 3 convolutions 1 -> 16 -> 32 -> 64, max
    pooling) and two up levels (transposed convolutions, skips concatenated), on volumes of (batch, side) (1, 144),
    (2, 112), (1, 160), (2, 128), twice: first-level activations of 90 to 130 MiB, a heap of about 1 GiB. Recorded
    in the thirty-third session as an unseen trace for rule C (the kind of heap where the unbounded rule lost)."""
    torch.manual_seed(0)
    nn = torch.nn

    def double(a, b):
        return nn.Sequential(nn.Conv3d(a, b, 3, padding=1), nn.ReLU(), nn.Conv3d(b, b, 3, padding=1), nn.ReLU())

    class UNet3d(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2, self.mid = double(1, 16), double(16, 32), double(32, 64)
            self.pool = nn.MaxPool3d(2)
            self.up2, self.dec2 = nn.ConvTranspose3d(64, 32, 2, stride=2), double(64, 32)
            self.up1, self.dec1 = nn.ConvTranspose3d(32, 16, 2, stride=2), double(32, 16)
            self.head = nn.Conv3d(16, 2, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(self.pool(e1))
            m = self.mid(self.pool(e2))
            d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
            del m, e2
            d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
            return self.head(d1)

    shapes = [(1, 144), (2, 112), (1, 160), (2, 128)]
    return {"checksum": infer_volumes(torch, UNet3d(), shapes, lambda out: float(out.float().mean().item()))}


def pointcloud_seg_train(torch):
    """PointNet-style part segmentation in plain torch, fp32: shared per-point MLPs 3 -> 64 -> 128 -> 1,024, a max
    pooled global feature concatenated back to every point, a per-point head 1,088 -> 512 -> 256 -> 50, Adam, 6
    steps on batches of (clouds, points) (16, 4096), (8, 8192), (24, 2048), (12, 4096), (4, 16384), (16, 4096):
    per-point feature maps of 128 to 256 MiB, a heap of about 1 GiB. Recorded in the thirty-third session as an
    unseen trace for rule C (the kind of heap where the unbounded rule lost)."""
    torch.manual_seed(0)
    nn = torch.nn

    def mlp(*widths):
        layers = []
        for a, b in zip(widths, widths[1:]):
            layers += [nn.Conv1d(a, b, 1), nn.BatchNorm1d(b), nn.ReLU()]
        return nn.Sequential(*layers)

    class PointSeg(nn.Module):
        def __init__(self):
            super().__init__()
            self.local, self.deep = mlp(3, 64), mlp(64, 128, 1024)
            self.head = nn.Sequential(mlp(1088, 512, 256), nn.Conv1d(256, 50, 1))

        def forward(self, points):
            local = self.local(points)
            pooled = self.deep(local).max(2, keepdim=True).values
            return self.head(torch.cat([local, pooled.expand(-1, -1, local.shape[2])], 1))

    def make_batch(shape, gen):
        clouds, points = shape
        x = torch.randn(clouds, 3, points, device="cuda", generator=gen)
        return x, torch.randint(0, 50, (clouds, points), device="cuda", generator=gen)

    shapes = [(16, 4096), (8, 8192), (24, 2048), (12, 4096), (4, 16384), (16, 4096)]
    losses = train_steps(torch, PointSeg(), lambda params: torch.optim.Adam(params, lr=1e-3), shapes, make_batch)
    return {"shapes": shapes, "losses": losses}


def hires_denoise_half_infer(torch):
    """A DnCNN-style denoiser in fp16, inference: 15 layers of 3 x 3 convolutions at 64 channels with ReLU between,
    predicting the noise to subtract, on batches of (batch, side) (1, 2048), (2, 1536), (1, 2560), (3, 1280),
    twice: activations of 300 to 800 MiB, a heap of about 2 GiB. Recorded in the thirty-third session as an unseen
    trace for rule C."""
    torch.manual_seed(0)
    nn = torch.nn
    layers = [nn.Conv2d(3, 64, 3, padding=1), nn.ReLU()]
    for _ in range(13):
        layers += [nn.Conv2d(64, 64, 3, padding=1), nn.ReLU()]
    body = nn.Sequential(*layers, nn.Conv2d(64, 3, 3, padding=1))

    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = body

        def forward(self, x):
            return x - self.body(x)

    return {"checksum": infer_images(torch, Denoiser(), [(1, 2048), (2, 1536), (1, 2560), (3, 1280)],
                                     lambda m: m.cuda().half().eval(), lambda out: float(out.float().std().item()))}


def gru_tagger_train(torch):
    """A small bidirectional GRU sequence tagger in plain torch, fp32: a 20,000-word embedding of 256, two layers of
    384 per direction, a linear head over 40 tags, Adam, 10 steps on batches of (sentences, length) from (64, 32)
    to (8, 256): a heap of tens of megabytes whose requests are small. Recorded in the thirty-third session as an
    unseen trace for rule C."""
    torch.manual_seed(0)
    nn = torch.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(20000, 256)
            self.rnn = nn.GRU(256, 384, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(768, 40)

        def forward(self, words):
            # One row of tag scores per word (a view), as the labels are one per word.
            return self.head(self.rnn(self.embed(words))[0]).reshape(-1, 40)

    def make_batch(shape, gen):
        words = torch.randint(0, 20000, shape, device="cuda", generator=gen)
        return words, torch.randint(0, 40, shape, device="cuda", generator=gen).reshape(-1)

    shapes = [(64, 32), (32, 64), (16, 128), (8, 256), (48, 48), (24, 96), (64, 32), (12, 192), (32, 80), (8, 224)]
    losses = train_steps(torch, Tagger(), lambda params: torch.optim.Adam(params, lr=1e-3), shapes, make_batch)
    return {"shapes": shapes, "losses": losses}


def vit_b16_bigbatch_half_infer(torch):
    """torchvision ViT-B/16 inference in fp16 at large batches: (batch, image side) (128, 224), (256, 224), (64,
    224), (192, 224), twice: attention and MLP activations of 50 to 600 MiB, a heap of a few GiB. Recorded in the
    thirty-third session as an unseen trace for rule C."""
    import torchvision

    model = torchvision.models.vit_b_16(weights=None)
    return {"checksum": infer_images(torch, model, [(128, 224), (256, 224), (64, 224), (192, 224)],
                                     lambda m: m.cuda().half().eval(), image_score)}

def embedding_bag_bigtable_train(torch):
    """A recommender's embedding bags in plain torch, fp32: a 4,000,000 x 128 table (1.9 GiB, the heap's first
    request) summed over bags of 16 ids, a 2-layer head (128 -> 512 -> 1), SGD with momentum (its buffer as large as
    the table), 4 steps of 32,768 to 131,072 bags. Recorded in the thirty-third session to test rule C, then the
    default, on heaps whose first large request decides it."""
    torch.manual_seed(0)
    nn = torch.nn
    rows, width, per_bag = 4_000_000, 128, 16
    bags = [65536, 131072, 32768, 98304]
    losses = train_click_model(
        torch, nn.EmbeddingBag(rows, width, mode="sum"),
        nn.Sequential(nn.Linear(width, 512), nn.ReLU(), nn.Linear(512, 1)), lambda summed: summed,
        lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9), bags, per_bag)
    return {"bags": bags, "losses": losses}


def lowrank_svd_fit(torch):
    """Randomized low-rank SVD in plain torch, fp32: 3 rounds of a 16,384 x 16,384 matrix (1 GiB, the heap's first
    request each round) built as a rank-512 product plus noise, factored by `torch.svd_lowrank` (q = 256, 2 power
    iterations) and its reconstruction error measured. Recorded in the thirty-third session to test rule C."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    n, rank = 16384, 512
    start_recording(torch)
    errors = []
    for _ in range(3):
        a = torch.randn(n, rank, device="cuda", generator=gen) @ torch.randn(rank, n, device="cuda", generator=gen)
        a += 0.01 * torch.randn(n, n, device="cuda", generator=gen)
        u, s, v = torch.svd_lowrank(a, q=256, niter=2)
        errors.append(float(((u * s) @ v.T - a).norm().item() / a.norm().item()))
        del a, u, s, v
    return {"errors": errors}


def bigimage_conv_half_infer(torch):
    """Two convolutions over very large images in fp16, inference: batches of 8, 4 and 6 images of 4,096², 5,120² and
    3,584² (768, 600 and 441 MiB, the first the heap's first request), a 3 x 3 convolution to 16 channels, ReLU, and
    a 3 x 3 convolution back to 3: activations of 2.3 to 4 GiB. Recorded in the thirty-third session to test rule
    C."""
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(16, 3, 3, padding=1))
    return {"checksum": infer_images(torch, model, [(8, 4096), (4, 5120), (6, 3584)],
                                     lambda m: m.cuda().half().eval(), lambda out: float(out.float().mean().item()))}


def matrix_chain_fp64_fit(torch):
    """Matrix products in fp64 in plain torch: 4 rounds of a chain of 3 products of 8,192 x 8,192 matrices (512 MiB
    each, the first the heap's first request), each product normalized, and a trace taken. Recorded in the
    thirty-third session to test rule C."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    n = 8192
    start_recording(torch)
    traces = []
    for _ in range(4):
        x = torch.randn(n, n, device="cuda", generator=gen, dtype=torch.float64)
        for _ in range(3):
            y = torch.randn(n, n, device="cuda", generator=gen, dtype=torch.float64)
            x = (x @ y) / n ** 0.5
            del y
        traces.append(float(x.diagonal().sum().item()))
        del x
    return {"traces": traces}


def lookup_table_infer(torch):
    """A large lookup table in fp32 (600 MiB: 1,228,800 x 128, the heap's first request), then 40 batches of 4,096 to
    65,536 queries gathered from it, passed through a 128 -> 1,024 -> 128 MLP and normalized: a heap of about a
    gigabyte whose later requests are 2 to 256 MiB. Recorded in the thirty-third session to test rule C (a heap of
    about a gigabyte where it may open)."""
    torch.manual_seed(0)
    nn = torch.nn
    mlp = nn.Sequential(nn.Linear(128, 1024), nn.GELU(), nn.Linear(1024, 128))
    start_recording(torch)
    gen = torch.Generator(device="cuda").manual_seed(0)
    table = torch.randn(1_228_800, 128, device="cuda", generator=gen)
    mlp = mlp.cuda().eval()
    checksum = 0.0
    with torch.inference_mode():
        for step in range(40):
            count = 4096 << (step % 5)
            ids = torch.randint(0, table.shape[0], (count,), device="cuda", generator=gen)
            out = torch.nn.functional.normalize(mlp(table[ids]), dim=1)
            checksum += float(out.sum().item())
            del ids, out
    del table, mlp
    return {"checksum": checksum}


def knn_bigbank_search(torch):
    """Nearest neighbours against a large memory bank in plain torch, fp32: a bank of 4,000,000 x 128 (1.9 GiB, the
    heap's first request), 8 batches of 1,024 queries, each compared with the bank 500,000 rows at a time
    (`torch.cdist`, 1.9 GiB of distances) keeping the 16 nearest. Recorded in the thirty-third session to test rule
    C."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, width, chunk, k = 4_000_000, 128, 500_000, 16
    start_recording(torch)
    bank = torch.randn(rows, width, device="cuda", generator=gen)
    checksum = 0.0
    for _ in range(8):
        queries = torch.randn(1024, width, device="cuda", generator=gen)
        best = None
        for start in range(0, rows, chunk):
            d = torch.cdist(queries, bank[start:start + chunk])
            top = d.topk(k, dim=1, largest=False).values
            best = top if best is None else torch.cat([best, top], 1).topk(k, dim=1, largest=False).values
            del d, top
        checksum += float(best.sum().item())
        del queries, best
    del bank
    return {"checksum": checksum}


def falcon_small_sample_generate(torch):
    """A small Falcon-style decoder through transformers (`FalconForCausalLM(FalconConfig(...))`: 6 layers 768 wide,
    12 heads sharing one key-value head (multi-query), parallel attention and MLP, 50k vocabulary), fp16, `generate`
    sampling with nucleus 0.9 for 4 rounds (batch, prompt, new tokens) from (2, 256, 40) to (24, 32, 24). Recorded
    in the thirty-fourth session, unseen by the policy."""
    from transformers import FalconConfig, FalconForCausalLM

    torch.manual_seed(0)
    config = FalconConfig(vocab_size=50304, hidden_size=768, num_hidden_layers=6, num_attention_heads=12,
                          multi_query=True, parallel_attn=True, new_decoder_architecture=False)
    rounds = [(2, 256, 40), (12, 64, 32), (6, 160, 48), (24, 32, 24)]  # batch, prompt, new tokens
    return generate_rounds(torch, FalconForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.9, pad_token_id=0)


def gemma_small_greedy_generate(torch):
    """A small Gemma-style decoder through transformers (`GemmaForCausalLM(GemmaConfig(...))`: 6 layers 640 wide, 8
    heads of 80 with 2 key-value heads, GeGLU of 2,048, 64k vocabulary tied to the embedding), fp16, greedy
    `generate` for 4 rounds (batch, prompt, new tokens) from (8, 96, 40) to (4, 256, 32). Recorded in the
    thirty-fourth session, unseen by the policy."""
    from transformers import GemmaConfig, GemmaForCausalLM

    torch.manual_seed(0)
    config = GemmaConfig(vocab_size=64000, hidden_size=640, intermediate_size=2048, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=2, head_dim=80, max_position_embeddings=2048)
    rounds = [(8, 96, 40), (1, 384, 48), (16, 48, 32), (4, 256, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, GemmaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def mobilebert_qa_infer(torch):
    """Extractive question answering with MobileBERT through transformers
    (`MobileBertForQuestionAnswering(MobileBertConfig())`: 24 layers, 512 wide with 128-wide bottlenecks, 4 stacked
    feed-forwards per layer, 30k vocabulary), fp16, 10 batches of (questions, tokens) from (1, 512) to (64, 128),
    padded on the right; the best answer span from the start and end logits. Recorded in the thirty-fourth session,
    unseen by the policy."""
    from transformers import MobileBertConfig, MobileBertForQuestionAnswering

    torch.manual_seed(0)
    config = MobileBertConfig()
    batches = [(8, 384), (1, 512), (32, 192), (64, 128), (4, 512), (16, 320), (48, 96), (2, 448), (24, 256),
               (12, 384)]
    return answer_spans(torch, MobileBertForQuestionAnswering(config).eval(), config.vocab_size, batches,
                        ordered=True)


def hubert_ctc_infer(torch):
    """Speech recognition with a HuBERT-style encoder through transformers (`HubertForCTC(HubertConfig(...))`: the
    7-layer convolutional front end over raw 16 kHz audio, 6 transformer layers 512 wide, 8 heads, a 32-symbol CTC
    head), fp16, greedy CTC decoding (argmax per frame) of 10 batches of (clips, seconds) from (1, 20) to (32, 2),
    clips padded on the right with an attention mask. Recorded in the thirty-fourth session, unseen by the policy."""
    from transformers import HubertConfig, HubertForCTC

    torch.manual_seed(0)
    config = HubertConfig(hidden_size=512, num_hidden_layers=6, num_attention_heads=8, intermediate_size=2048,
                          vocab_size=32, feat_extract_norm="layer", do_stable_layer_norm=True)
    model = HubertForCTC(config).eval()
    batches = [(4, 8.0), (1, 20.0), (16, 3.0), (32, 2.0), (8, 6.0), (2, 14.0), (12, 4.5), (6, 10.0), (24, 2.5),
               (3, 12.0)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0
    with torch.inference_mode():
        for clips, seconds in batches:
            samples = int(seconds * 16_000)
            audio = torch.randn(clips, samples, device="cuda", generator=gen).half()
            lengths = torch.randint(samples // 2, samples + 1, (clips, 1), device="cuda", generator=gen)
            mask = (torch.arange(samples, device="cuda")[None] < lengths).long()
            logits = model(audio * mask, attention_mask=mask).logits
            checksum += int(logits.argmax(-1).sum().item())
            del audio, lengths, mask, logits
    del model
    return {"batches": batches, "checksum": checksum}


def esm_protein_embed_infer(torch):
    """Protein embeddings from an ESM-2-style encoder through transformers (`EsmModel(EsmConfig(...))`: 12 layers 480
    wide, 20 heads, rotary positions, a 33-token alphabet), fp16, mean pooling over the attention mask, 10 batches of
    (sequences, residues) from (128, 64) to (4, 1,022), padded on the right. Recorded in the thirty-fourth session,
    unseen by the policy."""
    from transformers import EsmConfig, EsmModel

    torch.manual_seed(0)
    config = EsmConfig(vocab_size=33, hidden_size=480, num_hidden_layers=12, num_attention_heads=20,
                       intermediate_size=1920, position_embedding_type="rotary", max_position_embeddings=1026,
                       pad_token_id=1, mask_token_id=32, token_dropout=False)
    model = EsmModel(config, add_pooling_layer=False).eval()
    batches = [(32, 256), (4, 1022), (128, 64), (16, 512), (64, 128), (8, 768), (48, 192), (2, 1022), (24, 384),
               (96, 96)]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for sequences, residues in batches:
            ids = torch.randint(4, 24, (sequences, residues), device="cuda", generator=gen)
            lengths = torch.randint(residues // 3, residues + 1, (sequences, 1), device="cuda", generator=gen)
            mask = (torch.arange(residues, device="cuda")[None] < lengths).long()
            ids = ids * mask + (1 - mask)  # padding is token 1
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
            weights = mask[:, :, None].to(hidden.dtype)
            embeddings = (hidden * weights).sum(1) / weights.sum(1)
            checksum += float(embeddings.float().norm(dim=1).mean().item())
            del ids, lengths, mask, hidden, weights, embeddings
    del model
    return {"batches": batches, "checksum": checksum}


def tcn_forecast_train(torch):
    """Time-series forecasting with a temporal convolutional network in plain torch, fp32: 32 input series through 8
    residual blocks of two dilated causal 1-D convolutions (128 channels, kernel 3, dilations 1 to 128, ReLU), a 1 x 1
    head forecasting the next 32 steps of every series from each position, mean squared error, Adam, 10 steps of
    (windows, length) from (64, 1,024) to (4, 16,384). Recorded in the thirty-fourth session, unseen by the
    policy."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, channels, dilation):
            super().__init__()
            self.pad = 2 * dilation
            self.a = nn.Conv1d(channels, channels, 3, dilation=dilation)
            self.b = nn.Conv1d(channels, channels, 3, dilation=dilation)

        def forward(self, x):
            y = F.relu(self.a(F.pad(x, (self.pad, 0))))
            y = F.relu(self.b(F.pad(y, (self.pad, 0))))
            return F.relu(x + y)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(32, 128, 1), *[Block(128, 2 ** i) for i in range(8)], nn.Conv1d(128, 32 * 32, 1))
    steps = [(16, 4096), (64, 1024), (4, 16384), (32, 2048), (8, 8192), (48, 1536), (12, 6144), (24, 3072),
             (6, 12288), (40, 1024)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for windows, length in steps:
        series = torch.randn(windows, 32, length + 32, device="cuda", generator=gen).cumsum(-1) * 0.05
        x = series[:, :, :length]
        target = series.unfold(2, 32, 1)[:, :, 1:length + 1]  # (windows, 32, length, 32): the next 32 steps
        pred = model(x).view(windows, 32, 32, length).permute(0, 1, 3, 2)
        loss = F.mse_loss(pred, target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del series, x, target, pred, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def sinkhorn_ot_fit(torch):
    """Entropic optimal transport in plain torch, fp32, no model: 8 rounds of batched point clouds (batch, n, m points
    of 64 dimensions) from (16, 1,024, 1,024) to (1, 6,000, 5,000), squared-distance costs by `torch.cdist`, 60
    log-domain Sinkhorn iterations (`logsumexp` over a fresh batch x n x m temporary each half-step), then the
    transport cost. Recorded in the thirty-fourth session, unseen by the policy."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    rounds = [(4, 2048, 2048), (16, 1024, 1024), (1, 6000, 5000), (2, 4096, 3000), (8, 1536, 1536),
              (1, 4500, 4500), (6, 2048, 1024), (3, 3072, 2560)]
    eps, iterations = 0.05, 60
    start_recording(torch)
    costs = []
    for batch, n, m in rounds:
        x = torch.randn(batch, n, 64, device="cuda", generator=gen)
        y = torch.randn(batch, m, 64, device="cuda", generator=gen) + 0.5
        cost = torch.cdist(x, y).pow(2) / 64
        log_a = torch.full((batch, n), -float(torch.log(torch.tensor(float(n)))), device="cuda")
        log_b = torch.full((batch, m), -float(torch.log(torch.tensor(float(m)))), device="cuda")
        f = torch.zeros(batch, n, device="cuda")
        g = torch.zeros(batch, m, device="cuda")
        for _ in range(iterations):
            f = eps * log_a - eps * torch.logsumexp((g[:, None, :] - cost) / eps, dim=2)
            g = eps * log_b - eps * torch.logsumexp((f[:, :, None] - cost) / eps, dim=1)
        plan = torch.exp((f[:, :, None] + g[:, None, :] - cost) / eps)
        costs.append(float((plan * cost).sum().item()) / batch)
        del x, y, cost, log_a, log_b, f, g, plan
    return {"rounds": rounds, "costs": costs}


def capsule_routing_train(torch):
    """A capsule network with dynamic routing in plain torch, fp32 (CapsNet on 28 x 28 images: a 9 x 9 convolution to
    256 channels, 32 x 6 x 6 primary capsules of 8, 10 class capsules of 16 by 3 routing iterations over the
    (batch, 1,152, 10, 16) predictions, margin loss), Adam, 10 steps of 32 to 384 images. Recorded in the
    thirty-fourth session, unseen by the policy."""
    nn, F = torch.nn, torch.nn.functional

    def squash(s, dim=-1):
        norm2 = (s * s).sum(dim, keepdim=True)
        return norm2 / (1 + norm2) * s / torch.sqrt(norm2 + 1e-8)

    class CapsNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 256, 9)
            self.primary = nn.Conv2d(256, 32 * 8, 9, stride=2)
            self.w = nn.Parameter(0.01 * torch.randn(1, 1152, 10, 16, 8))

        def forward(self, images):
            u = self.primary(F.relu(self.conv(images)))  # (batch, 256, 6, 6)
            u = squash(u.view(images.shape[0], 32, 8, 6, 6).permute(0, 1, 3, 4, 2).reshape(images.shape[0], 1152, 8))
            u_hat = (self.w @ u[:, :, None, :, None]).squeeze(-1)  # (batch, 1152, 10, 16)
            logits = torch.zeros(u_hat.shape[:3], device=images.device)
            for i in range(3):
                c = logits.softmax(dim=2)
                v = squash((c[..., None] * u_hat).sum(1))  # (batch, 10, 16)
                if i < 2:
                    logits = logits + (u_hat * v[:, None]).sum(-1)
            return v.norm(dim=-1)

    torch.manual_seed(0)
    model = CapsNet()
    steps = [64, 128, 32, 256, 96, 384, 192, 48, 320, 160]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses = []
    for batch in steps:
        images = torch.rand(batch, 1, 28, 28, device="cuda", generator=gen)
        labels = torch.randint(0, 10, (batch,), device="cuda", generator=gen)
        lengths = model(images)
        onehot = F.one_hot(labels, 10).float()
        loss = (onehot * F.relu(0.9 - lengths) ** 2 + 0.5 * (1 - onehot) * F.relu(lengths - 0.1) ** 2).sum(1).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, labels, lengths, onehot, loss
    del model, opt
    return {"steps": steps, "losses": losses}


def pipeline_stages_infer(torch):
    """A two-stage pipeline in plain torch, fp16, inference: an MLP tower of 12 layers 2,048 wide split in two halves,
    each half on a stream of its own; every batch is cut into 4 micro-batches that flow from the first stage's
    stream to the second's (handed over with events and `record_stream`), and the outputs are gathered on the
    default stream; 10 batches of 256 to 4,096 rows. Recorded in the thirty-fourth session, unseen by the policy."""
    nn = torch.nn
    torch.manual_seed(0)

    def half():
        return nn.Sequential(*[nn.Sequential(nn.Linear(2048, 2048), nn.GELU()) for _ in range(6)])

    first, second = half(), half()
    batches = [1024, 256, 4096, 512, 2048, 3072, 768, 4096, 1536, 384]
    start_recording(torch)
    first, second = first.to("cuda", torch.float16).eval(), second.to("cuda", torch.float16).eval()
    main, stage1, stage2 = torch.cuda.current_stream(), torch.cuda.Stream(), torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for rows in batches:
            x = torch.randn(rows, 2048, device="cuda", generator=gen, dtype=torch.float16)
            stage1.wait_stream(main)
            outputs = []
            for part in x.chunk(4):
                with torch.cuda.stream(stage1):
                    part.record_stream(stage1)
                    middle = first(part)
                done = stage1.record_event()
                stage2.wait_event(done)
                with torch.cuda.stream(stage2):
                    middle.record_stream(stage2)
                    out = second(middle)
                outputs.append(out)
                del middle, out
            main.wait_stream(stage2)
            for out in outputs:
                out.record_stream(main)
            y = torch.cat(outputs)
            checksum += float(y.float().mean().item())
            del x, outputs, y
    torch.cuda.synchronize()
    del first, second
    return {"batches": batches, "checksum": checksum,
            "streams": {"stage1": stage1.cuda_stream, "stage2": stage2.cuda_stream}}


def stream_per_request_embed_infer(torch):
    """Sentence embeddings served with a stream per request: a BERT-small-sized encoder through transformers
    (`BertModel(BertConfig(...))`: 4 layers, 512 wide, 8 heads), fp16; 6 rounds of 4 concurrent requests, each
    request (16 to 256 sentences of 32 to 384 tokens) encoded and mean-pooled on its own of 4 streams, the
    embeddings handed to the default stream (`record_stream`) and scored against each other there. Recorded in the
    thirty-fourth session, unseen by the policy."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048)
    model = BertModel(config, add_pooling_layer=False).eval()
    rounds = [[(64, 128), (16, 384), (256, 32), (32, 256)], [(128, 64), (8, 384), (48, 192), (96, 96)],
              [(256, 48), (32, 320), (16, 128), (64, 160)], [(24, 384), (192, 64), (128, 32), (40, 224)],
              [(16, 256), (80, 128), (160, 96), (12, 384)], [(112, 144), (36, 288), (200, 40), (56, 200)]]
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    main = torch.cuda.current_stream()
    streams = [torch.cuda.Stream() for _ in range(4)]
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.inference_mode():
        for requests in rounds:
            inputs = []
            for sentences, tokens in requests:
                ids = torch.randint(1000, config.vocab_size, (sentences, tokens), device="cuda", generator=gen)
                lengths = torch.randint(tokens // 4, tokens + 1, (sentences, 1), device="cuda", generator=gen)
                inputs.append((ids, (torch.arange(tokens, device="cuda")[None] < lengths).long()))
                del ids, lengths
            embeddings = []
            for stream, (ids, mask) in zip(streams, inputs):
                stream.wait_stream(main)
                with torch.cuda.stream(stream):
                    ids.record_stream(stream)
                    mask.record_stream(stream)
                    hidden = model(input_ids=ids * mask, attention_mask=mask).last_hidden_state
                    weights = mask[:, :, None].to(hidden.dtype)
                    pooled = torch.nn.functional.normalize(((hidden * weights).sum(1) / weights.sum(1)).float(), dim=1)
                    del hidden, weights
                embeddings.append(pooled)
                del pooled
            for stream, pooled in zip(streams, embeddings):
                main.wait_stream(stream)
                pooled.record_stream(main)
            joined = torch.cat(embeddings)
            checksum += float((joined @ joined.T).mean().item())
            del inputs, embeddings, joined, ids, mask
    torch.cuda.synchronize()
    del model
    return {"rounds": rounds, "checksum": checksum, "streams": [s.cuda_stream for s in streams]}


def async_snapshot_train(torch):
    """A causal language model in plain torch (8 layers, 1,024 wide, 16 heads, 32k vocabulary: 160 M parameters),
    bf16 autocast, AdamW, 10 steps of (batch, tokens) from (4, 1,024) to (32, 128), with an asynchronous snapshot
    every 3 steps as a checkpointer would take it: on a side stream, every parameter and both Adam moments copied
    into fresh GPU buffers, which are kept (as if waiting for the host copy) until the next snapshot replaces them.
    Recorded in the thirty-fourth session, unseen by the policy."""
    torch.manual_seed(0)
    vocab = 32000
    model = decoder_lm(torch, 1024, 8, 16, vocab)
    steps = [(4, 1024), (16, 256), (32, 128), (8, 512), (2, 2048), (16, 384), (8, 768), (32, 128), (4, 1024),
             (24, 192)]
    start_recording(torch)
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses, snapshot = [], None
    for index, (batch, tokens) in enumerate(steps):
        ids = torch.randint(0, vocab, (batch, tokens + 1), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del ids, loss
        if index % 3 == 2:
            side.wait_stream(main)
            with torch.cuda.stream(side):
                tensors = [p.detach() for p in model.parameters()]
                tensors += [v for state in opt.state.values() for v in state.values() if v.is_cuda and v.dim() > 0]
                fresh = [t.clone() for t in tensors]
                del tensors
            snapshot = fresh  # the previous snapshot's buffers are freed here
            del fresh
            main.wait_stream(side)
    torch.cuda.synchronize()
    del model, opt, snapshot
    return {"steps": steps, "losses": losses, "streams": {"side": side.cuda_stream}}


def side_eval_train(torch):
    """torchvision ResNet-34 training on 100 classes, SGD with momentum, fp16 autocast with GradScaler,
    channels-last, 12 steps of 32 to 192 images of 160 pixels, and after every third step an evaluation pass of 64
    to 256 held-out images on a side stream (inference mode, the accuracy read back on the default stream).
    Recorded in the thirty-fourth session, unseen by the policy."""
    import torchvision

    F = torch.nn.functional
    torch.manual_seed(0)
    model = torchvision.models.resnet34(num_classes=100)
    steps = [64, 128, 32, 192, 96, 160, 48, 128, 192, 64, 112, 176]
    evals = [128, 256, 64, 192]
    start_recording(torch)
    model = model.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(0)
    losses, accuracies = [], []
    for index, batch in enumerate(steps):
        model.train()
        images = torch.randn(batch, 3, 160, 160, device="cuda", generator=gen).contiguous(
            memory_format=torch.channels_last)
        labels = torch.randint(0, 100, (batch,), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, labels, loss
        if index % 3 == 2:
            model.eval()
            count = evals[index // 3]
            side.wait_stream(main)
            with torch.cuda.stream(side), torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
                images = torch.randn(count, 3, 160, 160, device="cuda", generator=gen).contiguous(
                    memory_format=torch.channels_last)
                labels = torch.randint(0, 100, (count,), device="cuda", generator=gen)
                correct = (model(images).argmax(1) == labels).sum()
                del images, labels
            main.wait_stream(side)
            correct.record_stream(main)
            accuracies.append(int(correct.item()) / count)
            del correct
    torch.cuda.synchronize()
    del model, opt, scaler
    return {"steps": steps, "losses": losses, "accuracies": accuracies, "streams": {"side": side.cuda_stream}}


def sample_on_two_streams(torch, models, rounds, vocab_size, low):
    """Records from before the two `models` (built on the CPU by the caller, passed as their only references so that
    they are freed here) move to the GPU in fp16, then serves them in turn on two streams of their own: per round, a
    request (batch, prompt, new tokens) to each, `generate` with top-k sampling (50) on random prompts of ids in
    [low, vocab_size), each stream waiting for the default stream before its request and the default stream for it
    after (`wait_stream`). Returns the rounds, the output shapes, a checksum of the tokens and the streams."""
    start_recording(torch)
    models = [model.to("cuda", torch.float16) for model in models]
    main = torch.cuda.current_stream()
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    gen = torch.Generator(device="cuda").manual_seed(0)
    shapes, token_sum = [], 0
    with torch.inference_mode():
        for index, pair in enumerate(rounds):
            for model, stream, (batch, prompt, new) in zip(models, streams, pair):
                torch.manual_seed(index)
                stream.wait_stream(main)
                with torch.cuda.stream(stream):
                    ids = torch.randint(low, vocab_size, (batch, prompt), device="cuda", generator=gen)
                    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                         min_new_tokens=new, do_sample=True, top_k=50, pad_token_id=0)
                    shapes.append(list(out.shape))
                    token_sum += int(out.sum().item())
                    del ids, out
                main.wait_stream(stream)
    torch.cuda.synchronize()
    del models
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum,
            "streams": [s.cuda_stream for s in streams]}


def two_stream_sample_generate(torch):
    """Two small GPT-2-style decoders (`GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=512, n_head=8))`) serving in
    turn on two streams of their own, fp16, `generate` with top-k sampling: 4 rounds, each a request to the first
    model on its stream and one to the second on the other, (batch, prompt, new tokens) from (2, 192, 40) to
    (16, 48, 24). Recorded in the thirty-fourth session, unseen by the policy."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=6, n_embd=512, n_head=8)
    rounds = [((4, 128, 32), (2, 192, 40)), ((16, 48, 24), (8, 96, 32)), ((2, 256, 40), (12, 64, 24)),
              ((8, 160, 32), (16, 32, 28))]
    return sample_on_two_streams(torch, [GPT2LMHeadModel(config).eval(), GPT2LMHeadModel(config).eval()], rounds,
                                 config.vocab_size, low=0)


def prefetched_steps(torch, opt, count, load, loss_of):
    """The training steps of an input pipeline one batch ahead on a copy stream: `load(i)` starts batch i there and
    gives its images, labels and the copy stream's event. Each of the `count` steps waits for its batch on the default
    stream (marking the tensors used there, `record_stream`), starts loading the next, and runs the batch's loss
    (`loss_of(images, labels)`) under bf16 autocast, backward, an `opt` step and zeroed gradients. Returns the losses
    and the last batch loaded (still referenced, as the callers free it after their model and optimizer)."""
    main = torch.cuda.current_stream()
    losses, pending = [], load(0)
    for i in range(count):
        images, labels, ready = pending
        main.wait_event(ready)
        images.record_stream(main)
        labels.record_stream(main)
        if i + 1 < count:
            pending = load(i + 1)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_of(images, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        del images, labels, ready, loss
    return losses, pending


def prefetch_augment_train(torch):
    """torchvision ResNet-18 training on 10 classes at 96 pixels with the input pipeline on a copy stream one batch
    ahead: uint8 batches from pinned host memory copied, random-cropped, flipped and normalised there, handed to the
    default stream (events and `record_stream`); SGD with momentum, bf16 autocast, channels-last, 14 steps of 64 to
    512 images. Recorded in the thirty-fourth session, unseen by the policy."""
    import torchvision

    F = torch.nn.functional
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    batches = [128, 64, 256, 512, 96, 384, 192, 64, 448, 320, 128, 256, 512, 160]
    host = [torch.randint(0, 256, (b, 3, 112, 112), dtype=torch.uint8).pin_memory() for b in batches]
    start_recording(torch)
    model = model.cuda().to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    copy_stream = torch.cuda.Stream()
    mean = torch.tensor([0.49, 0.48, 0.45], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.25, 0.24, 0.26], device="cuda").view(1, 3, 1, 1) * 255
    gen = torch.Generator(device="cuda").manual_seed(0)
    torch.cuda.synchronize()  # the copy stream uses them

    def load(i):
        with torch.cuda.stream(copy_stream):
            raw = host[i].to("cuda", non_blocking=True)
            top, left = (int(v) for v in torch.randint(0, 17, (2,), device="cuda", generator=gen).tolist())
            crop = raw[:, :, top:top + 96, left:left + 96].float()
            crop = torch.where(torch.rand(crop.shape[0], 1, 1, 1, device="cuda", generator=gen) < 0.5,
                               crop.flip(3), crop)
            images = ((crop - mean) / std).contiguous(memory_format=torch.channels_last)
            labels = torch.randint(0, 10, (crop.shape[0],), device="cuda", generator=gen)
            del raw, crop
        return images, labels, copy_stream.record_event()

    losses, pending = prefetched_steps(torch, opt, len(batches), load,
                                       lambda images, labels: F.cross_entropy(model(images), labels))
    torch.cuda.synchronize()
    del model, opt, pending
    return {"batches": batches, "losses": losses, "streams": {"copy": copy_stream.cuda_stream}}


def small_cnn_cifar_train(torch):
    """A small CNN in plain torch (three blocks of two 3 x 3 convolutions, 32 / 64 / 128 channels, batch norm, max
    pooling, a 10-way head) on 32-pixel images, fp32, Adam, 16 steps of 64 to 512 images. Recorded in the
    thirty-fourth session as a small heap, unseen by the policy."""
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))

    torch.manual_seed(0)
    model = nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.Flatten(), nn.Linear(128 * 16, 10))
    steps = [128, 64, 256, 512, 96, 384, 192, 64, 448, 320, 128, 256, 512, 160, 224, 288]

    losses = train_steps(torch, model, lambda params: torch.optim.Adam(params, lr=1e-3), steps,
                         noise_images(torch, 32, 10))
    return {"steps": steps, "losses": losses}


def distilbert_tiny_sentiment_infer(torch):
    """Sentence classification with a tiny DistilBERT-style encoder through transformers
    (`DistilBertForSequenceClassification(DistilBertConfig(...))`: 4 layers, 256 wide, 4 heads, 30k vocabulary, 2
    labels), fp16, 12 batches of (sentences, tokens) from (256, 32) to (8, 512), padded on the right. Recorded in the
    thirty-fourth session as a small heap, unseen by the policy."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    torch.manual_seed(0)
    config = DistilBertConfig(dim=256, n_layers=4, n_heads=4, hidden_dim=1024, num_labels=2)
    batches = [(64, 128), (256, 32), (8, 512), (32, 256), (128, 64), (16, 384), (96, 96), (4, 512), (48, 160),
               (192, 48), (24, 320), (160, 40)]
    positive = classify_padded(
        torch, DistilBertForSequenceClassification(config).eval(), config.vocab_size, batches,
        forward=lambda model, ids, mask: model(input_ids=ids * mask, attention_mask=mask).logits,
        count=lambda logits, mask: int(logits.argmax(-1).sum().item()))
    return {"batches": batches, "positive": positive}


def gru_char_sample_generate(torch):
    """Character-level text sampling with a GRU in plain torch (a 256-symbol embedding of 128, two layers of 512, a
    256-way head), fp32, a symbol at a time with temperature sampling: 4 rounds of (streams, symbols) from (8, 400)
    to (64, 120), each from a random 32-symbol prompt. Recorded in the thirty-fourth session as a small heap, unseen
    by the policy."""
    nn = torch.nn
    torch.manual_seed(0)
    embed, gru, head = nn.Embedding(256, 128), nn.GRU(128, 512, num_layers=2, batch_first=True), nn.Linear(512, 256)
    rounds = [(8, 400), (64, 120), (32, 200), (16, 300)]
    start_recording(torch)
    embed, gru, head = embed.cuda(), gru.cuda(), head.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0
    with torch.inference_mode():
        for streams, symbols in rounds:
            prompt = torch.randint(0, 256, (streams, 32), device="cuda", generator=gen)
            out, state = gru(embed(prompt))
            token = torch.multinomial((head(out[:, -1]) / 0.8).softmax(-1), 1, generator=gen)
            text = [token]
            for _ in range(symbols - 1):
                out, state = gru(embed(token), state)
                token = torch.multinomial((head(out[:, -1]) / 0.8).softmax(-1), 1, generator=gen)
                text.append(token)
            checksum += int(torch.cat(text, 1).sum().item())
            del prompt, out, state, token, text
    del embed, gru, head
    return {"rounds": rounds, "checksum": checksum}


def t5_tiny_greedy_summarize(torch):
    """A tiny T5-style encoder-decoder through transformers (`T5ForConditionalGeneration(T5Config(...))`: 4 + 4
    layers, 256 wide, 4 heads, feed-forward 1,024, 32k vocabulary), bf16, greedy `generate` of summaries: 4 rounds
    (batch, input length, new tokens) from (4, 512, 48) to (32, 96, 24), inputs with random padding. Recorded in the
    thirty-fourth session as a small heap, unseen by the policy."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, d_model=256, d_kv=64, d_ff=1024, num_layers=4, num_decoder_layers=4,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    rounds = [(8, 256, 40), (4, 512, 48), (32, 96, 24), (16, 192, 32)]  # batch, input length, new tokens
    return generate_padded_rounds(torch, T5ForConditionalGeneration(config).eval(), rounds, config.vocab_size)


def vit_tiny_half_infer(torch):
    """A ViT-Tiny-sized vision transformer (torchvision `VisionTransformer`: 12 layers, 192 wide, 3 heads, patches of
    16 on 224-pixel images, 1,000 classes) in fp16, inference at batches of 1 to 64 (10 shapes, each twice).
    Recorded in the thirty-fourth session as a small heap, unseen by the policy."""
    from torchvision.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    model = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3, hidden_dim=192,
                              mlp_dim=768).eval()
    checksum = 0
    start_recording(torch)
    model = model.to("cuda", torch.float16)
    gen = torch.Generator(device="cuda").manual_seed(0)
    batches = [8, 1, 32, 64, 4, 16, 48, 2, 24, 40]
    with torch.inference_mode():
        for batch in batches + batches:
            images = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen, dtype=torch.float16)
            checksum += int(model(images).argmax(-1).sum().item())
            del images
    del model
    return {"batches": batches, "checksum": checksum}


def keyword_lstm_train(torch):
    """Keyword spotting on filterbank features in plain torch: 40 features a frame through two LSTM layers of 256
    and a 12-way head on the last frame, fp32, Adam, 14 steps of (clips, frames) from (256, 50) to (32, 400).
    Recorded in the thirty-fourth session as a small heap, unseen by the policy."""
    nn = torch.nn

    class Spotter(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.head = nn.LSTM(40, 256, num_layers=2, batch_first=True), nn.Linear(256, 12)

        def forward(self, x):
            return self.head(self.lstm(x)[0][:, -1])

    torch.manual_seed(0)
    model = Spotter()
    steps = [(64, 100), (256, 50), (32, 400), (128, 100), (16, 300), (192, 75), (48, 200), (96, 150), (256, 60),
             (24, 350), (160, 80), (64, 250), (128, 120), (40, 300)]

    def make_batch(step, gen):
        clips, frames = step
        x = torch.randn(clips, frames, 40, device="cuda", generator=gen)
        return x, torch.randint(0, 12, (clips,), device="cuda", generator=gen)

    losses = train_steps(torch, model, lambda params: torch.optim.Adam(params, lr=1e-3), steps, make_batch)
    return {"steps": steps, "losses": losses}


def gptj_small_sample_generate(torch):
    """A small GPT-J-style decoder through transformers (`GPTJForCausalLM(GPTJConfig(...))`: 8 layers 768 wide, 12
    heads with rotary embeddings on 32 dimensions, parallel attention and MLP, 50k vocabulary), fp16, `generate`
    sampling the 50 likeliest tokens for 4 rounds (batch, prompt, new tokens) from (1, 512, 64) to (16, 48, 32).
    Recorded in the thirty-fifth session to judge a 4.5 % slack, unseen by the policy."""
    from transformers import GPTJConfig, GPTJForCausalLM

    torch.manual_seed(0)
    config = GPTJConfig(vocab_size=50400, n_positions=2048, n_embd=768, n_layer=8, n_head=12, rotary_dim=32)
    rounds = [(4, 128, 48), (16, 48, 32), (1, 512, 64), (8, 96, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, GPTJForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=0)


def stablelm_small_greedy_generate(torch):
    """A small StableLM-style decoder through transformers (`StableLmForCausalLM(StableLmConfig(...))`: 8 layers 640
    wide, 10 heads, partial rotary embeddings, SwiGLU of 1,792, 50k vocabulary), fp16, greedy `generate` for 4 rounds
    (batch, prompt, new tokens) from (2, 384, 56) to (24, 32, 24). Recorded in the thirty-fifth session to judge a
    4.5 % slack, unseen by the policy."""
    from transformers import StableLmConfig, StableLmForCausalLM

    torch.manual_seed(0)
    config = StableLmConfig(vocab_size=50304, hidden_size=640, intermediate_size=1792, num_hidden_layers=8,
                            num_attention_heads=10, num_key_value_heads=10, max_position_embeddings=2048)
    rounds = [(6, 160, 40), (24, 32, 24), (2, 384, 56), (12, 80, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, StableLmForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def codegen_small_beam_generate(torch):
    """A small CodeGen-style decoder through transformers (`CodeGenForCausalLM(CodeGenConfig(...))`: 6 layers 512
    wide, 8 heads with rotary embeddings on 32 dimensions, 51k vocabulary), fp16, beam search of 3 beams for 4 rounds
    (batch, prompt, new tokens) from (1, 256, 40) to (4, 64, 24). Recorded in the thirty-fifth session to judge a
    4.5 % slack, unseen by the policy."""
    from transformers import CodeGenConfig, CodeGenForCausalLM

    torch.manual_seed(0)
    config = CodeGenConfig(vocab_size=51200, n_positions=2048, n_embd=512, n_layer=6, n_head=8, rotary_dim=32)
    rounds = [(2, 128, 32), (4, 64, 24), (1, 256, 40), (3, 96, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, CodeGenForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           num_beams=3, do_sample=False, pad_token_id=0)


def mbart_small_sample_translate(torch):
    """A small mBART-style encoder-decoder through transformers (`MBartForConditionalGeneration(MBartConfig(...))`: 4
    + 4 layers 384 wide, 6 heads, feed-forward 1,536, 32k vocabulary), bf16, `generate` sampling with nucleus 0.9 for
    4 rounds (batch, input length, new tokens) from (4, 320, 56) to (32, 48, 24), inputs with random padding.
    Recorded in the thirty-fifth session to judge a 4.5 % slack, unseen by the policy."""
    from transformers import MBartConfig, MBartForConditionalGeneration

    torch.manual_seed(0)
    config = MBartConfig(vocab_size=32000, d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                         decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
                         max_position_embeddings=1024, pad_token_id=0, bos_token_id=2, eos_token_id=1,
                         decoder_start_token_id=2, forced_eos_token_id=None)
    rounds = [(8, 128, 40), (32, 48, 24), (4, 320, 56), (16, 96, 32)]  # batch, input length, new tokens
    return generate_padded_rounds(torch, MBartForConditionalGeneration(config).eval(), rounds, config.vocab_size,
                                  do_sample=True, top_p=0.9)


def pegasus_small_greedy_summarize(torch):
    """A small Pegasus-style encoder-decoder through transformers
    (`PegasusForConditionalGeneration(PegasusConfig(...))`: 4 + 4 layers 512 wide, 8 heads, feed-forward 2,048, 32k
    vocabulary), bf16, greedy `generate` of summaries for 4 rounds (batch, input length, new tokens) from (2, 768,
    64) to (32, 96, 24), inputs with random padding. Recorded in the thirty-fifth session to judge a 4.5 % slack,
    unseen by the policy."""
    from transformers import PegasusConfig, PegasusForConditionalGeneration

    torch.manual_seed(0)
    config = PegasusConfig(vocab_size=32000, d_model=512, encoder_layers=4, decoder_layers=4,
                           encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                           decoder_ffn_dim=2048, max_position_embeddings=1024, pad_token_id=0, eos_token_id=1,
                           decoder_start_token_id=0)
    rounds = [(4, 512, 48), (16, 192, 32), (2, 768, 64), (32, 96, 24)]  # batch, input length, new tokens
    return generate_padded_rounds(torch, PegasusForConditionalGeneration(config).eval(), rounds, config.vocab_size)


def deberta_small_classify_infer(torch):
    """Sentence-pair classification with a small DeBERTa-v2-style encoder through transformers
    (`DebertaV2ForSequenceClassification(DebertaV2Config(...))`: 6 layers 384 wide, 6 heads, disentangled relative
    attention over 256 positions, 64k vocabulary, two segments, 3 labels), fp16, 12 batches of (pairs, tokens) from
    (256, 32) to (8, 512), padded on the right, the second sentence from the middle of each row. Recorded in the
    thirty-fifth session to judge a 4.5 % slack, unseen by the policy."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    config = DebertaV2Config(vocab_size=64000, hidden_size=384, num_hidden_layers=6, num_attention_heads=6,
                             intermediate_size=1536, relative_attention=True, position_buckets=256,
                             pos_att_type=["p2c", "c2p"], max_relative_positions=-1, position_biased_input=False,
                             type_vocab_size=2, num_labels=3)
    batches = [(32, 256), (256, 32), (8, 512), (128, 64), (64, 128), (16, 384), (96, 96), (4, 512), (48, 160),
               (192, 48), (24, 320), (160, 40)]

    def forward(model, ids, mask):
        # The second sentence of each pair from the middle of the row on (segment 1 where not padding).
        second = (torch.arange(ids.shape[1], device="cuda")[None] >= ids.shape[1] // 2).long() * mask
        return model(input_ids=ids * mask, attention_mask=mask, token_type_ids=second).logits

    labelled = classify_padded(torch, DebertaV2ForSequenceClassification(config).eval(), config.vocab_size, batches,
                               forward=forward, count=rows_labelled(2))
    return {"batches": batches, "labelled": labelled}


def swin_v2_tiny_half_infer(torch):
    """torchvision Swin-V2-T (28 M parameters, windows of 8 on 256-pixel images, 1,000 classes) in fp16, inference
    at batches of 1 to 48 (8 shapes, each twice). Recorded in the thirty-fifth session to judge a 4.5 % slack,
    unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(batch, 256) for batch in (8, 1, 32, 16, 48, 4, 24, 2)]
    return classify_images_half(torch, lambda: torchvision.models.swin_v2_t().eval(), shapes)


def convnext_small_train_mid(torch):
    """torchvision ConvNeXt-S (50 M parameters) trained on 100 classes at 128 pixels, fp32, AdamW, 12 steps of 16 to
    96 images. Recorded in the thirty-fifth session to judge a 4.5 % slack, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.convnext_small(num_classes=100)
    steps = [32, 16, 64, 96, 48, 24, 80, 32, 64, 16, 96, 40]

    losses = train_steps(torch, model, lambda params: torch.optim.AdamW(params, lr=1e-4), steps,
                         noise_images(torch, 128, 100))
    return {"steps": steps, "losses": losses}


def starcoder2_small_sample_generate(torch):
    """A small StarCoder2-style decoder through transformers (`Starcoder2ForCausalLM(Starcoder2Config(...))`: 6
    layers 576 wide, 9 heads sharing 3 key-value heads, biased projections, 49k tied vocabulary), fp16, `generate`
    sampling the 40 likeliest tokens for 4 rounds (batch, prompt, new tokens) from (1, 640, 64) to (16, 40, 32).
    Recorded in the thirty-eighth session as a held-out batch, unseen by the policy."""
    from transformers import Starcoder2Config, Starcoder2ForCausalLM

    torch.manual_seed(0)
    config = Starcoder2Config(vocab_size=49152, hidden_size=576, intermediate_size=2304, num_hidden_layers=6,
                              num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                              bos_token_id=0, eos_token_id=0, pad_token_id=0)
    rounds = [(3, 192, 48), (16, 40, 32), (1, 640, 64), (8, 112, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Starcoder2ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=40, pad_token_id=0)


def olmo_small_greedy_generate(torch):
    """A small OLMo-style decoder through transformers (`OlmoForCausalLM(OlmoConfig(...))`: 8 layers 512 wide, 8
    heads, non-parametric layer norms, SwiGLU of 1,536, 50k vocabulary), fp16, greedy `generate` for 4 rounds
    (batch, prompt, new tokens) from (2, 448, 48) to (20, 48, 24). Recorded in the thirty-eighth session as a
    held-out batch, unseen by the policy."""
    from transformers import OlmoConfig, OlmoForCausalLM

    torch.manual_seed(0)
    config = OlmoConfig(vocab_size=50304, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                        num_attention_heads=8, max_position_embeddings=2048, pad_token_id=0, bos_token_id=0,
                        eos_token_id=0)
    rounds = [(10, 96, 32), (2, 448, 48), (20, 48, 24), (5, 224, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, OlmoForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def umt5_small_greedy_translate(torch):
    """A small UMT5-style encoder-decoder through transformers (`UMT5ForConditionalGeneration(UMT5Config(...))`: 4 +
    4 layers 384 wide, 6 heads of 64, gated-GELU feed-forward of 1,024, relative position buckets per layer, 32k
    vocabulary), bf16, greedy `generate` for 4 rounds (batch, input length, new tokens) from (3, 512, 56) to (24,
    64, 24), inputs with random padding. Recorded in the thirty-eighth session as a held-out batch, unseen by the
    policy."""
    from transformers import UMT5Config, UMT5ForConditionalGeneration

    torch.manual_seed(0)
    config = UMT5Config(vocab_size=32128, d_model=384, d_kv=64, d_ff=1024, num_layers=4, num_decoder_layers=4,
                        num_heads=6, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    rounds = [(6, 256, 40), (24, 64, 24), (3, 512, 56), (12, 128, 32)]  # batch, input length, new tokens
    return generate_padded_rounds(torch, UMT5ForConditionalGeneration(config).eval(), rounds, config.vocab_size)


def roformer_classify_infer(torch):
    """Sequence classification with a small RoFormer encoder through transformers
    (`RoFormerForSequenceClassification(RoFormerConfig(...))`: 6 layers 384 wide, 6 heads with rotary positions,
    1,536 feed-forward, 50k vocabulary, 4 labels), fp16, 12 batches of (sentences, tokens) from (256, 32) to (6,
    768), padded on the right. Recorded in the thirty-eighth session as a held-out batch, unseen by the policy."""
    from transformers import RoFormerConfig, RoFormerForSequenceClassification

    torch.manual_seed(0)
    config = RoFormerConfig(vocab_size=50000, hidden_size=384, num_hidden_layers=6, num_attention_heads=6,
                            intermediate_size=1536, max_position_embeddings=1024, pad_token_id=0, num_labels=4)
    batches = [(64, 128), (256, 32), (6, 768), (32, 256), (128, 64), (12, 512), (96, 96), (4, 768), (48, 192),
               (160, 48), (16, 384), (200, 40)]
    labelled = classify_padded(torch, RoFormerForSequenceClassification(config).eval(), config.vocab_size, batches,
                               forward=masked_logits, count=rows_labelled(3))
    return {"batches": batches, "labelled": labelled}


def maxvit_t_half_infer(torch):
    """torchvision MaxViT-T (31 M parameters: MBConv, block and grid attention over windows of 7, at 224 pixels) in
    fp16, inference at batches of 1 to 48 (8 batches, each twice). Recorded in the thirty-eighth session as a
    held-out batch, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(batch, 224) for batch in (12, 1, 48, 6, 32, 2, 24, 8)]
    return classify_images_half(torch, lambda: torchvision.models.maxvit_t().eval(), shapes)


def resnext50_train_small(torch):
    """torchvision ResNeXt-50 32x4d (23 M parameters) trained on 100 classes at 112 pixels, fp32, SGD with momentum,
    12 steps of 16 to 96 images. Recorded in the thirty-eighth session as a held-out batch, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnext50_32x4d(num_classes=100)
    steps = [24, 64, 16, 48, 96, 32, 80, 40, 56, 16, 72, 32]

    losses = train_steps(torch, model, lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9), steps,
                         noise_images(torch, 112, 100))
    return {"steps": steps, "losses": losses}


def fcn_segment_half_infer(torch):
    """torchvision FCN-ResNet50 semantic segmentation inference (21 classes, no pretrained weights, no auxiliary
    head), fp16, batches of 1 to 16 images of 192 to 640 pixels (8 shapes, each twice). Recorded in the
    thirty-eighth session as a held-out batch, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(4, 320), (1, 640), (8, 256), (2, 448), (16, 192), (1, 512), (6, 288), (3, 384)]
    model = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)
    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().half().eval(),
                            lambda out: float(out["out"].float().argmax(1).float().mean().item()))
    return {"shapes": shapes, "checksum": checksum}


def densenet121_train_small(torch):
    """torchvision DenseNet-121 (7 M parameters, every layer's input the concatenation of all before it in its
    block) trained on 50 classes at 96 pixels, fp32, Adam, 10 steps of 16 to 80 images. Recorded in the
    thirty-eighth session as a held-out batch, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.densenet121(num_classes=50)
    steps = [16, 48, 32, 64, 24, 80, 40, 16, 56, 32]

    losses = train_steps(torch, model, lambda params: torch.optim.Adam(params, lr=1e-3), steps,
                         noise_images(torch, 96, 50))
    return {"steps": steps, "losses": losses}


def gemma2_small_sample_generate(torch):
    """A small Gemma-2-style decoder through transformers (`Gemma2ForCausalLM(Gemma2Config(...))`: 6 layers 512 wide, 8
    heads of 64 sharing 4 key-value heads, every other layer attending over a sliding window of 128, logit soft-capping,
    32k vocabulary), fp16, `generate` sampling with nucleus 0.9 for 4 rounds (batch, prompt, new tokens) from (2, 400,
    56) to (12, 64, 32). Recorded in the thirty-eighth session in a third held-out batch, unseen by the policy."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                          num_attention_heads=8, num_key_value_heads=4, head_dim=64, sliding_window=128,
                          max_position_embeddings=2048, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    rounds = [(4, 160, 48), (12, 64, 32), (2, 400, 56), (8, 96, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Gemma2ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.9, pad_token_id=0)


def qwen3_small_greedy_generate(torch):
    """A small Qwen3-style decoder through transformers (`Qwen3ForCausalLM(Qwen3Config(...))`: 8 layers 512 wide, 8
    heads of 64 sharing 4 key-value heads, query and key norms, SwiGLU of 1,408, 32k vocabulary), fp16, greedy
    `generate` for 4 rounds (batch, prompt, new tokens) from (1, 512, 64) to (16, 48, 24). Recorded in the thirty-eighth
    session in a third held-out batch, unseen by the policy."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
                         num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=2048,
                         pad_token_id=0, bos_token_id=0, eos_token_id=0)
    rounds = [(6, 128, 40), (1, 512, 64), (16, 48, 24), (4, 256, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, Qwen3ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def xglm_small_beam_generate(torch):
    """A small XGLM-style decoder through transformers (`XGLMForCausalLM(XGLMConfig(...))`: 6 layers 512 wide, 8 heads,
    sinusoidal positions, feed-forward 2,048, 32k vocabulary), fp16, beam search of 2 beams for 4 rounds (batch, prompt,
    new tokens) from (1, 384, 48) to (6, 64, 32). Recorded in the thirty-eighth session in a third held-out batch,
    unseen by the policy."""
    from transformers import XGLMConfig, XGLMForCausalLM

    torch.manual_seed(0)
    config = XGLMConfig(vocab_size=32000, d_model=512, decoder_layers=6, decoder_attention_heads=8,
                        decoder_ffn_dim=2048, max_position_embeddings=2048)
    rounds = [(2, 192, 40), (6, 64, 32), (1, 384, 48), (4, 128, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, XGLMForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           num_beams=2, do_sample=False, pad_token_id=1)


def funnel_classify_infer(torch):
    """Sequence classification with a small Funnel Transformer through transformers
    (`FunnelForSequenceClassification(FunnelConfig(...))`: three blocks of 2 layers 512 wide, the sequence pooled to
    half its length between blocks, relative attention, 30k vocabulary, 3 labels), fp16, 12 batches of (sentences,
    tokens) from (240, 40) to (4, 512), padded on the right. Recorded in the thirty-eighth session in a third held-out
    batch, unseen by the policy."""
    from transformers import FunnelConfig, FunnelForSequenceClassification

    torch.manual_seed(0)
    config = FunnelConfig(vocab_size=30522, block_sizes=[2, 2, 2], d_model=512, n_head=8, d_head=64, d_inner=2048,
                          num_labels=3)
    batches = [(64, 128), (200, 32), (8, 512), (32, 256), (128, 64), (16, 384), (96, 96), (4, 512), (48, 160),
               (160, 48), (24, 320), (240, 40)]
    labelled = classify_padded(torch, FunnelForSequenceClassification(config).eval(), config.vocab_size, batches,
                               forward=masked_logits, count=rows_labelled(2))
    return {"batches": batches, "labelled": labelled}


def wide_resnet50_train_small(torch):
    """torchvision Wide ResNet-50-2 (67 M parameters) trained on 100 classes at 96 pixels, fp32, SGD with momentum, 10
    steps of 16 to 80 images. Recorded in the thirty-eighth session in a third held-out batch, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.wide_resnet50_2(num_classes=100)
    steps = [16, 48, 32, 64, 24, 80, 40, 56, 16, 72]

    losses = train_steps(torch, model, lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9), steps,
                         noise_images(torch, 96, 100))
    return {"steps": steps, "losses": losses}


def vit_l16_half_infer_small(torch):
    """torchvision ViT-L/16 (304 M parameters, 196 patches at 224 pixels) in fp16, inference at batches of 1 to 32 (8
    batches, each twice): weights of 0.6 GB beside activations of a few hundred MiB. Recorded in the thirty-eighth
    session in a third held-out batch, unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(batch, 224) for batch in (8, 1, 32, 4, 16, 2, 24, 12)]
    return classify_images_half(torch, lambda: torchvision.models.vit_l_16().eval(), shapes)


def alexnet_half_infer_bigbatch(torch):
    """torchvision AlexNet (61 M parameters, most in its fully connected layers) in fp16, inference at batches of 8 to
    256 images of 224 pixels (8 batches, each twice). Recorded in the thirty-eighth session in a third held-out batch,
    unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(batch, 224) for batch in (64, 256, 16, 128, 32, 192, 8, 96)]
    return classify_images_half(torch, lambda: torchvision.models.alexnet().eval(), shapes)


def ssdlite_detect_infer(torch):
    """torchvision SSDlite320 with a MobileNetV3-Large backbone (91 classes, no pretrained weights), fp32 inference on
    batches of 1 to 16 images of 256 to 512 pixels (resized to 320 inside; 6 shapes, each twice), with its box decoding
    and per-class non-maximum suppression. Recorded in the thirty-eighth session in a third held-out batch, unseen by
    the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(4, 384), (1, 512), (8, 320), (2, 448), (16, 256), (6, 352)]
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
    checksum = infer_images(torch, model, shapes, lambda m: m.cuda().eval(),
                            lambda out: sum(len(found["boxes"]) for found in out), image_dtype=torch.float32)
    return {"shapes": shapes, "checksum": checksum}


def qwen3_small_train_bf16(torch):
    """A small Qwen3-style decoder through transformers (`Qwen3ForCausalLM(Qwen3Config(...))`: 6 layers 512 wide, 8
    heads of 64 sharing 4 key-value heads, 32k vocabulary) trained with bf16 autocast and AdamW
    (`train_causal_lm_bf16`), 10 steps of (batch, tokens) from (16, 48) to (1, 1024), the labels the inputs. Recorded in
    the thirty-eighth session in a fourth held-out batch (training), unseen by the policy."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=2048)
    steps = [(4, 256), (8, 128), (2, 512), (1, 1024), (6, 192), (3, 384), (12, 64), (2, 768), (16, 48),
             (4, 320)]  # batch, tokens
    return train_causal_lm_bf16(torch, lambda: Qwen3ForCausalLM(config), steps, config.vocab_size, low=3)


def gemma2_small_train_bf16(torch):
    """A small Gemma-2-style decoder through transformers (`Gemma2ForCausalLM(Gemma2Config(...))`: 4 layers 512 wide, 8
    heads of 64 sharing 4 key-value heads, a sliding window of 256 on every other layer, logit soft-capping, 32k
    vocabulary) trained with bf16 autocast and AdamW (`train_causal_lm_bf16`), 10 steps of (batch, tokens) from (16, 48)
    to (1, 1024), the labels the inputs. Recorded in the thirty-eighth session in a fourth held-out batch (training),
    unseen by the policy."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=4, head_dim=64, sliding_window=256,
                          max_position_embeddings=2048)
    steps = [(4, 256), (8, 128), (2, 512), (1, 1024), (6, 192), (3, 384), (12, 64), (2, 768), (16, 48),
             (4, 320)]  # batch, tokens
    return train_causal_lm_bf16(torch, lambda: Gemma2ForCausalLM(config), steps, config.vocab_size, low=3)


def starcoder2_small_train_bf16(torch):
    """A small StarCoder2-style decoder through transformers (`Starcoder2ForCausalLM(Starcoder2Config(...))`: 6 layers
    576 wide, 9 heads sharing 3 key-value heads, biased projections, 49k tied vocabulary) trained with bf16 autocast and
    AdamW (`train_causal_lm_bf16`), 10 steps of (batch, tokens) from (16, 48) to (1, 1024), the labels the inputs.
    Recorded in the thirty-eighth session in a fourth held-out batch (training), unseen by the policy."""
    from transformers import Starcoder2Config, Starcoder2ForCausalLM

    torch.manual_seed(0)
    config = Starcoder2Config(vocab_size=49152, hidden_size=576, intermediate_size=2304, num_hidden_layers=6,
                              num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048)
    steps = [(4, 256), (8, 128), (2, 512), (1, 1024), (6, 192), (3, 384), (12, 64), (2, 768), (16, 48),
             (4, 320)]  # batch, tokens
    return train_causal_lm_bf16(torch, lambda: Starcoder2ForCausalLM(config), steps, config.vocab_size, low=3)


def olmo_small_train_bf16(torch):
    """A small OLMo-style decoder through transformers (`OlmoForCausalLM(OlmoConfig(...))`: 6 layers 512 wide, 8 heads,
    non-parametric layer norms, SwiGLU of 1,536, 50k vocabulary) trained with bf16 autocast and AdamW
    (`train_causal_lm_bf16`), 10 steps of (batch, tokens) from (16, 48) to (1, 1024), the labels the inputs. Recorded in
    the thirty-eighth session in a fourth held-out batch (training), unseen by the policy."""
    from transformers import OlmoConfig, OlmoForCausalLM

    torch.manual_seed(0)
    config = OlmoConfig(vocab_size=50304, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                        num_attention_heads=8, max_position_embeddings=2048)
    steps = [(4, 256), (8, 128), (2, 512), (1, 1024), (6, 192), (3, 384), (12, 64), (2, 768), (16, 48),
             (4, 320)]  # batch, tokens
    return train_causal_lm_bf16(torch, lambda: OlmoForCausalLM(config), steps, config.vocab_size, low=3)


def efficientnet_b2_train_amp(torch):
    """torchvision EfficientNet-B2 (8 M parameters) trained on 100 classes with fp16 autocast and a GradScaler
    (`train_classifier`), SGD with momentum, 10 steps of 16 to 64 images of 192 to 288 pixels. Recorded in the
    thirty-eighth session in a fourth held-out batch (training), unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(32, 3, 224, 224), (16, 3, 288, 288), (64, 3, 192, 192), (24, 3, 256, 256), (48, 3, 224, 224),
              (16, 3, 288, 288), (40, 3, 192, 192), (32, 3, 256, 256), (56, 3, 224, 224), (20, 3, 288, 288)]
    losses = train_classifier(torch, torchvision.models.efficientnet_b2(num_classes=100), shapes,
                              lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9), classes=100)
    return {"shapes": shapes, "losses": losses}


def mobilenet_v2_train_amp(torch):
    """torchvision MobileNetV2 (2.3 M parameters) trained on 100 classes with fp16 autocast and a GradScaler
    (`train_classifier`), channels-last, AdamW, 12 steps of 32 to 128 images of 160 to 224 pixels. Recorded in the
    thirty-eighth session in a fourth held-out batch (training), unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(64, 3, 224, 224), (128, 3, 160, 160), (32, 3, 224, 224), (96, 3, 192, 192), (48, 3, 224, 224),
              (128, 3, 160, 160), (80, 3, 192, 192), (32, 3, 224, 224), (112, 3, 176, 176), (64, 3, 208, 208),
              (40, 3, 224, 224), (96, 3, 160, 160)]
    losses = train_classifier(torch, torchvision.models.mobilenet_v2(num_classes=100), shapes,
                              lambda params: torch.optim.AdamW(params, lr=1e-3), classes=100, channels_last=True)
    return {"shapes": shapes, "losses": losses}


def vgg16_bn_train_amp_small(torch):
    """torchvision VGG-16 with batch norm (134 M parameters, most in its fully connected layers) trained on 10 classes
    with fp16 autocast and a GradScaler (`train_classifier`), SGD with momentum, 8 steps of 8 to 48 images of 128 to 224
    pixels: fp32 weights, gradients and momentum of 0.5 GB each beside the activations. Recorded in the thirty-eighth
    session in a fourth held-out batch (training), unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(16, 3, 224, 224), (48, 3, 128, 128), (8, 3, 224, 224), (32, 3, 160, 160), (24, 3, 192, 192),
              (48, 3, 128, 128), (12, 3, 224, 224), (32, 3, 176, 176)]
    losses = train_classifier(torch, torchvision.models.vgg16_bn(num_classes=10), shapes,
                              lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9), classes=10)
    return {"shapes": shapes, "losses": losses}


def mnasnet_train_bf16_small(torch):
    """torchvision MNASNet 1.0 (3.2 M parameters) trained on 100 classes with bf16 autocast (`train_classifier`),
    RMSprop, 12 steps of 16 to 96 images of 128 to 224 pixels. Recorded in the thirty-eighth session in a fourth
    held-out batch (training), unseen by the policy."""
    import torchvision

    torch.manual_seed(0)
    shapes = [(32, 3, 224, 224), (96, 3, 128, 128), (16, 3, 224, 224), (64, 3, 160, 160), (48, 3, 192, 192),
              (96, 3, 128, 128), (24, 3, 224, 224), (80, 3, 144, 144), (40, 3, 208, 208), (16, 3, 224, 224),
              (72, 3, 160, 160), (56, 3, 176, 176)]
    losses = train_classifier(torch, torchvision.models.mnasnet1_0(num_classes=100), shapes,
                              lambda params: torch.optim.RMSprop(params, lr=1e-3, momentum=0.9), classes=100,
                              autocast_dtype=torch.bfloat16)
    return {"shapes": shapes, "losses": losses}


def granite_small_sample_generate(torch):
    """A small Granite-style decoder through transformers (`GraniteForCausalLM(GraniteConfig(...))`: 6 layers 512 wide,
    8 heads sharing 4 key-value heads, SwiGLU of 1,536, 49k vocabulary), fp16, `generate` sampling the 50 likeliest
    tokens for 4 rounds (batch, prompt, new tokens) from (2, 480, 56) to (16, 56, 32). Written in the fortieth
    session, before it was recorded, in a held-out batch that judges `spare_until_allocations`."""
    from transformers import GraniteConfig, GraniteForCausalLM

    torch.manual_seed(0)
    config = GraniteConfig(vocab_size=49155, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                           num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
                           pad_token_id=0, bos_token_id=0, eos_token_id=0)
    rounds = [(6, 176, 40), (16, 56, 32), (2, 480, 56), (10, 112, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, GraniteForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=0)


def olmo2_small_greedy_generate(torch):
    """A small OLMo-2-style decoder through transformers (`Olmo2ForCausalLM(Olmo2Config(...))`: 8 layers 448 wide, 7
    heads of 64, RMS norms after attention and feed-forward and on queries and keys, SwiGLU of 1,280, 50k
    vocabulary), fp16, greedy `generate` for 4 rounds (batch, prompt, new tokens) from (3, 384, 48) to (24, 40, 24).
    Written in the fortieth session, before it was recorded, in a held-out batch that judges
    `spare_until_allocations`."""
    from transformers import Olmo2Config, Olmo2ForCausalLM

    torch.manual_seed(0)
    config = Olmo2Config(vocab_size=50304, hidden_size=448, intermediate_size=1280, num_hidden_layers=8,
                         num_attention_heads=7, max_position_embeddings=2048, pad_token_id=0, bos_token_id=0,
                         eos_token_id=0)
    rounds = [(12, 80, 32), (3, 384, 48), (24, 40, 24), (6, 192, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Olmo2ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def cohere_small_sample_generate(torch):
    """A small Cohere-style decoder through transformers (`CohereForCausalLM(CohereConfig(...))`: 6 layers 512 wide,
    8 heads, attention and feed-forward in parallel off one layer norm, SwiGLU of 1,408, logits scaled by 1/16,
    32k vocabulary), fp16, `generate` sampling with nucleus 0.95 for 4 rounds (batch, prompt, new tokens) from (1,
    600, 64) to (20, 48, 28). Written in the fortieth session, before it was recorded, in a held-out batch that
    judges `spare_until_allocations`."""
    from transformers import CohereConfig, CohereForCausalLM

    torch.manual_seed(0)
    config = CohereConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                          num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048,
                          logit_scale=0.0625, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(8, 120, 40), (1, 600, 64), (20, 48, 28), (4, 256, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, CohereForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.95, pad_token_id=0)


def mpt_small_greedy_generate(torch):
    """A small MPT-style decoder through transformers (`MptForCausalLM(MptConfig(...))`: 6 layers 512 wide, 8 heads
    with ALiBi position biases instead of position embeddings, feed-forward of 2,048, 50k vocabulary), fp16, greedy
    `generate` for 4 rounds (batch, prompt, new tokens) from (2, 512, 48) to (16, 64, 32). Written in the fortieth
    session, before it was recorded, in a held-out batch that judges `spare_until_allocations`."""
    from transformers import MptConfig, MptForCausalLM

    torch.manual_seed(0)
    # MptConfig turns the KV cache off by default; `generate` keeps one here, as for the other decoders.
    config = MptConfig(d_model=512, n_heads=8, n_layers=6, expansion_ratio=4, vocab_size=50368, max_seq_len=2048,
                       use_cache=True, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    rounds = [(4, 224, 40), (16, 64, 32), (2, 512, 48), (8, 144, 36)]  # batch, prompt, new tokens
    return generate_rounds(torch, MptForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def nemotron_small_sample_generate(torch):
    """A small Nemotron-style decoder through transformers (`NemotronForCausalLM(NemotronConfig(...))`: 6 layers 512
    wide, 8 heads of 64 sharing 4 key-value heads, rotary positions on half of each head, squared-ReLU feed-forward
    of 1,536, layer norms with a zero-centred scale, 32k vocabulary), fp16, `generate` sampling the 40 likeliest
    tokens at temperature 0.8 for 4 rounds (batch, prompt, new tokens) from (2, 448, 60) to (18, 48, 30). Written in
    the fortieth session, before it was recorded, in a held-out batch that judges `spare_until_allocations`."""
    from transformers import NemotronConfig, NemotronForCausalLM

    torch.manual_seed(0)
    config = NemotronConfig(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                            num_attention_heads=8, num_key_value_heads=4, head_dim=64, partial_rotary_factor=0.5,
                            max_position_embeddings=2048, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(9, 96, 36), (2, 448, 60), (18, 48, 30), (5, 208, 44)]  # batch, prompt, new tokens
    return generate_rounds(torch, NemotronForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=40, temperature=0.8, pad_token_id=0)


def led_small_greedy_summarize(torch):
    """A small LED-style (Longformer encoder-decoder) summarizer through transformers
    (`LEDForConditionalGeneration(LEDConfig(...))`: 4 + 4 layers 384 wide, 6 heads, the encoder attending over
    windows of 128 tokens, feed-forward 1,536, 50k vocabulary), bf16, greedy `generate` of summaries for 4 rounds
    (batch, input length, new tokens) from (2, 1,536, 64) to (24, 128, 24), inputs with random padding. Written in
    the fortieth session, before it was recorded, in a held-out batch that judges `spare_until_allocations`
    (an encoder-decoder that summarizes, as bart_small_greedy_summarize, which the rule cost its memory goal)."""
    from transformers import LEDConfig, LEDForConditionalGeneration

    torch.manual_seed(0)
    config = LEDConfig(vocab_size=50265, d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                       decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
                       max_encoder_position_embeddings=2048, max_decoder_position_embeddings=512,
                       attention_window=[128] * 4, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                       decoder_start_token_id=2)
    rounds = [(6, 512, 40), (24, 128, 24), (2, 1536, 64), (12, 256, 32)]  # batch, input length, new tokens
    return generate_padded_rounds(torch, LEDForConditionalGeneration(config).eval(), rounds, config.vocab_size)


def distilbert_small_train_bf16(torch):
    """A DistilBERT-style classifier through transformers
    (`DistilBertForSequenceClassification(DistilBertConfig(...))`: 6 layers 384 wide, 6 heads, feed-forward 1,536,
    30k vocabulary, 3 labels) trained with bf16 autocast (`train_bf16`), AdamW, 15 steps of (batch, tokens) (32,
    128), (16, 256) and (64, 64) on random ids and labels. Written in the fortieth session, before it was recorded,
    in a held-out batch that judges `spare_until_allocations` (a small training heap of several thousand
    allocations)."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=30522, dim=384, n_layers=6, n_heads=6, hidden_dim=1536,
                              max_position_embeddings=512, num_labels=3)
    return train_on_random_ids_bf16(torch, lambda: DistilBertForSequenceClassification(config), config.vocab_size, 3,
                                    5e-5)


def train_on_random_ids_bf16(torch, build, vocab_size, labels, lr):
    """Trains the sequence classifier `build()` makes on the CPU (built here, so that `train_bf16` holds its only
    reference) with bf16 autocast, AdamW at `lr`, 15 steps of (batch, tokens) (32, 128), (16, 256) and (64, 64) on
    random ids in [5, `vocab_size`) and random labels below `labels`. Returns the steps and the losses."""
    steps = [(32, 128), (16, 256), (64, 64)] * 5  # batch, tokens

    def sentences(gen, step):
        ids = torch.randint(5, vocab_size, step, device="cuda", generator=gen)
        return {"input_ids": ids, "labels": torch.randint(0, labels, (step[0],), device="cuda", generator=gen)}

    losses = train_bf16(torch, build(), steps, sentences, lambda params: torch.optim.AdamW(params, lr=lr))
    return {"steps": steps, "losses": losses}


def googlenet_train_small(torch):
    """torchvision GoogLeNet (6 M parameters without its auxiliary heads) trained on 100 classes at 96 pixels, fp32,
    SGD with momentum, 12 steps of 16 to 96 images. Written in the fortieth session, before it was recorded, in a
    held-out batch that judges `spare_until_allocations` (a small training heap of several thousand allocations)."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.googlenet(num_classes=100, aux_logits=False, init_weights=True)
    steps = [32, 96, 16, 64, 48, 80, 24, 56, 96, 40, 72, 16]

    losses = train_steps(torch, model, lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9), steps,
                         noise_images(torch, 96, 100))
    return {"steps": steps, "losses": losses}


def biogpt_small_sample_generate(torch):
    """A small BioGPT-style decoder through transformers (`BioGptForCausalLM(BioGptConfig(...))`: 6 layers 512 wide,
    8 heads, feed-forward 2,048, learned positions, 42k vocabulary), fp16, `generate` sampling the 50 likeliest
    tokens for 4 rounds (batch, prompt, new tokens) from (2, 384, 64) to (16, 64, 32). Written in the forty-first
    session, before it was recorded, in an untargeted held-out batch of the default policy."""
    from transformers import BioGptConfig, BioGptForCausalLM

    torch.manual_seed(0)
    config = BioGptConfig(vocab_size=42384, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                          intermediate_size=2048, max_position_embeddings=1024, pad_token_id=1, bos_token_id=0,
                          eos_token_id=2)
    rounds = [(8, 128, 48), (2, 384, 64), (16, 64, 32), (4, 256, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, BioGptForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=1)


def phi3_small_greedy_generate(torch):
    """A small Phi-3-style decoder through transformers (`Phi3ForCausalLM(Phi3Config(...))`: 6 layers 768 wide, 12
    heads sharing 4 key-value heads, fused QKV and gate-up projections of 2,048, 32k vocabulary), fp16, greedy
    `generate` for 4 rounds (batch, prompt, new tokens) from (1, 512, 64) to (12, 64, 40). Written in the
    forty-first session, before it was recorded, in an untargeted held-out batch of the default policy."""
    from transformers import Phi3Config, Phi3ForCausalLM

    torch.manual_seed(0)
    config = Phi3Config(vocab_size=32064, hidden_size=768, intermediate_size=2048, num_hidden_layers=6,
                        num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(4, 200, 48), (12, 64, 40), (1, 512, 64), (8, 128, 32)]  # batch, prompt, new tokens
    return generate_rounds(torch, Phi3ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def fcos_detect_infer(torch):
    """torchvision FCOS (ResNet-50 FPN, anchor-free, random weights, no pretrained backbone) inference, fp32, 8
    batches of 1 to 3 images whose sides vary from 448 to 896 pixels. Written in the forty-first session, before it
    was recorded, in an untargeted held-out batch of the default policy."""
    import torchvision

    torch.manual_seed(0)
    holder = [torchvision.models.detection.fcos_resnet50_fpn(weights=None, weights_backbone=None).eval()]
    return detect_random_sides(torch, holder, seed=1, count=8, low=448, high=897, most=3)


def dinov2_small_half_infer(torch):
    """A DINOv2-Small-sized vision transformer through transformers (`Dinov2Model(Dinov2Config(...))`: 12 layers, 384
    wide, 6 heads, patches of 14, position embeddings interpolated to every side), moved to the GPU in fp32 and
    converted there (`infer_converted`), 8 (batch, image side) shapes from (1, 518) to (64, 224), each twice,
    scored by the pooled features. Written in the forty-first session, before it was recorded, in an untargeted
    held-out batch of the default policy."""
    from transformers import Dinov2Config, Dinov2Model

    config = Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, image_size=518,
                          patch_size=14)
    return infer_converted(torch, lambda: Dinov2Model(config),
                           [(8, 224), (1, 518), (32, 224), (4, 336), (16, 280), (2, 448), (64, 224), (8, 392)],
                           score=lambda out: float(out.pooler_output.float().abs().mean().item()))


def labelled_images(torch, classes):
    """An `inputs` for [`train_bf16`]: a step is (batch, image side) of random images (`pixel_values`) labelled among
    `classes` classes (`labels`)."""
    def images(gen, step):
        batch, side = step
        return {"pixel_values": torch.randn(batch, 3, side, side, device="cuda", generator=gen),
                "labels": torch.randint(0, classes, (batch,), device="cuda", generator=gen)}
    return images


def train_images_bf16(torch, build, classes):
    """Trains the image classifier `build()` makes on the CPU (built here, so that `train_bf16` holds its only
    reference) with bf16 autocast, AdamW at 1e-4, 12 steps of (batch, image side) from (16, 288) to (64, 160) on
    random images labelled among `classes` classes (`labelled_images`). Returns the steps and the losses."""
    steps = [(32, 224), (64, 160), (16, 288), (48, 192)] * 3  # batch, image side
    losses = train_bf16(torch, build(), steps, labelled_images(torch, classes),
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}

def mobilevit_small_train_bf16(torch):
    """A MobileViT-Small image classifier through transformers
    (`MobileViTForImageClassification(MobileViTConfig(...))`: convolutions and transformer blocks, 100 classes)
    trained with bf16 autocast (`train_bf16`), AdamW, 12 steps of (batch, image side) from (8, 320) to (48, 192).
    Written in the forty-first session, before it was recorded, in an untargeted held-out batch of the default
    policy."""
    from transformers import MobileViTConfig, MobileViTForImageClassification

    torch.manual_seed(0)
    config = MobileViTConfig(image_size=256, num_labels=100)
    steps = [(32, 256), (16, 256), (48, 192), (8, 320)] * 3  # batch, image side
    losses = train_bf16(torch, MobileViTForImageClassification(config), steps, labelled_images(torch, 100),
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def convbert_small_train_bf16(torch):
    """A small ConvBERT classifier through transformers (`ConvBertForSequenceClassification(ConvBertConfig(...))`:
    6 layers 384 wide, 6 heads with span-based dynamic convolutions, feed-forward 1,536, 30k vocabulary, 2 labels)
    trained with bf16 autocast (`train_bf16`), AdamW, 15 steps of (batch, tokens) (32, 128), (16, 256) and (64,
    64) on random ids and labels. Written in the forty-first session, before it was recorded, in an untargeted
    held-out batch of the default policy."""
    from transformers import ConvBertConfig, ConvBertForSequenceClassification

    torch.manual_seed(0)
    config = ConvBertConfig(vocab_size=30522, hidden_size=384, embedding_size=384, num_hidden_layers=6,
                            num_attention_heads=6, intermediate_size=1536, max_position_embeddings=512,
                            num_labels=2)
    return train_on_random_ids_bf16(torch, lambda: ConvBertForSequenceClassification(config), config.vocab_size, 2,
                                    1e-4)


def beit_base_half_infer(torch):
    """A BEiT-Base-sized image classifier through transformers (`BeitForImageClassification(BeitConfig(...))`: 12
    layers, 768 wide, 12 heads, patches of 16, relative position biases, 1,000 classes, 86 M parameters), moved to
    the GPU in fp32 and converted there (`infer_converted`), 8 batch sizes from 1 to 96 at 224 pixels, each twice.
    Written in the forty-first session, before it was recorded, in an untargeted held-out batch of the default
    policy."""
    from transformers import BeitConfig, BeitForImageClassification

    config = BeitConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                        image_size=224, patch_size=16, num_labels=1000, use_relative_position_bias=True)
    return infer_converted(torch, lambda: BeitForImageClassification(config),
                           [(16, 224), (1, 224), (64, 224), (8, 224), (32, 224), (4, 224), (96, 224), (2, 224)],
                           score=lambda out: image_score(out.logits))


def modernbert_embed_infer(torch):
    """A small ModernBERT-style encoder through transformers (`ModernBertModel(ModernBertConfig(...))`: 8 layers 512
    wide, 8 heads, gated feed-forward of 1,024, alternating local and global attention, 50k vocabulary) kept in
    fp32, under `torch.no_grad()`, 10 batches of (sequences, tokens) from (1, 1024) to (48, 128), padded on the
    right, scored by the mean of the last hidden states (`encode_padded_fp32`). Written in the forty-first session,
    before it was recorded, in an untargeted held-out batch of the default policy."""
    from transformers import ModernBertConfig, ModernBertModel

    torch.manual_seed(0)
    config = ModernBertConfig(vocab_size=50368, hidden_size=512, intermediate_size=1024, num_hidden_layers=8,
                              num_attention_heads=8, max_position_embeddings=2048, pad_token_id=0)
    batches = [(8, 256), (1, 1024), (48, 128), (4, 512), (16, 384), (2, 896), (32, 192), (12, 320), (6, 640),
               (24, 96)]
    return encode_padded_fp32(torch, ModernBertModel(config).eval(), batches, 3, config.vocab_size,
                              lambda ids, mask: ids * mask, summary=lambda out: out.last_hidden_state.mean(1))


def glm_small_greedy_generate(torch):
    """A small GLM-style decoder through transformers (`GlmForCausalLM(GlmConfig(...))`: 6 layers 512 wide, 8 heads
    sharing 2 key-value heads of 64, partly rotary, 32k vocabulary), fp16, greedy `generate` for 4 rounds (batch,
    prompt, new tokens) from (1, 448, 56) to (12, 64, 32). Written in the forty-second session, before it was
    recorded, in a second untargeted held-out batch of the default policy."""
    from transformers import GlmConfig, GlmForCausalLM

    torch.manual_seed(0)
    config = GlmConfig(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                       num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=2048,
                       pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(6, 160, 48), (1, 448, 56), (12, 64, 32), (3, 320, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, GlmForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def qwen2_moe_small_sample_generate(torch):
    """A small Qwen2-MoE-style decoder through transformers (`Qwen2MoeForCausalLM(Qwen2MoeConfig(...))`: 6 layers
    512 wide, 8 heads sharing 4 key-value heads, 8 experts of 512 with 2 chosen a token and a shared expert of
    1,024, 32k vocabulary), fp16, `generate` sampling with nucleus 0.9 for 4 rounds (batch, prompt, new tokens)
    from (2, 512, 64) to (16, 64, 32). Written in the forty-second session, before it was recorded, in a second
    untargeted held-out batch of the default policy."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    torch.manual_seed(0)
    config = Qwen2MoeConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                            num_attention_heads=8, num_key_value_heads=4, num_experts=8, num_experts_per_tok=2,
                            moe_intermediate_size=512, shared_expert_intermediate_size=1024,
                            max_position_embeddings=2048, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(4, 256, 48), (16, 64, 32), (2, 512, 64), (8, 128, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Qwen2MoeForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.9, pad_token_id=0)


def bigbird_embed_infer(torch):
    """A small BigBird encoder through transformers (`BigBirdModel(BigBirdConfig(...))`: 6 layers 512 wide, 8 heads,
    block-sparse attention in blocks of 64 with 3 random blocks, 50k vocabulary) kept in fp32, under
    `torch.no_grad()`, 8 batches of (sequences, tokens) from (1, 4096) to (16, 768), padded on the right
    (`encode_padded_fp32`). Written in the forty-second session, before it was recorded, in a second untargeted
    held-out batch of the default policy."""
    from transformers import BigBirdConfig, BigBirdModel

    torch.manual_seed(0)
    config = BigBirdConfig(vocab_size=50358, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                           intermediate_size=2048, max_position_embeddings=4096, attention_type="block_sparse",
                           block_size=64, num_random_blocks=3)
    batches = [(2, 2048), (8, 1024), (1, 4096), (4, 1536), (16, 768), (2, 3072), (6, 1280), (12, 896)]
    return encode_padded_fp32(torch, BigBirdModel(config).eval(), batches, 5, config.vocab_size,
                              lambda ids, mask: ids * mask)


def canine_embed_infer(torch):
    """A small CANINE character encoder through transformers (`CanineModel(CanineConfig(...))`: characters hashed
    into embeddings, downsampled fourfold by a strided convolution, 6 layers 512 wide, 8 heads, upsampled back) kept
    in fp32, under `torch.no_grad()`, 8 batches of (sequences, characters) from (1, 4096) to (32, 256) of random
    code points below 65,536, padded on the right (`encode_padded_fp32`). Written in the forty-second session,
    before it was recorded, in a second untargeted held-out batch of the default policy."""
    from transformers import CanineConfig, CanineModel

    torch.manual_seed(0)
    config = CanineConfig(hidden_size=512, num_hidden_layers=6, num_attention_heads=8, intermediate_size=2048)
    batches = [(8, 1024), (2, 2048), (32, 256), (4, 1536), (16, 512), (1, 4096), (12, 768), (6, 1280)]
    return encode_padded_fp32(torch, CanineModel(config).eval(), batches, 32, 65536, lambda ids, mask: ids * mask)


def yolos_small_detect_infer(torch):
    """A YOLOS-Small-sized detector through transformers (`YolosForObjectDetection(YolosConfig(...))`: a plain
    vision transformer, 12 layers 384 wide, 6 heads, 100 detection tokens, position embeddings interpolated to each
    image size) kept in fp32, 8 (batch, image side) shapes from (1, 800) to (12, 256) of random fp32 images, each
    twice (`infer_images`), scored by the class probabilities. Written in the forty-second session, before it was
    recorded, in a second untargeted held-out batch of the default policy."""
    from transformers import YolosConfig, YolosForObjectDetection

    torch.manual_seed(0)
    config = YolosConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536,
                         image_size=[512, 864], num_detection_tokens=100)
    shapes = [(1, 512), (4, 384), (2, 640), (8, 320), (1, 800), (6, 448), (3, 576), (12, 256)]
    checksum = infer_images(torch, YolosForObjectDetection(config), shapes, lambda m: m.cuda().eval(),
                            lambda out: float(out.logits.float().softmax(-1).max(-1).values.sum().item()),
                            image_dtype=torch.float32)
    return {"shapes": shapes, "checksum": checksum}


def poolformer_s12_train_bf16(torch):
    """A PoolFormer-S12 image classifier through transformers
    (`PoolFormerForImageClassification(PoolFormerConfig(...))`: average pooling as the token mixer, stages of 2, 2,
    6 and 2 blocks from 64 to 512 channels, 100 classes) trained with bf16 autocast (`train_bf16`), AdamW, 12 steps
    of (batch, image side) from (16, 288) to (64, 160). Written in the forty-second session, before it was
    recorded, in a second untargeted held-out batch of the default policy."""
    from transformers import PoolFormerConfig, PoolFormerForImageClassification

    torch.manual_seed(0)
    config = PoolFormerConfig(num_labels=100)
    return train_images_bf16(torch, lambda: PoolFormerForImageClassification(config), 100)


def squeezebert_train_bf16(torch):
    """A 6-layer SqueezeBERT classifier through transformers
    (`SqueezeBertForSequenceClassification(SqueezeBertConfig(...))`: grouped 1-D convolutions in place of the dense
    layers, 768 wide, 12 heads, 30k vocabulary, 3 labels) trained with bf16 autocast, AdamW, 15 steps of (batch,
    tokens) (32, 128), (16, 256) and (64, 64) on random ids and labels (`train_on_random_ids_bf16`). Written in the
    forty-second session, before it was recorded, in a second untargeted held-out batch of the default policy."""
    from transformers import SqueezeBertConfig, SqueezeBertForSequenceClassification

    torch.manual_seed(0)
    config = SqueezeBertConfig(vocab_size=30528, hidden_size=768, num_hidden_layers=6, num_attention_heads=12,
                               intermediate_size=3072, num_labels=3)
    return train_on_random_ids_bf16(torch, lambda: SqueezeBertForSequenceClassification(config), config.vocab_size,
                                    3, 1e-4)


def focalnet_tiny_half_infer(torch):
    """A FocalNet-Tiny-sized image classifier through transformers
    (`FocalNetForImageClassification(FocalNetConfig(...))`: focal modulation instead of attention, stages of 2, 2,
    6 and 2 blocks from 96 channels, 1,000 classes), moved to the GPU in fp32 and converted there
    (`infer_converted`), 8 (batch, image side) shapes from (1, 224) to (64, 224) and (16, 288), each twice. Written
    in the forty-second session, before it was recorded, in a second untargeted held-out batch of the default
    policy."""
    from transformers import FocalNetConfig, FocalNetForImageClassification

    config = FocalNetConfig(embed_dim=96, depths=[2, 2, 6, 2], focal_levels=[2, 2, 2, 2],
                            focal_windows=[3, 3, 3, 3], num_labels=1000)
    return infer_converted(torch, lambda: FocalNetForImageClassification(config),
                           [(8, 224), (1, 224), (32, 224), (4, 288), (16, 288), (2, 256), (64, 224), (8, 256)],
                           score=lambda out: image_score(out.logits))


def olmoe_small_sample_generate(torch):
    """A small OLMoE-style decoder through transformers (`OlmoeForCausalLM(OlmoeConfig(...))`: 6 layers 512 wide, 8
    heads, 16 experts of 256 with 4 chosen a token, 32k vocabulary), fp16, `generate` sampling the 40 likeliest
    tokens for 4 rounds (batch, prompt, new tokens) from (2, 448, 56) to (16, 64, 32). Written in the forty-second
    session, before it was recorded, in a third untargeted held-out batch of the default policy."""
    from transformers import OlmoeConfig, OlmoeForCausalLM

    torch.manual_seed(0)
    config = OlmoeConfig(vocab_size=32000, hidden_size=512, intermediate_size=256, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=8, num_experts=16, num_experts_per_tok=4,
                         max_position_embeddings=2048, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(8, 128, 40), (2, 448, 56), (16, 64, 32), (4, 256, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, OlmoeForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=40, pad_token_id=0)


def longt5_small_greedy_summarize(torch):
    """A small LongT5 encoder-decoder through transformers (`LongT5ForConditionalGeneration(LongT5Config(...))`: 6 +
    6 layers 512 wide, transient-global attention in the encoder over windows of 127, 32k vocabulary), bf16, greedy
    `generate` of summaries for 4 rounds (batch, input length, new tokens) from (1, 4096, 48) to (16, 512, 24),
    inputs with random padding (`generate_padded_rounds`). Written in the forty-second session, before it was
    recorded, in a third untargeted held-out batch of the default policy."""
    from transformers import LongT5Config, LongT5ForConditionalGeneration

    torch.manual_seed(0)
    config = LongT5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=1024, num_layers=6, num_decoder_layers=6,
                          num_heads=8, encoder_attention_type="transient-global", local_radius=127,
                          global_block_size=16, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    rounds = [(4, 2048, 32), (1, 4096, 48), (16, 512, 24), (2, 3072, 40)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, LongT5ForConditionalGeneration(config).eval(), rounds,
                                               config.vocab_size, num_beams=1, do_sample=False)
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def switch_small_greedy_translate(torch):
    """A small Switch Transformer encoder-decoder through transformers
    (`SwitchTransformersForConditionalGeneration(SwitchTransformersConfig(...))`: 6 + 6 layers 512 wide, every other
    feed-forward a mixture of 8 experts with one chosen a token, 32k vocabulary), bf16, greedy `generate` for 4
    rounds (batch, input length, new tokens) from (2, 512, 48) to (32, 64, 24), inputs with random padding
    (`generate_padded_rounds`). Written in the forty-second session, before it was recorded, in a third untargeted
    held-out batch of the default policy."""
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

    torch.manual_seed(0)
    config = SwitchTransformersConfig(vocab_size=32128, d_model=512, d_kv=64, d_ff=1024, expert_capacity=64,
                                      num_layers=6, num_decoder_layers=6, num_heads=8, num_experts=8,
                                      num_sparse_encoder_layers=3, num_sparse_decoder_layers=3,
                                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    rounds = [(8, 256, 32), (2, 512, 48), (32, 64, 24), (4, 384, 32)]  # batch, input length, new tokens
    shapes, token_sum = generate_padded_rounds(torch, SwitchTransformersForConditionalGeneration(config).eval(),
                                               rounds, config.vocab_size, num_beams=1, do_sample=False)
    return {"rounds": rounds, "output_shapes": shapes, "token_sum": token_sum}


def glpn_depth_half_infer(torch):
    """A GLPN depth estimator through transformers (`GLPNForDepthEstimation(GLPNConfig())`: a hierarchical
    transformer encoder and a light decoder to a depth map at full resolution), moved to the GPU in fp32 and
    converted there (`infer_converted`), 8 (batch, image side) shapes from (1, 480) to (32, 224), each twice, scored
    by the mean depth. Written in the forty-second session, before it was recorded, in a third untargeted held-out
    batch of the default policy."""
    from transformers import GLPNConfig, GLPNForDepthEstimation

    return infer_converted(torch, lambda: GLPNForDepthEstimation(GLPNConfig()),
                           [(8, 320), (1, 480), (32, 224), (4, 384), (16, 256), (2, 448), (12, 288), (6, 352)],
                           score=lambda out: float(out.predicted_depth.float().mean().item()))


def swin2sr_half_infer(torch):
    """A Swin2SR image super-resolution network through transformers
    (`Swin2SRForImageSuperResolution(Swin2SRConfig(...))`: shifted-window transformer blocks at full resolution, 4
    stages of 4 blocks 96 wide, a pixel-shuffle upscaler of 2), moved to the GPU in fp32 and converted there
    (`infer_converted`), 8 (batch, image side) shapes from (1, 256) to (16, 64), each twice, scored by the mean of
    the upscaled image. Written in the forty-second session, before it was recorded, in a third untargeted held-out
    batch of the default policy."""
    from transformers import Swin2SRConfig, Swin2SRForImageSuperResolution

    config = Swin2SRConfig(embed_dim=96, depths=[4, 4, 4, 4], num_heads=[4, 4, 4, 4], window_size=8, upscale=2,
                           upsampler="pixelshuffle")
    return infer_converted(torch, lambda: Swin2SRForImageSuperResolution(config),
                           [(4, 128), (1, 256), (16, 64), (2, 192), (8, 96), (1, 224), (6, 112), (3, 160)],
                           score=lambda out: float(out.reconstruction.float().mean().item()))


def pvt_v2_half_infer(torch):
    """A PVTv2-B1-sized image classifier through transformers (`PvtV2ForImageClassification(PvtV2Config(...))`: a
    pyramid of 4 stages of 2 blocks, 64 to 512 channels, attention over spatially reduced keys, 1,000 classes),
    moved to the GPU in fp32 and converted there (`infer_converted`), 8 (batch, image side) shapes from (1, 224) to
    (64, 224) and (16, 288), each twice. Written in the forty-second session, before it was recorded, in a third
    untargeted held-out batch of the default policy."""
    from transformers import PvtV2Config, PvtV2ForImageClassification

    config = PvtV2Config(hidden_sizes=[64, 128, 320, 512], depths=[2, 2, 2, 2], num_labels=1000)
    return infer_converted(torch, lambda: PvtV2ForImageClassification(config),
                           [(8, 224), (1, 224), (32, 224), (4, 288), (16, 288), (2, 256), (64, 224), (8, 256)],
                           score=lambda out: image_score(out.logits))


def cvt_13_train_bf16(torch):
    """A CvT-13 image classifier through transformers (`CvtForImageClassification(CvtConfig(...))`: convolutional
    token embeddings and projections in 3 stages, 100 classes) trained with bf16 autocast (`train_bf16`), AdamW, 12
    steps of (batch, image side) from (16, 288) to (64, 160). Written in the forty-second session, before it was
    recorded, in a third untargeted held-out batch of the default policy."""
    from transformers import CvtConfig, CvtForImageClassification

    torch.manual_seed(0)
    config = CvtConfig(num_labels=100)
    return train_images_bf16(torch, lambda: CvtForImageClassification(config), 100)


def rembert_train_bf16(torch):
    """A small RemBERT classifier through transformers (`RemBertForSequenceClassification(RemBertConfig(...))`:
    decoupled input embeddings of 256 projected to 512, 6 layers 512 wide, 8 heads, 32k vocabulary, 3 labels)
    trained with bf16 autocast, AdamW, 15 steps of (batch, tokens) (32, 128), (16, 256) and (64, 64) on random ids
    and labels (`train_on_random_ids_bf16`). Written in the forty-second session, before it was recorded, in a third
    untargeted held-out batch of the default policy."""
    from transformers import RemBertConfig, RemBertForSequenceClassification

    torch.manual_seed(0)
    config = RemBertConfig(vocab_size=32000, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                           input_embedding_size=256, output_embedding_size=512, intermediate_size=2048,
                           num_labels=3, pad_token_id=0)
    return train_on_random_ids_bf16(torch, lambda: RemBertForSequenceClassification(config), config.vocab_size, 3,
                                    1e-4)


def convnextv2_tiny_train_bf16(torch):
    """A ConvNeXt-V2-Tiny image classifier through transformers
    (`ConvNextV2ForImageClassification(ConvNextV2Config(...))`: stages of 3, 3, 9 and 3 blocks from 96 channels
    with global response normalization, 100 classes) trained with bf16 autocast (`train_bf16`), AdamW, 12 steps of
    (batch, image side) from (16, 288) to (64, 160). Written in the forty-third session, before it was recorded, in
    a fourth untargeted held-out batch of the default policy."""
    from transformers import ConvNextV2Config, ConvNextV2ForImageClassification

    torch.manual_seed(0)
    config = ConvNextV2Config(num_labels=100)
    return train_images_bf16(torch, lambda: ConvNextV2ForImageClassification(config), 100)


def levit_128s_half_infer(torch):
    """A LeViT-128S image classifier through transformers (`LevitForImageClassification(LevitConfig())`: a
    convolutional stem, then attention stages of 128, 256 and 384 channels with attention biases learned for 224
    pixels, 1,000 classes), moved to the GPU in fp32 and converted there (`infer_converted`), 8 batches from 1 to
    128 images of 224 pixels (the only side its biases fit), each twice. Written in the forty-third session, before
    it was recorded, in a fourth untargeted held-out batch of the default policy."""
    from transformers import LevitConfig, LevitForImageClassification

    config = LevitConfig(num_labels=1000)
    return infer_converted(torch, lambda: LevitForImageClassification(config),
                           [(8, 224), (1, 224), (64, 224), (16, 224), (128, 224), (4, 224), (32, 224), (2, 224)],
                           score=lambda out: image_score(out.logits))


def dpt_small_depth_half_infer(torch):
    """A DPT depth estimator with a ViT-Small-sized backbone through transformers
    (`DPTForDepthEstimation(DPTConfig(...))`: 12 layers 384 wide, 6 heads, patches of 16, features reassembled from
    layers 3, 6, 9 and 12 and fused at four scales), moved to the GPU in fp32 and converted there
    (`infer_converted`), 8 (batch, image side) shapes from (1, 640) to (16, 256), each twice, scored by the mean
    predicted depth. Written in the forty-third session, before it was recorded, in a fourth untargeted held-out
    batch of the default policy."""
    from transformers import DPTConfig, DPTForDepthEstimation

    config = DPTConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536,
                       image_size=384, patch_size=16, backbone_out_indices=[2, 5, 8, 11],
                       neck_hidden_sizes=[48, 96, 192, 384], fusion_hidden_size=128)
    return infer_converted(torch, lambda: DPTForDepthEstimation(config),
                           [(4, 384), (1, 640), (16, 256), (2, 512), (8, 320), (1, 448), (12, 288), (4, 416)],
                           score=lambda out: float(out.predicted_depth.float().mean().item()))


def xlnet_embed_infer(torch):
    """A small XLNet encoder through transformers (`XLNetModel(XLNetConfig(...))`: 6 layers 512 wide, 8 heads,
    relative positions, 32k vocabulary, the hidden states kept as memories) in fp32, under `torch.no_grad()`, 10
    batches of (sequences, tokens) from (1, 1024) to (48, 96), padded on the right, scored by the mean of the last
    hidden states (`encode_padded_fp32`). Written in the forty-third session, before it was recorded, in a fourth
    untargeted held-out batch of the default policy."""
    from transformers import XLNetConfig, XLNetModel

    torch.manual_seed(0)
    config = XLNetConfig(vocab_size=32000, d_model=512, n_layer=6, n_head=8, d_inner=2048, pad_token_id=5)
    batches = [(8, 256), (1, 1024), (48, 96), (4, 512), (16, 320), (2, 768), (32, 128), (12, 384), (6, 640),
               (24, 192)]
    return encode_padded_fp32(torch, XLNetModel(config).eval(), batches, 6, config.vocab_size,
                              lambda ids, mask: ids * mask + 5 * (1 - mask),
                              summary=lambda out: out.last_hidden_state.mean(1))


def codec_round_trips(torch, model, batches):
    """Records from before `model` (a transformers audio codec taking `input_values` and giving `audio_values`,
    built on the CPU by the caller, passed as its only reference so that it is freed here) moves to the GPU in fp32,
    then encodes and decodes, under `torch.no_grad()`, one batch of random mono waveforms at the model's sampling
    rate per (batch, seconds) of `batches`. Returns the batches and a checksum of the outputs."""
    rate = model.config.sampling_rate
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for batch, seconds in batches:
            audio = 0.1 * torch.randn(batch, 1, seconds * rate, device="cuda", generator=gen)
            out = model(input_values=audio)
            checksum += float(out.audio_values.abs().mean().item())
            del audio, out
    del model
    return {"batches": batches, "checksum": checksum}


def encodec_24khz_infer(torch):
    """The EnCodec 24 kHz audio codec through transformers (`EncodecModel(EncodecConfig())`: a convolutional
    encoder and decoder with LSTMs, residual vector quantization at 6 kbps, random weights) in fp32, under
    `torch.no_grad()`, encoding and decoding 7 batches of mono waveforms (batch, seconds) from (1, 10) to (16, 1),
    scored by the mean absolute output. Written in the forty-third session, before it was recorded, in a fourth
    untargeted held-out batch of the default policy."""
    from transformers import EncodecConfig, EncodecModel

    torch.manual_seed(0)
    batches = [(4, 2), (1, 10), (16, 1), (2, 6), (8, 3), (1, 7), (6, 2)]  # waveforms, seconds
    return codec_round_trips(torch, EncodecModel(EncodecConfig()).eval(), batches)


def patchtst_forecast_train_bf16(torch):
    """A PatchTST forecaster through transformers (`PatchTSTForPrediction(PatchTSTConfig(...))`: 21 channels, a
    context of 512 steps in patches of 16 every 8, 3 layers 128 wide, 8 heads, 96 steps predicted, mean squared
    error) trained with bf16 autocast (`train_bf16`), AdamW, 12 steps of batches of 32 to 128 random series.
    Written in the forty-third session, before it was recorded, in a fourth untargeted held-out batch of the
    default policy."""
    from transformers import PatchTSTConfig, PatchTSTForPrediction

    torch.manual_seed(0)
    config = PatchTSTConfig(num_input_channels=21, context_length=512, prediction_length=96, patch_length=16,
                            patch_stride=8, d_model=128, num_attention_heads=8, num_hidden_layers=3, ffn_dim=512)
    steps = [64, 128, 32, 96] * 3  # series in a batch

    def series(gen, batch):
        return {"past_values": torch.randn(batch, config.context_length, 21, device="cuda", generator=gen),
                "future_values": torch.randn(batch, config.prediction_length, 21, device="cuda", generator=gen)}

    losses = train_bf16(torch, PatchTSTForPrediction(config), steps, series,
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def gemma3_small_greedy_generate(torch):
    """A small Gemma-3-style decoder through transformers (`Gemma3ForCausalLM(Gemma3TextConfig(...))`: 6 layers 512
    wide, 8 heads sharing 2 key-value heads of 64, sliding-window layers of 128 tokens between global ones, 32k
    vocabulary), fp16, greedy `generate` for 4 rounds (batch, prompt, new tokens) from (1, 512, 64) to (16, 64,
    32). Written in the forty-third session, before it was recorded, in a fourth untargeted held-out batch of the
    default policy."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                              num_attention_heads=8, num_key_value_heads=2, head_dim=64, sliding_window=128,
                              max_position_embeddings=2048, pad_token_id=0, bos_token_id=2, eos_token_id=1)
    rounds = [(4, 256, 48), (1, 512, 64), (16, 64, 32), (8, 160, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Gemma3ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def swiftformer_xs_train_bf16(torch):
    """A SwiftFormer-XS image classifier through transformers
    (`SwiftFormerForImageClassification(SwiftFormerConfig(...))`: convolutional stages of 3, 3, 6 and 4 blocks from 48
    to 220 channels, each ending in an efficient additive attention block, BatchNorm, a classifier and a
    distillation head over 100 classes) trained with bf16 autocast (`train_bf16`), AdamW, 12 steps of (batch, image
    side) from (16, 288) to (64, 160). Written in the forty-fifth session, before it was recorded, in a fifth
    untargeted held-out batch of the default policy."""
    from transformers import SwiftFormerConfig, SwiftFormerForImageClassification

    torch.manual_seed(0)
    config = SwiftFormerConfig(num_labels=100)
    return train_images_bf16(torch, lambda: SwiftFormerForImageClassification(config), 100)


def speech2text_small_train_bf16(torch):
    """A Speech2Text-small speech recognizer through transformers
    (`Speech2TextForConditionalGeneration(Speech2TextConfig())`: two strided 1-D convolutions over 80 filterbank
    features, a 12-layer encoder and a 6-layer decoder 256 wide, 4 heads, 10k vocabulary) trained with teacher
    forcing and bf16 autocast (`train_bf16`), AdamW, 12 steps of (clips, frames, target tokens) from (48, 400, 24)
    to (8, 2400, 112) on random features and labels. Written in the forty-fifth session, before it was recorded, in
    a fifth untargeted held-out batch of the default policy."""
    from transformers import Speech2TextConfig, Speech2TextForConditionalGeneration

    torch.manual_seed(0)
    config = Speech2TextConfig()
    steps = [(16, 1200, 64), (48, 400, 24), (8, 2400, 112), (24, 800, 48)] * 3  # clips, frames, target tokens

    def utterances(gen, step):
        clips, frames, tokens = step
        return {"input_features": torch.randn(clips, frames, config.input_feat_per_channel, device="cuda",
                                              generator=gen),
                "labels": torch.randint(3, config.vocab_size, (clips, tokens), device="cuda", generator=gen)}

    losses = train_bf16(torch, Speech2TextForConditionalGeneration(config), steps, utterances,
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def hiera_tiny_half_infer(torch):
    """A Hiera-Tiny image classifier through transformers (`HieraForImageClassification(HieraConfig(...))`: a
    hierarchical vision transformer of 1, 2, 7 and 2 blocks from 96 channels, mask-unit attention in the first two
    stages, query pooling between stages, position embeddings for 224 pixels, 1,000 classes), moved to the GPU in
    fp32 and converted there (`infer_converted`), 8 batches from 1 to 128 images of 224 pixels, each twice. Written
    in the forty-fifth session, before it was recorded, in a fifth untargeted held-out batch of the default
    policy."""
    from transformers import HieraConfig, HieraForImageClassification

    config = HieraConfig(depths=[1, 2, 7, 2], num_labels=1000)
    return infer_converted(torch, lambda: HieraForImageClassification(config),
                           [(16, 224), (2, 224), (96, 224), (8, 224), (48, 224), (1, 224), (128, 224), (24, 224)],
                           score=lambda out: image_score(out.logits))


def hgnetv2_b4_half_infer(torch):
    """An HGNet-V2-B4 image classifier through transformers
    (`HGNetV2ForImageClassification(HGNetV2Config(...))`: a stem of five convolutions, 4 stages of densely
    aggregated convolution blocks to 2,048 channels, light depthwise blocks in the last two, 1,000 classes), moved to
    the GPU in fp32 and converted there (`infer_converted`), 8 (batch, image side) shapes from (1, 448) to (64,
    192), each twice. Written in the forty-fifth session, before it was recorded, in a fifth untargeted held-out
    batch of the default policy."""
    from transformers import HGNetV2Config, HGNetV2ForImageClassification

    config = HGNetV2Config(num_labels=1000)
    return infer_converted(torch, lambda: HGNetV2ForImageClassification(config),
                           [(8, 224), (1, 448), (32, 224), (4, 352), (16, 256), (2, 384), (64, 192), (8, 288)],
                           score=lambda out: image_score(out.logits))


def fnet_base_embed_infer(torch):
    """An FNet-base encoder through transformers (`FNetModel(FNetConfig())`: 12 layers 768 wide whose token mixing
    is a 2-D FFT over the sequence and hidden dimensions (`torch.fft.fftn`, real part), 32k vocabulary, a pooler),
    in fp32, under `torch.no_grad()`, 10 batches of (sequences, tokens) from (1, 512) to (48, 96), padded on the
    right with token 3 (FNet takes no attention mask), scored by the pooled outputs. Written in the forty-fifth
    session, before it was recorded, in a fifth untargeted held-out batch of the default policy."""
    from transformers import FNetConfig, FNetModel

    torch.manual_seed(0)
    config = FNetConfig()
    model = FNetModel(config).eval()
    batches = [(8, 256), (1, 512), (48, 96), (4, 384), (16, 320), (2, 448), (32, 128), (12, 192), (6, 512),
               (24, 64)]  # sequences, tokens
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for batch, tokens in batches:
            ids = torch.randint(5, config.vocab_size, (batch, tokens), device="cuda", generator=gen)
            lengths = torch.randint(tokens // 2, tokens + 1, (batch, 1), device="cuda", generator=gen)
            mask = (torch.arange(tokens, device="cuda")[None, :] < lengths).long()
            out = model(input_ids=ids * mask + 3 * (1 - mask))  # padding is token 3
            checksum += float(out.pooler_output.sum().item())
            del ids, lengths, mask, out
    del model
    return {"batches": batches, "checksum": checksum}


def siglip_base_zero_shot_infer(torch):
    """Zero-shot image-text scoring with a SigLIP-base-sized model through transformers
    (`SiglipModel(SiglipConfig())`: a 12-layer 768-wide vision transformer over 224-pixel images in patches of 16
    and a 12-layer 768-wide text transformer over 64 tokens, 32k vocabulary, a sigmoid score per image-text pair)
    in fp32, under `torch.no_grad()`, 10 batches of (images, texts) from (1, 256) to (48, 8) and (2, 1024), texts
    padded on the right with token 1 to 64 tokens as SigLIP is, scored by the summed pair probabilities. Written in
    the forty-fifth session, before it was recorded, in a fifth untargeted held-out batch of the default policy."""
    from transformers import SiglipConfig, SiglipModel

    torch.manual_seed(0)
    config = SiglipConfig()
    model = SiglipModel(config).eval()
    text_length, vocab_size = config.text_config.max_position_embeddings, config.text_config.vocab_size
    side = config.vision_config.image_size
    batches = [(8, 64), (1, 256), (32, 32), (4, 512), (16, 128), (2, 1024), (24, 16), (12, 200), (48, 8),
               (6, 384)]  # images, texts
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for images, texts in batches:
            pixels = torch.randn(images, 3, side, side, device="cuda", generator=gen)
            ids = torch.randint(2, vocab_size, (texts, text_length), device="cuda", generator=gen)
            lengths = torch.randint(text_length // 4, text_length + 1, (texts, 1), device="cuda", generator=gen)
            mask = (torch.arange(text_length, device="cuda")[None, :] < lengths).long()
            out = model(input_ids=ids * mask + (1 - mask), pixel_values=pixels)  # padding is token 1
            checksum += float(out.logits_per_image.sigmoid().sum().item())
            del pixels, ids, lengths, mask, out
    del model
    return {"batches": batches, "checksum": checksum}


def persimmon_small_sample_generate(torch):
    """A small Persimmon-style decoder through transformers (`PersimmonForCausalLM(PersimmonConfig(...))`: 6 layers
    512 wide, 8 heads with layer-normed queries and keys, rotary embeddings on half of each head, squared-ReLU
    feed-forward of 2,048, 32k vocabulary), fp16, `generate` sampling the 50 likeliest tokens for 4 rounds (batch,
    prompt, new tokens) from (2, 512, 64) to (16, 64, 32). Written in the forty-fifth session, before it was
    recorded, in a fifth untargeted held-out batch of the default policy."""
    from transformers import PersimmonConfig, PersimmonForCausalLM

    torch.manual_seed(0)
    config = PersimmonConfig(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                             num_attention_heads=8, max_position_embeddings=2048, pad_token_id=0, bos_token_id=1,
                             eos_token_id=2)
    rounds = [(8, 128, 48), (2, 512, 64), (16, 64, 32), (4, 320, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, PersimmonForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=0)


def lfm2_small_greedy_generate(torch):
    """A small LFM2-style hybrid decoder through transformers (`Lfm2ForCausalLM(Lfm2Config(...))`: 6 layers 512
    wide, four of them gated short convolutions (kernel 3, a fixed-size convolution state per sequence in the cache)
    and two (the third and sixth) attention with 8 heads sharing 2 key-value heads, 32k vocabulary), fp16, greedy
    `generate` for 4 rounds (batch, prompt, new tokens) from (1, 768, 64) to (16, 96, 32). Written in the
    forty-fifth session, before it was recorded, in a fifth untargeted held-out batch of the default policy."""
    from transformers import Lfm2Config, Lfm2ForCausalLM

    torch.manual_seed(0)
    config = Lfm2Config(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048,
                        full_attn_idxs=[2, 5], pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(4, 256, 48), (1, 768, 64), (16, 96, 32), (8, 192, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Lfm2ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def timesformer_base_train_bf16(torch):
    """A TimeSformer-base video classifier through transformers
    (`TimesformerForVideoClassification(TimesformerConfig(...))`: 8-frame clips of 224 pixels in patches of 16, 12
    layers 768 wide whose attention is divided into a temporal pass over the 8 frames of each patch and a spatial pass
    over the 196 patches of each frame, 400 classes) trained with bf16 autocast (`train_bf16`), AdamW, 10 steps of 2
    to 16 random clips. Written in the forty-fifth session, before it was recorded, in a sixth untargeted held-out
    batch of the default policy."""
    from transformers import TimesformerConfig, TimesformerForVideoClassification

    torch.manual_seed(0)
    config = TimesformerConfig(num_labels=400)
    steps = [6, 12, 2, 16, 8, 4, 10, 14, 3, 8]  # clips in a batch

    def clips(gen, batch):
        return {"pixel_values": torch.randn(batch, config.num_frames, 3, config.image_size, config.image_size,
                                            device="cuda", generator=gen),
                "labels": torch.randint(0, 400, (batch,), device="cuda", generator=gen)}

    losses = train_bf16(torch, TimesformerForVideoClassification(config), steps, clips,
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def lilt_document_train_bf16(torch):
    """A LiLT-base document classifier through transformers (`LiltForSequenceClassification(LiltConfig(...))`: a
    12-layer 768-wide text stream and a 192-wide layout stream over each token's bounding box, their attention scores
    shared, 30k vocabulary, 16 document classes) trained with bf16 autocast (`train_bf16`), AdamW, 10 steps of
    (documents, tokens) from (56, 96) to (8, 480): random words padded on the right with token 0, random boxes in a
    1,000-unit page. Written in the forty-fifth session, before it was recorded, in a sixth untargeted held-out batch
    of the default policy."""
    from transformers import LiltConfig, LiltForSequenceClassification

    torch.manual_seed(0)
    config = LiltConfig(num_labels=16)  # hidden_size 768: the layout embeddings split it in six
    steps = [(32, 256), (12, 448), (64, 128), (20, 320), (48, 192), (8, 480), (40, 160), (16, 384), (24, 288),
             (56, 96)]  # documents, tokens

    def documents(gen, step):
        batch, tokens = step
        ids = torch.randint(5, config.vocab_size, step, device="cuda", generator=gen)
        lengths = torch.randint(tokens // 2, tokens + 1, (batch, 1), device="cuda", generator=gen)
        mask = (torch.arange(tokens, device="cuda")[None, :] < lengths).long()
        left = torch.randint(0, 900, (batch, tokens, 1), device="cuda", generator=gen)
        top = torch.randint(0, 940, (batch, tokens, 1), device="cuda", generator=gen)
        width = torch.randint(1, 100, (batch, tokens, 1), device="cuda", generator=gen)
        height = torch.randint(1, 60, (batch, tokens, 1), device="cuda", generator=gen)
        boxes = torch.cat([left, top, left + width, top + height], dim=-1) * mask[..., None]
        return {"input_ids": ids * mask, "bbox": boxes, "attention_mask": mask,  # padding is token 0, box 0
                "labels": torch.randint(0, 16, (batch,), device="cuda", generator=gen)}

    losses = train_bf16(torch, LiltForSequenceClassification(config), steps, documents,
                        lambda params: torch.optim.AdamW(params, lr=5e-5))
    return {"steps": steps, "losses": losses}


def bit_50_half_infer(torch):
    """A BiT-M-R50x1 image classifier through transformers (`BitForImageClassification(BitConfig(...))`: a
    pre-activation ResNet-50v2 with group normalization whose convolutions standardize their weights on every
    forward pass, 1,000 classes), moved to the GPU in fp32 and converted there (`infer_converted`), 8 (batch, image
    side) shapes from (1, 480) to (64, 160), each twice. Written in the forty-fifth session, before it was recorded,
    in a sixth untargeted held-out batch of the default policy."""
    from transformers import BitConfig, BitForImageClassification

    config = BitConfig(num_labels=1000)
    return infer_converted(torch, lambda: BitForImageClassification(config),
                           [(8, 256), (1, 480), (32, 224), (4, 384), (16, 320), (2, 512), (64, 160), (12, 288)],
                           score=lambda out: image_score(out.logits))


def ctc_half_greedy(torch, model, batches):
    """Records from before `model` (a speech encoder with a CTC head, built on the CPU by the caller, passed as its
    only reference so that it is freed here) moves to the GPU in fp32 and is converted to fp16 there, then decodes
    greedily (argmax per frame, under `torch.inference_mode()`) one batch of random 16 kHz waveforms per (clips,
    seconds) of `batches`. Returns the batches and a checksum of the symbols."""
    start_recording(torch)
    model = model.cuda().half()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0
    with torch.inference_mode():
        for clips, seconds in batches:
            audio = 0.1 * torch.randn(clips, int(seconds * 16_000), device="cuda", generator=gen,
                                      dtype=torch.float16)
            logits = model(input_values=audio).logits
            checksum += int(logits.argmax(-1).sum().item())
            del audio, logits
    del model
    return {"batches": batches, "checksum": checksum}


def wavlm_base_ctc_half_infer(torch):
    """Speech recognition with a WavLM-base encoder through transformers (`WavLMForCTC(WavLMConfig())`: the 7-layer
    convolutional front end over raw 16 kHz audio, 12 transformer layers 768 wide whose attention adds a gated
    relative position bias (one batch x heads x frames x frames tensor made in the first layer and passed down), a
    32-symbol CTC head), moved to the GPU in fp32 and converted there (`.cuda().half()`), greedy CTC decoding (argmax
    per frame) of 10 batches of (clips, seconds) from (1, 30) to (32, 1.5). Written in the forty-fifth session,
    before it was recorded, in a sixth untargeted held-out batch of the default policy."""
    from transformers import WavLMConfig, WavLMForCTC

    torch.manual_seed(0)
    batches = [(2, 12.0), (16, 3.0), (1, 30.0), (8, 5.0), (24, 2.0), (4, 9.0), (32, 1.5), (6, 7.0), (12, 4.0),
               (3, 16.0)]  # clips, seconds
    return ctc_half_greedy(torch, WavLMForCTC(WavLMConfig()).eval(), batches)


def patchtsmixer_forecast_infer(torch):
    """A PatchTSMixer forecaster through transformers (`PatchTSMixerForPrediction(PatchTSMixerConfig(...))`: 7
    channels, a context of 720 steps in patches of 16 every 8 (89 patches), 8 mixer layers 96 wide mixing across
    patches, features and channels, with gated attention and 4-head self-attention over the patches, 192 steps
    predicted) in fp32, under `torch.no_grad()`, 10 batches of 16 to 2,048 random series, scored by the mean
    absolute forecast. Written in the forty-fifth session, before it was recorded, in a sixth untargeted held-out
    batch of the default policy."""
    from transformers import PatchTSMixerConfig, PatchTSMixerForPrediction

    torch.manual_seed(0)
    config = PatchTSMixerConfig(context_length=720, patch_length=16, patch_stride=8, num_input_channels=7,
                                prediction_length=192, d_model=96, num_layers=8, expansion_factor=2,
                                mode="mix_channel", self_attn=True, self_attn_heads=4)
    model = PatchTSMixerForPrediction(config).eval()
    batches = [256, 32, 1024, 128, 2048, 64, 512, 16, 768, 192]  # series in a batch
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for batch in batches:
            past = torch.randn(batch, config.context_length, config.num_input_channels, device="cuda", generator=gen)
            out = model(past_values=past)
            checksum += float(out.prediction_outputs.abs().mean().item())
            del past, out
    del model
    return {"batches": batches, "checksum": checksum}


def vilt_vqa_infer(torch):
    """Visual question answering with a ViLT-B/32 model through transformers
    (`ViltForQuestionAnswering(ViltConfig(...))`: one 12-layer 768-wide transformer over a question of up to 40
    tokens and the 32-pixel patches of its image, position embeddings interpolated to each image's own size and
    padded patches sampled back in per image, 3,129 answers) in fp32, under `torch.no_grad()`, 10 batches of
    (images, padded height, padded width, question tokens) from (1, 384, 640, 40) to (48, 320, 320, 8), each image
    of its own size (a multiple of 32, the first of each batch the full size) with a pixel mask, questions padded on
    the right with token 0, scored by the summed top answer probabilities. Written in the forty-fifth session,
    before it was recorded, in a sixth untargeted held-out batch of the default policy."""
    import random

    from transformers import ViltConfig, ViltForQuestionAnswering

    torch.manual_seed(0)
    config = ViltConfig(num_labels=3129)
    model = ViltForQuestionAnswering(config).eval()
    batches = [(8, 384, 576, 32), (1, 384, 640, 40), (32, 384, 384, 16), (4, 640, 384, 24), (16, 384, 512, 40),
               (2, 576, 384, 12), (24, 352, 448, 20), (12, 384, 608, 28), (48, 320, 320, 8),
               (6, 448, 384, 36)]  # images, padded height, padded width, question tokens
    rng = random.Random(0)
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for images, height, width, tokens in batches:
            pixel_mask = torch.zeros(images, height, width, dtype=torch.long, device="cuda")
            for index in range(images):
                own_height = height if index == 0 else 32 * rng.randint(height // 64, height // 32)
                own_width = width if index == 0 else 32 * rng.randint(width // 64, width // 32)
                pixel_mask[index, :own_height, :own_width] = 1
            pixels = torch.randn(images, 3, height, width, device="cuda", generator=gen) * pixel_mask[:, None]
            ids = torch.randint(5, config.vocab_size, (images, tokens), device="cuda", generator=gen)
            lengths = torch.randint(tokens // 2, tokens + 1, (images, 1), device="cuda", generator=gen)
            mask = (torch.arange(tokens, device="cuda")[None, :] < lengths).long()
            out = model(input_ids=ids * mask, attention_mask=mask, pixel_values=pixels, pixel_mask=pixel_mask)
            checksum += float(out.logits.sigmoid().max(-1).values.sum().item())
            del pixel_mask, pixels, ids, lengths, mask, out
    del model
    return {"batches": batches, "checksum": checksum}


def helium_small_greedy_generate(torch):
    """A small Helium-style decoder through transformers (`HeliumForCausalLM(HeliumConfig(...))`: 6 layers 512
    wide, 8 heads of 64 sharing 4 key-value heads, rotary embeddings, 32k vocabulary), fp16, greedy `generate` for 4
    rounds (batch, prompt, new tokens) from (1, 1024, 56) to (24, 48, 32). Written in the forty-fifth session, before
    it was recorded, in a sixth untargeted held-out batch of the default policy."""
    from transformers import HeliumConfig, HeliumForCausalLM

    torch.manual_seed(0)
    config = HeliumConfig(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                          num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=2048,
                          pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(6, 384, 40), (1, 1024, 56), (24, 48, 32), (12, 160, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, HeliumForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def diffllama_small_sample_generate(torch):
    """A small DiffLlama decoder through transformers (`DiffLlamaForCausalLM(DiffLlamaConfig(...))`: 6 layers 512
    wide, differential attention (two attention passes over the two halves of the values, one subtracted from the
    other with a learned weight, then normalized) with 8 heads of 64 sharing 4 key-value heads, 32k vocabulary),
    fp16, `generate` with nucleus sampling (top-p 0.95, temperature 0.9) for 4 rounds (batch, prompt, new tokens)
    from (2, 896, 56) to (20, 80, 32). Written in the forty-fifth session, before it was recorded, in a sixth
    untargeted held-out batch of the default policy."""
    from transformers import DiffLlamaConfig, DiffLlamaForCausalLM

    torch.manual_seed(0)
    config = DiffLlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
                             pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(10, 224, 40), (2, 896, 56), (20, 80, 32), (3, 640, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, DiffLlamaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_p=0.95, temperature=0.9, pad_token_id=0)


def textnet_prefetch_train_bf16(torch):
    """A TextNet-base image classifier through transformers (`TextNetForImageClassification(TextNetConfig(...))`: the
    FAST text detector's backbone, a stride-2 stem and 4 stages of 3 or 4 re-parameterizable convolutions, each summing
    a main, a vertical and a horizontal convolution branch (where its kernel has them) with a BatchNorm each, and an
    identity BatchNorm where the shapes allow, 64 to 512 channels, 100 classes) trained with bf16 autocast, AdamW, 12
    steps of (batch, image side) from (8, 640) to (64, 224), on two streams: the input pipeline runs on a copy stream
    one batch ahead (uint8 batches from pinned host memory copied and normalised there, labels drawn there) and hands
    each batch to the default stream (events and `record_stream`), as prefetch_augment_train does. Written in the
    forty-fifth session, before it was recorded, in a seventh untargeted held-out batch of the default policy."""
    from transformers import TextNetConfig, TextNetForImageClassification

    torch.manual_seed(0)
    steps = [(32, 384), (8, 640), (64, 256), (16, 512), (48, 320), (12, 576), (24, 448), (64, 224), (10, 608),
             (40, 352), (20, 480), (56, 288)]  # batch, image side
    # The model is built here and held by the helper alone, so that its `del` frees it as before the helper.
    return prefetch_train_bf16(torch, TextNetForImageClassification(TextNetConfig(num_labels=100)), steps,
                               lambda params: torch.optim.AdamW(params, lr=1e-4),
                               lambda model, images, labels: model(pixel_values=images, labels=labels).loss)


def prefetch_train_bf16(torch, model, steps, make_optimizer, loss_of, classes=100):
    """Trains `model` (built on the host) with bf16 autocast for `steps` of (batch, image side), the input pipeline on
    a copy stream one batch ahead: uint8 batches made in pinned host memory before recording, copied to the GPU and
    normalised on the copy stream, labels (of `classes`) drawn there, each batch handed to the default stream with an
    event and `record_stream`. `loss_of(model, images, labels)` gives a step's loss. Returns the steps, the losses
    and the copy stream's handle."""
    host = [torch.randint(0, 256, (batch, 3, side, side), dtype=torch.uint8).pin_memory() for batch, side in steps]
    start_recording(torch)
    model = model.cuda().train()
    opt = make_optimizer(model.parameters())
    copy_stream = torch.cuda.Stream()
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    gen = torch.Generator(device="cuda").manual_seed(0)
    torch.cuda.synchronize()  # the copy stream uses them

    def load(i):
        with torch.cuda.stream(copy_stream):
            raw = host[i].to("cuda", non_blocking=True)
            images = (raw.float() - mean) / std
            labels = torch.randint(0, classes, (raw.shape[0],), device="cuda", generator=gen)
            del raw
        return images, labels, copy_stream.record_event()

    losses, pending = prefetched_steps(torch, opt, len(steps), load,
                                       lambda images, labels: loss_of(model, images, labels))
    torch.cuda.synchronize()
    del model, opt, pending
    return {"steps": steps, "losses": losses, "streams": {"copy": copy_stream.cuda_stream}}


def videomae_masked_train_bf16(torch):
    """Masked-video pretraining of a VideoMAE-base model through transformers
    (`VideoMAEForPreTraining(VideoMAEConfig())`: 16-frame clips of 224 pixels in tubes of 2 frames x 16 x 16 pixels,
    1,568 tubes, about 90% of them masked (176 of the 196 patch positions, the same in all 8 time slots), a 12-layer
    768-wide encoder over the 160 visible tubes gathered per clip, a 4-layer 384-wide decoder over all 1,568 with mask
    tokens, mean squared error against the normalized pixels of the masked tubes) trained with bf16 autocast
    (`train_bf16`), AdamW, 10 steps of 8 to 48 random clips. Written in the forty-fifth session, before it was recorded,
    in a seventh untargeted held-out batch of the default policy."""
    from transformers import VideoMAEConfig, VideoMAEForPreTraining

    torch.manual_seed(0)
    config = VideoMAEConfig()
    per_frame = (config.image_size // config.patch_size) ** 2  # 196 patch positions
    slots = config.num_frames // config.tubelet_size  # 8 time slots
    masked = per_frame * 9 // 10  # 176 positions masked in every slot
    steps = [16, 32, 8, 48, 24, 40, 12, 36, 20, 28]  # clips in a batch

    def clips(gen, batch):
        rank = torch.rand(batch, per_frame, device="cuda", generator=gen).argsort(dim=1).argsort(dim=1)
        return {"pixel_values": torch.randn(batch, config.num_frames, 3, config.image_size, config.image_size,
                                            device="cuda", generator=gen),
                "bool_masked_pos": (rank < masked).repeat(1, slots)}  # tube masking: index t * 196 + position

    losses = train_bf16(torch, VideoMAEForPreTraining(config), steps, clips,
                        lambda params: torch.optim.AdamW(params, lr=1e-4))
    return {"steps": steps, "losses": losses}


def sew_d_ctc_half_infer(torch):
    """Speech recognition with a SEW-D-base encoder through transformers (`SEWDForCTC(SEWDConfig())`: the 13-layer
    convolutional front end over raw 16 kHz audio (320 samples a frame), the frames squeezed by 2 before 12
    transformer layers 768 wide with DeBERTa-style disentangled attention (relative positions in 256 log buckets,
    content-to-position and position-to-content scores) and upsampled back after them, a 32-symbol CTC head), moved
    to the GPU in fp32 and converted there (`.cuda().half()`), greedy CTC decoding (argmax per frame) of 10 batches
    of (clips, seconds) from (1, 24) to (32, 1). Written in the forty-fifth session, before it was recorded, in a
    seventh untargeted held-out batch of the default policy."""
    from transformers import SEWDConfig, SEWDForCTC

    torch.manual_seed(0)
    batches = [(4, 10.0), (24, 2.5), (1, 24.0), (12, 4.0), (32, 1.0), (2, 16.0), (8, 6.0), (16, 3.5), (3, 12.0),
               (6, 8.0)]  # clips, seconds
    return ctc_half_greedy(torch, SEWDForCTC(SEWDConfig()).eval(), batches)


def upernet_resnet50_half_infer(torch):
    """Semantic segmentation with UperNet through transformers
    (`UperNetForSemanticSegmentation(UperNetConfig(...))`: the default ResNet-50 backbone (`ResNetConfig`, bottleneck
    stages of 3, 4, 6 and 3 blocks to 2,048 channels) giving four feature maps to a pyramid pooling module (scales 1,
    2, 3 and 6) and a feature pyramid 512 wide fused at a quarter of the resolution, 150 classes upsampled to the
    full image, no auxiliary head), moved to the GPU in fp32 and converted there (`infer_converted`), 8 (batch, image
    side) shapes from (1, 896) to (16, 256), each twice, scored by the mean predicted class. Written in the
    forty-fifth session, before it was recorded, in a seventh untargeted held-out batch of the default policy."""
    from transformers import UperNetConfig, UperNetForSemanticSegmentation

    config = UperNetConfig(num_labels=150, use_auxiliary_head=False)
    return infer_converted(torch, lambda: UperNetForSemanticSegmentation(config),
                           [(4, 512), (1, 768), (16, 256), (2, 640), (8, 384), (1, 896), (6, 448), (3, 576)],
                           score=lambda out: float(out.logits.argmax(1).float().mean().item()))


def dac_16khz_infer(torch):
    """The DAC 16 kHz audio codec through transformers (`DacModel(DacConfig())`: a convolutional encoder of
    residual units with Snake activations downsampling 512-fold to 1,024 channels, residual vector quantization with
    9 codebooks of 1,024 factorized 8-dimensional codes, a decoder from 1,536 channels upsampling back, random
    weights) in fp32, under `torch.no_grad()`, encoding and decoding 8 batches of mono waveforms (batch, seconds)
    from (1, 20) to (16, 1), scored by the mean absolute output. Written in the forty-fifth session, before it was
    recorded, in a seventh untargeted held-out batch of the default policy."""
    from transformers import DacConfig, DacModel

    torch.manual_seed(0)
    batches = [(4, 3), (1, 20), (16, 1), (2, 8), (8, 2), (1, 12), (6, 4), (3, 6)]  # waveforms, seconds
    return codec_round_trips(torch, DacModel(DacConfig()).eval(), batches)


def univnet_vocoder_infer(torch):
    """A UnivNet-c32 vocoder through transformers (`UnivNetModel(UnivNetConfig())`: 64 channels of Gaussian noise
    per mel frame, 32 hidden channels upsampled 8, 8 and 4 times (256 samples a frame) by three location-variable
    convolution blocks, each with a kernel predictor that turns the 100-bin mel frames into per-frame kernels and
    biases for its 4 gated residual layers of dilations 1, 3, 9 and 27, random weights) in fp32, under
    `torch.no_grad()`, 10 batches of (spectrograms, frames) from (1, 2,000) to (32, 100), noise drawn per batch,
    scored by the mean absolute waveform. Written in the forty-fifth session, before it was recorded, in a seventh
    untargeted held-out batch of the default policy."""
    from transformers import UnivNetConfig, UnivNetModel

    torch.manual_seed(0)
    config = UnivNetConfig()
    model = UnivNetModel(config).eval()
    batches = [(8, 400), (1, 2000), (32, 100), (4, 800), (16, 250), (2, 1200), (24, 160), (6, 600), (12, 320),
               (3, 1000)]  # spectrograms, frames
    start_recording(torch)
    model = model.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    checksum = 0.0
    with torch.no_grad():
        for batch, frames in batches:
            mel = torch.randn(batch, frames, config.num_mel_bins, device="cuda", generator=gen)
            noise = torch.randn(batch, frames, config.model_in_channels, device="cuda", generator=gen)
            waveforms = model(input_features=mel, noise_sequence=noise).waveforms
            checksum += float(waveforms.abs().mean().item())
            del mel, noise, waveforms
    del model
    return {"batches": batches, "checksum": checksum}


def smollm3_small_greedy_generate(torch):
    """A small SmolLM3-style decoder through transformers (`SmolLM3ForCausalLM(SmolLM3Config(...))`: 6 layers 512
    wide, 8 heads sharing 2 key-value heads, rotary embeddings left out of every third layer (NoPE layers), tied
    embeddings, 32k vocabulary), fp16, greedy `generate` for 4 rounds (batch, prompt, new tokens) from (1, 896, 64)
    to (20, 64, 32). Written in the forty-fifth session, before it was recorded, in a seventh untargeted held-out
    batch of the default policy."""
    from transformers import SmolLM3Config, SmolLM3ForCausalLM

    torch.manual_seed(0)
    config = SmolLM3Config(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                           num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048,
                           no_rope_layer_interval=3, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(6, 320, 48), (1, 896, 64), (20, 64, 32), (10, 192, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, SmolLM3ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def arcee_two_stream_sample_generate(torch):
    """Two small Arcee-style decoders through transformers (`ArceeForCausalLM(ArceeConfig(...))`: 6 layers 512 wide,
    8 heads sharing 4 key-value heads, rotary embeddings, an ungated feed-forward of 2,048 with squared ReLU, 32k
    vocabulary) serving in turn on two streams of their own, fp16, `generate` with top-k sampling (50): 4 rounds,
    each a request to the first model on its stream and one to the second on the other, (batch, prompt, new tokens)
    from (2, 512, 48) to (20, 48, 28); each stream waits for the default stream before its request and the default
    stream for it after (`wait_stream`; `sample_on_two_streams`, as two_stream_sample_generate). Written in the
    forty-fifth session, before it was recorded, in a seventh untargeted held-out batch of the default policy."""
    from transformers import ArceeConfig, ArceeForCausalLM

    torch.manual_seed(0)
    config = ArceeConfig(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [((4, 256, 40), (2, 448, 48)), ((16, 64, 32), (8, 160, 40)), ((2, 512, 48), (12, 96, 32)),
              ((6, 320, 40), (20, 48, 28))]  # per model: batch, prompt, new tokens
    return sample_on_two_streams(torch, [ArceeForCausalLM(config).eval(), ArceeForCausalLM(config).eval()], rounds,
                                 config.vocab_size, low=3)


def dla34_prefetch_train_bf16(torch):
    """A DLA-34 image classifier through timm (`timm.create_model('dla34', pretrained=False, num_classes=100)`: deep
    layer aggregation, a full-resolution 7 x 7 stem and two convolution levels of 16 and 32 channels, then four
    levels of residual basic blocks to 512 channels merged by iterative aggregation trees whose root nodes
    concatenate their children and fuse them with a 1 x 1 convolution (max-pooled shortcuts), BatchNorm, about 15 M
    parameters, 100 classes) trained with bf16 autocast, AdamW, 12 steps of (batch, image side) from (8, 640) to
    (128, 192), sides multiples of 32 as the trees' pooled shortcuts need, on two streams: the input pipeline runs
    on a copy stream one batch ahead (uint8 batches from pinned host memory copied and normalised there, labels
    drawn there) and hands each batch to the default stream (events and `record_stream`), as
    textnet_prefetch_train_bf16 does. Written in the forty-sixth session, before it was recorded, in an eighth
    untargeted held-out batch of the default policy."""
    steps = [(48, 320), (8, 640), (96, 224), (16, 512), (64, 288), (12, 576), (32, 384), (128, 192), (10, 608),
             (40, 352), (24, 448), (80, 256)]  # batch, image side
    return timm_prefetch_train_bf16(torch, "dla34", steps,
                                    lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05))


def timm_prefetch_train_bf16(torch, name, steps, make_optimizer):
    """The timm classifier `name` (random weights after seeding, 100 classes) trained by `prefetch_train_bf16` over
    `steps` with the optimizer `make_optimizer` makes, on the cross-entropy of its logits: the batches prefetched on a
    copy stream."""
    import timm

    F = torch.nn.functional
    torch.manual_seed(0)
    return prefetch_train_bf16(torch, timm.create_model(name, pretrained=False, num_classes=100), steps,
                               make_optimizer, lambda model, images, labels: F.cross_entropy(model(images), labels))


def xcit_tiny_train_bf16(torch):
    """An XCiT-T12/16 image classifier through timm
    (`timm.create_model('xcit_tiny_12_p16_224', pretrained=False, num_classes=100)`: a convolutional patch embedding of
    four stride-2 3 x 3 convolutions with BatchNorm, a Fourier position encoding made for each image size, 12 layers
    192 wide whose cross-covariance attention mixes the 48 channels of each of 4 heads (a 48 x 48 attention over
    L2-normalised queries and keys with a learned temperature, whatever the number of patches), each followed by a
    local patch interaction (two 3 x 3 depthwise convolutions, BatchNorm between) and an MLP of 768, then 2
    class-attention layers, about 7 M parameters, 100 classes) trained with bf16 autocast (`timm_train_bf16`),
    AdamW, 12 steps of (batch, image side) from (16, 448) to (192, 128), about 13,000 patches a step. Written in the
    forty-sixth session, before it was recorded, in an eighth untargeted held-out batch of the default policy."""
    sides = [(64, 224), (128, 160), (32, 320), (96, 192), (16, 448), (48, 256), (192, 128), (24, 384), (80, 208),
             (40, 288), (112, 176), (56, 240)]  # batch, image side (multiples of 16)
    return timm_train_bf16(torch, "xcit_tiny_12_p16_224", sides,
                           lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05))


def timm_train_bf16(torch, name, sides, make_optimizer):
    """The timm classifier `name` (random weights after seeding, 100 classes) trained by `train_classifier` with bf16
    autocast, a step per (batch, image side) of `sides`, with the optimizer `make_optimizer` makes. Returns the
    input shapes and the losses."""
    import timm

    torch.manual_seed(0)
    shapes = [(batch, 3, side, side) for batch, side in sides]
    losses = train_classifier(torch, timm.create_model(name, pretrained=False, num_classes=100), shapes,
                              make_optimizer, classes=100, autocast_dtype=torch.bfloat16)
    return {"shapes": shapes, "losses": losses}


def hrnet_w18_small_half_infer(torch):
    """An HRNet-W18-Small image classifier through timm
    (`timm.create_model('hrnet_w18_small', pretrained=False, num_classes=1000)`: a stem of two stride-2 3 x 3
    convolutions to 64 channels, a bottleneck stage, then stages of 2, 3 and 4 parallel branches at a quarter, an
    eighth, a sixteenth and a thirty-second of the image side (16, 32, 64 and 128 channels, two basic blocks each)
    that exchange features after every stage (strided convolutions down, 1 x 1 convolutions and nearest upsampling
    up, summed), a classification head of bottleneck increments merging the branches into 2,048 channels,
    BatchNorm, about 13 M parameters), moved to the GPU in fp32 and converted there (`infer_converted`), 8 (batch,
    image side) shapes from (1, 640) to (64, 192), each twice, sides multiples of 32 as the branches' upsampling
    needs. Written in the forty-sixth session, before it was recorded, in an eighth untargeted held-out batch of the
    default policy."""
    import timm

    return infer_converted(torch, lambda: timm.create_model("hrnet_w18_small", pretrained=False, num_classes=1000),
                           [(8, 256), (1, 640), (32, 224), (4, 448), (16, 320), (2, 512), (64, 192), (12, 384)])


def cait_xxs24_half_infer(torch):
    """A CaiT-XXS24 image classifier through timm
    (`timm.create_model('cait_xxs24_224', pretrained=False, num_classes=1000)`: 196 patches of 16 pixels of a
    224-pixel image, 24 layers 192 wide whose attention mixes its 4 heads linearly before and after the softmax
    (talking heads: whole batch x heads x 196 x 196 score tensors, no fused attention), LayerScale, then 2
    class-attention layers in which only the class token attends, about 12 M parameters), moved to the GPU in fp32
    and converted there (`infer_converted`), 8 batches from 1 to 256 images of 224 pixels (the position embeddings
    are fixed), each twice. Written in the forty-sixth session, before it was recorded, in an eighth untargeted
    held-out batch of the default policy."""
    import timm

    return infer_converted(torch, lambda: timm.create_model("cait_xxs24_224", pretrained=False, num_classes=1000),
                           [(32, 224), (2, 224), (128, 224), (8, 224), (64, 224), (1, 224), (256, 224), (16, 224)])


def sequencer2d_s_infer(torch):
    """A Sequencer2D-S image classifier through timm
    (`timm.create_model('sequencer2d_s', pretrained=False, num_classes=1000)`: a 7 x 7 patch embedding to 192
    channels, then 4, 3, 8 and 3 blocks (192 channels, then 384 after a stride-2 patch merging) whose token mixing
    is a bidirectional LSTM run down every column of the patch grid and another along every row (48, then 96 hidden
    units each way, cuDNN, batch x columns and batch x rows sequences), concatenated and projected back, each
    followed by an MLP of ratio 3, about 28 M parameters) kept in fp32, 8 (batch, image side) shapes from (1, 448)
    to (48, 168) of random fp32 images, each twice (`infer_images`), scored by the summed top softmax
    probabilities. Written in the forty-sixth session, before it was recorded, in an eighth untargeted held-out batch
    of the default policy."""
    return timm_fp32_infer(torch, "sequencer2d_s",
                           [(8, 224), (1, 448), (32, 224), (4, 336), (16, 280), (2, 392), (48, 168), (12, 252)])


def timm_fp32_infer(torch, name, shapes):
    """The timm classifier `name` (random weights, 1,000 classes) kept in fp32 on the GPU, over random fp32 images
    of the (batch, side) `shapes`, each twice (`infer_images`), scored by the summed top softmax probabilities."""
    import timm

    torch.manual_seed(0)
    checksum = infer_images(torch, timm.create_model(name, pretrained=False, num_classes=1000), shapes,
                            lambda m: m.cuda().eval(), image_score, image_dtype=torch.float32)
    return {"shapes": shapes, "checksum": checksum}


def dpn68_infer(torch):
    """A DPN-68 image classifier through timm (`timm.create_model('dpn68', pretrained=False, num_classes=1000)`: a
    dual path network, a stride-2 3 x 3 stem of 10 channels and max pooling, then 3, 4, 12 and 3 blocks of grouped
    (32 groups) pre-activation bottlenecks whose output splits into a residual path added to the block's input and a
    densely connected path concatenated to it (16, 32, 32 and 64 more channels a block, so every block allocates a
    wider concatenation), about 13 M parameters) kept in fp32, 8 (batch, image side) shapes from (1, 512) to (64,
    192) of random fp32 images, each twice (`infer_images`), scored by the summed top softmax probabilities. Written
    in the forty-sixth session, before it was recorded, in an eighth untargeted held-out batch of the default
    policy."""
    return timm_fp32_infer(torch, "dpn68",
                           [(8, 256), (1, 512), (32, 224), (4, 384), (16, 288), (2, 448), (64, 192), (12, 320)])


def exaone4_small_greedy_generate(torch):
    """A small EXAONE-4-style decoder through transformers (`Exaone4ForCausalLM(Exaone4Config(...))`: 6 layers 512
    wide, 8 heads of 64 sharing 2 key-value heads with RMS-normalised queries and keys, the first two of every three
    layers attending within a sliding window of 256 tokens with rotary embeddings and the third to every token
    without position embeddings, each sublayer's output RMS-normalised before the residual sum (no norm before it),
    a cache that keeps only the last 255 tokens of the sliding layers, 32k vocabulary), fp16, greedy `generate` for
    4 rounds (batch, prompt, new tokens) from (1, 1024, 64) to (16, 96, 32), most prompts longer than the window.
    Written in the forty-sixth session, before it was recorded, in an eighth untargeted held-out batch of the default
    policy."""
    from transformers import Exaone4Config, Exaone4ForCausalLM

    torch.manual_seed(0)
    config = Exaone4Config(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                           num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048,
                           sliding_window=256, sliding_window_pattern=3,
                           layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(4, 384, 48), (1, 1024, 64), (16, 96, 32), (8, 640, 40)]  # batch, prompt, new tokens
    return generate_rounds(torch, Exaone4ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def jetmoe_small_sample_generate(torch):
    """A small JetMoE-style decoder through transformers (`JetMoeForCausalLM(JetMoeConfig(...))`: 6 layers 512 wide
    whose attention is a mixture of 8 attention experts (each token routed to 2 of them, each expert with its own
    query and output projections for 4 heads of 64, so 8 query heads over 4 shared key-value heads) and whose
    feed-forward is a mixture of 8 gated experts of 1,024 (top 2), the tokens gathered per expert and added back
    (`index_add`) in both, the experts' token counts read on the host in every layer, tied 32k embeddings), fp16,
    `generate` sampling the 50 likeliest tokens for 4 rounds (batch, prompt, new tokens) from (2, 640, 56) to (20,
    64, 32). Written in the forty-sixth session, before it was recorded, in an eighth untargeted held-out batch of
    the default policy."""
    from transformers import JetMoeConfig, JetMoeForCausalLM

    torch.manual_seed(0)
    config = JetMoeConfig(vocab_size=32000, hidden_size=512, num_hidden_layers=6, num_key_value_heads=4,
                          kv_channels=64, intermediate_size=1024, num_local_experts=8, num_experts_per_tok=2,
                          max_position_embeddings=2048, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    # num_attention_heads is derived: num_key_value_heads x num_experts_per_tok = 8, and 512 / 8 = kv_channels
    rounds = [(8, 192, 40), (2, 640, 56), (20, 64, 32), (4, 448, 48)]  # batch, prompt, new tokens
    return generate_rounds(torch, JetMoeForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=0)


def ghostnet_half_infer(torch):
    """A GhostNet-1.0 image classifier through timm (`timm.create_model('ghostnet_100', pretrained=False,
    num_classes=1000)`: ghost bottlenecks whose modules make half their output channels with a 1 x 1 convolution and
    the other half from those by a cheap 3 x 3 depthwise convolution, concatenated, squeeze-and-excitation in some
    blocks, BatchNorm, a 1,280-wide head, about 5 M parameters), moved to the GPU in fp32 and converted there
    (`infer_converted`), 8 (batch, image side) shapes from (1, 640) to (96, 160), each twice. Written in the
    forty-seventh session, before it was recorded, in a ninth untargeted held-out batch of the default policy."""
    import timm

    return infer_converted(torch, lambda: timm.create_model("ghostnet_100", pretrained=False, num_classes=1000),
                           [(16, 256), (1, 640), (64, 224), (4, 480), (32, 288), (2, 544), (96, 160), (8, 384)])


def rexnet_prefetch_train_bf16(torch):
    """A ReXNet-1.0 image classifier through timm (`timm.create_model('rexnet_100', pretrained=False,
    num_classes=100)`: inverted residual blocks whose channels grow linearly block by block (16 to 180, then a
    1,280-wide head), SiLU and ReLU6, squeeze-and-excitation, BatchNorm, a residual over the channels the block had
    (the new ones padded), about 3.6 M parameters, 100 classes) trained with bf16 autocast, SGD with Nesterov
    momentum, 12 steps of (batch, image side) from (8, 512) to (160, 160), on two streams: the input pipeline runs on
    a copy stream one batch ahead (`timm_prefetch_train_bf16`, as dla34_prefetch_train_bf16). Written in the
    forty-seventh session, before it was recorded, in a ninth untargeted held-out batch of the default policy."""
    steps = [(64, 224), (8, 512), (128, 192), (24, 384), (96, 256), (16, 448), (48, 320), (160, 160), (12, 480),
             (32, 352), (80, 288), (40, 416)]  # batch, image side
    return timm_prefetch_train_bf16(torch, "rexnet_100", steps,
                                    lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True,
                                                                   weight_decay=1e-4))


def res2net50_infer(torch):
    """A Res2Net-50 (14w x 8s) image classifier through timm (`timm.create_model('res2net50_14w_8s',
    pretrained=False, num_classes=1000)`: ResNet-50's layout whose bottleneck 3 x 3 convolution is split into 8 scales
    of 14 channels a width step, each scale's convolution taking the sum of its split and the scale before, the
    outputs concatenated, BatchNorm, about 25 M parameters) kept in fp32 (`timm_fp32_infer`), 8 (batch, image side)
    shapes from (1, 576) to (48, 192). Written in the forty-seventh session, before it was recorded, in a ninth
    untargeted held-out batch of the default policy."""
    return timm_fp32_infer(torch, "res2net50_14w_8s",
                           [(8, 256), (1, 576), (32, 224), (4, 416), (16, 320), (2, 480), (48, 192), (12, 288)])


def edgenext_xs_train_bf16(torch):
    """An EdgeNeXt-XS image classifier through timm (`timm.create_model('edgenext_x_small', pretrained=False,
    num_classes=100)`: four stages of 32, 64, 100 and 192 channels, convolution encoders (depthwise convolutions of
    kernels 3 to 9, LayerNorm, an MLP of 4) followed in the last three stages by split depth-wise transposed
    attention encoders (channel groups mixed by depthwise convolutions, then attention across channels, not tokens,
    with a Fourier position encoding made for each image size), about 2.3 M parameters, 100 classes) trained with
    bf16 autocast (`timm_train_bf16`), AdamW, 12 steps of (batch, image side) from (16, 512) to (192, 128), sides
    multiples of 32. Written in the forty-seventh session, before it was recorded, in a ninth untargeted held-out
    batch of the default policy."""
    sides = [(64, 256), (16, 512), (128, 192), (32, 384), (96, 224), (24, 448), (192, 128), (48, 320), (20, 480),
             (80, 288), (40, 352), (112, 160)]  # batch, image side
    return timm_train_bf16(torch, "edgenext_x_small", sides,
                           lambda params: torch.optim.AdamW(params, lr=2e-3, weight_decay=0.05))


def gcvit_xxtiny_half_infer(torch):
    """A GC ViT-XXTiny image classifier through timm (`timm.create_model('gcvit_xxtiny', pretrained=False,
    num_classes=1000)`: a convolutional stem, then four stages of 64 to 512 channels alternating local window
    attention (windows of 7 x 7 patches) and global context attention (queries made once per stage from the whole
    image by fused MBConv downsampling and shared by every window), relative position biases, about 12 M
    parameters), moved to the GPU in fp32 and converted there (`infer_converted`), 8 batches from 1 to 128 images of
    224 pixels (the windows fix the side), each twice. Written in the forty-seventh session, before it was recorded,
    in a ninth untargeted held-out batch of the default policy."""
    import timm

    return infer_converted(torch, lambda: timm.create_model("gcvit_xxtiny", pretrained=False, num_classes=1000),
                           [(16, 224), (1, 224), (64, 224), (4, 224), (128, 224), (2, 224), (32, 224), (8, 224)])


def nystromformer_classify_infer(torch):
    """Sequence classification with a small Nystromformer encoder through transformers
    (`NystromformerForSequenceClassification(NystromformerConfig(...))`: 6 layers 384 wide, 6 heads whose attention
    is approximated through 64 landmarks (segment means of the queries and keys) and an iterative pseudo-inverse of
    the 64 x 64 landmark kernel, plus a depthwise convolution of 33 over the values, 1,536 feed-forward, 30k
    vocabulary, 3 labels), fp16, 12 batches of 512-token sentences (the landmarks fix the length) from 2 to 96
    sentences, padded on the right (`classify_padded`). Written in the forty-seventh session, before it was
    recorded, in a ninth untargeted held-out batch of the default policy."""
    from transformers import NystromformerConfig, NystromformerForSequenceClassification

    torch.manual_seed(0)
    config = NystromformerConfig(vocab_size=30000, hidden_size=384, num_hidden_layers=6, num_attention_heads=6,
                                 intermediate_size=1536, max_position_embeddings=1024, segment_means_seq_len=512,
                                 num_landmarks=64, conv_kernel_size=33, pad_token_id=0, num_labels=3)
    batches = [(16, 512), (2, 512), (64, 512), (8, 512), (96, 512), (4, 512), (32, 512), (12, 512), (48, 512),
               (6, 512), (24, 512), (80, 512)]
    labelled = classify_padded(torch, NystromformerForSequenceClassification(config).eval(), config.vocab_size,
                               batches, forward=masked_logits, count=rows_labelled(2))
    return {"batches": batches, "labelled": labelled}


def stablelm_small_sample_generate(torch):
    """A small StableLM-style decoder through transformers (`StableLmForCausalLM(StableLmConfig(...))`: 6 layers 512
    wide, 8 heads of 64 with per-head LayerNorm on the queries and keys and rotary embeddings on a quarter of each
    head, attention and MLP (1,536, SiLU gated) in parallel from one LayerNorm, 32k vocabulary), fp16, `generate`
    sampling the 40 likeliest tokens for 4 rounds (batch, prompt, new tokens) from (2, 768, 48) to (24, 48, 32).
    Written in the forty-seventh session, before it was recorded, in a ninth untargeted held-out batch of the default
    policy."""
    from transformers import StableLmConfig, StableLmForCausalLM

    torch.manual_seed(0)
    config = StableLmConfig(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                            num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048,
                            qk_layernorm=True, use_parallel_residual=True, pad_token_id=0, bos_token_id=1,
                            eos_token_id=2)
    rounds = [(6, 256, 40), (2, 768, 48), (24, 48, 32), (10, 160, 36)]  # batch, prompt, new tokens
    return generate_rounds(torch, StableLmForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=40, pad_token_id=0)


def jamba_small_greedy_generate(torch):
    """A small Jamba-style hybrid decoder through transformers (`JambaForCausalLM(JambaConfig(...))`: 8 layers 512
    wide, one attention layer (8 heads sharing 2 key-value heads, no position embeddings) in every four and Mamba
    layers otherwise (state 16, expansion 2, run by transformers' own PyTorch scan: `use_mamba_kernels=False`), every
    second layer's MLP a mixture of 4 gated experts of 1,024 (top 2), a cache holding both the key-value pairs and the
    Mamba states, 32k vocabulary), fp16, greedy `generate` for 4 rounds (batch, prompt, new tokens) from (1, 384,
    48) to (12, 48, 32). Written in the forty-seventh session, before it was recorded, in a ninth untargeted held-out
    batch of the default policy."""
    from transformers import JambaConfig, JambaForCausalLM

    torch.manual_seed(0)
    config = JambaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1024, num_hidden_layers=8,
                         num_attention_heads=8, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                         expert_layer_period=2, expert_layer_offset=1, attn_layer_period=4, attn_layer_offset=2,
                         use_mamba_kernels=False, max_position_embeddings=2048, pad_token_id=0, bos_token_id=1,
                         eos_token_id=2)
    rounds = [(4, 160, 40), (1, 384, 48), (12, 48, 32), (6, 256, 36)]  # batch, prompt, new tokens
    return generate_rounds(torch, JambaForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def mixnet_s_train_bf16(torch):
    """A MixNet-S image classifier through timm (`timm.create_model('mixnet_s', pretrained=False, num_classes=100)`:
    inverted residual blocks whose depthwise convolution splits its channels into groups of kernels 3, 5, 7 and 9
    (and whose expansion and projection are grouped too), concatenated, squeeze-and-excitation, Swish, BatchNorm,
    about 2.7 M parameters, 100 classes) trained with bf16 autocast (`timm_train_bf16`), RMSprop, 12 steps of (batch,
    image side) from (12, 512) to (224, 128). Written in the forty-seventh session, before it was recorded, in a tenth
    untargeted held-out batch of the default policy."""
    sides = [(64, 224), (12, 512), (160, 160), (32, 320), (96, 192), (20, 448), (224, 128), (48, 288), (16, 480),
             (80, 256), (40, 352), (128, 176)]  # batch, image side
    return timm_train_bf16(torch, "mixnet_s", sides,
                           lambda params: torch.optim.RMSprop(params, lr=1e-3, alpha=0.9, momentum=0.9, eps=1e-3))


def starnet_s1_prefetch_train_bf16(torch):
    """A StarNet-S1 image classifier through timm (`timm.create_model('starnet_s1', pretrained=False,
    num_classes=100)`: four stages of 24 to 192 channels whose blocks multiply two 1 x 1 projections of a depthwise
    7 x 7 convolution's output element by element (the "star" operation) between two more depthwise convolutions,
    BatchNorm, about 2.9 M parameters, 100 classes) trained with bf16 autocast, AdamW, 12 steps of (batch, image
    side) from (8, 576) to (192, 160), on two streams: the input pipeline runs on a copy stream one batch ahead
    (`timm_prefetch_train_bf16`). Written in the forty-seventh session, before it was recorded, in a tenth untargeted
    held-out batch of the default policy."""
    steps = [(96, 224), (8, 576), (160, 192), (24, 416), (64, 288), (12, 512), (48, 352), (192, 160), (16, 448),
             (40, 384), (128, 256), (32, 320)]  # batch, image side
    return timm_prefetch_train_bf16(torch, "starnet_s1", steps,
                                    lambda params: torch.optim.AdamW(params, lr=3e-3, weight_decay=0.025))


def inception_next_tiny_half_infer(torch):
    """An InceptionNeXt-T image classifier through timm (`timm.create_model('inception_next_tiny', pretrained=False,
    num_classes=1000)`: ConvNeXt's layout whose 7 x 7 depthwise convolution is split by channels into an identity
    branch, a 3 x 3 square kernel and two 1 x 11 and 11 x 1 bands, concatenated, BatchNorm, an MLP head, about 28 M
    parameters), moved to the GPU in fp32 and converted there (`infer_converted`), 8 (batch, image side) shapes from
    (1, 608) to (64, 192), each twice. Written in the forty-seventh session, before it was recorded, in a tenth
    untargeted held-out batch of the default policy."""
    import timm

    return infer_converted(torch, lambda: timm.create_model("inception_next_tiny", pretrained=False,
                                                            num_classes=1000),
                           [(16, 256), (1, 608), (48, 224), (4, 448), (24, 320), (2, 512), (64, 192), (8, 384)])


def tresnet_m_half_infer(torch):
    """A TResNet-M image classifier through timm (`timm.create_model('tresnet_m', pretrained=False,
    num_classes=1000)`: a space-to-depth stem (the image folded into 48 channels at a quarter of its side), basic
    blocks then bottlenecks with anti-aliased downsampling, squeeze-and-excitation in the first three stages, leaky
    ReLU, BatchNorm, about 31 M parameters), moved to the GPU in fp32 and converted there (`infer_converted`), 8
    (batch, image side) shapes from (1, 640) to (96, 160), each twice. Written in the forty-seventh session, before it
    was recorded, in a tenth untargeted held-out batch of the default policy."""
    import timm

    return infer_converted(torch, lambda: timm.create_model("tresnet_m", pretrained=False, num_classes=1000),
                           [(12, 288), (1, 640), (48, 224), (4, 480), (24, 320), (2, 544), (96, 160), (8, 384)])


def mambaout_femto_infer(torch):
    """A MambaOut-Femto image classifier through timm (`timm.create_model('mambaout_femto', pretrained=False,
    num_classes=1000)`: Mamba's gated block without the state-space model, channels-last throughout, each block a
    LayerNorm, a projection to two gates, a 7 x 7 depthwise convolution on part of one of them and their product
    projected back, four stages of 48 to 288 channels, about 7 M parameters) kept in fp32 (`timm_fp32_infer`), 8
    (batch, image side) shapes from (1, 640) to (96, 160). Written in the forty-seventh session, before it was
    recorded, in a tenth untargeted held-out batch of the default policy."""
    return timm_fp32_infer(torch, "mambaout_femto",
                           [(16, 256), (1, 640), (64, 224), (4, 448), (32, 288), (2, 512), (96, 160), (8, 384)])


def megatron_bert_classify_infer(torch):
    """Sequence classification with a small Megatron-BERT encoder through transformers
    (`MegatronBertForSequenceClassification(MegatronBertConfig(...))`: BERT with its LayerNorms before each
    sublayer rather than after, and one more at the end, 8 layers 512 wide, 8 heads, 2,048 feed-forward, 29k
    vocabulary, 3 labels), fp16, 12 batches of (sentences, tokens) from (192, 32) to (4, 512), padded on the right
    (`classify_padded`). Written in the forty-seventh session, before it was recorded, in a tenth untargeted
    held-out batch of the default policy."""
    from transformers import MegatronBertConfig, MegatronBertForSequenceClassification

    torch.manual_seed(0)
    config = MegatronBertConfig(vocab_size=29056, hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
                                intermediate_size=2048, max_position_embeddings=512, pad_token_id=0, num_labels=3)
    batches = [(48, 128), (192, 32), (4, 512), (24, 256), (96, 64), (8, 448), (64, 96), (6, 512), (32, 192),
               (128, 48), (12, 384), (160, 40)]
    labelled = classify_padded(torch, MegatronBertForSequenceClassification(config).eval(), config.vocab_size,
                               batches, forward=masked_logits, count=rows_labelled(1))
    return {"batches": batches, "labelled": labelled}


def ernie4_5_small_greedy_generate(torch):
    """A small ERNIE-4.5-style decoder through transformers (`Ernie4_5ForCausalLM(Ernie4_5Config(...))`: 6 layers 512
    wide, 8 query heads of 64 sharing 2 key-value heads, rotary embeddings, SiLU-gated MLP of 1,536, RMSNorm, tied
    32k embeddings), fp16, greedy `generate` for 4 rounds (batch, prompt, new tokens) from (1, 896, 56) to (20, 64,
    32). Written in the forty-seventh session, before it was recorded, in a tenth untargeted held-out batch of the
    default policy."""
    from transformers import Ernie4_5Config, Ernie4_5ForCausalLM

    torch.manual_seed(0)
    config = Ernie4_5Config(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                            num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=2048,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(6, 320, 40), (1, 896, 56), (20, 64, 32), (10, 192, 36)]  # batch, prompt, new tokens
    return generate_rounds(torch, Ernie4_5ForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           do_sample=False, pad_token_id=0)


def apertus_small_sample_generate(torch):
    """A small Apertus-style decoder through transformers (`ApertusForCausalLM(ApertusConfig(...))`: 6 layers 512
    wide, 8 query heads of 64 sharing 4 key-value heads with RMS-normalised queries and keys, rotary embeddings, an
    ungated MLP of 2,048 with the xIELU activation (learned parameters per layer), RMSNorm, 32k vocabulary), fp16,
    `generate` sampling the 50 likeliest tokens for 4 rounds (batch, prompt, new tokens) from (2, 640, 48) to (24,
    48, 28). Written in the forty-seventh session, before it was recorded, in a tenth untargeted held-out batch of the
    default policy."""
    from transformers import ApertusConfig, ApertusForCausalLM

    torch.manual_seed(0)
    config = ApertusConfig(vocab_size=32000, hidden_size=512, intermediate_size=2048, num_hidden_layers=6,
                           num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rounds = [(8, 224, 36), (2, 640, 48), (24, 48, 28), (4, 416, 44)]  # batch, prompt, new tokens
    return generate_rounds(torch, ApertusForCausalLM(config).eval(), rounds, config.vocab_size, low=3,
                           seed_each_round=True, do_sample=True, top_k=50, pad_token_id=0)


WORKLOADS = {f.__name__: f for f in (bert_infer, vit_train_amp, two_stream_train, llama_decode, unet_denoise,
                                     gpt2_medium_ckpt_train, t5_beam_generate, gpt2_sample_generate, moe_train,
                                     bert_finetune_dynamic, convnext_infer, detection_infer, dlrm_train,
                                     llama_hf_generate, opt_generate, gpt2_beam_generate, mla_generate,
                                     qwen_sample_generate, bart_beam_generate, neox_train_accum,
                                     resnet_multiscale_train, mistral_generate, t5_train_dynamic,
                                     efficientnet_train, swin_infer, llama_prefill_lengths,
                                     llama_partial_finetune, conv_autoencoder_infer, serving_continuous_batch,
                                     whisper_decode, clip_train, gnn_train, video_train, compiled_train,
                                     long_context_train, offload_train, lstm_train, speculative_decode, gan_train,
                                     fft_science, cuda_graph_infer, ppo_train, ssm_scan_train,
                                     tabular_mlp_train, resnet18_infer_small, vae_train, segmentation_train,
                                     bert_long_infer, diffusion_train, distill_train, lora_finetune,
                                     caption_generate, detection_train, sparse_embedding_train, mae_pretrain,
                                     wav2vec_train, pointnet_train, ema_train, int8_weight_only_decode,
                                     prefetch_stream_infer, grad_bucket_train, transformer_xl_train, nerf_train,
                                     fsdp_gather_train, lm_1b_train, llama_1b_generate, vit_large_train,
                                     lm_2_7b_train, lm_6_7b_train, resnet50_bigbatch_infer,
                                     resnet152_bigbatch_train, deeplab_hires_infer, roberta_mlm_train,
                                     paged_kv_serving, conformer_asr_train, unet3d_volume_train,
                                     vit_huge_bigbatch_infer, long_prompt_serving, latent_diffusion_sample,
                                     mobilenet_infer, dual_stream_infer, llama_padded_sample_generate,
                                     small_lm_train, cifar_resnet_train, minilm_embed_infer, vit_tiny_train,
                                     vocoder_infer, mixtral_sample_generate, static_cache_generate, knn_retrieval,
                                     gru_translate, simclr_train, gaussian_densify_train, packed_varlen_pretrain,
                                     nmt_transformer_train, histogram_boosting, resnet34_infer_mid,
                                     lraspp_segment_infer, distilbert_qa_infer, small_decoder_sample_generate,
                                     efficientnet_infer_small, regnet_train_small, distilgpt2_greedy_generate,
                                     t5_small_greedy_translate, gcn_sparse_train, kws_conv1d_train,
                                     bert_mini_embed_infer, small_unet_denoise_infer, squeezenet_infer,
                                     densenet_infer, vit_b32_infer, shufflenet_train_small,
                                     opt_small_sample_generate, bart_small_greedy_summarize,
                                     tiny_llama_greedy_generate, raft_flow_infer, sr_pixelshuffle_infer,
                                     model_sweep_train, neural_ode_train, keypoint_rcnn_infer,
                                     multi_model_serving, spectrogram_transformer_train, longformer_infer,
                                     model_swap_infer, eval_copy_train, ensemble_infer, adapter_switch_infer,
                                     teacher_late_distill, checkpoint_reload_train, bf16_direct_load_infer,
                                     gpt2_half_short_generate, two_llms_serving, vision_lazy_load_infer,
                                     bert_large_half_infer, sweep_cnn_train, clip_zero_shot_infer,
                                     t5_fp32_translate, dit_train, tts_autoregressive_infer, sam_prompt_infer,
                                     mobilenet_v2_half_infer, vit_varres_infer, two_tower_retrieval_train,
                                     perceiver_train, mnasnet_half_infer, googlenet_half_infer,
                                     shufflenet_half_infer, wide_resnet_half_infer, resnext_half_infer,
                                     gpt_neo_small_generate, bloom_small_sample_generate, bert_base_qa_infer,
                                     lstm_lm_sample_small, regnet_half_infer, vgg11_bn_half_infer,
                                     efficientnet_b1_half_infer, mobilenet_v3_train_small, distilroberta_infer,
                                     pythia_small_generate, t5_small_train, squeezenet_half_train_eval,
                                     resnet101_half_infer, mobilenet_v3_large_half_infer,
                                     convnext_tiny_train_small, electra_small_train, albert_base_infer,
                                     marian_small_generate, gpt2_small_train_bf16,
                                     resnet18_train_then_half_infer, efficientnet_v2s_half_infer,
                                     deberta_small_infer, llama_tiny_train_bf16, mobilenet_v3s_train_eval,
                                     blenderbot_small_beam_generate, wavenet_conv1d_train,
                                     gpt_bigcode_small_generate, resnet50_autocast_bf16_infer,
                                     phi_small_sample_generate, deit_small_half_infer, sac_replay_train,
                                     mpnet_sorted_embed_infer, m2m100_small_beam_generate,
                                     deeplabv3_mobilenet_half_infer, xlmr_finetune_dynamic_bf16,
                                     regnet_train_val_bf16, fno_darcy_train, graph_attention_train,
                                     mlp_mixer_train, vqvae_hires_train, vocab_250k_chunked_train, sr_hires_train,
                                     gp_cholesky_fit, voxel_cnn_train, lm_1_6b_varlen_train, vit_huge_train,
                                     t5_large_train, gpt2_tiny_sample_generate, llama_small_beam_generate,
                                     bert_tiny_ner_infer, inception_v3_half_infer, swin_t_train_mid,
                                     efficientnet_b3_train_mid, mamba_small_generate, segformer_infer,
                                     retinanet_infer, bert_large_mlm_train_mid, convnext_base_train_mid,
                                     gpt2_medium_beam_generate, wide_mlp_train, conv3d_volume_infer,
                                     naive_attention_infer, kmeans_chunked_fit, embedding_table_train,
                                     sr_conv_half_infer, fft_filter_small_infer, small_decoder_train,
                                     dense_solve_fit, deep_mlp_bigbatch_train, image_batch_preprocess,
                                     unet3d_small_half_infer, pointcloud_seg_train, hires_denoise_half_infer,
                                     gru_tagger_train, vit_b16_bigbatch_half_infer, embedding_bag_bigtable_train,
                                     lowrank_svd_fit, bigimage_conv_half_infer, matrix_chain_fp64_fit,
                                     lookup_table_infer, knn_bigbank_search,
                                     falcon_small_sample_generate, gemma_small_greedy_generate,
                                     mobilebert_qa_infer, hubert_ctc_infer, esm_protein_embed_infer,
                                     tcn_forecast_train, sinkhorn_ot_fit, capsule_routing_train,
                                     pipeline_stages_infer, stream_per_request_embed_infer, async_snapshot_train,
                                     side_eval_train, two_stream_sample_generate, prefetch_augment_train,
                                     small_cnn_cifar_train, distilbert_tiny_sentiment_infer, gru_char_sample_generate,
                                     t5_tiny_greedy_summarize, vit_tiny_half_infer, keyword_lstm_train,
                                     gptj_small_sample_generate, stablelm_small_greedy_generate,
                                     codegen_small_beam_generate, mbart_small_sample_translate,
                                     pegasus_small_greedy_summarize, deberta_small_classify_infer,
                                     swin_v2_tiny_half_infer, convnext_small_train_mid,
                                     starcoder2_small_sample_generate, olmo_small_greedy_generate,
                                     umt5_small_greedy_translate, roformer_classify_infer, maxvit_t_half_infer,
                                     resnext50_train_small, fcn_segment_half_infer, densenet121_train_small,
                                     gemma2_small_sample_generate, qwen3_small_greedy_generate,
                                     xglm_small_beam_generate, funnel_classify_infer, wide_resnet50_train_small,
                                     vit_l16_half_infer_small, alexnet_half_infer_bigbatch, ssdlite_detect_infer,
                                     qwen3_small_train_bf16, gemma2_small_train_bf16, starcoder2_small_train_bf16,
                                     olmo_small_train_bf16, efficientnet_b2_train_amp, mobilenet_v2_train_amp,
                                     vgg16_bn_train_amp_small, mnasnet_train_bf16_small,
                                     granite_small_sample_generate, olmo2_small_greedy_generate,
                                     cohere_small_sample_generate, mpt_small_greedy_generate,
                                     nemotron_small_sample_generate, led_small_greedy_summarize,
                                     distilbert_small_train_bf16, googlenet_train_small,
                                     biogpt_small_sample_generate, phi3_small_greedy_generate, fcos_detect_infer,
                                     dinov2_small_half_infer, mobilevit_small_train_bf16,
                                     convbert_small_train_bf16, beit_base_half_infer, modernbert_embed_infer,
                                     glm_small_greedy_generate, qwen2_moe_small_sample_generate,
                                     bigbird_embed_infer, canine_embed_infer, yolos_small_detect_infer,
                                     poolformer_s12_train_bf16, squeezebert_train_bf16, focalnet_tiny_half_infer,
                                     olmoe_small_sample_generate, longt5_small_greedy_summarize,
                                     switch_small_greedy_translate, glpn_depth_half_infer, swin2sr_half_infer,
                                     pvt_v2_half_infer, cvt_13_train_bf16, rembert_train_bf16,
                                     convnextv2_tiny_train_bf16, levit_128s_half_infer, dpt_small_depth_half_infer,
                                     xlnet_embed_infer, encodec_24khz_infer, patchtst_forecast_train_bf16,
                                     gemma3_small_greedy_generate, swiftformer_xs_train_bf16,
                                     speech2text_small_train_bf16, hiera_tiny_half_infer,
                                     hgnetv2_b4_half_infer, fnet_base_embed_infer,
                                     siglip_base_zero_shot_infer, persimmon_small_sample_generate,
                                     lfm2_small_greedy_generate, timesformer_base_train_bf16,
                                     lilt_document_train_bf16, bit_50_half_infer, wavlm_base_ctc_half_infer,
                                     patchtsmixer_forecast_infer, vilt_vqa_infer, helium_small_greedy_generate,
                                     diffllama_small_sample_generate, textnet_prefetch_train_bf16,
                                     videomae_masked_train_bf16, sew_d_ctc_half_infer, upernet_resnet50_half_infer,
                                     dac_16khz_infer, univnet_vocoder_infer, smollm3_small_greedy_generate,
                                     arcee_two_stream_sample_generate, dla34_prefetch_train_bf16,
                                     xcit_tiny_train_bf16, hrnet_w18_small_half_infer, cait_xxs24_half_infer,
                                     sequencer2d_s_infer, dpn68_infer, exaone4_small_greedy_generate,
                                     jetmoe_small_sample_generate, ghostnet_half_infer,
                                     rexnet_prefetch_train_bf16, res2net50_infer, edgenext_xs_train_bf16,
                                     gcvit_xxtiny_half_infer, nystromformer_classify_infer,
                                     stablelm_small_sample_generate, jamba_small_greedy_generate,
                                     mixnet_s_train_bf16, starnet_s1_prefetch_train_bf16,
                                     inception_next_tiny_half_infer, tresnet_m_half_infer, mambaout_femto_infer,
                                     megatron_bert_classify_infer, ernie4_5_small_greedy_generate,
                                     apertus_small_sample_generate)}

# Seconds a workload may take (building its model on the CPU included); 110 unless named here.
TIMEOUTS = {"lm_6_7b_train": 400, "vit_huge_bigbatch_infer": 240, "lm_1_6b_varlen_train": 240,
            "vit_huge_train": 240, "t5_large_train": 240}


# ---------------------------------------------------------------- recording


def start_recording(torch):
    torch.cuda.init()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=MAX_ENTRIES)
    torch.cuda.reset_peak_memory_stats()


# Keys dropped from every dict of a snapshot: stack frames (not recorded anyway) and time stamps (see the module's
# documentation).
DROPPED_KEYS = frozenset(("frames", "time_us"))


def builtin_only(value):
    """The snapshot with every key of `DROPPED_KEYS` removed and anything not a builtin type written as its string,
    so the pickle needs no globals to load."""
    if isinstance(value, dict):
        return {builtin_only(k): builtin_only(v) for k, v in value.items() if k not in DROPPED_KEYS}
    if isinstance(value, list):
        return [builtin_only(v) for v in value]
    if isinstance(value, tuple):
        return tuple(builtin_only(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    return str(value)


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} in the snapshot")


def figures(snapshot):
    """allocs, peak live, PyTorch peak reserved and segment ops as traces/README.md defines them."""
    result = {"allocs": 0, "frees": 0, "dropped_frees": 0, "live_at_end": 0, "peak_live": 0, "peak_reserved": 0,
              "segment_ops": 0, "ooms": 0, "entries": 0, "streams": {}, "actions": {}}
    for device, trace in enumerate(snapshot["device_traces"]):
        open_allocs, live, reserved = {}, 0, 0
        result["entries"] += len(trace)
        for e in trace:
            action = e["action"]
            result["actions"][action] = result["actions"].get(action, 0) + 1
            if action == "alloc":
                open_allocs[e["addr"]] = e["size"]
                live += e["size"]
                result["allocs"] += 1
                stream = str(e["stream"])
                result["streams"][stream] = result["streams"].get(stream, 0) + 1
                result["peak_live"] = max(result["peak_live"], live)
            elif action == "free_completed":
                size = open_allocs.pop(e["addr"], None)
                if size is None:
                    result["dropped_frees"] += 1
                else:
                    live -= size
                    result["frees"] += 1
            elif action in ("segment_alloc", "segment_map"):
                reserved += e["size"]
                result["segment_ops"] += 1
                result["peak_reserved"] = max(result["peak_reserved"], reserved)
            elif action in ("segment_free", "segment_unmap"):
                reserved -= e["size"]
                result["segment_ops"] += 1
            elif action == "oom":
                result["ooms"] += 1
        result["live_at_end"] += len(open_allocs)
    result["overhead"] = result["peak_reserved"] / result["peak_live"] if result["peak_live"] else None
    return result


def versions(torch):
    """torch, CUDA, library versions, the GPU and the time of the recording (UTC)."""
    result = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
              "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    for module in ("transformers", "torchvision", "timm"):
        result[module] = sys.modules[module].__version__ if module in sys.modules else None
    return result


def record_one(name, outdir):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    started = time.time()
    details = WORKLOADS[name](torch)
    gc.collect()
    torch.cuda.synchronize()
    snapshot = builtin_only(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(enabled=None)
    buffer = io.BytesIO()
    with lzma.LZMAFile(buffer, mode="wb", preset=9 | lzma.PRESET_EXTREME) as xz:
        pickle.dump(snapshot, xz, protocol=4)
    data = buffer.getvalue()
    NoGlobals(io.BytesIO(lzma.decompress(data))).load()
    path = os.path.join(outdir, f"{name}.pickle.xz")
    with open(path, "wb") as f:
        f.write(data)
    result = figures(snapshot)
    result.update({
        "workload": name, "file": os.path.basename(path), "xz_bytes": len(data), "seconds": time.time() - started,
        "torch_max_allocated": torch.cuda.max_memory_allocated(), "torch_max_reserved": torch.cuda.max_memory_reserved(),
        "details": details, "doc": " ".join(WORKLOADS[name].__doc__.split()), "versions": versions(torch),
    })
    if result["entries"] >= MAX_ENTRIES:
        result["warning"] = "ring buffer full: entries were dropped"
    if len(data) > MAX_COMPRESSED_BYTES:
        result["warning"] = f"{len(data)} bytes compressed, over {MAX_COMPRESSED_BYTES}"
    print("RESULT " + json.dumps(result), flush=True)


# ---------------------------------------------------------------- driver


def main(argv):
    if len(argv) >= 3 and argv[0] == "--one":
        record_one(argv[1], argv[2])
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    outdir, names = argv[0], argv[1:] or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        print(f"unknown workloads {unknown}; known: {list(WORKLOADS)}", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    results, failed = [], []
    for name in names:
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, outdir],
                                  capture_output=True, text=True, timeout=TIMEOUTS.get(name, 110))
        except subprocess.TimeoutExpired:
            print(f"{name}: timed out", flush=True)
            failed.append(name)
            continue
        lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            print(f"{name}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}", flush=True)
            failed.append(name)
            continue
        r = json.loads(lines[-1][len("RESULT "):])
        results.append(r)
        print(f"{r['file']}: {r['allocs']} allocs, {r['frees']} frees, live at end {r['live_at_end']}, "
              f"dropped frees {r['dropped_frees']}, peak live {r['peak_live'] / MIB:.1f} MiB, "
              f"peak reserved {r['peak_reserved'] / MIB:.1f} MiB, overhead {r['overhead']:.3f}, "
              f"segment ops {r['segment_ops']}, streams {r['streams']}, {r['xz_bytes']} B xz, "
              f"{r['seconds']:.1f} s, torch max allocated {r['torch_max_allocated'] / MIB:.1f} MiB, "
              f"max reserved {r['torch_max_reserved'] / MIB:.1f} MiB {r.get('warning', '')}", flush=True)
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump({"results": results, "failed": failed}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
