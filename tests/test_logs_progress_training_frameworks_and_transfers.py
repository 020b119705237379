"""Progress recognised by counter shape: training frameworks, serving throughput and transfers.

Every line is real, copied from the public issue or pull-request thread named
beside it; none of these threads is in the corpus or in
``tests/test_logs_progress_shapes.py``. The set was collected and committed
before the classifier was run on it: 75 progress lines from 58 repositories
(Keras/TF, Lightning, HF Trainer and trl dicts, fairseq, Megatron/DeepSpeed-style
iteration lines, torchtitan, MaxText, verl, torchtune, mmengine, detectron2,
YOLO/YOLOX, PaddleOCR, catboost/xgboost rounds, llama.cpp/ollama timings,
vLLM/SGLang/TRT-LLM throughput, rsync/wget/curl/git/pip/conda/docker/rclone
transfers, dataset map bars, eval tables) and 39 look-alikes that are not
progress (version strings, config dumps with numbers, dates and times, sizes,
memory reports, shapes, host:port, hashes, checkpoint notices, a run's
one-off summary figures).

What a line has to be recognised by is its shape: a counter ``N/M`` (with
units, spaces, brackets or a percentage), a rate per unit time, elapsed and
remaining times, ``step=``/``iter=``/``epoch=`` fields, a metric dict with a
step. What keeps a look-alike out is that it has none of those, or has them
only as a setting (``total_num_steps: 102``, ``max tokens per GPU = 3584``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from eagle3tui.logs.eta import EtaTracker
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.progress import parse_progress
from tests.conftest import log_verdict, parsed_progress, thread_params

# (thread, line as posted, kind of stage that printed it)
PROGRESS_LINES: list[tuple[str, str, str]] = [
    ('https://github.com/keras-team/keras/issues/10790',
     '29696/57000 [==============>...............] - ETA: 1s - loss: 0.0372 - acc: 0.9886', 'task'),
    ('https://github.com/tensorflow/tensorflow/issues/45357',
     '28/32 [=========================>....] - ETA: 4s - loss: 0.0045 - accuracy: 0.8959', 'task'),
    ('https://github.com/ggml-org/llama.cpp/issues/34',
     'llama_perf_context_print:        eval time =  124973.60 ms /   127 runs   (  984.04 ms per token,     1.02 tokens per second)', 'task'),
    ('https://github.com/lemonade-sdk/llamacpp-rocm/issues/129',
     '12.46.239.704 I slot print_timing: id  0 | task 0 | n_decoded =  22968, tg =  30.51 t/s, tg_3s =  42.89 t/s', 'service'),
    ('https://github.com/abetlen/llama-cpp-python/issues/1830',
     'llama_print_timings: prompt eval time =   14805.69 ms /    13 tokens ( 1138.90 ms per token,     0.88 tokens per second)', 'task'),
    ('https://github.com/hustvl/LightningDiT/issues/73',
     'Epoch 0:   0%|          | 2/5005 [00:06<4:10:12,  0.33it/s, v_num=1, aeloss_step=1.41e+5, discloss_step=0.000]', 'task'),
    ('https://github.com/vllm-project/vllm/pull/8914',
     'Throughput: 89.27 requests/s, 22853.37 total tokens/s, 11426.69 output tokens/s', 'task'),
    ('https://github.com/vllm-project/vllm/issues/359',
     'Throughput: 5.99 requests/s', 'task'),
    ('https://github.com/pytorch/torchtitan/pull/3393',
     '[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%', 'task'),
    ('https://github.com/verl-project/verl/issues/7412',
     '(TaskRunner pid=222265) step:34 - global_seqlen/min:419336 - global_seqlen/max:497506 - global_seqlen/minmax_diff:78170 - global_seqlen/balanced_min:458960 - global_seqlen/balanced_max:458975 - global_seqlen/mean:458966.5 - actor/entropy:0.22266578674316406 - perf/mfu/actor_infer:0.0 - actor/pg_clipfrac:0.0007935191160472839', 'task'),
    ('https://github.com/facebookresearch/detectron2/issues/3023',
     '[05/10 04:24:12] d2.utils.events INFO:  eta: 1:21:58  iter: 1959  total_loss: 0  time: 0.6119  data_time: 0.0107  lr: 0.0082182  max_mem: 3911M', 'task'),
    ('https://github.com/buildfoundation/mainframer/issues/168',
     '    152,922,494  99%   19.38MB/s    0:00:07 (xfr#16291, to-chk=0/17711)', 'task'),
    ('https://github.com/containers/ramalama/pull/296',
     'Pulling 83e42c043d6c7816:  19% ▕###8                ▏ 118M/608M 3.85MB/s 02:13', 'task'),
    ('https://github.com/kubic-project/jenkins-library/pull/33',
     ' 32768K ........ ........ ........ ........  6%  453M 2s', 'task'),
    ('https://github.com/mapsforge/mapsforge-creator/pull/1',
     '   500K .......... .......... .......... .......... ..........  1% 10,5M 8s', 'task'),
    ('https://github.com/desktop/desktop/issues/16662',
     'Receiving objects:  45% (176/389), 2.94 MiB | 1.16 MiB/s', 'task'),
    ('https://github.com/google-github-actions/auth/issues/323',
     '2023-08-07T15:40:20.9574384Z Receiving objects:  45% (184/408)', 'task'),
    ('https://github.com/CovertLab/wcEcoli/issues/325',
     'Resolving deltas:   1% (400/38270)', 'task'),
    ('https://github.com/desktop/desktop/issues/13280',
     'remote: Compressing objects:  71% (424/597)', 'task'),
    ('https://github.com/curl/curl/issues/2161',
     ' 12 1431M   12  177M    0     0  2826k      0  0:08:38  0:01:04  0:07:34 2869k', 'task'),
    ('https://github.com/bitcoin-core/qa-assets/pull/201',
     '100 12.8M  100 12.8M    0     0  8907k      0  0:00:01  0:00:01 --:--:-- 8913k', 'task'),
    ('https://github.com/IrisRainbowNeko/genshin_auto_fish/issues/73',
     '     |                                | 778 kB 23 kB/s eta 2:10:07', 'task'),
    ('https://github.com/catboost/catboost/issues/1028',
     '34:     learn: 0.9508429        test: 0.8235312 best: 0.8356368 (1)     total: 17.5s    remaining: 1h 39m 38s', 'task'),
    ('https://github.com/catboost/catboost/issues/274',
     '0:      learn 0.6355974416passed: 17.4 sec      total: 3m 13s   remaining: 3h 42m 6s', 'task'),
    ('https://github.com/catboost/catboost/issues/664',
     '0:\tlearn: 56.2590112\ttest: 56.0987956\tbest: 56.0987956 (0)', 'task'),
    ('https://github.com/hongbo-miao/hongbomiao.com/pull/37684',
     "{'eps': 1, 'objective/kl': 10.507803916931152, 'objective/entropy': 99.79830932617188, 'objective/non_score_reward': -0.5253901481628418, 'objective/rlhf_reward': 1.1074223518371582, 'objective/scores': 1.6328125, 'policy/approxkl_avg': 0.002309529110789299, 'policy/clipfrac_avg': 0.00634765625, 'loss/policy_avg': 0.00090751051902771, 'loss/value_avg': 0.15319222211837769, 'val/clipfrac_avg': 0.0, 'policy/entropy_avg': 0.9802191257476807, 'val/ratio': 0.968413770198822, 'val/ratio_var': 6.904094334458932e-05, 'val/num_eos_tokens': 0, 'lr': 2.0634920634920634e-06, 'episode': 816, 'epoch': 0.91}", 'task'),
    ('https://github.com/AILab-CVC/YOLO-World/issues/165',
     '2024/01/24 02:47:35 - mmengine - INFO - Epoch(train)  [83][  50/2693]  base_lr: 2.0000e-03 lr: 3.9620e-04  eta: 14:57:00  time: 1.1114  data_time: 0.0995  memory: 27201  grad_norm: 1298.9029  loss: 1917.3984  loss_cls: 708.9749  loss_bbox: 572.2576  loss_dfl: 636.1659', 'task'),
    ('https://github.com/ultralytics/ultralytics/issues/1854',
     '    261/300      2.95G     0.3137     0.3809     0.7961          3        640: 100%|██████████| 246/246 [02:17<00:00,  1.79it/s]', 'task'),
    ('https://github.com/ultralytics/ultralytics/issues/1854',
     '                   all       3932       1523       0.98      0.986      0.994      0.987', 'task'),
    ('https://github.com/Megvii-BaseDetection/YOLOX/issues/830',
     '2021-10-18 20:51:36 | INFO     | yolox.core.trainer:246 - epoch: 8/40, iter: 1340/1816, mem: 34235Mb, iter_time: 1.270s, data_time: 0.548s, total_loss: 98.0, iou_loss: 4.6, l1_loss: 0.0, conf_loss: 92.7, cls_loss: 0.7, lr: 9.417e-03, size: 640, ETA: 1 day, 0:02:28', 'task'),
    ('https://github.com/vllm-project/vllm-ascend/issues/6734',
     'Loading safetensors checkpoint shards:   3% Completed | 3/99 [00:03<02:07,  1.33s/it]', 'service'),
    ('https://github.com/meta-llama/llama-cookbook/issues/613',
     '|arc 25 shot                            |      1|none            |    25|acc_norm   |↑  |0.3000|±  |0.0461|', 'task'),
    ('https://github.com/facebookresearch/SpinQuant/issues/6',
     '|arc_easy     |      1|none  |     0|acc     |0.7054|±  |0.0094|', 'task'),
    ('https://github.com/kohya-ss/sd-scripts/issues/2137',
     'steps:   1%|▋                                                        | 41/3280 [00:50<1:06:54,  1.24s/it, avr_loss=nan]', 'task'),
    ('https://github.com/kohya-ss/sd-scripts/issues/2137',
     'epoch 2/80', 'task'),
    ('https://github.com/thtrieu/darkflow/issues/470',
     'step 345 - loss 103.25736999511719 - moving ave loss 103.40884770577918', 'task'),
    ('https://github.com/AI-Hypercomputer/maxtext/pull/761',
     'completed step: 9, seconds: 1.341, TFLOP/s/device: 257.929, Tokens/s/device: 36653.244, loss: 0.000', 'task'),
    ('https://github.com/AI-Hypercomputer/maxtext/pull/3192',
     ' 73%|███████▎  | 97/132 [00:12<00:02, 13.38it/s, RAM: 40.1/251.9GB (15.9%)]I0219 19:34:48.977004 136489015797568 utils.py:255] maxtext param: params-decoder-layers_remainder-layers_1-pre_ffw_norm-scale', 'task'),
    ('https://github.com/ray-project/ray/issues/36795',
     'Training finished iteration 1 at 2023-06-22 22:44:43. Total running time: 8s', 'task'),
    ('https://github.com/ray-project/ray/issues/34922',
     'Training finished iter 4 at 2023-03-28 10:09:42 (running for 00:00:44.94)', 'task'),
    ('https://github.com/sgl-project/sglang/issues/15869',
     '[2025-12-26 06:08:40 TP0] Decode batch, #running-req: 1, #token: 1411, token usage: 0.00, cuda graph: True, gen throughput (token/s): 110.58, #queue-req: 0,', 'service'),
    ('https://github.com/sgl-project/sglang/issues/36081',
     '[2026-08-23 09:06:21 TP0 EP0] Decode batch, #running-req: 1, #full token: 166144, full token usage: 0.02, #swa token: 512, swa token usage: 0.00, accept len: 3.55, accept rate: 0.51, cuda graph: True, gen throughput (token/s): 3.22, #queue-req: 0', 'service'),
    ('https://github.com/huggingface/lighteval/issues/1063',
     '| 5971/9263 [2:16:18<1:17:49,  1.42s/it, est. speed input: 72.62 toks/s, output: 2683.22 toks/s]', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/2338',
     '2020-07-17 07:11:02 | INFO | train_inner | epoch 001:   2800 / 160368 loss=9.255, ppl=611.12, wps=57.3, ups=0.04, wpb=1613, bsz=80, num_updates=2800, lr=2.8e-05, gnorm=3.23, train_wall=13, wall=1236', 'task'),
    ('https://github.com/bigscience-workshop/biomedical/pull/881',
     'Generating train split: 2 examples [00:04,  2.13s/ examples]', 'task'),
    ('https://github.com/open-webui/open-webui/issues/188',
     'prompt eval rate:     90.75 tokens/s', 'service'),
    ('https://github.com/taketwo/llm-ollama/issues/32',
     'eval rate:            8.87 tokens/s', 'service'),
    ('https://github.com/NVIDIA/nccl-tests/issues/167',
     '      199680         49920     float     max      -1    125.8    1.59    2.98      0    125.1    1.60    2.99      0', 'task'),
    ('https://github.com/pytorch/xla/pull/4112',
     '| Training Device=xla:0/2 Epoch=1 Step=0 Loss=2.30627 Rate=2269.54 GlobalRate=2269.16 Time=21:35:07', 'task'),
    ('https://github.com/kubeflow/katib/pull/2560',
     '2025-08-14T23:41:27Z INFO     Train Epoch: 1 [1920/60000 (3%)]    loss=2.2376', 'task'),
    ('https://github.com/Tonyfy/LCNN_TRAIN/issues/11',
     'I0914 09:36:00.295799  6584 solver.cpp:228] Iteration 1853400, loss = 0.667568', 'task'),
    ('https://github.com/Tonyfy/LCNN_TRAIN/issues/11',
     'I0914 09:36:00.295799  6584 solver.cpp:244]     Train net output #0: accuracy = 0.78125', 'task'),
    ('https://github.com/aws-samples/machine-learning-using-k8s/pull/1',
     'INFO:root:Epoch[5] Batch [100]\tSpeed: 38246.62 samples/sec\taccuracy=0.987778', 'task'),
    ('https://github.com/tiny-dnn/tiny-dnn/issues/883',
     'epoch 1/30 using 598.653s. lr=0.000250033', 'task'),
    ('https://github.com/tiny-dnn/tiny-dnn/issues/883',
     'train loss=2.09418. test loss=2.06644, acc=5401/10000', 'task'),
    ('https://github.com/SiaStg/SiaStegNet/issues/1',
     ' 2020-10-26 18:50:13.%f train.py:215[27649] INFO Train epoch: 52 [200/1000]\tAccuracy: 50.22%\tLoss: 0.721378', 'task'),
    ('https://github.com/twosixlabs/armory/pull/185',
     'dc65f448a2e2: Downloading: [==>                                                ]  2.055MB/50.38MB', 'task'),
    ('https://github.com/huggingface/diffusers/pull/254',
     'Downloading pytorch_model.bin:  34% 210M/608M [00:02<00:05, 72.9MB/s]', 'task'),
    ('https://github.com/rclone/rclone/issues/3909',
     'Transferred:        1.503T / 1.544 TBytes, 97%, 33.027 MBytes/s, ETA 21m46s', 'task'),
    ('https://github.com/rclone/rclone/issues/1782',
     '* ...Away with Murder - S04E05 - I Love Her.mkv:  2% done, 3.718 MBytes/s, ETA: 11m49s', 'task'),
    ('https://github.com/rclone/rclone/pull/137',
     ' * 01_06_14.mp3: 33% done. avg: 1280.5, cur: 1288.8 kByte/s. ETA: 1m12s', 'task'),
    ('https://github.com/chraac/llama.cpp/pull/7',
     '| llama 1B F16                   |   2.30 GiB |     1.24 B | QNN        |  99 |         pp512 |         18.46 ± 1.73 |', 'task'),
    ('https://github.com/mindspore-lab/mindyolo/issues/370',
     '2024-10-18 10:02:34,337 [INFO] Epoch 1/500, Step 960/1516, step time: 95.77 ms', 'task'),
    ('https://github.com/speechbrain/speechbrain/pull/1892',
     'epoch: 1, lr: 3.59e-05, steps: 1797, optimizer: Adam - train loss: 3.06e+02 - valid loss: 2.09e+02, valid ACC: 1.83e-01', 'task'),
    ('https://github.com/speechbrain/speechbrain/pull/2216',
     'speechbrain.utils.train_logger - epoch: 1, lr: 1.00e+00 - train loss: 9.45e-01 - valid loss: 1.23, valid CER: 35.42, valid WER: 39.14', 'task'),
    ('https://github.com/huggingface/sentence-transformers/pull/2449',
     "{'eval_loss': 1.3624027967453003, 'eval_pearson_cosine': -0.12331743470388387, 'eval_spearman_cosine': -0.16960087342307598, 'eval_pearson_manhattan': -0.12815922903595642, 'eval_spearman_manhattan': -0.16951449320799797, 'eval_pearson_euclidean': -0.12672328147478792, 'eval_spearman_euclidean': -0.16779312253020615, 'eval_pearson_dot': -0.08434422205700165, 'eval_spearman_dot': -0.12757645352878041, 'eval_pearson_max': -0.08434422205700165, 'eval_spearman_max': -0.12757645352878041, 'eval_runtime': 0.9083, 'eval_samples_per_second': 544.995, 'eval_steps_per_second': 2.202, 'epoch': 3.89}", 'task'),
    ('https://github.com/NVIDIA/TensorRT-LLM/issues/6294',
     'Total Output Throughput (tokens/sec):             6957.3030', 'task'),
    ('https://github.com/NVIDIA/TensorRT-LLM/issues/1410',
     '[BENCHMARK] model_name llama_13b world_size 2 num_heads 40 num_kv_heads 40 num_layers 40 hidden_size 5120 vocab_size 32000 precision float16 batch_size 1 input_length 710 output_length 190 gpu_peak_mem(gb) 0.0 build_time(s) 116.39 tokens_per_sec 43.09 percentile95(ms) 5120.208 percentile99(ms) 5120.208 latency(ms) 4409.816 compute_cap sm80 quantization QuantMode.0 generation_time(ms) 3751.546 total_generated_tokens 189.0 generation_tokens_per_second 50.379', 'task'),
    ('https://github.com/NVIDIA/TensorRT-LLM/issues/1938',
     '2024/07/12 02:25:54 Generation throughput (tokens/second) avg: 21.834', 'task'),
    ('https://github.com/Topdu/OpenOCR/issues/9',
     '[2024/08/06 18:03:31] openrec INFO: epoch: [1/2], global_step: 100, lr: 0.000005, loss: 69.376022, avg_reader_cost: 0.00971 s, avg_batch_cost: 0.18023 s, avg_samples: 64.0, ips: 355.10891 samples/s, eta: 0:32:33', 'task'),
    ('https://github.com/PaddlePaddle/PaddleOCR/issues/16562',
     '[2025/09/24 12:13:19] ppocr INFO: epoch: [3/500], global_step: 500, lr: 0.005000, loss: 0.609742, loss_shrink_maps: 0.291145, loss_threshold_maps: 0.247570, loss_binary_maps: 0.058635, loss_cbn: 0.000000, avg_reader_cost: 1.81036 s, avg_batch_cost: 2.03538 s, avg_samples: 16.0, ips: 7.86095 samples/s, eta: 2 days, 20:01:28, max_mem_reserved: 11326 MB, max_mem_allocated: 10599 MB', 'task'),
    ('https://github.com/PaddlePaddle/PaddleOCR/pull/13937',
     'eval model:: 100%|█████████████████████████████████████████████████████████████████████████████████████| 205/205 [00:04<00:00, 44.29it/s]', 'task'),
    ('https://github.com/hill-a/stable-baselines/issues/1204',
     '|    total_timesteps      | 3584        |', 'task'),
    ('https://github.com/DLR-RM/rl-baselines3-zoo/pull/521',
     'Eval num_timesteps=25000, episode_reward=-292.73 +/- 132.72', 'task'),
    ('https://github.com/pyg-team/pytorch_geometric/issues/3121',
     'pytorch-1.9.0        | 871.6 MB  | 4          |   5%', 'task'),
]

# Lines of the same families that are not progress: a person reading them learns a
# setting, a size, a version, a time of day or that a file was written.
LOOK_ALIKES: list[tuple[str, str, str]] = [
    ('https://github.com/tensorflow/tensorflow/issues/45357',
     'Epoch 00002: saving model to .\\log-output\\saved_models\\model_epoch02_val_acc0.89.ckpt', 'task'),
    ('https://github.com/vllm-project/vllm/issues/12845',
     'Benchmark duration (s):                  329.83', 'task'),
    ('https://github.com/sgl-project/sglang/issues/1639',
     'Total input tokens:                      453502', 'task'),
    ('https://github.com/buildfoundation/mainframer/issues/168',
     'Sync done: took 4 seconds.', 'task'),
    ('https://github.com/buildfoundation/mainframer/issues/168',
     'Total time: 49.531 secs', 'task'),
    ('https://github.com/ish-app/ish/issues/1798',
     'remote: Total 601 (delta 185), reused 0 (delta 0), pack-reused 140', 'task'),
    ('https://github.com/firedm/FireDM/issues/121',
     '  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current', 'task'),
    ('https://github.com/AILab-CVC/YOLO-World/issues/165',
     '2024/01/24 02:48:46 - mmengine - INFO - Exp name: yolow-v8_l_clipv2_frozen_te_noprompt_t2i_bn_2e-3adamw_scale_lr_wd_32xb16-100e_obj365v1_goldg_train_lviseval_second_20240124_024126', 'task'),
    ('https://github.com/noonghunna/club-3090/pull/594',
     '(Worker_TP0 pid=101) INFO 07-06 10:44:40 [weight_utils.py:879] Auto-prefetch is disabled because the filesystem (EXT4) is not a recognized network FS (NFS/Lustre) and the checkpoint size (28.75 GiB) exceeds 90% of available RAM (23.20 GiB).', 'service'),
    ('https://github.com/sgl-project/sglang/issues/2362',
     'Cache shape torch.Size([163840, 64])', 'service'),
    ('https://github.com/thtrieu/darkflow/issues/470',
     'Checkpoint at step 348', 'task'),
    ('https://github.com/huggingface/text-embeddings-inference/issues/305',
     '2025-08-09T19:36:02.798333Z  INFO openai_embed{total_time="1.207716998s" tokenization_time="11.232786ms" queue_time="686.203µs" inference_time="1.195713965s"}: text_embeddings_router::http::server: router/src/http/server.rs:1290: Success', 'service'),
    ('https://github.com/huggingface/text-generation-inference/issues/1190',
     '   | N/A   37C    P0    63W / 300W |  68640MiB / 81920MiB |      0%      Default |', 'service'),
    ('https://github.com/huggingface/text-generation-inference/issues/1190',
     'Commit sha: 5e28f44a834c20602d4cc18d28703e024d3bbbe0', 'service'),
    ('https://github.com/ray-project/ray/issues/36795',
     'Training saved a checkpoint for iteration 1 at: /home/ray/ray_results/TorchTrainer_2023-06-22_22-44-34/TorchTrainer_08987_00000_0_2023-06-22_22-44-35/checkpoint_000000', 'task'),
    ('https://github.com/ray-project/ray/pull/25668',
     'Memory usage on this node: 4.5/15.3 GiB', 'task'),
    ('https://github.com/ray-project/ray/pull/25668',
     'Resources requested: 6.0/16 CPUs, 4.0/4 GPUs, 0.0/42.4 GiB heap, 0.0/17.82 GiB objects (0.0/4.0 accelerator_type:T4)', 'task'),
    ('https://github.com/axolotl-ai-cloud/axolotl/pull/2608',
     'trainable params: 11,272,192 || all params: 1,247,086,592 || trainable%: 0.9039', 'task'),
    ('https://github.com/axolotl-ai-cloud/axolotl/pull/2608',
     '[2025-05-19 17:03:58,372] [INFO] [axolotl.utils.models.log_gpu_memory_usage:107] [PID:99566] [RANK:0] cuda memory usage after model load: 2.313GB (+0.014GB cache, +0.794GB misc)', 'task'),
    ('https://github.com/axolotl-ai-cloud/axolotl/issues/2525',
     '[2025-04-29 20:53:51,930] [DEBUG] [axolotl.calculate_total_num_steps:516] [PID:604447] [RANK:0] total_num_steps: 102', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/1967',
     '2020-04-05 18:38:41 | INFO | fairseq_cli.train | max tokens per GPU = 3584 and max sentences per GPU = None', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/1967',
     '2020-04-05 18:38:34 | INFO | fairseq_cli.train | num. model params: 225086464 (num. trained: 225086464)', 'task'),
    ('https://github.com/open-webui/open-webui/issues/188',
     'load duration:        891.933µs', 'service'),
    ('https://github.com/NVIDIA/nccl/issues/583',
     ' nThread 1 nGpus 1 minBytes 32 maxBytes 8589934592 step: 2(factor) warmup iters: 5       iters: 20 validation: 1 single_test: 0 test_buffer_kind: 2', 'task'),
    ('https://github.com/NVIDIA/nccl/issues/583',
     '   Rank  0 Pid 1821213 on AI-A100-Beethoven01 device  0 [0x00] NVIDIA A100-SXM4-40GB', 'task'),
    ('https://github.com/pytorch/xla/pull/4112',
     'Epoch 1 train begin 21:35:02', 'task'),
    ('https://github.com/twosixlabs/armory/pull/185',
     'buster: Pulling from library/debian', 'task'),
    ('https://github.com/tenstorrent/tt-metal/issues/17242',
     '2025-01-25T06:12:16.1670897Z   Downloading jupyterlab-4.2.5-py3-none-any.whl (11.6 MB)', 'task'),
    ('https://github.com/tenstorrent/tt-metal/issues/17242',
     '2025-01-25T06:12:07.6314603Z Processing ./ttnn-0.55.0rc18.dev9+any-cp38-cp38-linux_x86_64.whl', 'task'),
    ('https://github.com/rclone/rclone/issues/3909',
     '2020-01-27 17:55:29 NOTICE: Bandwidth limit set to 60M', 'task'),
    ('https://github.com/ggml-org/llama.cpp/pull/16894',
     'main: n_kv_max = 20480, n_batch = 2048, n_ubatch = 2048, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = -1, n_threads = 16, n_threads_batch = 16', 'task'),
    ('https://github.com/swiss-ai/Megatron-LM/pull/23',
     '#parameters in Transformer layer: 0.29B', 'task'),
    ('https://github.com/speechbrain/speechbrain/pull/2216',
     'speechbrain.utils.checkpoints - Saved an end-of-epoch checkpoint in results/CRDNN_BPE_960h_LM/2602/save/CKPT+2023-10-21+12-02-55+00', 'task'),
    ('https://github.com/speechbrain/speechbrain/pull/2216',
     'speechbrain.nnet.schedulers - Changing lr from 1 to 0.8', 'task'),
    ('https://github.com/NVIDIA/TensorRT-LLM/pull/7104',
     'KV Memory Percentage:   70.00%', 'task'),
    ('https://github.com/NVIDIA/TensorRT-LLM/issues/1938',
     '2024/07/12 02:25:54 Number of total requests: 656', 'task'),
    ('https://github.com/PaddlePaddle/PaddleOCR/issues/16562',
     '[2025/09/24 12:21:24] ppocr INFO: save model in ./output/PP-OCRv5_mobile_det\\latest', 'task'),
    ('https://github.com/oobabooga/textgen/issues/1356',
     '    pytorch-2.0.0              |py3.10_cuda11.7_cudnn8_0        1.17 GB  pytorch', 'task'),
    ('https://github.com/KoboldAI/KoboldAI-Client/issues/149',
     '  + pytorch                   1.11.0  py3.8_cuda11.1_cudnn8.0.5_0  pytorch/linux-64           1GB', 'task'),
]


# Still not recognised after round progress3, and why: a strict xfail, so that a change
# that recognises one of them says so (and the line moves out of this list).
KNOWN_MISSES: dict[str, str] = {
    "      199680         49920     float     max      -1    125.8    1.59    2.98      0    125.1    1.60    2.99      0":
        "an nccl-tests result row: its columns are named once, in a header far above",
    "|    total_timesteps      | 3584        |":
        "one cell of stable-baselines' metrics table; 'total_..._steps: N' is a setting elsewhere",
    "pytorch-1.9.0        | 871.6 MB  | 4          |   5%":
        "conda's bar: a percentage after a column of partial-block digits, no counter or rate",
    "steps:   1%|▋                                                        | 41/3280 [00:50<1:06:54,  1.24s/it, avr_loss=nan]":
        "judged a warning: the loss is NaN, which is what the thread is about (the NaN rule outranks progress)",
}




def test_known_misses_are_lines_of_the_set() -> None:
    lines = {line for _u, line, _k in PROGRESS_LINES}
    assert set(KNOWN_MISSES) <= lines


@pytest.mark.parametrize(("url", "line", "kind"), thread_params(PROGRESS_LINES, KNOWN_MISSES))
def test_progress_line_is_progress(tmp_path: Path, url: str, line: str, kind: str) -> None:
    verdict, rules = log_verdict(tmp_path, line, kind)
    assert verdict == "progress", (url, line, verdict, rules)


# Look-alikes judged progress, each with the reason (strict xfails).
KNOWN_FALSE: dict[str, str] = {
    'Benchmark duration (s):                  329.83': (
        "a benchmark's measured result, progress since round `tables` (session eight: benchmark and "
        "evaluation results are progress, and a time with its unit in parentheses is a measured figure); "
        "this round labelled such one-off summary figures look-alikes"
    ),
}


def test_known_false_are_lines_of_the_set() -> None:
    assert set(KNOWN_FALSE) <= {line for _u, line, _k in LOOK_ALIKES}


@pytest.mark.parametrize(("url", "line", "kind"), thread_params(LOOK_ALIKES, KNOWN_FALSE))
def test_look_alike_is_not_progress(tmp_path: Path, url: str, line: str, kind: str) -> None:
    verdict, rules = log_verdict(tmp_path, line, kind)
    assert verdict != "progress", (url, line, verdict, rules)



def test_counter_shapes_carry_their_figures() -> None:
    # https://github.com/desktop/desktop/issues/16662: a percentage, then its count in parentheses
    u = parsed_progress("Receiving objects:  45% (176/389), 2.94 MiB | 1.16 MiB/s")
    assert (u.n, u.total) == (176, 389)
    # https://github.com/curl/curl/issues/2161: curl's meter row; time total, spent, left
    u = parsed_progress(" 12 1431M   12  177M    0     0  2826k      0  0:08:38  0:01:04  0:07:34 2869k")
    assert (u.percent, u.elapsed_s, u.remaining_s) == (12, 64, 7 * 60 + 34)
    # https://github.com/catboost/catboost/issues/1028: a remaining time in several units
    u = parsed_progress("34:     learn: 0.9508429        test: 0.8235312 best: 0.8356368 (1)     total: 17.5s    "
           "remaining: 1h 39m 38s")
    assert u.remaining_s == 3600 + 39 * 60 + 38
    # https://github.com/twosixlabs/armory/pull/185: a drawn bar, then bytes of bytes
    u = parsed_progress("dc65f448a2e2: Downloading: [==>                                                ]  2.055MB/50.38MB")
    assert (u.n, u.total, u.unit) == (pytest.approx(2.055e6), pytest.approx(50.38e6), "B")
    # https://github.com/bigscience-workshop/biomedical/pull/881: tqdm with a unit after a blank
    u = parsed_progress("Generating train split: 2 examples [00:04,  2.13s/ examples]")
    assert (u.n, u.unit, u.elapsed_s) == (2, "examples", 4) and u.rate == pytest.approx(1 / 2.13)
    # https://github.com/ray-project/ray/issues/34922: a counter and the time it has been running
    u = parsed_progress("Training finished iter 4 at 2023-03-28 10:09:42 (running for 00:00:44.94)")
    assert (u.n, u.elapsed_s) == (4, pytest.approx(44.94))
    # https://github.com/meta-llama/llama-cookbook/issues/613: a figure and its spread, named by its cell
    u = parsed_progress("|arc 25 shot                            |      1|none            |    25|acc_norm   |↑  |0.3000|±  |0.0461|")
    assert u.metrics == {"acc_norm": 0.3}


def test_round_and_glued_bar_found_in_a_log(tmp_path: Path) -> None:
    # https://github.com/catboost/catboost/issues/664: the bare round and a colon, read as a rank prefix
    # first; https://github.com/AI-Hypercomputer/maxtext/pull/3192: a bar with a glog line glued after it.
    log = tmp_path / "a.log"
    log.write_text("0:\tlearn: 56.2590112\ttest: 56.0987956\tbest: 56.0987956 (0)\n"
                   "1:\tlearn: 54.6424166\ttest: 54.4864229\tbest: 54.4864229 (1)\n")
    _, mon = classify_log(log)
    assert mon.progress is not None and (mon.progress.n, mon.progress.unit) == (1, "round")
    log.write_text(" 73%|███████▎  | 97/132 [00:12<00:02, 13.38it/s, RAM: 40.1/251.9GB (15.9%)]I0219 19:34:48.977004 "
                   "136489015797568 utils.py:255] maxtext param: params-decoder-layers_remainder-layers_1-pre_ffw_norm-scale\n")
    _, mon = classify_log(log)
    assert mon.progress is not None and (mon.progress.n, mon.progress.total) == (97, 132)


def test_no_progress_from_a_bar_that_a_death_follows(tmp_path: Path) -> None:
    # The bar before a glued death is older than the death: no progress event from that line.
    log = tmp_path / "a.log"
    log.write_text("Loading: 10%|█         | 10/100 [00:02<00:03,  1.28it/s]Killed\n")
    events, _ = classify_log(log, progress_events=True)
    assert [e.kind for e in events] == ["fatal"], events


@pytest.mark.parametrize("line", [
    " 12 1431 12 177 0 0 2826 0 7 8",  # a row of numbers without the meter's clocks
    "Memory usage on this node: 4.5/15.3 GiB",  # bytes of bytes without a bar
    "0: eth0: <BROADCAST,MULTICAST,UP> mtu 1500",  # a numbered record without figures
    "0:\tcuda:0",  # a numbered device, not a round's measurement
    "Memory: 4.5/15.3 GiB [=====>    ]",  # a gauge drawn after its figures, not a transfer's count
    "total_num_steps: 102",  # a plan, not a count
    "Issue 12 ± details",  # a spread needs a figure before it
])
def test_shapes_that_are_not_progress(line: str) -> None:
    assert parse_progress(line) is None, line


@pytest.mark.parametrize("hostile", [
    "|" * 5000,
    "[" + "=" * 5000,
    "[=====] " * 700 + "1/",
    " 1 1M 1 1M" * 1000 + " 0:00:01",
    "0:\t" + "a: 1\t" * 1500 + "x",
    "|a|1|± " * 1000,
    "1% (" * 2000,
    "remaining: " + "1h " * 3000,
    "running for " * 1000,
    "1K " + ". " * 3000 + "1%",
    "a:" + " " * 4000 + "1",
    "x " * 3000 + "[00:01,  1.0s/ x]",
    "Acc@" * 2000 + " 1",
])
def test_new_shapes_stay_linear(hostile: str) -> None:
    t = time.perf_counter()
    parse_progress(hostile)
    assert time.perf_counter() - t < 0.5


@pytest.mark.parametrize("line", [
    "Receiving objects:  45% (184/408)",  # a percentage and its count
    "Downloading: 45%",  # a percentage ending the line
    "eval rate:            8.87 tokens/s",  # a rate ending the line
    "[12/56] /usr/local/cuda/bin/nvcc -c flash_api.cu -o flash_api.o",  # a line led by its counter
    " 12 1431M   12  177M    0     0  2826k      0  0:08:38  0:01:04  0:07:34 2869k",  # a meter row
])
@pytest.mark.parametrize("filler_lines", [10, 6000], ids=["small-block", "template-block"])
def test_shapes_found_in_both_scans(tmp_path: Path, line: str, filler_lines: int) -> None:
    # A small block is searched byte by byte, a catch-up block of >= 256 KiB by line template
    # (digits zeroed, no newline): both must find the same progress line.
    filler = "".join(f'INFO:     127.0.0.1:5{i % 10000:04d} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                     for i in range(filler_lines))
    log = tmp_path / "a.log"
    log.write_text(filler + line + "\n")
    assert (filler_lines < 100) == (log.stat().st_size < 256 * 1024)
    _, mon = classify_log(log)
    assert mon.progress is not None and mon.progress_line == filler_lines + 1, line


def test_eta_from_a_percentage_alone() -> None:
    # https://github.com/kubic-project/jenkins-library/pull/33: wget's dots show only a percentage;
    # 4 points in 8 s leave 90 points at 2 s each.
    t = EtaTracker()
    t.feed(parsed_progress(" 32768K ........ ........ ........ ........  6%  453M 2s"), now=0.0)
    t.feed(parsed_progress(" 65536K ........ ........ ........ ........ 10%  496M 2s"), now=8.0)
    assert t.eta is not None and t.eta.remaining_s == pytest.approx(90 * 2.0)
    # https://github.com/curl/curl/issues/2161: one meter row; its own "Left" column is the best guess
    t = EtaTracker()
    t.feed(parsed_progress(" 12 1431M   12  177M    0     0  2826k      0  0:08:38  0:01:04  0:07:34 2869k"), now=64.0)
    assert t.eta is not None and t.eta.remaining_s == 7 * 60 + 34


def test_eta_from_a_reported_remaining_time() -> None:
    # https://github.com/catboost/catboost/issues/1028: no counter the tracker can use, a remaining time
    t = EtaTracker(estimate_s=3600.0, stage_started_at=0.0)
    t.feed(parsed_progress("34:     learn: 0.9508429        test: 0.8235312 best: 0.8356368 (1)     total: 17.5s    "
              "remaining: 1h 39m 38s"), now=20.0)
    assert t.eta is not None and t.eta.remaining_s == 5978
    assert t.eta.projected_s == 20 + 5978 and t.eta.drift == pytest.approx((20 + 5978) / 3600 - 1)
    # ... but it does not replace a bar with a total that is still running
    t = EtaTracker()
    t.feed(parsed_progress("Loading: 10%|█         | 10/100 [00:10<01:30,  1.00it/s]"), now=10.0)
    t.feed(parsed_progress("34:     learn: 0.95 test: 0.82 best: 0.83 (1)     total: 17.5s    remaining: 1h 39m 38s"), now=11.0)
    assert t.eta is not None and t.eta.remaining_s == pytest.approx(90.0)
